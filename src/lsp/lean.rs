//! Typed views of Lean's LSP extensions (see `/work/shared/reference/LEAN-LSP.md`).
//!
//! The client moves `serde_json::Value`s; these structs are for the places that
//! need fields: `serde_json::from_value::<FileProgressParams>(params)` and
//! `serde_json::to_value(WaitForDiagnosticsParams { .. })`. URIs stay `String`s
//! (exactly as on the wire, see [`super::uri`]); positions are LSP positions
//! (0-based line, UTF-16 `character`).

use lsp_types::{DiagnosticSeverity, DiagnosticTag, NumberOrString, Position, Range};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

/// Method names of the requests and notifications used with Lean.
pub mod methods {
    /// Server notification, [`super::PublishDiagnosticsParams`].
    pub const PUBLISH_DIAGNOSTICS: &str = "textDocument/publishDiagnostics";
    /// Server notification, [`super::FileProgressParams`].
    pub const FILE_PROGRESS: &str = "$/lean/fileProgress";
    /// Request, [`super::WaitForDiagnosticsParams`] → `{}`.
    pub const WAIT_FOR_DIAGNOSTICS: &str = "textDocument/waitForDiagnostics";
    /// Request, [`super::PlainGoalParams`] → [`super::PlainGoal`] or `null`.
    pub const PLAIN_GOAL: &str = "$/lean/plainGoal";
    /// Request, [`super::PlainTermGoalParams`] → [`super::PlainTermGoal`] or `null`.
    pub const PLAIN_TERM_GOAL: &str = "$/lean/plainTermGoal";
    /// Request, [`super::RpcConnectParams`] → [`super::RpcConnected`].
    pub const RPC_CONNECT: &str = "$/lean/rpc/connect";
    /// Request, [`super::RpcCallParams`] → the method's result.
    pub const RPC_CALL: &str = "$/lean/rpc/call";
    /// Notification, [`super::RpcReleaseParams`].
    pub const RPC_RELEASE: &str = "$/lean/rpc/release";
    /// Notification, [`super::RpcKeepAliveParams`]; at least every 10 s per session.
    pub const RPC_KEEP_ALIVE: &str = "$/lean/rpc/keepAlive";
    /// RPC method (inside [`super::RpcCallParams::method`]): structured goals.
    pub const GET_INTERACTIVE_GOALS: &str = "Lean.Widget.getInteractiveGoals";
    /// RPC method: structured expected type of the term at a position.
    pub const GET_INTERACTIVE_TERM_GOAL: &str = "Lean.Widget.getInteractiveTermGoal";
}

/// JSON-RPC error codes the Lean server uses (in [`super::LspError::Rpc`]).
pub mod error_codes {
    /// `$/cancelRequest` honoured (sent only when the answer was ready anyway).
    pub const REQUEST_CANCELLED: i64 = -32800;
    /// Request on a closed/unopened file, or pending when its worker was terminated.
    pub const CONTENT_MODIFIED: i64 = -32801;
    /// RPC session unknown or expired: `$/lean/rpc/connect` again.
    pub const RPC_NEEDS_RECONNECT: i64 = -32900;
    /// The file worker exited with code 1.
    pub const WORKER_EXITED: i64 = -32901;
    /// The file worker crashed (killed, stack overflow); it restarts on the next
    /// `didChange` or on close + reopen.
    pub const WORKER_CRASHED: i64 = -32902;
}

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

/// `TextDocumentPositionParams`: `{textDocument:{uri}, position}`.
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

/// Params of `$/lean/plainGoal`.
pub type PlainGoalParams = DocumentPositionParams;
/// Params of `$/lean/plainTermGoal`.
pub type PlainTermGoalParams = DocumentPositionParams;

/// `$/lean/fileProgress`: the ranges still being elaborated; empty = done.
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

    /// Some range is in the fatal-error state (e.g. the worker crashed, or the
    /// header failed: imports missing or `lake setup-file` failing).
    pub fn has_fatal_error(&self) -> bool {
        self.processing
            .iter()
            .any(|p| p.kind == FileProgressKind::FATAL_ERROR)
    }
}

