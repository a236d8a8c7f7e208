//! Lean's protocol as types: its LSP extensions as [`lsp_types`] requests and
//! notifications (sent with [`super::LspClient::request_typed`] and
//! [`super::LspClient::notify_typed`]), the error codes it answers with, and
//! borrowed views of what it publishes.
//!
//! Shapes as in Lean 4.35 (`Lean/Data/Lsp/Extra.lean`, `Lean/Data/JsonRpc.lean`,
//! `Lean/Server/Rpc/`). URIs stay `String`s, exactly as on the wire (see
//! [`super::uri`]); positions are LSP positions (0-based line, UTF-16
//! `character`).

use lsp_types::notification::Notification;
use lsp_types::request::Request;
use lsp_types::{Position, Range};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

mod diagnostics;
mod error_code;

pub use diagnostics::{Diagnostic, LeanDiagnostic, LeanDiagnosticTag, PublishedDiagnostics};
pub use error_code::LeanErrorCode;

// ---------------------------------------------------------------- requests --

/// `textDocument/waitForDiagnostics`: answered (`{}`) once every diagnostic
/// of a version ≥ `version` is out, at once for an older version. Blocks
/// indefinitely for a version the server has not received yet; a request on
/// a closed file fails with [`LeanErrorCode::ContentModified`].
pub enum WaitForDiagnostics {}

impl Request for WaitForDiagnostics {
    type Params = WaitForDiagnosticsParams;
    /// `{}`: the answer carries nothing but its arrival.
    type Result = Value;
    const METHOD: &'static str = "textDocument/waitForDiagnostics";
}

/// `$/lean/plainGoal`: the tactic goals at a position, `None` outside tactic
/// blocks. At a tactic's first character the goals before it, inside or
/// after it the goals after it.
pub enum PlainGoal {}

impl Request for PlainGoal {
    type Params = DocumentPositionParams;
    type Result = Option<PlainGoalResult>;
    const METHOD: &'static str = "$/lean/plainGoal";
}

/// `$/lean/plainTermGoal`: the expected type of the term at a position.
pub enum PlainTermGoal {}

impl Request for PlainTermGoal {
    type Params = DocumentPositionParams;
    type Result = Option<PlainTermGoalResult>;
    const METHOD: &'static str = "$/lean/plainTermGoal";
}

/// `$/lean/rpc/connect`: a new RPC session with the worker of a document.
pub enum RpcConnect {}

impl Request for RpcConnect {
    type Params = RpcConnectParams;
    type Result = RpcConnected;
    const METHOD: &'static str = "$/lean/rpc/connect";
}

/// `$/lean/rpc/call`: run a server-side RPC method (e.g.
/// [`GET_INTERACTIVE_GOALS`]) at a position of a document.
pub enum RpcCall {}

impl Request for RpcCall {
    type Params = RpcCallParams;
    /// The method's own result.
    type Result = Value;
    const METHOD: &'static str = "$/lean/rpc/call";
}

/// RPC method (in [`RpcCallParams::method`]): the structured goals at a
/// position, `{"goals": [InteractiveGoal]}`.
pub const GET_INTERACTIVE_GOALS: &str = "Lean.Widget.getInteractiveGoals";

/// `textDocument/codeAction` with the diagnostics of the context exactly as
/// Lean published them (`fullRange`, `leanTags` and all), which
/// `lsp_types::Diagnostic` would not keep.
pub enum CodeActionQuery {}

impl Request for CodeActionQuery {
    type Params = CodeActionQueryParams;
    type Result = Value;
    const METHOD: &'static str = "textDocument/codeAction";
}

/// `codeAction/resolve` of an action Lean offered, handed back whole (its
/// `data` is Lean's own, for the resolution).
pub enum ResolveCodeAction {}

impl Request for ResolveCodeAction {
    type Params = serde_json::Map<String, Value>;
    type Result = Value;
    const METHOD: &'static str = "codeAction/resolve";
}

/// `completionItem/resolve` of an item Lean offered, handed back whole.
pub enum ResolveCompletionItem {}

