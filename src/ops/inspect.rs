//! Inspection and navigation tools: hover, signature help, definition,
//! references, symbols, goals and code-action resolution.

use serde::Serialize;
use serde_json::{Map, Value, json};

use super::typed;
use crate::broker::Broker;
use crate::broker::goals;
use crate::broker::shadow;
use crate::broker::snapshot::{self, Bound, DocAnswer};
use crate::broker::workspace::{self, Root};
use crate::lsp::uri::uri_to_path;
use crate::surface::{CallContext, GoalsMode, ToolOutcome, Workspace};

/// Lean's answer, under one key named for what it is.
#[derive(Debug, Serialize)]
#[serde(rename_all = "snake_case")]
enum Lsp {
    /// `textDocument/hover`: an LSP `Hover` or null.
    Hover(Value),
    /// `textDocument/signatureHelp`: an LSP `SignatureHelp` or null.
    SignatureHelp(Value),
    /// `textDocument/definition` and `references`: LSP locations or links.
    Locations(Value),
    /// `textDocument/documentSymbol` and `workspace/symbol`, kinds named.
    Symbols(Value),
}

/// A navigation answer about a pinned version.
#[derive(Debug, Serialize)]
struct DocLsp {
    #[serde(flatten)]
    doc: DocAnswer,
    #[serde(flatten)]
    answer: Lsp,
}

/// A workspace-wide answer (no document).
#[derive(Debug, Serialize)]
struct WorkspaceLsp {
    workspace: Value,
    #[serde(flatten)]
    answer: Lsp,
}

/// LSP `SymbolKind` numbers by name, in the protocol's order (1 = file).
const SYMBOL_KINDS: [&str; 26] = [
    "file",
    "module",
    "namespace",
    "package",
    "class",
    "method",
    "property",
    "field",
    "constructor",
    "enum",
    "interface",
    "function",
    "variable",
    "constant",
    "string",
    "number",
    "boolean",
    "array",
    "object",
    "key",
    "null",
    "enum_member",
    "struct",
    "event",
    "operator",
    "type_parameter",
];

/// Replace every symbol's LSP `kind` number by its name (nested `children`
/// too); a number outside the protocol's list stays as it is.
fn name_symbol_kinds(value: &mut Value) {
    match value {
        Value::Array(items) => items.iter_mut().for_each(name_symbol_kinds),
        Value::Object(map) => {
            let name = map
                .get("kind")
                .and_then(Value::as_u64)
                .and_then(|k| SYMBOL_KINDS.get((k as usize).wrapping_sub(1)));
            if let Some(name) = name {
                map.insert("kind".into(), Value::from(*name));
            }
            if let Some(children) = map.get_mut("children") {
                name_symbol_kinds(children);
            }
        }
        _ => {}
    }
}

/// Next to every `uri`/`targetUri` naming a file, add `path`/`targetPath`:
/// relative to the workspace root when inside it, else absolute.
pub fn add_paths(root: &Root, value: &mut Value) {
    match value {
        Value::Object(map) => {
            let mut added = Map::new();
            for (key, target) in [("uri", "path"), ("targetUri", "targetPath")] {
                if let Some(path) = map.get(key).and_then(Value::as_str).and_then(uri_to_path) {
                    added.insert(
                        target.to_string(),
                        Value::String(workspace::shown_path(root, &path)),
                    );
                }
            }
            for v in map.values_mut() {
                add_paths(root, v);
            }
            map.extend(added);
        }
        Value::Array(items) => {
            // Shadow documents are the broker's own: never show them.
            items.retain(|v| !names_shadow(v));
            items.iter_mut().for_each(|v| add_paths(root, v));
        }
        _ => {}
    }
}

/// Whether a location-like value points into a shadow document.
fn names_shadow(value: &Value) -> bool {
    ["/uri", "/targetUri", "/location/uri"]
        .iter()
        .filter_map(|p| value.pointer(p).and_then(Value::as_str))
        .any(shadow::is_shadow_uri)
}

/// A position in a pinned document version, as the snapshot-bound tools name it.
pub struct At<'a> {
    pub workspace: &'a Workspace,
    pub path: &'a str,
    pub version: u64,
    pub line: u64,
    pub character: u64,
}

/// Every tool argument type that names a position of a pinned version.
macro_rules! at_position_args {
    ($($args:ty),* $(,)?) => {$(
        impl<'a> From<&'a $args> for At<'a> {
            fn from(args: &'a $args) -> Self {
                At {
                    workspace: &args.workspace,
                    path: &args.path,
                    version: args.version,
                    line: args.line,
                    character: args.character,
                }
            }
        }
    )*};
}

at_position_args!(
    crate::surface::LeanHoverArgs,
    crate::surface::LeanSignatureHelpArgs,
    crate::surface::LeanDefinitionArgs,
    crate::surface::LeanReferencesArgs,
    crate::surface::LeanGoalsArgs,
);

/// A request at a checked position of the pinned version; `line_text` for
/// the answers that show the addressed line.
async fn at_position(
    broker: &Broker,
    ctx: &CallContext,
    at: &At<'_>,
    method: &str,
    extra: Option<(&str, Value)>,
    line_text: bool,
    wrap: fn(Value) -> Lsp,
) -> ToolOutcome {
    let bound = snapshot::bind(broker, ctx, at.workspace, at.path, at.version).await?;
    bound.check_position(at.line, at.character)?;
    let mut params = bound.position_params(at.line, at.character);
    if let Some((key, value)) = extra {
        params[key] = value;
    }
    let (answer, disk_changed) = tokio::join!(bound.request(method, params), bound.disk_changed());
    let mut answer = answer?;
    add_paths(&bound.rt.root, &mut answer);
    typed(&DocLsp {
        doc: bound.answer(line_text.then_some(at.line), disk_changed),
        answer: wrap(answer),
    })
}

