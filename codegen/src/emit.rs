//! Rust emission: argument types, the tool index, the catalog constants, parse,
//! `trait Operations` and `dispatch`. The output is formatted with prettyplease so
//! that `$OUT_DIR/operations.rs` stays reviewable.
//!
//! The generated code leans on a small hand-written support module,
//! `crate::surface`: `CallContext`, `ToolOutcome`, `ToolError`, `ParseError`,
//! `StatusNotice`, `validate` (the checks the generated validators call), `structured`, and `results`
//! (the result types the table names, with `results::output_schema`).

use std::collections::BTreeMap;

use proc_macro2::{Literal, TokenStream};
use quote::{format_ident, quote};

use crate::schema;
use crate::table::{Arg, ArgType, StatusNotice, Table, Tool, resolve_type};

pub fn camel(name: &str) -> String {
    name.split('_')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let mut c = p.chars();
            c.next()
                .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                .unwrap_or_default()
        })
        .collect()
}

/// Names of the generated string enums: `<ArgCamel>` when every argument of that name
/// has the same values, otherwise `<ToolCamel><ArgCamel>` for each of them.
struct EnumNames {
    by_arg: BTreeMap<(String, String), String>,
    defs: BTreeMap<String, (Vec<String>, String)>,
}

fn enum_names(table: &Table) -> EnumNames {
    let mut values_by_name: BTreeMap<String, Vec<Vec<String>>> = BTreeMap::new();
    let all_args = table
        .tool
        .iter()
        .flat_map(|t| t.args.iter().map(move |a| (t.name.as_str(), a)))
        .chain(
            table
                .shape
                .iter()
                .flat_map(|(s, sh)| sh.fields.iter().map(move |a| (s.as_str(), a))),
        );
    let with_enums: Vec<_> = all_args
        .filter_map(|(owner, a)| a.enum_values.clone().map(|v| (owner.to_string(), a, v)))
        .collect();
    let type_name = |arg: &Arg| arg.rust_enum.clone().unwrap_or_else(|| camel(&arg.name));
    for (_, arg, values) in &with_enums {
        let entry = values_by_name.entry(type_name(arg)).or_default();
        if !entry.contains(values) {
            entry.push(values.clone());
        }
    }
    let mut names = EnumNames {
        by_arg: BTreeMap::new(),
        defs: BTreeMap::new(),
    };
    for (owner, arg, values) in with_enums {
        let plain = type_name(arg);
        let name = if values_by_name[&plain].len() == 1 {
            plain
        } else {
            format!("{}{}", camel(&owner), plain)
        };
        names
            .defs
            .entry(name.clone())
            .or_insert((values, arg_doc(table, arg)));
        names.by_arg.insert((owner, arg.name.clone()), name);
    }
    names
}