/// One range of [`FileProgressParams::processing`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileProgressProcessingInfo {
    pub range: Range,
    #[serde(default)]
    pub kind: FileProgressKind,
}

/// 1 = processing (default when absent), 2 = fatal error.
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

/// `textDocument/publishDiagnostics` as routed: the list left unparsed (see
/// [`super::ServerEvent::Diagnostics`]).
#[derive(Debug, Clone, Deserialize)]
pub struct PublishedDiagnostics {
    pub uri: String,
    #[serde(default)]
    pub version: Option<i64>,
    pub diagnostics: Box<serde_json::value::RawValue>,
}

impl PartialEq for PublishedDiagnostics {
    fn eq(&self, other: &Self) -> bool {
        (&self.uri, self.version, self.diagnostics.get())
            == (&other.uri, other.version, other.diagnostics.get())
    }
}

/// `textDocument/publishDiagnostics` with Lean's fields. With plain client
/// capabilities each publish is the complete set for `version` (replace).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PublishDiagnosticsParams {
    pub uri: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<i32>,
    pub diagnostics: Vec<LeanDiagnostic>,
    /// Only with `capabilities.lean.incrementalDiagnosticSupport`: `true` = append
    /// to what is known for this version, `false`/absent = replace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_incremental: Option<bool>,
}

impl PublishDiagnosticsParams {
    /// The diagnostics an agent should see: silent ones (editor-only "Goals
    /// accomplished!") dropped.
    pub fn visible(&self) -> impl Iterator<Item = &LeanDiagnostic> {
        self.diagnostics.iter().filter(|d| !d.is_silent())
    }
}

/// A diagnostic as Lean sends it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LeanDiagnostic {
    /// Start, and an end cut at the next line's column 0 for multi-line spans.
    pub range: Range,
    /// The real extent (Lean always sends it; prefer it, see [`Self::full_range`]).
    #[serde(default, rename = "fullRange", skip_serializing_if = "Option::is_none")]
    pub full_range: Option<Range>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub severity: Option<DiagnosticSeverity>,
    /// Named errors, e.g. `"lean.unknownIdentifier"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<NumberOrString>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// Plain text, may contain newlines.
    pub message: String,
    /// `[1]` unnecessary (unused variable), `[2]` deprecated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags: Option<Vec<DiagnosticTag>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub related_information: Option<Vec<Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lean_tags: Option<Vec<LeanDiagnosticTag>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_silent: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl LeanDiagnostic {
    /// `fullRange` when present, else `range`.
    pub fn full_range(&self) -> Range {
        self.full_range.unwrap_or(self.range)
    }

    /// Editor-only message (never shown to agents).
    pub fn is_silent(&self) -> bool {
        self.is_silent == Some(true)
    }

    /// The `code` as a string (`"lean.unknownIdentifier"`), if any.
    pub fn code_str(&self) -> Option<String> {
        match &self.code {
            Some(NumberOrString::String(s)) => Some(s.clone()),
            Some(NumberOrString::Number(n)) => Some(n.to_string()),
            None => None,
        }
    }
}

/// Lean's own diagnostic tags.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct LeanDiagnosticTag(pub u32);

impl LeanDiagnosticTag {
    pub const UNSOLVED_GOALS: LeanDiagnosticTag = LeanDiagnosticTag(1);
    pub const GOALS_ACCOMPLISHED: LeanDiagnosticTag = LeanDiagnosticTag(2);
}

/// `textDocument/waitForDiagnostics`: answered `{}` once every diagnostic of a
/// version ≥ `version` is out. Blocks indefinitely for a version the server has
/// not received yet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WaitForDiagnosticsParams {
    pub uri: String,
    pub version: i32,
}

/// Answer of `$/lean/plainGoal` (or `null` outside tactic blocks).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlainGoal {
    /// Markdown, `"no goals"` when closed.
    pub rendered: String,
    /// One pretty-printed goal each (`case …\nhyps\n⊢ target`); empty when closed.
    pub goals: Vec<String>,
}

