//! The tools one server serves: every tool, a profile of `operations.toml`, or a
//! list of names (`--tools core`, `--tools lean_sync,lean_goals`,
//! `LEAN_BEAM_TOOLS`). Outside the set a tool is as unknown as a misspelt one:
//! it is not in tools/list, its arguments are never parsed, and a call to it is
//! refused before dispatch.

use std::sync::Arc;

use serde_json::Value;

use super::{PROFILES, ParseError, TOOL_COUNT, Tool, ToolCall};

/// The name that always means every tool.
pub const ALL: &str = "all";

/// The environment variable read when `--tools` is not given.
pub const ENV: &str = "LEAN_BEAM_TOOLS";

/// A set of tools and its tools/list catalog, built once at start-up.
#[derive(Debug, Clone)]
pub struct ToolSet {
    members: [bool; TOOL_COUNT],
    /// The `tools` array of this set's tools/list result, when the set is
    /// not every tool; every tool's is the build-time text itself
    /// ([`full_catalog`]), never copied (a copy of its 212 KB was ~52 page
    /// faults at start-up, and two sets were built: the flag's and
    /// `Config::default`'s).
    catalog: Option<Arc<str>>,
    /// How the set was asked for (`all`, `core`, `lean_sync,lean_goals`).
    spelling: Arc<str>,
}

impl Default for ToolSet {
    fn default() -> Self {
        Self::all()
    }
}

impl ToolSet {
    /// Every tool.
    pub fn all() -> Self {
        Self {
            members: [true; TOOL_COUNT],
            catalog: None,
            spelling: Arc::from(ALL),
        }
    }

    /// The union of the comma-separated profiles and tool names of `spec`
    /// (`all` is every tool). An unknown or empty item is refused with the
    /// known profiles and tools, so that a typo stops start-up.
    pub fn select(spec: &str) -> Result<Self, String> {
        let mut members = [false; TOOL_COUNT];
        let mut unknown = Vec::new();
        let items: Vec<&str> = spec.split(',').map(str::trim).collect();
        for item in &items {
            if item.is_empty() {
                unknown.push("(an empty name)".to_string());
            } else if *item == ALL {
                members = [true; TOOL_COUNT];
            } else if let Some(profile) = PROFILES.iter().find(|p| p.name == *item) {
                for tool in profile.tools {
                    members[tool.index()] = true;
                }
            } else if let Some(tool) = Tool::from_name(item) {
                members[tool.index()] = true;
            } else {
                unknown.push(format!("`{item}`"));
            }
        }
        if !unknown.is_empty() {
            return Err(format!(
                "--tools/{ENV}: unknown {} {}; {}",
                if unknown.len() == 1 { "name" } else { "names" },
                unknown.join(", "),
                known_names()
            ));
        }
        let spelling = items.join(",");
        if members == [true; TOOL_COUNT] {
            return Ok(Self {
                spelling: Arc::from(spelling),
                ..Self::all()
            });
        }
        Ok(Self {
            members,
            catalog: Some(Arc::from(super::catalog_of(
                Tool::ALL.into_iter().filter(|tool| members[tool.index()]),
            ))),
            spelling: Arc::from(spelling),
        })
    }

    /// The set named by the `--tools` flag if given, else by `LEAN_BEAM_TOOLS`
    /// if set (and not empty), else every tool.
    pub fn from_flag_or_env(
        flag: Option<&str>,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, String> {
        match flag {
            Some(spec) => Self::select(spec),
            None => match env(ENV).filter(|v| !v.trim().is_empty()) {
                Some(spec) => Self::select(&spec),
                None => Ok(Self::all()),
            },
        }
    }

    pub fn contains(&self, tool: Tool) -> bool {
        self.members[tool.index()]
    }

    /// The members, in tools/list order.
    pub fn tools(&self) -> impl Iterator<Item = Tool> + '_ {
        Tool::ALL.into_iter().filter(|tool| self.contains(*tool))
    }

    /// Whether this is every tool.
    pub fn is_all(&self) -> bool {
        self.members == [true; TOOL_COUNT]
    }

    /// How the set was asked for, for messages.
    pub fn spelling(&self) -> &str {
        &self.spelling
    }

    /// The `tools` array of a tools/list result, as JSON text.
    pub fn catalog_json(&self) -> &str {
        match &self.catalog {
            Some(catalog) => catalog,
            None => full_catalog(),
        }
    }