fn rust_type(ty: &ArgType, enum_name: Option<&str>) -> TokenStream {
    match ty {
        ArgType::String => match enum_name {
            Some(e) => {
                let e = format_ident!("{}", e);
                quote!(#e)
            }
            None => quote!(::std::string::String),
        },
        ArgType::Integer => quote!(i64),
        ArgType::Natural => quote!(u64),
        ArgType::Boolean => quote!(bool),
        ArgType::Object => quote!(::serde_json::Map<::std::string::String, ::serde_json::Value>),
        ArgType::Shape(name) => {
            let s = format_ident!("{}", name);
            quote!(#s)
        }
        ArgType::Array(items) => {
            let inner = rust_type(items, enum_name);
            quote!(::std::vec::Vec<#inner>)
        }
    }
}

fn default_expr(ty: &ArgType, enum_name: Option<&str>, value: &toml::Value) -> TokenStream {
    match (ty, value) {
        (ArgType::String, toml::Value::String(s)) => match enum_name {
            Some(e) => {
                let e = format_ident!("{}", e);
                let v = format_ident!("{}", camel(s));
                quote!(#e::#v)
            }
            None => quote!(::std::string::String::from(#s)),
        },
        (ArgType::Boolean, toml::Value::Boolean(b)) => quote!(#b),
        (ArgType::Natural, toml::Value::Integer(n)) => {
            let n = Literal::u64_unsuffixed(*n as u64);
            quote!(#n)
        }
        (ArgType::Integer, toml::Value::Integer(n)) => {
            let n = Literal::i64_unsuffixed(*n);
            quote!(#n)
        }
        _ => unreachable!("defaults are checked when the table is read"),
    }
}

/// The fields of an argument struct or shape, plus the default functions they need.
fn fields(
    table: &Table,
    owner: &str,
    args: &[Arg],
    enums: &EnumNames,
) -> (Vec<TokenStream>, Vec<TokenStream>) {
    let mut fields = Vec::new();
    let mut defaults = Vec::new();
    for arg in args {
        let ty = resolve_type(table, arg).expect("checked table");
        let enum_name = enums
            .by_arg
            .get(&(owner.to_string(), arg.name.clone()))
            .map(String::as_str);
        let rty = rust_type(&ty, enum_name);
        let ident = format_ident!("{}", arg.name);
        let doc = arg_doc(table, arg);
        let optional = !arg.required && arg.default.is_none();
        let lenient = match (&ty, optional) {
            (ArgType::Natural, false) => Some("natural"),
            (ArgType::Natural, true) => Some("opt_natural"),
            (ArgType::Integer, false) => Some("integer"),
            (ArgType::Integer, true) => Some("opt_integer"),
            (ArgType::Array(inner), _) if **inner == ArgType::Natural => Some("vec_natural"),
            (ArgType::Array(inner), _) if **inner == ArgType::Integer => Some("vec_integer"),
            _ => None,
        };
        // JSON Schema counts `2.0` as an integer; serde must agree with it.
        let lenient = lenient.map(|f| {
            let path = format!("crate::surface::lenient::{f}");
            quote!(#[serde(deserialize_with = #path)])
        });
        let required_keys = arg.required_keys.as_ref().map(|keys| {
            let keys = keys.iter();
            quote!(#[schemars(extend("required" = [#(#keys),*]))])
        });
        // The derived schema states the bound the emitted one does.
        let minimum = arg
            .minimum
            .map(|min| quote!(#[schemars(extend("minimum" = #min))]));
        // Every object schema names its `properties` (Gemini CLI's schema
        // path refuses an object without them), even where it takes any keys.
        let properties =
            (ty == ArgType::Object).then(|| quote!(#[schemars(extend("properties" = {}))]));
        let schema_extra = quote!(#required_keys #minimum #properties);
        let field = if arg.required {
            quote! { #[doc = #doc] #lenient #schema_extra pub #ident: #rty, }
        } else if let Some(default) = &arg.default {
            let fname = format!("{owner}_{}", arg.name);
            let fident = format_ident!("{}", fname);
            let expr = default_expr(&ty, enum_name, default);
            defaults.push(quote! { pub(super) fn #fident() -> #rty { #expr } });
            let path = format!("defaults::{fname}");
            quote! { #[doc = #doc] #[serde(default = #path)] #lenient #schema_extra pub #ident: #rty, }
        } else if matches!(ty, ArgType::Array(_)) {
            quote! { #[doc = #doc] #[serde(default, skip_serializing_if = "Vec::is_empty")] #lenient #schema_extra pub #ident: #rty, }
        } else {
            // Optional without a default: absent is `None`. The schema still names
            // the bare type, because `null` is not an accepted value.
            let rty_str = rty.to_string().replace(' ', "");
            quote! {
                #[doc = #doc]
                #[serde(default, skip_serializing_if = "Option::is_none")]
                #[schemars(with = #rty_str)]
                #lenient
                #schema_extra
                pub #ident: ::std::option::Option<#rty>,
            }
        };
        fields.push(field);
    }
    (fields, defaults)
}

pub fn emit(table: &Table) -> String {
    let enums = enum_names(table);

    let enum_defs = enums.defs.iter().map(|(name, (values, doc))| {
        let ident = format_ident!("{}", name);
        let variants: Vec<_> = values.iter().map(|v| format_ident!("{}", camel(v))).collect();
        let strs = values.iter();
        let variants2 = variants.clone();
        let strs2 = values.iter();
        quote! {
            #[doc = #doc]
            #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, ::serde::Serialize, ::serde::Deserialize, ::schemars::JsonSchema)]
            pub enum #ident { #( #[serde(rename = #strs)] #variants, )* }
            impl #ident {
                /// The wire spelling.
                pub const fn as_str(self) -> &'static str {
                    match self { #( Self::#variants2 => #strs2, )* }
                }
            }
        }
    });

    let mut all_defaults = Vec::new();
    let shape_defs: Vec<_> = table
        .shape
        .iter()
        .map(|(name, shape)| {
            let ident = format_ident!("{}", name);
            let doc = &shape.doc;
            let (fields, defaults) = fields(table, name, &shape.fields, &enums);
            all_defaults.extend(defaults);
            closed_struct(&ident, doc, &fields)
        })
        .collect();

    let arg_defs: Vec<_> = table
        .tool
        .iter()
        .map(|tool| {
            let ident = format_ident!("{}Args", camel(&tool.name));
            let doc = format!("Arguments of `{}`.", tool.name);
            let (fields, defaults) = fields(table, &tool.name, &tool.args, &enums);
            all_defaults.extend(defaults);
            closed_struct(&ident, &doc, &fields)
        })
        .collect();

    let progress_variants: Vec<_> = table
        .progress
        .keys()
        .map(|k| format_ident!("{}", camel(k)))
        .collect();
    let progress_names: Vec<_> = table.progress.keys().collect();

    let count = table.tool.len();
    let variants: Vec<_> = table
        .tool
        .iter()
        .map(|t| format_ident!("{}", camel(&t.name)))
        .collect();
    let arg_types: Vec<_> = table
        .tool
        .iter()
        .map(|t| format_ident!("{}Args", camel(&t.name)))
        .collect();
    let methods: Vec<_> = table
        .tool
        .iter()
        .map(|t| format_ident!("{}", t.name))
        .collect();
    let names: Vec<_> = table.tool.iter().map(|t| t.name.as_str()).collect();
    let indices: Vec<_> = (0..count).collect();
    let result_types: Vec<_> = table
        .tool
        .iter()
        .map(|t| format_ident!("{}", t.result))
        .collect();
    let method_docs: Vec<_> = table
        .tool
        .iter()
        .map(|t| format!("`{}`: {}", t.name, t.description))
        .collect();
    // A tool with a `max_result_bytes` argument bounds its result by it, the
    // others by the server's cap.
    let result_limits: Vec<TokenStream> = table
        .tool
        .iter()
        .map(|t| {
            if t.own_bounds {
                quote! { crate::surface::Limit::Own }
            } else if t.args.iter().any(|a| a.name == "max_result_bytes") {
                quote! { crate::surface::Limit::Bytes(args.max_result_bytes) }
            } else {
                quote! { crate::surface::Limit::Bytes(None) }
            }
        })
        .collect();

    let specs = table.tool.iter().map(|tool| spec_tokens(table, tool));
    let path_arms: Vec<_> = table
        .tool
        .iter()
        .filter(|t| {
            t.args
                .iter()
                .any(|a| a.name == "path" && a.ty == "string" && a.required)
        })
        .map(|t| {
            let v = format_ident!("{}", camel(&t.name));
            quote!(ToolCall::#v(args) => Some(args.path.as_str()),)
        })
        .collect();

    // Tools whose required `workspace` argument is the Workspace shape.
    let workspace_arms: Vec<_> = table
        .tool
        .iter()
        .filter(|t| {
            t.args
                .iter()
                .any(|a| a.name == "workspace" && a.ty == "Workspace" && a.required)
        })
        .map(|t| {
            let v = format_ident!("{}", camel(&t.name));
            quote!(ToolCall::#v(args) => Some(&args.workspace),)
        })
        .collect();
    let workspace_fn = (!workspace_arms.is_empty()).then(|| {
        quote! {
            /// The `workspace` descriptor, for tools that take one.
            pub fn workspace(&self) -> Option<&Workspace> {
                match self {
                    #(#workspace_arms)*
                    _ => None,
                }
            }
        }
    });

    let catalog = serde_json::to_string(&schema::catalog(table)).expect("catalog json");
    let input_catalog_doc = "The `tools` array of a tools/list result as the table gives it \
        (names, descriptions, input schemas, annotations), serialized at build time; \
        build.rs renders each entry with its `outputSchema`, derived from its result type \
        (`surface::catalog_json`).";
    let schemas: Vec<String> = table
        .tool
        .iter()
        .map(|t| serde_json::to_string(&schema::input_schema(table, t)).expect("schema json"))
        .collect();

    let profiles = crate::profiles::tokens(table);
    let validators = crate::validators::tokens(table);
    let host_injected = &table.host_injected;

    let file = quote! {
        use crate::surface::{results, CallContext, ParseError, StatusNotice, ToolError, ToolOutcome};

        #(#enum_defs)*
        #(#shape_defs)*
        #(#arg_defs)*

        mod defaults {
            use super::*;
            #(#all_defaults)*
        }

        /// How a tool reports progress while it runs (the display-control matrix).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum ProgressClass { #(#progress_variants,)* }

        impl ProgressClass {
            pub const fn as_str(self) -> &'static str {
                match self { #(Self::#progress_variants => #progress_names,)* }
            }
        }

        /// Static facts about one tool, from the table.
        #[derive(Debug, Clone, Copy)]
        pub struct ToolSpec {
            pub name: &'static str,
            pub progress: ProgressClass,
            pub status_notice: StatusNotice,
            pub workspace_bound: bool,
            pub snapshot_bound: bool,
            pub cancellable: bool,
            pub fence: bool,
            pub read_only: bool,
        }

        /// Every tool, as a copyable identifier.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Tool { #(#variants,)* }

        /// The number of tools.
        pub const TOOL_COUNT: usize = #count;

        impl Tool {
            /// All tools, in tools/list order.
            pub const ALL: [Tool; #count] = [#(Tool::#variants,)*];

            pub const fn index(self) -> usize {
                match self { #(Tool::#variants => #indices,)* }
            }

            pub const fn name(self) -> &'static str {
                match self { #(Tool::#variants => #names,)* }
            }

            pub fn from_name(name: &str) -> Option<Tool> {
                match name { #(#names => Some(Tool::#variants),)* _ => None }
            }

            pub fn spec(self) -> &'static ToolSpec {
                &TOOL_SPECS[self.index()]
            }

            /// The JSON Schema of the tool's arguments.
            pub fn input_schema(self) -> &'static str {
                INPUT_SCHEMAS[self.index()]
            }

            /// The JSON Schema of the tool's structured result (its `outputSchema`),
            /// derived from the result type the table names.
            pub fn output_schema(self) -> ::serde_json::Value {
                match self {
                    #(Tool::#variants => results::output_schema::<results::#result_types>(),)*
                }
            }

            /// The schema schemars derives from the tool's argument struct. The
            /// emitted `input_schema` is what clients see; tests check that both
            /// accept and reject the same payloads.
            #[doc(hidden)]
            pub fn derived_schema(self) -> ::serde_json::Value {
                match self {
                    #(Tool::#variants => ::serde_json::to_value(::schemars::schema_for!(#arg_types))
                        .expect("derived schema serializes"),)*
                }
            }
        }

        pub static TOOL_SPECS: [ToolSpec; #count] = [#(#specs,)*];

        #[doc = #input_catalog_doc]
        pub const INPUT_CATALOG_JSON: &str = #catalog;

        /// Each tool's input schema (JSON Schema draft 2020-12), in tools/list order.
        pub const INPUT_SCHEMAS: [&str; #count] = [#(#schemas,)*];

        #validators

        #profiles

        /// A parsed, validated tool call.
        #[derive(Debug, Clone, PartialEq)]
        pub enum ToolCall { #(#variants(#arg_types),)* }

        impl ToolCall {
            pub const fn tool(&self) -> Tool {
                match self { #(ToolCall::#variants(_) => Tool::#variants,)* }
            }

            /// The `path` argument, for tools that take one (used in status notices).
            pub fn path(&self) -> Option<&str> {
                match self {
                    #(#path_arms)*
                    _ => None,
                }
            }

            #workspace_fn
        }

        /// Arguments hosts inject into every call (`host_injected` in the
        /// table): no tool declares one, and each is dropped before validation.
        pub const HOST_INJECTED: &[&str] = &[#(#host_injected),*];

        /// Parse and validate `arguments` (absent means `{}`) for the tool `name`.
        pub fn parse(name: &str, arguments: Option<::serde_json::Value>) -> Result<ToolCall, ParseError> {
            let tool = Tool::from_name(name).ok_or_else(|| ParseError::UnknownTool(name.to_string()))?;
            let mut arguments = arguments.unwrap_or_else(|| ::serde_json::Value::Object(::serde_json::Map::new()));
            if let ::serde_json::Value::Object(members) = &mut arguments {
                for injected in HOST_INJECTED {
                    members.remove(*injected);
                }
            }
            crate::surface::validate::run(VALIDATORS[tool.index()], &arguments)?;
            let call = match tool {
                #(Tool::#variants => ::serde_json::from_value(arguments).map(ToolCall::#variants),)*
            };
            call.map_err(ParseError::from_serde)
        }

        /// One method per tool, returning the tool's typed result; the
        /// hand-written operations implement it, so a tool missing from the
        /// implementation does not compile.
        pub trait Operations: Send + Sync {
            #(
                #[doc = #method_docs]
                fn #methods(&self, ctx: &CallContext, args: #arg_types)
                    -> impl ::std::future::Future<Output = Result<results::#result_types, ToolError>> + Send;
            )*
        }

        /// What the protocol layer calls: a parsed call in, its structured
        /// content (or tool error) out. Every [`Operations`] is a handler, its
        /// typed result serialized here; a test double that answers every tool
        /// alike implements this one method instead.
        pub trait Handler: Send + Sync {
            fn handle(&self, ctx: &CallContext, call: ToolCall)
                -> impl ::std::future::Future<Output = ToolOutcome> + Send;
        }

        impl<O: Operations + ?Sized> Handler for O {
            async fn handle(&self, ctx: &CallContext, call: ToolCall) -> ToolOutcome {
                match call {
                    #(ToolCall::#variants(args) => {
                        let limit = #result_limits;
                        crate::surface::structured(&self.#methods(ctx, args).await?, limit)
                    })*
                }
            }
        }

        /// `for_each_tool!(callback)` expands to
        /// `callback! { method: ArgsType => ResultType, ... }` over every tool in
        /// table order, so that test doubles and benchmarks can implement
        /// `Operations` without a hand-kept list of the tools.
        #[doc(hidden)]
        #[macro_export]
        macro_rules! for_each_tool {
            ($callback:ident) => {
                $callback! { #(#methods: $crate::surface::#arg_types => $crate::surface::results::#result_types,)* }
            };
        }
    };

    let syntax: syn::File = syn::parse2(file).expect("generated code parses");
    let header = "// @generated by lean-beam-codegen from operations.toml. Do not edit: change\n\
                  // the table; the checked-in copy (tests/golden/operations.rs) is refreshed\n\
                  // with `UPDATE_EXPECT=1 cargo test golden`.\n\n";
    format!("{header}{}", prettyplease::unparse(&syntax))
}

/// The Rust doc of an argument: its own, its shape's, or its name.
fn arg_doc(table: &Table, arg: &Arg) -> String {
    arg.doc
        .clone()
        .or_else(|| table.shape.get(&arg.ty).map(|shape| shape.doc.clone()))
        .unwrap_or_else(|| format!("`{}`.", arg.name))
}

/// A closed argument struct: serde rejects undeclared fields, schemars derives
/// the schema the agreement test compares with the emitted one.
fn closed_struct(ident: &proc_macro2::Ident, doc: &str, fields: &[TokenStream]) -> TokenStream {
    quote! {
        #[doc = #doc]
        #[derive(Debug, Clone, PartialEq, ::serde::Serialize, ::serde::Deserialize, ::schemars::JsonSchema)]
        #[serde(deny_unknown_fields)]
        pub struct #ident { #(#fields)* }
    }
}

fn spec_tokens(table: &Table, tool: &Tool) -> TokenStream {
    let name = &tool.name;
    let progress = format_ident!("{}", camel(&tool.progress));
    let notice = match table.progress[&tool.progress].status_notice {
        StatusNotice::Never => quote!(StatusNotice::Never),
        StatusNotice::AfterDelay => quote!(StatusNotice::AfterDelay),
        StatusNotice::OnSetupOrDelay => quote!(StatusNotice::OnSetupOrDelay),
    };
    let workspace_bound = tool.workspace_bound;
    let snapshot_bound = tool.snapshot_bound;
    let cancellable = tool.cancellable;
    let fence = tool.fence;
    let read_only = tool.read_only;
    quote! {
        ToolSpec {
            name: #name,
            progress: ProgressClass::#progress,
            status_notice: #notice,
            workspace_bound: #workspace_bound,
            snapshot_bound: #snapshot_bound,
            cancellable: #cancellable,
            fence: #fence,
            read_only: #read_only,
        }
    }
}
