//! One complete diagnostic set as Lean published it, kept unparsed until it
//! is first read.

use std::sync::OnceLock;

use serde_json::value::RawValue;

use super::super::diagnostics;
use crate::log_warn;
use crate::lsp::protocol::{Diagnostic, LeanDiagnostic};

/// One complete diagnostic set as Lean published it, read on first use. Lean
/// republishes the whole set after each command that adds to it (44 MB of
/// JSON over an elaboration of a file with 400 warnings), and usually only the
/// last set of a version is ever read.
#[derive(Debug, Default)]
pub struct DiagnosticSet {
    published: Option<Box<RawValue>>,
    items: OnceLock<Vec<Diagnostic>>,
}

/// The diagnostics of a published list, typed: silent ones (editor-only
/// "Goals accomplished!") and elements that are no diagnostic dropped, the
/// server's private paths left out of their messages, in position order.
/// `None` when the text is not a list.
fn kept_in_position_order(list: &str) -> Option<Vec<Diagnostic>> {
    let elements: Vec<&RawValue> = serde_json::from_str(list).ok()?;
    let mut kept: Vec<Diagnostic> = elements
        .into_iter()
        .filter_map(|element| {
            let view: LeanDiagnostic<'_> = serde_json::from_str(element.get()).ok()?;
            (!view.is_silent()).then(|| {
                let mut d = Diagnostic::from(view);
                diagnostics::scrub(&mut d);
                d
            })
        })
        .collect();
    // Lean's order varies between runs (elaboration, kernel and linters run
    // in parallel); position order makes results reproducible.
    kept.sort_by_key(|d| (d.start(), d.severity));
    Some(kept)
}

/// Sets larger than this cannot be one line of Lake's output.
const LAKE_LINE_MAX: usize = 64 * 1024;

impl DiagnosticSet {
    pub fn published(raw: Box<RawValue>) -> Self {
        DiagnosticSet {
            published: Some(raw),
            items: OnceLock::new(),
        }
    }

    /// The diagnostics: silent ones (editor-only "Goals accomplished!")
    /// dropped, in position order.
    pub fn items(&self) -> &[Diagnostic] {
        self.items.get_or_init(|| {
            let Some(raw) = &self.published else {
                return Vec::new();
            };
            kept_in_position_order(raw.get()).unwrap_or_else(|| {
                log_warn!("Lean published diagnostics that are not a list; read as none");
                Vec::new()
            })
        })
    }

    /// The diagnostics this set adds to `earlier`, when Lean only appended
    /// to it: its text is the earlier text with more elements after them.
    /// Read without reading the rest (Lean republishes every diagnostic so
    /// far after each command, so reading each set whole is quadratic).
    /// `None` when this set is not such an extension.
    pub fn appended_since(&self, earlier: &DiagnosticSet) -> Option<Vec<Diagnostic>> {
        let now = self.published.as_ref()?.get();
        let before = earlier.published.as_ref()?.get();
        let before_open = before.strip_suffix(']')?;
        if before_open == "[" {
            return kept_in_position_order(now);
        }
        let rest = now.strip_prefix(before_open)?;
        if rest == "]" {
            return Some(Vec::new());
        }
        kept_in_position_order(&format!("[{}", rest.strip_prefix(',')?))
    }

    /// Whether some diagnostic of the set may be an error: read without
    /// building the set, for callers that only want its errors.
    pub fn may_hold_errors(&self) -> bool {
        #[derive(serde::Deserialize)]
        struct Severity {
            #[serde(default)]
            severity: Option<u64>,
        }
        if let Some(items) = self.items.get() {
            return items.iter().any(Diagnostic::is_error);
        }
        let Some(raw) = &self.published else {
            return false;
        };
        // Anything unreadable here is left to the full reading.
        serde_json::from_str::<Vec<Severity>>(raw.get()).map_or(true, |list| {
            list.iter()
                .any(|d| d.severity.unwrap_or(diagnostics::ERROR) == diagnostics::ERROR)
        })
    }

