//! What Lean publishes about a document's diagnostics, read lazily.

use std::borrow::Cow;

use lsp_types::{DiagnosticSeverity, DiagnosticTag, NumberOrString, Range};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

/// `textDocument/publishDiagnostics` as routed: the list left unparsed (see
/// [`crate::lsp::ServerEvent::Diagnostics`]). With plain client capabilities each
/// publish is the complete visible set for `version`.
#[derive(Debug, Clone, Deserialize)]
pub struct PublishedDiagnostics {
    pub uri: String,
    #[serde(default)]
    pub version: Option<i64>,
    pub diagnostics: Box<RawValue>,
}

impl PublishedDiagnostics {
    /// The diagnostics, read in place (see [`LeanDiagnostic::read_list`]).
    pub fn read(&self) -> serde_json::Result<Vec<LeanDiagnostic<'_>>> {
        LeanDiagnostic::read_list(&self.diagnostics)
    }
}

impl PartialEq for PublishedDiagnostics {
    fn eq(&self, other: &Self) -> bool {
        (&self.uri, self.version, self.diagnostics.get())
            == (&other.uri, other.version, other.diagnostics.get())
    }
}

/// One diagnostic as Lean sends it, read without copying its text where the
/// JSON has no escapes: a view into a published list (or into a
/// `serde_json::Value` holding one diagnostic). `relatedInformation` is
/// skipped.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LeanDiagnostic<'a> {
    /// Start, and an end cut at the next line's column 0 for multi-line spans.
    pub range: Range,
    /// The real extent (Lean always sends it; see [`Self::full_range`]).
    #[serde(default)]
    pub full_range: Option<Range>,
    #[serde(default)]
    pub severity: Option<DiagnosticSeverity>,
    /// Named errors, e.g. `"lean.unknownIdentifier"`.
    #[serde(default)]
    pub code: Option<NumberOrString>,
    #[serde(default, borrow)]
    pub source: Option<Cow<'a, str>>,
    /// Plain text, may contain newlines.
    #[serde(borrow)]
    pub message: Cow<'a, str>,
    /// `[1]` unnecessary (unused variable), `[2]` deprecated.
    #[serde(default)]
    pub tags: Option<Vec<DiagnosticTag>>,
    #[serde(default)]
    pub lean_tags: Option<Vec<LeanDiagnosticTag>>,
    #[serde(default)]
    pub is_silent: Option<bool>,
    /// Lean's own payload for code actions, when it sends one (none of the
    /// 4.35 test server's messages does).
    #[serde(default)]
    pub data: Option<Value>,
}

impl<'a> LeanDiagnostic<'a> {
    /// Every diagnostic of a published list, borrowing from it.
    pub fn read_list(list: &'a RawValue) -> serde_json::Result<Vec<LeanDiagnostic<'a>>> {
        serde_json::from_str(list.get())
    }

    /// One diagnostic held as a `serde_json::Value`, borrowing from it.
    pub fn view(diagnostic: &'a Value) -> serde_json::Result<LeanDiagnostic<'a>> {
        LeanDiagnostic::deserialize(diagnostic)
    }

    /// The severity, an error when absent (as LSP says).
    pub fn severity(&self) -> DiagnosticSeverity {
        self.severity.unwrap_or(DiagnosticSeverity::ERROR)
    }

    /// `fullRange` when present, else `range`.
    pub fn full_range(&self) -> Range {
        self.full_range.unwrap_or(self.range)
    }

    /// Editor-only message ("Goals accomplished!"), never shown to agents.
    pub fn is_silent(&self) -> bool {
        self.is_silent == Some(true)
    }

    /// The `code` as text (`"lean.unknownIdentifier"`), if any.
    pub fn code_str(&self) -> Option<Cow<'_, str>> {
        code_str(&self.code)
    }
}

/// One diagnostic as the broker keeps it: owned and typed, built once from
/// the [`LeanDiagnostic`] view when a published set is first read. It
/// serializes back to Lean's shape (`fullRange`, `leanTags` and all), as a
/// code action's context must carry it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Diagnostic {
    pub range: Range,
    /// As Lean sent it; see [`Self::full_range`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub full_range: Option<Range>,
    /// An error when Lean left it out (as LSP says).
    #[serde(default = "error")]
    pub severity: DiagnosticSeverity,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<NumberOrString>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    pub message: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<DiagnosticTag>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lean_tags: Vec<LeanDiagnosticTag>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

fn error() -> DiagnosticSeverity {
    DiagnosticSeverity::ERROR
}

impl Diagnostic {
    /// One diagnostic held as a `serde_json::Value` (tests, fixtures).
    pub fn from_value(diagnostic: &Value) -> serde_json::Result<Diagnostic> {
        LeanDiagnostic::view(diagnostic).map(Diagnostic::from)
    }

