//! Inspection and navigation at a pinned version: hover, signature help,
//! definition, references, symbols, goals and code-action resolution.
//! Lean's answers pass to agents as Lean gave them, with paths added next
//! to URIs and the broker's shadow documents left out.

use lsp_types::request::{
    DocumentSymbolRequest, GotoDefinition, HoverRequest, Request, SignatureHelpRequest,
    WorkspaceSymbolRequest,
};
use lsp_types::{
    DocumentSymbolParams, GotoDefinitionParams, HoverParams, ReferenceContext, ReferenceParams,
    SignatureHelpContext, SignatureHelpParams, SignatureHelpTriggerKind,
    TextDocumentPositionParams, WorkspaceSymbolParams,
};
use serde_json::{Map, Value};

use super::goals;
use crate::broker::ask::{At, GoalsMode};
use crate::broker::ask::{Pinned, References, Signatures};
use crate::broker::engine::runtimes::Runtimes;
use crate::broker::engine::snapshot::Bound;
use crate::broker::engine::workspace::{self, Root};
use crate::broker::error::Result;
use crate::broker::progress::ProgressSink;
use crate::lsp::protocol::ResolveCodeAction;
use crate::lsp::uri::uri_to_path;
use crate::results::passthrough::present;
use crate::results::{
    CodeActionResult, DocHead, DocumentSymbolsResult, GoalsResult, GoalsSide, HoverResult,
    LocationsResult, Position, SignatureHelpResult, WorkspaceSymbolsResult,
};

/// The head of an answer about the pinned version; `line` names the
/// addressed line of a position-bound answer.
pub(super) fn head(bound: &Bound<'_>, line: Option<u64>, disk_changed: bool) -> DocHead {
    DocHead {
        workspace: bound.rt.root.descriptor(),
        path: bound.doc.path.shown.clone(),
        version: bound.state.version,
        line_text: line.and_then(|l| bound.line_text(l)).map(str::to_owned),
        disk_changed,
    }
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
pub(super) fn add_paths(root: &Root, value: &mut Value) {
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
        .any(crate::broker::engine::document::is_shadow_uri)
}

/// Whether a result at a position echoes the text of the line it addressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LineText {
    Echo,
    Omit,
}

/// A request at a checked position of the pinned version: the document's
/// head (with `line_text` when asked) and Lean's answer, paths added.
/// `params` makes the request's params from the position.
async fn at_position<R: Request>(
    broker: &Runtimes,
    sink: &dyn ProgressSink,
    at: &At<'_>,
    params: impl FnOnce(TextDocumentPositionParams) -> R::Params,
    line_text: LineText,
) -> Result<(DocHead, Value)> {
    let bound = broker.bind(sink, at.workspace, at.path, at.version).await?;
    bound.check_position(at.line, at.character)?;
    let params = params(bound.position(at.line, at.character)?);
    let (answer, disk_changed) =
        tokio::join!(bound.request_verbatim::<R>(params), bound.disk_changed());
    let mut answer = answer?;
    add_paths(&bound.rt.root, &mut answer);
    Ok((
        head(
            &bound,
            (line_text == LineText::Echo).then_some(at.line),
            disk_changed,
        ),
        answer,
    ))
}

impl Runtimes {
    pub async fn hover(&self, sink: &dyn ProgressSink, at: &At<'_>) -> Result<HoverResult> {
        let params = |position| HoverParams {
            text_document_position_params: position,
            work_done_progress_params: Default::default(),
        };
        let (head, hover) =
            at_position::<HoverRequest>(self, sink, at, params, LineText::Echo).await?;
        Ok(HoverResult {
            head,
            hover: present(hover),
        })
    }

    pub async fn signature_help(
        &self,
        sink: &dyn ProgressSink,
        at: &At<'_>,
    ) -> Result<SignatureHelpResult> {
        let params = |position| SignatureHelpParams {
            context: Some(SignatureHelpContext {
                trigger_kind: SignatureHelpTriggerKind::INVOKED,
                trigger_character: None,
                is_retrigger: false,
                active_signature_help: None,
            }),
            text_document_position_params: position,
            work_done_progress_params: Default::default(),
        };
        let (head, signature_help) =
            at_position::<SignatureHelpRequest>(self, sink, at, params, LineText::Omit).await?;
        Ok(SignatureHelpResult {
            head,
            signature_help: present(signature_help),
        })
    }

    pub async fn definition(
        &self,
        sink: &dyn ProgressSink,
        at: &At<'_>,
    ) -> Result<LocationsResult> {
        let params = |position| GotoDefinitionParams {
            text_document_position_params: position,
            work_done_progress_params: Default::default(),
            partial_result_params: Default::default(),
        };
        let (head, locations) =
            at_position::<GotoDefinition>(self, sink, at, params, LineText::Omit).await?;
        Ok(LocationsResult {
            head,
            locations: present(locations),
        })
    }