    /// The line of Lake's setup output this set stands for, if it is one.
    pub(super) fn lake_setup_line(&self) -> Option<&str> {
        let raw = self.published.as_ref()?;
        if raw.get().len() > LAKE_LINE_MAX {
            return None;
        }
        diagnostics::lake_setup_line(self.items())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(json: &str) -> DiagnosticSet {
        DiagnosticSet::published(RawValue::from_string(json.to_owned()).unwrap())
    }

    #[test]
    fn a_published_set_is_read_once_in_position_order_without_silent_ones() {
        let warnings = set(
            r#"[{"severity":2,"message":"b","range":{"start":{"line":3,"character":0},"end":{"line":3,"character":1}}},
                {"severity":3,"isSilent":true,"message":"Goals accomplished!","range":{"start":{"line":1,"character":0},"end":{"line":1,"character":1}}},
                {"severity":2,"message":"a","range":{"start":{"line":1,"character":4},"end":{"line":1,"character":5}}}]"#,
        );
        assert!(!warnings.may_hold_errors(), "read without building it");
        let messages: Vec<&str> = warnings.items().iter().map(|d| &*d.message).collect();
        assert_eq!(messages, ["a", "b"]);
        assert!(!warnings.may_hold_errors(), "and from the built set");
        // A severity left out means an error, as everywhere else.
        assert!(set(r#"[{"message":"m"}]"#).may_hold_errors());
        assert!(
            set(r#"{"not":"a list"}"#).may_hold_errors(),
            "unreadable: read in full"
        );
        assert!(set(r#"{"not":"a list"}"#).items().is_empty());
        assert!(set("[7]").may_hold_errors(), "unreadable: read in full");
        assert!(
            set("[7]").items().is_empty(),
            "only objects are diagnostics"
        );
        assert!(DiagnosticSet::default().items().is_empty());
    }

    #[test]
    fn a_set_that_appends_to_an_earlier_one_is_read_from_where_that_ended() {
        let d = |line: u32, message: &str| {
            format!(
                r#"{{"severity":2,"message":"{message}","range":{{"start":{{"line":{line},"character":0}},"end":{{"line":{line},"character":1}}}}}}"#
            )
        };
        let silent = r#"{"severity":3,"isSilent":true,"message":"Goals accomplished!"}"#;
        let one = set(&format!("[{}]", d(1, "a")));
        let three = set(&format!(
            "[{},{},{silent},{}]",
            d(1, "a"),
            d(9, "c"),
            d(4, "b")
        ));
        let added = three.appended_since(&one).expect("an extension");
        let messages: Vec<&str> = added.iter().map(|d| &*d.message).collect();
        assert_eq!(
            messages,
            ["b", "c"],
            "new ones only, no silent, in position order"
        );
        assert!(three.items.get().is_none(), "the whole set was not read");
        assert_eq!(one.appended_since(&one).map(|a| a.len()), Some(0));
        let from_empty = one.appended_since(&set("[]")).expect("all of it is new");
        assert_eq!(from_empty.len(), 1);
        // Not extensions: an element put in between, a last element that
        // goes on past where the earlier one ended, a shorter set, no
        // earlier text.
        let between = set(&format!("[{},{},{}]", d(0, "z"), d(1, "a"), d(9, "c")));
        assert!(between.appended_since(&one).is_none());
        assert!(set("[12]").appended_since(&set("[1]")).is_none());
        assert!(one.appended_since(&three).is_none());
        assert!(one.appended_since(&DiagnosticSet::default()).is_none());
    }

    #[test]
    fn only_a_small_set_can_be_a_line_of_lake_output() {
        let line = r#"[{"severity":3,"message":"✔ [2/5] Built Fix.Basic","range":{"start":{"line":0,"character":0},"end":{"line":1,"character":0}},"fullRange":{"start":{"line":0,"character":0},"end":{"line":1,"character":0}}}]"#;
        assert_eq!(set(line).lake_setup_line(), Some("✔ [2/5] Built Fix.Basic"));
        let padded = line.replace("Built", &format!("Built{}", " ".repeat(LAKE_LINE_MAX)));
        assert_eq!(set(&padded).lake_setup_line(), None);
    }
}