impl Request for ResolveCompletionItem {
    type Params = Value;
    type Result = Value;
    const METHOD: &'static str = "completionItem/resolve";
}

// ----------------------------------------------------------- notifications --

/// `$/lean/rpc/release`: give back references an RPC answer handed out.
pub enum RpcRelease {}

impl Notification for RpcRelease {
    type Params = RpcReleaseParams;
    const METHOD: &'static str = "$/lean/rpc/release";
}

/// `$/lean/rpc/keepAlive`: at least every 10 s per session, or Lean drops it
/// (calls then fail with [`LeanErrorCode::RpcNeedsReconnect`]).
pub enum RpcKeepAlive {}

impl Notification for RpcKeepAlive {
    type Params = RpcKeepAliveParams;
    const METHOD: &'static str = "$/lean/rpc/keepAlive";
}

/// `$/lean/fileProgress` (server → client): the ranges of a version still
/// being processed; an empty list means done. Delivered as
/// [`super::ServerEvent::FileProgress`].
pub enum FileProgress {}

impl Notification for FileProgress {
    type Params = FileProgressParams;
    const METHOD: &'static str = "$/lean/fileProgress";
}

// ------------------------------------------------------------------ params --

/// `{uri}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TextDocumentId {
    pub uri: String,
}

/// `{uri, version}`; `version` may be absent or `null` on the wire.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VersionedTextDocumentId {
    pub uri: String,
    #[serde(default)]
    pub version: Option<i32>,
}

/// `TextDocumentPositionParams` with the URI as sent: `{textDocument:{uri}, position}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DocumentPositionParams {
    pub text_document: TextDocumentId,
    pub position: Position,
}

impl DocumentPositionParams {
    pub fn new(uri: impl Into<String>, line: u32, character: u32) -> Self {
        DocumentPositionParams {
            text_document: TextDocumentId { uri: uri.into() },
            position: Position { line, character },
        }
    }
}

/// Params of [`CodeActionQuery`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CodeActionQueryParams {
    pub text_document: TextDocumentId,
    pub range: Range,
    pub context: CodeActionQueryContext,
}

/// The context of a [`CodeActionQuery`]: the diagnostics it is about, as
/// Lean published them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CodeActionQueryContext {
    pub diagnostics: Vec<Diagnostic>,
    /// `1`: asked for (LSP `CodeActionTriggerKind.Invoked`).
    pub trigger_kind: u32,
}

/// Params of [`WaitForDiagnostics`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WaitForDiagnosticsParams {
    pub uri: String,
    pub version: i32,
}

/// Answer of [`PlainGoal`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlainGoalResult {
    /// Markdown, `"no goals"` when closed.
    pub rendered: String,
    /// One pretty-printed goal each (`case …\nhyps\n⊢ target`); empty when closed.
    pub goals: Vec<String>,
}

/// Answer of [`PlainTermGoal`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlainTermGoalResult {
    /// `hyps\n⊢ expected type`.
    pub goal: String,
    /// The term the goal is for.
    pub range: Range,
}

/// An RPC session id. Lean declares it `UInt64` and 4.35 sends it as a JSON
/// string; this accepts a string or a number and always sends a string back.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RpcSessionId(pub String);

impl Serialize for RpcSessionId {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for RpcSessionId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Value::deserialize(d)? {
            Value::String(s) => Ok(RpcSessionId(s)),
            Value::Number(n) if n.is_u64() => Ok(RpcSessionId(n.to_string())),
            other => Err(serde::de::Error::custom(format!(
                "bad RPC session id {other}"
            ))),
        }
    }
}

/// Params of [`RpcConnect`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RpcConnectParams {
    pub uri: String,
}

/// Answer of [`RpcConnect`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RpcConnected {
    pub session_id: RpcSessionId,
}

/// Params of [`RpcCall`]: run `method` (fully qualified) with `params` in the
/// environment at `position` of the document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RpcCallParams {
    pub text_document: TextDocumentId,
    pub position: Position,
    pub session_id: RpcSessionId,
    pub method: String,
    pub params: Value,
}