    /// `fullRange` when present, else `range`.
    pub fn full_range(&self) -> Range {
        self.full_range.unwrap_or(self.range)
    }

    /// Where the message starts, as `(line, character)`.
    pub fn start(&self) -> (u32, u32) {
        (self.range.start.line, self.range.start.character)
    }

    /// Where `range` ends, as `(line, character)`.
    pub fn end(&self) -> (u32, u32) {
        (self.range.end.line, self.range.end.character)
    }

    pub fn is_error(&self) -> bool {
        self.severity == DiagnosticSeverity::ERROR
    }

    /// The `code` as text (`"lean.unknownIdentifier"`), if any.
    pub fn code_str(&self) -> Option<Cow<'_, str>> {
        code_str(&self.code)
    }

    pub fn has_lean_tag(&self, tag: LeanDiagnosticTag) -> bool {
        self.lean_tags.contains(&tag)
    }
}

impl From<LeanDiagnostic<'_>> for Diagnostic {
    fn from(view: LeanDiagnostic<'_>) -> Diagnostic {
        Diagnostic {
            range: view.range,
            full_range: view.full_range,
            severity: view.severity(),
            code: view.code,
            source: view.source.map(Cow::into_owned),
            message: view.message.into_owned(),
            tags: view.tags.unwrap_or_default(),
            lean_tags: view.lean_tags.unwrap_or_default(),
            data: view.data,
        }
    }
}

fn code_str(code: &Option<NumberOrString>) -> Option<Cow<'_, str>> {
    match code {
        Some(NumberOrString::String(s)) => Some(Cow::Borrowed(s)),
        Some(NumberOrString::Number(n)) => Some(Cow::Owned(n.to_string())),
        None => None,
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A published list (as Lean 4.35 sends it) read through the borrowed view.
    #[test]
    fn diagnostics_are_read_in_place_with_lean_fields() {
        let published: PublishedDiagnostics = serde_json::from_value(json!({
            "uri": "file:///ws/Fix/Errors.lean",
            "version": 1,
            "diagnostics": [
                {"range": {"start": {"line": 8, "character": 28}, "end": {"line": 8, "character": 40}},
                 "fullRange": {"start": {"line": 8, "character": 28}, "end": {"line": 9, "character": 3}},
                 "severity": 1, "source": "Lean 4", "code": "lean.unknownIdentifier",
                 "message": "Unknown identifier `missingThing`"},
                {"range": {"start": {"line": 14, "character": 21}, "end": {"line": 14, "character": 27}},
                 "severity": 2, "tags": [1], "message": "unused\nline two",
                 "relatedInformation": [], "data": {"x": [1, 2]}},
                {"range": {"start": {"line": 1, "character": 0}, "end": {"line": 1, "character": 2}},
                 "message": "Goals accomplished!", "isSilent": true, "leanTags": [2], "code": 7}
            ]
        }))
        .unwrap();
        let list = published.read().unwrap();
        assert_eq!(list.len(), 3);
        let [unknown, unused, silent] = &list[..] else {
            unreachable!()
        };
        assert_eq!(unknown.severity(), DiagnosticSeverity::ERROR);
        assert_eq!(
            unknown.code_str().as_deref(),
            Some("lean.unknownIdentifier")
        );
        assert_eq!(unknown.full_range().end.line, 9);
        assert_eq!(unknown.source.as_deref(), Some("Lean 4"));
        assert!(
            matches!(
                unknown.message,
                Cow::Borrowed("Unknown identifier `missingThing`")
            ),
            "text without escapes is borrowed, not copied"
        );
        assert_eq!(unused.severity(), DiagnosticSeverity::WARNING);
        assert_eq!(unused.tags, Some(vec![DiagnosticTag::UNNECESSARY]));
        assert_eq!(unused.message, "unused\nline two");
        assert_eq!(unused.full_range(), unused.range);
        assert!(silent.is_silent() && !unknown.is_silent());
        assert_eq!(
            silent.lean_tags,
            Some(vec![LeanDiagnosticTag::GOALS_ACCOMPLISHED])
        );
        assert_eq!(
            silent.severity(),
            DiagnosticSeverity::ERROR,
            "absent means error"
        );
        assert_eq!(silent.code_str().as_deref(), Some("7"));
        // The same view over one diagnostic the broker holds as a Value.
        let held = json!({"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 1}},
                          "severity": 3, "message": "fyi"});
        let view = LeanDiagnostic::view(&held).unwrap();
        assert_eq!(
            (view.severity(), view.message.as_ref()),
            (DiagnosticSeverity::INFORMATION, "fyi")
        );
        assert!(LeanDiagnostic::view(&json!({"message": "no range"})).is_err());
    }
}
