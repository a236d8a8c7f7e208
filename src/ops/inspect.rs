//! Inspection and navigation tools: hover, signature help, definition,
//! references, symbols, goals and code-action resolution.

use serde_json::{Map, Value, json};

use crate::broker::Broker;
use crate::broker::goals;
use crate::broker::shadow;
use crate::broker::snapshot::{self, Bound};
use crate::broker::workspace::{self, Root};
use crate::lsp::uri::uri_to_path;
use crate::surface::{GoalsMode, ToolOutcome, Workspace};

/// Lean's answer as the tool result: objects as they are, anything else wrapped
/// as `{result: …}`; `file://` locations gain a workspace-relative `path`.
fn lsp_result(root: &Root, mut answer: Value) -> Value {
    add_paths(root, &mut answer);
    match answer {
        Value::Object(_) => answer,
        other => json!({ "result": other }),
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

/// A request at a checked position of the pinned version.
async fn at_position(
    broker: &Broker,
    at: &At<'_>,
    method: &str,
    extra: Option<(&str, Value)>,
) -> ToolOutcome {
    let bound = snapshot::bind(broker, at.workspace, at.path, at.version).await?;
    bound.check_position(at.line, at.character)?;
    let mut params = bound.position_params(at.line, at.character);
    if let Some((key, value)) = extra {
        params[key] = value;
    }
    let answer = bound.request(method, params).await?;
    Ok(lsp_result(&bound.rt.root, answer))
}

pub async fn hover(broker: &Broker, at: &At<'_>) -> ToolOutcome {
    at_position(broker, at, "textDocument/hover", None).await
}

pub async fn signature_help(broker: &Broker, at: &At<'_>) -> ToolOutcome {
    let context = json!({ "triggerKind": 1, "isRetrigger": false });
    at_position(
        broker,
        at,
        "textDocument/signatureHelp",
        Some(("context", context)),
    )
    .await
}

pub async fn definition(broker: &Broker, at: &At<'_>) -> ToolOutcome {
    at_position(broker, at, "textDocument/definition", None).await
}

pub async fn references(broker: &Broker, at: &At<'_>, include_declaration: bool) -> ToolOutcome {
    let context = json!({ "includeDeclaration": include_declaration });
    at_position(
        broker,
        at,
        "textDocument/references",
        Some(("context", context)),
    )
    .await
}

pub async fn document_symbols(
    broker: &Broker,
    ws: &Workspace,
    path: &str,
    version: u64,
) -> ToolOutcome {
    let bound = snapshot::bind(broker, ws, path, version).await?;
    let answer = bound
        .request(
            "textDocument/documentSymbol",
            json!({ "textDocument": bound.text_document() }),
        )
        .await?;
    Ok(lsp_result(&bound.rt.root, answer))
}

pub async fn workspace_symbols(broker: &Broker, ws: &Workspace, query: &str) -> ToolOutcome {
    let root = broker.resolve_root(ws)?;
    let rt = broker.runtime(&root).await?;
    rt.record_request();
    let session = rt.session().await?;
    let answer = rt
        .request(&session, "workspace/symbol", json!({ "query": query }))
        .await?;
    Ok(lsp_result(&root, answer))
}

pub async fn goals(broker: &Broker, at: &At<'_>, mode: GoalsMode) -> ToolOutcome {
    let (line, character, version) = (at.line, at.character, at.version);
    let bound: Bound = snapshot::bind(broker, at.workspace, at.path, version).await?;
    let offset = bound.check_position(line, character)?;
    let text = &bound.state.text;
    let line_start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
    let line_end = text[offset..].find('\n').map_or(text.len(), |i| offset + i);
    let line_text = text[line_start..line_end].trim_end_matches('\r');
    let query = goals::query_position(line_text, character as usize, mode) as u64;
    let (goals, source) = goals::goals(&bound.target(), line, query).await?;
    Ok(json!({
        "workspace": bound.rt.root.descriptor(),
        "path": bound.doc.path.shown,
        "version": version,
        "mode": mode.as_str(),
        "position": { "line": line, "character": query },
        "source": source.as_str(),
        "goals": goals,
    }))
}

pub async fn code_action_resolve(
    broker: &Broker,
    ws: &Workspace,
    path: &str,
    version: u64,
    code_action: &Map<String, Value>,
) -> ToolOutcome {
    let bound = snapshot::bind(broker, ws, path, version).await?;
    let answer = bound
        .request("codeAction/resolve", Value::Object(code_action.clone()))
        .await?;
    let mut resolved = answer;
    add_paths(&bound.rt.root, &mut resolved);
    Ok(json!({
        "workspace": bound.rt.root.descriptor(),
        "path": bound.doc.path.shown,
        "version": version,
        "code_action": resolved,
        "applied": false,
        "note": "The edit is not applied: apply it with your editor tool, then call lean_update or lean_sync.",
    }))
}