impl RpcCallParams {
    /// A call of `method` whose params are the position itself (such as
    /// [`GET_INTERACTIVE_GOALS`]) at `position`.
    pub fn at_position(
        uri: &str,
        position: Position,
        session_id: RpcSessionId,
        method: &str,
    ) -> Self {
        RpcCallParams {
            text_document: TextDocumentId {
                uri: uri.to_owned(),
            },
            position,
            session_id,
            method: method.to_owned(),
            params: serde_json::json!({ "textDocument": { "uri": uri }, "position": position }),
        }
    }
}

/// Params of [`RpcRelease`]: references (`{"__rpcref": …}` objects, echoed
/// exactly as received).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RpcReleaseParams {
    pub uri: String,
    pub session_id: RpcSessionId,
    pub refs: Vec<Value>,
}

/// Params of [`RpcKeepAlive`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RpcKeepAliveParams {
    pub uri: String,
    pub session_id: RpcSessionId,
}

// ------------------------------------------------------- what Lean reports --

/// Params of [`FileProgress`]: the ranges still being elaborated; empty = done.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileProgressParams {
    pub text_document: VersionedTextDocumentId,
    pub processing: Vec<FileProgressProcessingInfo>,
}

impl FileProgressParams {
    /// Nothing left to process for this version.
    pub fn is_done(&self) -> bool {
        self.processing.is_empty()
    }
}

/// One range of [`FileProgressParams::processing`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileProgressProcessingInfo {
    pub range: Range,
    #[serde(default)]
    pub kind: FileProgressKind,
}

/// 1 = processing (default when absent), 2 = fatal error (the worker crashed,
/// or the header failed: imports missing or `lake setup-file` failing).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct FileProgressKind(pub u8);

impl FileProgressKind {
    pub const PROCESSING: FileProgressKind = FileProgressKind(1);
    pub const FATAL_ERROR: FileProgressKind = FileProgressKind(2);
}

impl Default for FileProgressKind {
    fn default() -> Self {
        FileProgressKind::PROCESSING
    }
}

// ---------------------------------------------------------------- RPC data --

/// The answer of [`GET_INTERACTIVE_GOALS`] as far as it is read: the goals,
/// their texts Lean's `TaggedText` trees (see [`flatten_tagged_text`]).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct InteractiveGoals {
    #[serde(default)]
    pub goals: Option<Vec<InteractiveGoal>>,
}

/// One `Lean.Widget.InteractiveGoal`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InteractiveGoal {
    #[serde(default)]
    pub hyps: Vec<InteractiveHypothesis>,
    /// The target, a `TaggedText`.
    #[serde(rename = "type", default)]
    pub target: Value,
    /// The case name (`case succ`), when the goal has one.
    #[serde(default)]
    pub user_name: Option<String>,
    /// `"⊢ "` for a tactic goal.
    #[serde(default)]
    pub goal_prefix: Option<String>,
}

/// One hypothesis group of an [`InteractiveGoal`] (`a b : T`, `x : T := v`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct InteractiveHypothesis {
    #[serde(default)]
    pub names: Vec<String>,
    /// Its type, a `TaggedText`.
    #[serde(rename = "type", default)]
    pub ty: Value,
    /// Its value, for a `let`.
    #[serde(default)]
    pub val: Option<Value>,
}

/// Flatten a `TaggedText` tree (`{"text": s}`, `{"append": [..]}`,
/// `{"tag": [info, inner]}`) to its plain text, dropping the tags. Anything else
/// (a bare string is accepted as text) contributes nothing. Iterative, so deep
/// terms cannot overflow the stack.
pub fn flatten_tagged_text(tt: &Value) -> String {
    let mut out = String::new();
    push_tagged_text(tt, &mut out);
    out
}

/// [`flatten_tagged_text`] appending to `out`.
pub fn push_tagged_text(tt: &Value, out: &mut String) {
    let mut stack: Vec<&Value> = vec![tt];
    while let Some(v) = stack.pop() {
        match v {
            Value::String(s) => out.push_str(s),
            Value::Object(o) => {
                if let Some(Value::String(s)) = o.get("text") {
                    out.push_str(s);
                } else if let Some(Value::Array(items)) = o.get("append") {
                    stack.extend(items.iter().rev());
                } else if let Some(Value::Array(pair)) = o.get("tag") {
                    if let Some(inner) = pair.get(1) {
                        stack.push(inner);
                    }
                }
            }
            _ => {}
        }
    }
}