    pub async fn references(
        &self,
        sink: &dyn ProgressSink,
        at: &At<'_>,
        which: References,
    ) -> Result<LocationsResult> {
        let params = |position| ReferenceParams {
            text_document_position: position,
            work_done_progress_params: Default::default(),
            partial_result_params: Default::default(),
            context: ReferenceContext {
                include_declaration: which == References::WithDeclaration,
            },
        };
        let (head, locations) =
            at_position::<lsp_types::request::References>(self, sink, at, params, LineText::Omit)
                .await?;
        Ok(LocationsResult {
            head,
            locations: present(locations),
        })
    }

    pub async fn document_symbols(
        &self,
        sink: &dyn ProgressSink,
        pinned: &Pinned<'_>,
        signatures: Signatures,
    ) -> Result<DocumentSymbolsResult> {
        let bound = self
            .bind(sink, pinned.workspace, pinned.path, pinned.version)
            .await?;
        let request = bound.request_verbatim::<DocumentSymbolRequest>(DocumentSymbolParams {
            text_document: bound.identifier()?,
            work_done_progress_params: Default::default(),
            partial_result_params: Default::default(),
        });
        let (answer, disk_changed) = tokio::join!(request, bound.disk_changed());
        let mut symbols = answer?;
        add_paths(&bound.rt.root, &mut symbols);
        name_symbol_kinds(&mut symbols);
        if signatures == Signatures::Added {
            super::signatures::annotate(&bound, &mut symbols).await?;
        }
        Ok(DocumentSymbolsResult {
            head: head(&bound, None, disk_changed),
            symbols: present(symbols),
        })
    }

    pub async fn workspace_symbols(
        &self,
        workspace: &str,
        query: &str,
    ) -> Result<WorkspaceSymbolsResult> {
        let root = self.resolve_root(workspace)?;
        let rt = self.runtime(&root).await?;
        rt.record_request();
        let server = rt.server().await?;
        let mut symbols = server
            .request_verbatim::<WorkspaceSymbolRequest>(WorkspaceSymbolParams {
                query: query.to_owned(),
                work_done_progress_params: Default::default(),
                partial_result_params: Default::default(),
            })
            .await?;
        add_paths(&root, &mut symbols);
        name_symbol_kinds(&mut symbols);
        Ok(WorkspaceSymbolsResult {
            workspace: root.descriptor(),
            symbols: present(symbols),
        })
    }

    pub async fn goals(
        &self,
        sink: &dyn ProgressSink,
        at: &At<'_>,
        mode: GoalsMode,
    ) -> Result<GoalsResult> {
        let (line, character, version) = (at.line, at.character, at.version);
        let bound: Bound = self.bind(sink, at.workspace, at.path, version).await?;
        bound.check_position(line, character)?;
        let line_text = bound.line_text(line).unwrap_or("");
        let query = goals::query_position(line_text, character as usize, mode) as u64;
        let target = bound.target();
        let (found, disk_changed) =
            tokio::join!(goals::goals(&target, line, query), bound.disk_changed());
        let (goals, source) = found?;
        // Lean answers "no goals" anywhere in a file whose header failed.
        if let Some(failed) = goals.is_empty().then(|| bound.header_failure()).flatten() {
            return Err(failed);
        }
        Ok(GoalsResult {
            declaration: None,
            head: head(&bound, Some(line), disk_changed),
            mode: match mode {
                GoalsMode::Before => GoalsSide::Before,
                GoalsMode::After => GoalsSide::After,
            },
            position: Position {
                line: line as u32,
                character: query as u32,
            },
            source,
            goals,
        })
    }

    pub async fn code_action_resolve(
        &self,
        sink: &dyn ProgressSink,
        pinned: &Pinned<'_>,
        code_action: &Map<String, Value>,
    ) -> Result<CodeActionResult> {
        let bound = self
            .bind(sink, pinned.workspace, pinned.path, pinned.version)
            .await?;
        let request = bound.request_verbatim::<ResolveCodeAction>(code_action.clone());
        let (answer, disk_changed) = tokio::join!(request, bound.disk_changed());
        let mut resolved = answer?;
        add_paths(&bound.rt.root, &mut resolved);
        Ok(CodeActionResult {
            head: head(&bound, None, disk_changed),
            code_action: resolved,
            applied: false,
            note: "The edit is not applied: apply it with your editor tool, then call lean_update or lean_sync.".to_owned(),
        })
    }
}
