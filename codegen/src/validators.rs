//! Argument validators as Rust: one function per distinct schema node of the
//! tools' input schemas, checking the node's keywords in the order the schema
//! states them (a closed object's members where `additionalProperties`
//! stands; see `keyword`).
//!
//! They are generated from the very schema each tool advertises
//! (`schema::input_schema`), so what clients see and what the server checks
//! cannot drift apart; `tests/schema_agreement.rs` checks them against the
//! `jsonschema` crate on a table of payloads: the same violations, with the
//! same pointers and texts (the order within one payload is ours, and
//! jsonschema's varies with its internal fusions). A server start then compiles nothing, and the server carries no
//! schema engine: the generated code calls the few checks of
//! `crate::surface::validate` (type, enum, minimum, required, closed objects).
//!
//! Only the keywords the table can produce are understood; any other stops
//! the build, so a new keyword cannot be silently ignored.

use std::collections::BTreeMap;

use proc_macro2::{Literal, TokenStream};
use quote::{format_ident, quote};
use serde_json::{Map, Value};

use crate::schema;
use crate::table::Table;

/// Keywords that only annotate: nothing to check.
const ANNOTATIONS: &[&str] = &["description", "default"];

/// `VALIDATORS` (each tool's entry point, in table order) and the node
/// functions they call.
pub fn tokens(table: &Table) -> TokenStream {
    let mut nodes = Nodes::default();
    let entries: Vec<_> = table
        .tool
        .iter()
        .map(|tool| {
            let schema = schema::input_schema(table, tool);
            let ident = nodes.node(&schema, &tool.name);
            quote!(validators::#ident)
        })
        .collect();
    let count = entries.len();
    let functions = nodes.functions;
    quote! {
        /// Each tool's argument validator, in tools/list order: generated from
        /// the tool's input schema (`INPUT_SCHEMAS`), so nothing is compiled at
        /// run time. `crate::surface::validate` runs one and collects its
        /// violations.
        pub static VALIDATORS: [crate::surface::validate::Check; #count] = [#(#entries,)*];

        mod validators {
            //! One function per distinct schema node; the checks are
            //! `crate::surface::validate`'s.
            use ::serde_json::Value;
            use crate::surface::validate::{self as check, At, Type};
            use crate::surface::Violation;

            #(#functions)*
        }
    }
}

#[derive(Default)]
struct Nodes {
    /// Node functions by the checked part of their schema (annotations
    /// dropped), so that every `{"type":"string"}` shares one.
    by_schema: BTreeMap<String, proc_macro2::Ident>,
    functions: Vec<TokenStream>,
}

impl Nodes {
    /// The function checking `schema` (`vN` in `mod validators`), generating
    /// it and the functions of its subschemas on first sight.
    fn node(&mut self, schema: &Value, context: &str) -> proc_macro2::Ident {
        let Value::Object(keywords) = schema else {
            panic!("{context}: a schema node that is not an object: {schema}")
        };
        let key = serde_json::to_string(&checked_part(keywords)).expect("schema json");
        if let Some(ident) = self.by_schema.get(&key) {
            return ident.clone();
        }
        let ident = format_ident!("v{}", self.by_schema.len());
        self.by_schema.insert(key, ident.clone());
        let checks: Vec<_> = keywords
            .iter()
            .filter_map(|(keyword, value)| self.keyword(keywords, keyword, value, context))
            .collect();
        let doc = format!("The schema node first met in `{context}`.");
        self.functions.push(quote! {
            #[doc = #doc]
            #[allow(unused_variables)]
            pub(super) fn #ident(value: &Value, at: &At<'_>, out: &mut Vec<Violation>) {
                #(#checks)*
            }
        });
        ident
    }

    /// The statement checking one keyword of a node, in schema order.
    fn keyword(
        &mut self,
        node: &Map<String, Value>,
        keyword: &str,
        value: &Value,
        context: &str,
    ) -> Option<TokenStream> {
        let here = || format!("{context}: keyword `{keyword}`: {value}");
        Some(match keyword {
            _ if ANNOTATIONS.contains(&keyword) => return None,
            "type" => {
                let ty = match value.as_str() {
                    Some("object") => quote!(Type::Object),
                    Some("array") => quote!(Type::Array),
                    Some("string") => quote!(Type::String),
                    Some("integer") => quote!(Type::Integer),
                    Some("boolean") => quote!(Type::Boolean),
                    _ => panic!("{}: not a type the validators know", here()),
                };
                quote!(check::type_(value, #ty, at, out);)
            }
            // With `additionalProperties: false` the members are checked
            // where that keyword stands, in the order the caller sent them,
            // and the undeclared ones named after them; without it, in the
            // schema's order. So a closed object reads: its type, the
            // members it lacks, what is wrong with those sent, what it
            // does not take.
            "properties" if closed(node) => return None,
            "properties" => {
                let Value::Object(properties) = value else {
                    panic!("{}: not an object", here())
                };
                let arms = properties.iter().map(|(name, schema)| {
                    let sub = self.node(schema, &format!("{context}/{name}"));
                    quote! {
                        if let Some(member) = members.get(#name) {
                            #sub(member, &at.key(#name), out);
                        }
                    }
                });
                quote! {
                    if let Value::Object(members) = value {
                        #(#arms)*
                    }
                }
            }
            "required" => required(value, &here),
            "additionalProperties" => {
                assert!(closed(node), "{}: only `false` is known", here());
                let properties = match node.get("properties") {
                    Some(Value::Object(properties)) => properties.clone(),
                    _ => Map::new(),
                };
                let declared: Vec<&String> = properties.keys().collect();
                let arms: Vec<_> = properties
                    .iter()
                    .map(|(name, schema)| {
                        let sub = self.node(schema, &format!("{context}/{name}"));
                        quote!(#name => #sub(member, &at.key(#name), out),)
                    })
                    .collect();
                let members = (!arms.is_empty()).then(|| {
                    quote! {
                        if let Value::Object(members) = value {
                            for (name, member) in members {
                                match name.as_str() {
                                    #(#arms)*
                                    _ => {}
                                }
                            }
                        }
                    }
                });
                quote! {
                    #members
                    check::closed(value, &[#(#declared),*], at, out);
                }
            }
            "items" => {
                let sub = self.node(value, &format!("{context}/items"));
                quote! {
                    if let Value::Array(items) = value {
                        for (i, item) in items.iter().enumerate() {
                            #sub(item, &at.index(i), out);
                        }
                    }
                }
            }
            "enum" => {
                let names = strings(value)
                    .unwrap_or_else(|| panic!("{}: only enums of strings are known", here()));
                quote!(check::one_of(value, &[#(#names),*], at, out);)
            }
            "minimum" => {
                let min = value
                    .as_i64()
                    .unwrap_or_else(|| panic!("{}: only integer minimums are known", here()));
                let min = Literal::i64_suffixed(min);
                quote!(check::minimum(value, #min, at, out);)
            }
            _ => panic!(
                "{}: a keyword the generated validators do not know (add it to codegen/src/validators.rs and its check to src/surface/validate.rs)",
                here()
            ),
        })
    }
}

fn required(names: &Value, here: &dyn Fn() -> String) -> TokenStream {
    let names = strings(names).unwrap_or_else(|| panic!("{}: not strings", here()));
    quote!(check::required(value, &[#(#names),*], at, out);)
}

fn closed(node: &Map<String, Value>) -> bool {
    node.get("additionalProperties") == Some(&Value::Bool(false))
}

/// The node without its annotations: two nodes that differ only in their
/// descriptions check the same.
fn checked_part(node: &Map<String, Value>) -> Map<String, Value> {
    node.iter()
        .filter(|(k, _)| !ANNOTATIONS.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

fn strings(value: &Value) -> Option<Vec<&str>> {
    value.as_array()?.iter().map(Value::as_str).collect()
}