/// Answer of `$/lean/plainTermGoal` (or `null`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlainTermGoal {
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

/// `$/lean/rpc/connect` params.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RpcConnectParams {
    pub uri: String,
}

/// `$/lean/rpc/connect` answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RpcConnected {
    pub session_id: RpcSessionId,
}

/// `$/lean/rpc/call` params: run `method` (fully qualified) with `params` in the
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
    /// A call of `Lean.Widget.getInteractiveGoals` (or any method whose params are
    /// the position itself) at `position`.
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

/// `$/lean/rpc/release` params: give back references (`{"__rpcref": …}` objects,
/// echoed exactly as received).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RpcReleaseParams {
    pub uri: String,
    pub session_id: RpcSessionId,
    pub refs: Vec<Value>,
}

/// `$/lean/rpc/keepAlive` params.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RpcKeepAliveParams {
    pub uri: String,
    pub session_id: RpcSessionId,
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

/// Render one goal of a `Lean.Widget.getInteractiveGoals` answer in the format of
/// `$/lean/plainGoal`: `case <tag>` (if named), one line per hypothesis bundle
/// (`a b : T`, `x : T := v` for let-bound ones), then `⊢ <target>` (the goal's
/// `goalPrefix`).
pub fn interactive_goal_to_string(goal: &Value) -> String {
    let mut out = String::new();
    if let Some(name) = goal.get("userName").and_then(Value::as_str) {
        if !name.is_empty() && name != "[anonymous]" {
            out.push_str("case ");
            out.push_str(name);
            out.push('\n');
        }
    }
    for hyp in goal
        .get("hyps")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let names = hyp
            .get("names")
            .and_then(Value::as_array)
            .into_iter()
            .flatten();
        let mut first = true;
        for n in names {
            if !first {
                out.push(' ');
            }
            first = false;
            out.push_str(n.as_str().unwrap_or("?"));
        }
        out.push_str(" : ");
        if let Some(ty) = hyp.get("type") {
            push_tagged_text(ty, &mut out);
        }
        if let Some(val) = hyp.get("val") {
            out.push_str(" := ");
            push_tagged_text(val, &mut out);
        }
        out.push('\n');
    }
    out.push_str(
        goal.get("goalPrefix")
            .and_then(Value::as_str)
            .unwrap_or("⊢ "),
    );
    if let Some(ty) = goal.get("type") {
        push_tagged_text(ty, &mut out);
    }
    out
}