pub async fn hover(broker: &Broker, ctx: &CallContext, at: &At<'_>) -> ToolOutcome {
    at_position(
        broker,
        ctx,
        at,
        "textDocument/hover",
        None,
        true,
        Lsp::Hover,
    )
    .await
}

pub async fn signature_help(broker: &Broker, ctx: &CallContext, at: &At<'_>) -> ToolOutcome {
    let context = json!({ "triggerKind": 1, "isRetrigger": false });
    at_position(
        broker,
        ctx,
        at,
        "textDocument/signatureHelp",
        Some(("context", context)),
        false,
        Lsp::SignatureHelp,
    )
    .await
}

pub async fn definition(broker: &Broker, ctx: &CallContext, at: &At<'_>) -> ToolOutcome {
    at_position(
        broker,
        ctx,
        at,
        "textDocument/definition",
        None,
        false,
        Lsp::Locations,
    )
    .await
}

pub async fn references(
    broker: &Broker,
    ctx: &CallContext,
    at: &At<'_>,
    include_declaration: bool,
) -> ToolOutcome {
    let context = json!({ "includeDeclaration": include_declaration });
    at_position(
        broker,
        ctx,
        at,
        "textDocument/references",
        Some(("context", context)),
        false,
        Lsp::Locations,
    )
    .await
}

pub async fn document_symbols(
    broker: &Broker,
    ctx: &CallContext,
    ws: &Workspace,
    path: &str,
    version: u64,
    signatures: bool,
) -> ToolOutcome {
    let bound = snapshot::bind(broker, ctx, ws, path, version).await?;
    let request = bound.request(
        "textDocument/documentSymbol",
        json!({ "textDocument": bound.text_document() }),
    );
    let (answer, disk_changed) = tokio::join!(request, bound.disk_changed());
    let mut answer = answer?;
    add_paths(&bound.rt.root, &mut answer);
    name_symbol_kinds(&mut answer);
    if signatures {
        crate::broker::signatures::annotate(&bound, &mut answer).await?;
    }
    typed(&DocLsp {
        doc: bound.answer(None, disk_changed),
        answer: Lsp::Symbols(answer),
    })
}

pub async fn workspace_symbols(broker: &Broker, ws: &Workspace, query: &str) -> ToolOutcome {
    let root = broker.resolve_root(ws)?;
    let rt = broker.runtime(&root).await?;
    rt.record_request();
    let session = rt.session().await?;
    let mut answer = rt
        .request(&session, "workspace/symbol", json!({ "query": query }))
        .await?;
    add_paths(&root, &mut answer);
    name_symbol_kinds(&mut answer);
    typed(&WorkspaceLsp {
        workspace: root.descriptor(),
        answer: Lsp::Symbols(answer),
    })
}

/// The goals at a position.
#[derive(Debug, Serialize)]
struct GoalsAnswer {
    #[serde(flatten)]
    doc: DocAnswer,
    mode: &'static str,
    position: Value,
    source: &'static str,
    goals: Vec<Value>,
}

pub async fn goals(
    broker: &Broker,
    ctx: &CallContext,
    at: &At<'_>,
    mode: GoalsMode,
) -> ToolOutcome {
    let (line, character, version) = (at.line, at.character, at.version);
    let bound: Bound = snapshot::bind(broker, ctx, at.workspace, at.path, version).await?;
    bound.check_position(line, character)?;
    let line_text = bound.line_text(line).unwrap_or("");
    let query = goals::query_position(line_text, character as usize, mode) as u64;
    let target = bound.target();
    let (found, disk_changed) =
        tokio::join!(goals::goals(&target, line, query), bound.disk_changed());
    let (goals, source) = found?;
    typed(&GoalsAnswer {
        doc: bound.answer(Some(line), disk_changed),
        mode: mode.as_str(),
        position: json!({ "line": line, "character": query }),
        source: source.as_str(),
        goals,
    })
}

/// A resolved code action, returned to be applied by the client.
#[derive(Debug, Serialize)]
struct Resolved {
    #[serde(flatten)]
    doc: DocAnswer,
    code_action: Value,
    applied: bool,
    note: &'static str,
}

pub async fn code_action_resolve(
    broker: &Broker,
    ctx: &CallContext,
    ws: &Workspace,
    path: &str,
    version: u64,
    code_action: &Map<String, Value>,
) -> ToolOutcome {
    let bound = snapshot::bind(broker, ctx, ws, path, version).await?;
    let request = bound.request("codeAction/resolve", Value::Object(code_action.clone()));
    let (answer, disk_changed) = tokio::join!(request, bound.disk_changed());
    let mut resolved = answer?;
    add_paths(&bound.rt.root, &mut resolved);
    typed(&Resolved {
        doc: bound.answer(None, disk_changed),
        code_action: resolved,
        applied: false,
        note: "The edit is not applied: apply it with your editor tool, then call lean_update or lean_sync.",
    })
}