/// Every RPC reference inside `v`, as received (to release them afterwards):
/// `{"__rpcref": …}` objects (wire format v1, which [`super::LspClient`] asks
/// for), or legacy `{"p": "<n>"}` ones (a single string field `p`).
pub fn collect_rpc_refs(v: &Value) -> Vec<Value> {
    let is_ref = |o: &serde_json::Map<String, Value>| {
        o.len() == 1 && (o.contains_key("__rpcref") || o.get("p").is_some_and(|p| p.is_string()))
    };
    let mut refs = Vec::new();
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        match v {
            Value::Object(o) if is_ref(o) => refs.push(v.clone()),
            Value::Object(o) => stack.extend(o.values()),
            Value::Array(a) => stack.extend(a.iter()),
            _ => {}
        }
    }
    refs
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn methods_are_lean_s() {
        assert_eq!(
            [
                WaitForDiagnostics::METHOD,
                PlainGoal::METHOD,
                PlainTermGoal::METHOD,
                RpcConnect::METHOD,
                RpcCall::METHOD,
                RpcRelease::METHOD,
                RpcKeepAlive::METHOD,
                FileProgress::METHOD,
            ],
            [
                "textDocument/waitForDiagnostics",
                "$/lean/plainGoal",
                "$/lean/plainTermGoal",
                "$/lean/rpc/connect",
                "$/lean/rpc/call",
                "$/lean/rpc/release",
                "$/lean/rpc/keepAlive",
                "$/lean/fileProgress",
            ]
        );
    }

    #[test]
    fn tagged_text_flattens_in_order() {
        let tt = json!({"append": [
            {"text": "Eq "},
            {"tag": [{"info": {"__rpcref": "3"}, "subexprPos": "/1"}, {"append": [{"text": "("}, {"tag": [{"info": {"__rpcref": "4"}}, {"text": "N.zero.add"}]}, {"text": " n)"}]}]},
            {"text": " "},
            {"tag": [{"info": {"__rpcref": "5"}}, {"text": "n"}]}
        ]});
        assert_eq!(flatten_tagged_text(&tt), "Eq (N.zero.add n) n");
        assert_eq!(flatten_tagged_text(&json!({"text": "⊢ 𝔽"})), "⊢ 𝔽");
        assert_eq!(flatten_tagged_text(&json!({"append": []})), "");
        assert_eq!(flatten_tagged_text(&Value::Null), "");
    }

    #[test]
    fn deep_tagged_text_does_not_overflow() {
        // Built by moving values (`json!` would serialize, i.e. recurse, into `tt`).
        let obj = |k: &str, v: Value| Value::Object([(k.to_owned(), v)].into_iter().collect());
        let mut tt = json!({"text": "x"});
        for _ in 0..20_000 {
            let inner = Value::Array(vec![json!({"text": "("}), tt, json!({"text": ")"})]);
            tt = obj("tag", Value::Array(vec![json!({}), obj("append", inner)]));
        }
        let s = flatten_tagged_text(&tt);
        assert_eq!(s.len(), 40_001);
        // Drop iteratively too: serde_json's recursive Drop would overflow here.
        let mut stack = vec![tt];
        while let Some(mut v) = stack.pop() {
            match &mut v {
                Value::Object(o) => stack.extend(std::mem::take(o).into_iter().map(|(_, v)| v)),
                Value::Array(a) => stack.append(a),
                _ => {}
            }
        }
    }

    #[test]
    fn rpc_refs_are_collected_in_both_wire_formats() {
        let refs = collect_rpc_refs(
            &json!({"goals": [{"ctx": {"__rpcref": "15"}, "type": {"tag": [{"info": {"__rpcref": "16"}}, {"text": "x"}]}}]}),
        );
        assert_eq!(refs.len(), 2);
        let legacy =
            collect_rpc_refs(&json!({"ctx": {"p": "8"}, "info": {"p": "0"}, "x": {"p": 3}}));
        assert_eq!(legacy.len(), 2);
    }

    #[test]
    fn file_progress_kinds() {
        let p: FileProgressParams = serde_json::from_value(json!({
            "textDocument": {"uri": "file:///a.lean", "version": 2},
            "processing": [
                {"range": {"start": {"line": 0, "character": 0}, "end": {"line": 3, "character": 0}}},
                {"range": {"start": {"line": 5, "character": 0}, "end": {"line": 5, "character": 0}}, "kind": 2}
            ]
        }))
        .unwrap();
        assert_eq!(p.text_document.version, Some(2));
        assert_eq!(p.processing[0].kind, FileProgressKind::PROCESSING);
        assert_eq!(p.processing[1].kind, FileProgressKind::FATAL_ERROR);
        assert!(!p.is_done());
        let done: FileProgressParams = serde_json::from_value(
            json!({"textDocument": {"uri": "u", "version": 2}, "processing": []}),
        )
        .unwrap();
        assert!(done.is_done());
    }

    #[test]
    fn goals_and_rpc_shapes() {
        let g: <PlainGoal as Request>::Result =
            serde_json::from_value(json!({"rendered": "no goals", "goals": []})).unwrap();
        assert!(g.unwrap().goals.is_empty());
        let none: <PlainGoal as Request>::Result = serde_json::from_value(Value::Null).unwrap();
        assert_eq!(none, None);
        let t: <PlainTermGoal as Request>::Result = serde_json::from_value(json!({"goal": "⊢ N", "range": {"start": {"line": 13, "character": 26}, "end": {"line": 13, "character": 32}}})).unwrap();
        assert_eq!(t.unwrap().range.end.character, 32);
        assert_eq!(
            serde_json::to_value(DocumentPositionParams::new("file:///x.lean", 12, 2)).unwrap(),
            json!({"textDocument": {"uri": "file:///x.lean"}, "position": {"line": 12, "character": 2}})
        );
        assert_eq!(
            serde_json::to_value(WaitForDiagnosticsParams {
                uri: "u".into(),
                version: 3
            })
            .unwrap(),
            json!({"uri": "u", "version": 3})
        );
        let c: RpcConnected =
            serde_json::from_value(json!({"sessionId": "17409402745361717917"})).unwrap();
        assert_eq!(c.session_id, RpcSessionId("17409402745361717917".into()));
        let n: RpcConnected =
            serde_json::from_value(json!({"sessionId": 17409402745361717917u64})).unwrap();
        assert_eq!(n, c);
        assert!(serde_json::from_value::<RpcConnected>(json!({"sessionId": -1})).is_err());
        let call = RpcCallParams::at_position(
            "file:///x.lean",
            Position {
                line: 1,
                character: 2,
            },
            c.session_id.clone(),
            GET_INTERACTIVE_GOALS,
        );
        assert_eq!(
            serde_json::to_value(&call).unwrap(),
            json!({"textDocument": {"uri": "file:///x.lean"}, "position": {"line": 1, "character": 2},
                   "sessionId": "17409402745361717917", "method": "Lean.Widget.getInteractiveGoals",
                   "params": {"textDocument": {"uri": "file:///x.lean"}, "position": {"line": 1, "character": 2}}})
        );
        let rel = RpcReleaseParams {
            uri: "u".into(),
            session_id: c.session_id.clone(),
            refs: vec![json!({"__rpcref": "15"})],
        };
        assert_eq!(
            serde_json::to_value(&rel).unwrap(),
            json!({"uri": "u", "sessionId": "17409402745361717917", "refs": [{"__rpcref": "15"}]})
        );
        let ka = RpcKeepAliveParams {
            uri: "u".into(),
            session_id: c.session_id,
        };
        assert_eq!(
            serde_json::to_value(&ka).unwrap(),
            json!({"uri": "u", "sessionId": "17409402745361717917"})
        );
    }
}
