//! Tool profiles: named subsets of the surface that a server can be started
//! with (`--tools core`, `LEAN_BEAM_TOOLS=core`), so that an agent's context
//! holds only the catalog of the tools it uses.
//!
//! A profile is declared once (`[profile.<name>]` with a `doc`); a tool joins
//! it by naming it in its own `profiles` key. Membership lives on the tool so
//! that a tool added later joins a profile in its own table entry, and so that
//! no profile can name a tool that does not exist.
//!
//! The generator emits each profile's tools (`PROFILES`); the server builds
//! the catalog of the chosen set at start-up from the entries of its tools.

use std::collections::BTreeSet;

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use serde::Deserialize;

use crate::emit::camel;
use crate::table::{Table, TableError, is_identifier};

/// The name that always means every tool; no profile may take it.
pub const ALL: &str = "all";

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    /// What the profile is for, in a few words (shown when `--tools` names an
    /// unknown tool or profile).
    pub doc: String,
}

/// The profile rules serde cannot express.
pub fn check(table: &Table) -> Result<(), TableError> {
    let tool_names: BTreeSet<&str> = table.tool.iter().map(|t| t.name.as_str()).collect();
    for (name, profile) in &table.profile {
        let entry = format!("operations.toml: profile `{name}`");
        if !is_identifier(name) {
            return Err(TableError(format!(
                "{entry}: a profile name is lower_snake_case ASCII"
            )));
        }
        if name == ALL {
            return Err(TableError(format!(
                "{entry}: `{ALL}` always means every tool; choose another name"
            )));
        }
        if tool_names.contains(name.as_str()) {
            return Err(TableError(format!(
                "{entry}: a profile cannot share its name with a tool (`--tools` takes both)"
            )));
        }
        if profile.doc.trim().is_empty() {
            return Err(TableError(format!("{entry}: empty doc")));
        }
        if !table.tool.iter().any(|t| t.profiles.contains(name)) {
            return Err(TableError(format!(
                "{entry}: no tool names it in `profiles`"
            )));
        }
    }
    for tool in &table.tool {
        let mut seen = BTreeSet::new();
        for profile in &tool.profiles {
            let at = format!("operations.toml: tool `{}`, profiles", tool.name);
            if !table.profile.contains_key(profile) {
                return Err(TableError(format!(
                    "{at}: unknown profile `{profile}` (declared: {})",
                    table.profile.keys().cloned().collect::<Vec<_>>().join(", ")
                )));
            }
            if !seen.insert(profile) {
                return Err(TableError(format!("{at}: `{profile}` twice")));
            }
        }
    }
    Ok(())
}

/// The tools of `profile`, in table (tools/list) order.
pub fn members<'t>(table: &'t Table, profile: &str) -> Vec<&'t str> {
    table
        .tool
        .iter()
        .filter(|t| t.profiles.iter().any(|p| p == profile))
        .map(|t| t.name.as_str())
        .collect()
}

/// `ProfileSpec` and `PROFILES`, for the generated file.
pub fn tokens(table: &Table) -> TokenStream {
    let count = table.profile.len();
    let profiles = table.profile.iter().map(|(name, profile)| {
        let doc = &profile.doc;
        let tools = members(table, name)
            .into_iter()
            .map(|tool| format_ident!("{}", camel(tool)));
        quote! { ProfileSpec { name: #name, doc: #doc, tools: &[#(Tool::#tools,)*] } }
    });
    quote! {
        /// A named tool set of the table (`[profile.<name>]`).
        #[derive(Debug, Clone, Copy)]
        pub struct ProfileSpec {
            pub name: &'static str,
            pub doc: &'static str,
            /// Its tools, in tools/list order.
            pub tools: &'static [Tool],
        }

        /// The profiles, by name. `all` (every tool) is implicit.
        pub const PROFILES: [ProfileSpec; #count] = [#(#profiles,)*];

    }
}