    /// Parse and validate a call; a tool outside the set is `UnknownTool`.
    pub fn parse(&self, name: &str, arguments: Option<Value>) -> Result<ToolCall, ParseError> {
        match Tool::from_name(name) {
            Some(tool) if self.contains(tool) => super::parse(name, arguments),
            _ => Err(ParseError::UnknownTool(name.to_string())),
        }
    }

    /// Whether `name` is a tool of this set.
    pub fn served(&self, name: &str) -> bool {
        Tool::from_name(name).is_some_and(|tool| self.contains(tool))
    }

    /// A known tool that this set leaves out, if `name` is one.
    pub fn left_out(&self, name: &str) -> Option<Tool> {
        Tool::from_name(name).filter(|tool| !self.contains(*tool))
    }

    /// The served tool whose name is nearest to `name` (see `nearest_tool`).
    pub fn nearest(&self, name: &str) -> Option<Tool> {
        super::nearest_tool_among(name, self.tools())
    }
}

/// Every tool's tools/list entries (with their output schemas), in table order.
fn full_catalog() -> &'static str {
    super::catalog_json()
}

/// The profiles and tools `--tools` accepts, for an error message.
fn known_names() -> String {
    let profiles: Vec<String> = std::iter::once(format!("{ALL} (every tool)"))
        .chain(
            PROFILES
                .iter()
                .map(|p| format!("{} ({})", p.name, p.tools.len())),
        )
        .collect();
    let tools: Vec<&str> = Tool::ALL.into_iter().map(Tool::name).collect();
    format!(
        "profiles: {}; tools: {}",
        profiles.join(", "),
        tools.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(set: &ToolSet) -> Vec<&'static str> {
        set.tools().map(Tool::name).collect()
    }

    #[test]
    fn all_is_the_whole_catalog() {
        let set = ToolSet::select("all").unwrap();
        assert!(set.is_all());
        assert_eq!(set.catalog_json(), full_catalog());
        assert_eq!(names(&set).len(), TOOL_COUNT);
    }

    #[test]
    fn a_profile_and_names_combine_in_table_order() {
        let core = PROFILES.iter().find(|p| p.name == "core").expect("core");
        let set = ToolSet::select("lean_references, core").unwrap();
        assert!(set.contains(Tool::LeanReferences));
        for tool in core.tools {
            assert!(set.contains(*tool), "{}", tool.name());
        }
        assert!(!set.contains(Tool::BeamStats));
        let listed: Vec<String> = match serde_json::from_str(set.catalog_json()).unwrap() {
            Value::Array(entries) => entries
                .iter()
                .map(|e| e["name"].as_str().unwrap().to_string())
                .collect(),
            other => panic!("{other}"),
        };
        assert_eq!(listed, names(&set));
        assert_eq!(set.spelling(), "lean_references,core");
    }

    #[test]
    fn unknown_and_empty_names_are_refused_with_the_known_ones() {
        let err = ToolSet::select("core,lean_synk,").unwrap_err();
        for part in [
            "`lean_synk`",
            "(an empty name)",
            "LEAN_BEAM_TOOLS",
            "all (every tool)",
            "core (",
            "lean_sync",
            "beam_version",
        ] {
            assert!(err.contains(part), "{part}: {err}");
        }
    }

    #[test]
    fn a_call_outside_the_set_is_an_unknown_tool() {
        let set = ToolSet::select("lean_sync").unwrap();
        let args = serde_json::json!({"workspace": {"root": "/r"}, "path": "A.lean"});
        assert!(set.parse("lean_sync", Some(args.clone())).is_ok());
        assert_eq!(
            set.parse("lean_update", Some(args)),
            Err(ParseError::UnknownTool("lean_update".into()))
        );
        assert_eq!(set.left_out("lean_update"), Some(Tool::LeanUpdate));
        assert_eq!(set.left_out("lean_sync"), None);
        assert_eq!(set.left_out("nonsense"), None);
        assert_eq!(set.nearest("lean_synk"), Some(Tool::LeanSync));
        assert_eq!(set.nearest("lean_updat"), None);
    }

    #[test]
    fn the_flag_wins_over_the_environment() {
        let env = |name: &str| (name == ENV).then(|| "lean_sync".to_string());
        let set = ToolSet::from_flag_or_env(Some("lean_goals"), env).unwrap();
        assert_eq!(names(&set), ["lean_goals"]);
        let set = ToolSet::from_flag_or_env(None, env).unwrap();
        assert_eq!(names(&set), ["lean_sync"]);
        let set = ToolSet::from_flag_or_env(None, |_| Some(" ".into())).unwrap();
        assert!(set.is_all());
        assert!(ToolSet::from_flag_or_env(None, |_| Some("nope".into())).is_err());
    }
}