/// All goals of a `getInteractiveGoals` answer (`{"goals":[…]}`), rendered with
/// [`interactive_goal_to_string`]; empty for `null` or no goals.
pub fn interactive_goals_to_strings(result: &Value) -> Vec<String> {
    result
        .get("goals")
        .and_then(Value::as_array)
        .map(|goals| goals.iter().map(interactive_goal_to_string).collect())
        .unwrap_or_default()
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
    fn interactive_goal_renders_like_plain_goal() {
        let goal = json!({
            "userName": "succ",
            "goalPrefix": "⊢ ",
            "hyps": [
                {"names": ["m"], "fvarIds": ["_uniq.1"], "type": {"text": "N"}},
                {"names": ["a", "b"], "fvarIds": ["_uniq.2", "_uniq.3"], "type": {"tag": [{}, {"text": "N"}]}},
                {"names": ["t"], "fvarIds": ["_uniq.4"], "type": {"text": "N"}, "val": {"append": [{"text": "one.add"}, {"text": " one"}]}}
            ],
            "type": {"append": [{"text": "Eq "}, {"text": "m m"}]},
            "mvarId": "_uniq.9",
            "ctx": {"__rpcref": "15"}
        });
        assert_eq!(
            interactive_goal_to_string(&goal),
            "case succ\nm : N\na b : N\nt : N := one.add one\n⊢ Eq m m"
        );
        let anon = json!({"hyps": [], "type": {"text": "Prop"}, "goalPrefix": "⊢ "});
        assert_eq!(interactive_goal_to_string(&anon), "⊢ Prop");
        assert_eq!(
            interactive_goals_to_strings(&json!({"goals": [anon, goal]})).len(),
            2
        );
        assert!(interactive_goals_to_strings(&Value::Null).is_empty());
        let refs = collect_rpc_refs(
            &json!({"goals": [{"ctx": {"__rpcref": "15"}, "type": {"tag": [{"info": {"__rpcref": "16"}}, {"text": "x"}]}}]}),
        );
        assert_eq!(refs.len(), 2);
        let legacy =
            collect_rpc_refs(&json!({"ctx": {"p": "8"}, "info": {"p": "0"}, "x": {"p": 3}}));
        assert_eq!(legacy.len(), 2);
    }

    #[test]
    fn diagnostics_parse_with_lean_fields() {
        let p: PublishDiagnosticsParams = serde_json::from_value(json!({
            "uri": "file:///ws/Fix/Errors.lean",
            "version": 1,
            "diagnostics": [
                {"range": {"start": {"line": 8, "character": 28}, "end": {"line": 8, "character": 40}},
                 "fullRange": {"start": {"line": 8, "character": 28}, "end": {"line": 8, "character": 40}},
                 "severity": 1, "source": "Lean 4", "code": "lean.unknownIdentifier",
                 "message": "Unknown identifier `missingThing`"},
                {"range": {"start": {"line": 14, "character": 21}, "end": {"line": 14, "character": 27}},
                 "severity": 2, "tags": [1], "message": "unused"},
                {"range": {"start": {"line": 1, "character": 0}, "end": {"line": 1, "character": 2}},
                 "severity": 3, "message": "Goals accomplished!", "isSilent": true, "leanTags": [2]}
            ]
        }))
        .unwrap();
        assert_eq!(p.version, Some(1));
        assert_eq!(p.diagnostics.len(), 3);
        assert_eq!(p.visible().count(), 2);
        let d = &p.diagnostics[0];
        assert_eq!(d.severity, Some(DiagnosticSeverity::ERROR));
        assert_eq!(d.code_str().as_deref(), Some("lean.unknownIdentifier"));
        assert_eq!(d.full_range().start.line, 8);
        assert_eq!(
            p.diagnostics[1].tags,
            Some(vec![DiagnosticTag::UNNECESSARY])
        );
        assert_eq!(p.diagnostics[1].full_range(), p.diagnostics[1].range);
        assert_eq!(
            p.diagnostics[2].lean_tags,
            Some(vec![LeanDiagnosticTag::GOALS_ACCOMPLISHED])
        );
        // Round trip keeps the Lean field names.
        let back = serde_json::to_value(&p).unwrap();
        assert!(back["diagnostics"][0].get("fullRange").is_some());
        assert_eq!(back["diagnostics"][2]["isSilent"], json!(true));
        assert_eq!(back["diagnostics"][2]["leanTags"], json!([2]));
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
        assert!(p.has_fatal_error());
        assert!(!p.is_done());
        let done: FileProgressParams = serde_json::from_value(
            json!({"textDocument": {"uri": "u", "version": 2}, "processing": []}),
        )
        .unwrap();
        assert!(done.is_done());
    }

    #[test]
    fn goals_and_rpc_params() {
        let g: PlainGoal =
            serde_json::from_value(json!({"rendered": "no goals", "goals": []})).unwrap();
        assert!(g.goals.is_empty());
        let t: PlainTermGoal = serde_json::from_value(json!({"goal": "⊢ N", "range": {"start": {"line": 13, "character": 26}, "end": {"line": 13, "character": 32}}})).unwrap();
        assert_eq!(t.range.end.character, 32);
        assert_eq!(
            serde_json::to_value(PlainGoalParams::new("file:///x.lean", 12, 2)).unwrap(),
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
        let call = RpcCallParams::at_position(
            "file:///x.lean",
            Position {
                line: 1,
                character: 2,
            },
            c.session_id.clone(),
            methods::GET_INTERACTIVE_GOALS,
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
            serde_json::to_value(&rel).unwrap()["refs"],
            json!([{"__rpcref": "15"}])
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
