//! Lean diagnostics as the broker keeps them: counts, scope filtering, log
//! levels and save readiness.

use lsp_types::{DiagnosticSeverity, DiagnosticTag};

use super::bases::DIR_PREFIX;
use crate::broker::ask::DiagnosticScope;
use crate::broker::progress::LogLevel;
use crate::lsp::protocol::{Diagnostic, LeanDiagnosticTag};
use crate::results::{
    DiagnosticCategory, DiagnosticCounts, DiagnosticItem, Range, Readiness, ReadinessReason,
    Severity,
};

/// LSP's error severity, as a number (a severity Lean leaves out is one).
pub const ERROR: u64 = 1;

/// Lean's message for a document whose imports were rebuilt underneath it.
pub const IMPORTS_OUT_OF_DATE: &str = "Imports are out of date";

/// Whether a message says that a declaration uses `sorry` (Lean's warning
/// "declaration uses `sorry`", on the declaration's name).
pub fn says_sorry(text: &str) -> bool {
    text.starts_with("declaration uses") && text.contains("sorry")
}

/// Lean's "unsolved goals" error: the goals it lists (the message after its
/// first line). Recognised by Lean's own tag, as Lean 4.35 sends it on every
/// report of goals left unsolved (`leanTags: [1]`, no `code`; checked on the
/// test server), not by the wording of the message.
pub fn unsolved_goals(diagnostic: &Diagnostic) -> Option<&str> {
    if !diagnostic.has_lean_tag(LeanDiagnosticTag::UNSOLVED_GOALS) || !diagnostic.is_error() {
        return None;
    }
    let message = &diagnostic.message;
    Some(message.split_once('\n').map_or("", |(_, goals)| goals))
}

/// The note Lean 4.35 puts at the end of every linter's warning
/// (`Lean.Linter.logLint`).
const LINTER_NOTE: &str = "This linter can be disabled with `set_option linter.";

/// What a diagnostic is, from what Lean 4.35 sends (recorded on the test
/// server: `tests/fixtures/payloads/diagnostic-categories.json`):
///
/// | category | Lean's mark |
/// |---|---|
/// | `unsolved_goals` | an error with `leanTags: [1]` |
/// | `error` | any other error (some carry a `code`, e.g. `lean.unknownIdentifier`) |
/// | `sorry` | the warning "declaration uses `sorry`": no code, tag or data, so its fixed wording |
/// | `linter` | a warning with LSP tag unnecessary (unused variables) or deprecated; a linter without a tag only by the note Lean ends every linter warning with |
/// | `warning` | any other warning |
/// | `suggestion` | an information "Try this"/"Try these": no code, tag or data, so its wording (see [`super::try_this`]) |
/// | `info` | any other information (`#check`, `#eval`, traces), a hint, a severity outside LSP's |
///
/// Severity comes first: a linter warning promoted to an error is an error.
pub fn category(diagnostic: &Diagnostic) -> DiagnosticCategory {
    let text = diagnostic.message.as_str();
    match diagnostic.severity {
        DiagnosticSeverity::ERROR if unsolved_goals(diagnostic).is_some() => {
            DiagnosticCategory::UnsolvedGoals
        }
        DiagnosticSeverity::ERROR => DiagnosticCategory::Error,
        DiagnosticSeverity::WARNING if says_sorry(text) => DiagnosticCategory::Sorry,
        DiagnosticSeverity::WARNING
            if diagnostic
                .tags
                .iter()
                .any(|t| [DiagnosticTag::UNNECESSARY, DiagnosticTag::DEPRECATED].contains(t))
                || text.contains(LINTER_NOTE) =>
        {
            DiagnosticCategory::Linter
        }
        DiagnosticSeverity::WARNING => DiagnosticCategory::Warning,
        DiagnosticSeverity::INFORMATION if super::try_this::says_try_this(text) => {
            DiagnosticCategory::Suggestion
        }
        _ => DiagnosticCategory::Info,
    }
}

pub fn in_scope(diagnostic: &Diagnostic, scope: DiagnosticScope) -> bool {
    match scope {
        DiagnosticScope::All => true,
        DiagnosticScope::Errors => diagnostic.is_error(),
        DiagnosticScope::Only(category) => self::category(diagnostic) == category,
    }
}

/// The MCP log level a diagnostic travels at.
pub fn log_level(diagnostic: &Diagnostic) -> LogLevel {
    match diagnostic.severity {
        DiagnosticSeverity::ERROR => LogLevel::Error,
        DiagnosticSeverity::WARNING => LogLevel::Warning,
        DiagnosticSeverity::INFORMATION => LogLevel::Info,
        _ => LogLevel::Debug,
    }
}

pub fn severity_name(severity: DiagnosticSeverity) -> Severity {
    match severity {
        DiagnosticSeverity::ERROR => Severity::Error,
        DiagnosticSeverity::WARNING => Severity::Warning,
        DiagnosticSeverity::INFORMATION => Severity::Information,
        DiagnosticSeverity::HINT => Severity::Hint,
        _ => Severity::Unknown,
    }
}

/// An LSP range as results spell it.
pub fn range(range: lsp_types::Range) -> Range {
    Range::new(
        (range.start.line, range.start.character),
        (range.end.line, range.end.character),
    )
}

/// The Lake build output line carried by a publish, if that publish is one of
/// the worker's `lake setup-file` progress reports rather than diagnostics.
///
/// Lean 4.35 (`Lean.Server.FileWorker.setupImports`, passing `handleStderr` to
/// `setupFile` in `FileWorker/SetupFile.lean`) runs `$LAKE setup-file <file> -`
/// before it processes the header, and publishes each line Lake writes to
/// stderr (build progress such as `✔ [3/7] Built Mod (1.2s)`, with its
/// newline) as a publish of exactly one diagnostic: severity information,
/// `range` 0:0–1:0, `fullRange` from 0:0 to the end of the file, and no
/// `source`. An empty publish clears it when Lake exits. Elaboration messages
/// always carry `source: "Lean 4"` (also a failed setup, reported as an error
/// at the header); the only other source-less message, the sticky "Imports are
/// out of date" notice, is excluded by its text.
pub fn lake_setup_line(diagnostics: &[Diagnostic]) -> Option<&str> {
    let [d] = diagnostics else { return None };
    let header_line = (d.start(), d.end()) == ((0, 0), (1, 0));
    let from_start = d
        .full_range
        .is_some_and(|full| (full.start.line, full.start.character) == (0, 0));
    let text = d.message.as_str();
    (d.severity == DiagnosticSeverity::INFORMATION
        && d.source.is_none()
        && header_line
        && from_start
        && !text.starts_with(IMPORTS_OUT_OF_DATE))
    .then_some(text)
}

/// Lean's messages without the server's private prefix-base directories,
/// which it puts on Lean's search path: an import that fails lists every
/// search path entry, and the module the user imports is named in the
/// message already. An entry on a line of its own goes; a path elsewhere is
/// named for what it is. `None` when the message shows none.
pub fn scrub_private_paths(message: &str) -> Option<String> {
    if !message.contains(DIR_PREFIX) {
        return None;
    }
    let lines: Vec<&str> = message
        .split('\n')
        .filter(|line| {
            // A search path entry: one path alone on its line.
            let entry = line.trim();
            let private_entry = entry.contains(DIR_PREFIX) && !entry.contains(char::is_whitespace);
            !private_entry
        })
        .collect();
    let mut out = lines.join("\n");
    let delimits = |c: char| c.is_whitespace() || "'\"`()[]{},".contains(c);
    while let Some(at) = out.find(DIR_PREFIX) {
        let start = out[..at].rfind(delimits).map_or(0, |i| i + 1);
        let end = out[at..].find(delimits).map_or(out.len(), |i| at + i);
        out.replace_range(start..end, "(a prefix base of lean-beam-mcp)");
    }
    Some(out)
}

/// A diagnostic as agents may see it (see [`scrub_private_paths`]).
pub fn scrub(diagnostic: &mut Diagnostic) {
    if let Some(message) = scrub_private_paths(&diagnostic.message) {
        diagnostic.message = message;
    }
}

/// The complete counts of a diagnostic set.
pub fn counts(diagnostics: &[Diagnostic]) -> DiagnosticCounts {
    let mut counts = DiagnosticCounts {
        total: diagnostics.len() as u64,
        ..DiagnosticCounts::default()
    };
    for d in diagnostics {
        let slot = match severity_name(d.severity) {
            Severity::Error => &mut counts.error,
            Severity::Warning => &mut counts.warning,
            Severity::Information => &mut counts.information,
            Severity::Hint => &mut counts.hint,
            Severity::Unknown => &mut counts.unknown,
        };
        *slot += 1;
    }
    counts
}

/// The agent-facing form of one diagnostic: the LSP fields that matter, with a
/// severity name in place of the number.
pub fn item(diagnostic: &Diagnostic) -> DiagnosticItem {
    DiagnosticItem {
        range: range(diagnostic.range),
        severity: severity_name(diagnostic.severity),
        category: category(diagnostic),
        message: diagnostic.message.clone(),
        full_range: diagnostic
            .full_range
            .filter(|full| *full != diagnostic.range)
            .map(range),
        code: diagnostic
            .code
            .as_ref()
            .and_then(|code| serde_json::to_value(code).ok()),
        suggestions: super::try_this::suggestions(diagnostic),
    }
}

/// Save readiness of one elaborated version.
pub fn readiness(diagnostics: &[Diagnostic], fatal: bool) -> Readiness {
    let blocking: Vec<&Diagnostic> = diagnostics.iter().filter(|d| d.is_error()).collect();
    let mut messages: Vec<String> = Vec::new();
    if fatal {
        messages.push(
            "Lean stopped processing this file (a fatal error or a crashed worker); it cannot be saved"
                .to_string(),
        );
    }
    let reason = if fatal {
        ReadinessReason::FatalError
    } else if !blocking.is_empty() {
        ReadinessReason::Errors
    } else {
        ReadinessReason::Ok
    };
    let count = (blocking.len() + usize::from(fatal)) as u64;
    Readiness {
        save_ready: count == 0,
        reason,
        blocking_error_count: count,
        blocking_diagnostics: blocking.iter().map(|d| item(d)).collect(),
        blocking_messages: messages,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    /// A diagnostic as Lean sends it (a range 0:0–0:1 when none is given).
    fn diagnostic(mut json: Value) -> Diagnostic {
        if json.get("range").is_none() {
            json["range"] = json!({"start": {"line": 0, "character": 0},
                                   "end": {"line": 0, "character": 1}});
        }
        Diagnostic::from_value(&json).unwrap()
    }

    /// "Unsolved goals" is Lean's tag, not the message's wording: the
    /// message of Lean 4.35's report without its tag is another error.
    #[test]
    fn unsolved_goals_are_recognised_by_lean_s_tag() {
        let reported = diagnostic(json!({"severity": 1, "leanTags": [1], "source": "Lean 4",
                              "message": "unsolved goals\nh : T\n⊢ T"}));
        assert_eq!(unsolved_goals(&reported), Some("h : T\n⊢ T"));
        let untagged = diagnostic(json!({"severity": 1, "message": "unsolved goals\nh : T\n⊢ T"}));
        assert_eq!(unsolved_goals(&untagged), None);
        let other_tag =
            diagnostic(json!({"severity": 1, "leanTags": [2], "message": "unsolved goals\n⊢ T"}));
        assert_eq!(unsolved_goals(&other_tag), None);
        let warning =
            diagnostic(json!({"severity": 2, "leanTags": [1], "message": "unsolved goals\n⊢ T"}));
        assert_eq!(unsolved_goals(&warning), None);
    }

    /// The seed's visibility table fixes each Lean severity's log level: at
    /// minimum level `error` only errors show, at `warning` and `notice`
    /// errors and warnings, at `info` information too, at `debug` hints too.
    /// So a Lean error is an `error` log (hosts such as Codex print it as an
    /// ERROR line; the seed leaves no room to lower it). Where the seed is
    /// silent, a severity LSP does not define is no server error (`debug`);
    /// one left out is read as an error here as in the counts and readiness
    /// (LSP leaves it to the client; Lean always sends one).
    #[test]
    fn log_levels_of_lean_diagnostics_follow_the_seeds_table() {
        for (severity, level) in [
            (json!(1), LogLevel::Error),
            (json!(2), LogLevel::Warning),
            (json!(3), LogLevel::Info),
            (json!(4), LogLevel::Debug),
            (json!(7), LogLevel::Debug),
            (Value::Null, LogLevel::Error),
        ] {
            let d = diagnostic(json!({"severity": severity, "message": "m"}));
            assert_eq!(log_level(&d), level, "{severity}");
        }
    }

    /// Each diagnostic Lean 4.35 published for the categories fixture, by
    /// its category; then what only the table's rules decide.
    #[test]
    fn categories_of_what_lean_sent() {
        let recorded: Value = serde_json::from_str(include_str!(
            "../../../tests/fixtures/payloads/diagnostic-categories.json"
        ))
        .unwrap();
        let mut seen: Vec<(String, DiagnosticCategory)> = recorded["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| {
                let d = Diagnostic::from_value(d).unwrap();
                let first = d.message.lines().next().unwrap_or("").to_owned();
                (first, category(&d))
            })
            .collect();
        seen.sort();
        use DiagnosticCategory::*;
        let expected = [
            ("Fix.one : N", Info),
            ("Try this:", Suggestion),
            ("Try this:", Suggestion),
            ("Unknown identifier `missingThing`", Error),
            (
                "Variable name `unused` is not explicitly referenced.",
                Linter,
            ),
            ("declaration uses `sorry`", Sorry),
            ("unsolved goals", UnsolvedGoals),
        ];
        let expected: Vec<(String, DiagnosticCategory)> =
            expected.map(|(m, c)| (m.to_owned(), c)).into();
        assert_eq!(seen, expected);
        for (json, expected) in [
            (
                json!({"severity": 2, "tags": [2], "message": "`f` has been deprecated"}),
                Linter,
            ),
            (
                json!({"severity": 2, "message": "unused `simp` args\n\nNote: This linter can be disabled with `set_option linter.unusedSimpArgs false`"}),
                Linter,
            ),
            (
                json!({"severity": 2, "message": "this tactic is never executed"}),
                Warning,
            ),
            (
                json!({"severity": 1, "tags": [1], "message": "Variable name `x` is not explicitly referenced."}),
                Error,
            ),
            (
                json!({"severity": 1, "message": "declaration uses `sorry`"}),
                Error,
            ),
            (
                json!({"severity": 3, "message": "declaration uses `sorry`"}),
                Info,
            ),
            (
                json!({"severity": 2, "message": "Try this: exact h"}),
                Warning,
            ),
            (json!({"severity": 4, "message": "m"}), Info),
            (json!({"message": "no severity: an error"}), Error),
        ] {
            assert_eq!(category(&diagnostic(json.clone())), expected, "{json}");
        }
    }

    #[test]
    fn sorry_warnings_are_recognized() {
        assert!(says_sorry("declaration uses `sorry`"));
        assert!(says_sorry("declaration uses 'sorry'"));
        assert!(!says_sorry("unknown identifier 'sorry_free'"));
    }

    #[test]
    fn private_base_directories_are_left_out_of_messages() {
        let message = "unknown module prefix 'Nope'\n\nNo directory 'Nope' or file 'Nope.olean' in the search path entries:\n/w/.lake/build/lib/lean\n/tmp/lean-beam-bases-20944-bfe713be51e32db5\n/opt/lean/lib/lean";
        assert_eq!(
            scrub_private_paths(message).as_deref(),
            Some(
                "unknown module prefix 'Nope'\n\nNo directory 'Nope' or file 'Nope.olean' in the search path entries:\n/w/.lake/build/lib/lean\n/opt/lean/lib/lean"
            )
        );
        let inline = "object file '/tmp/lean-beam-bases-1-ab/LeanBeamBase/P1.olean' of module LeanBeamBase.P1 does not exist";
        let scrubbed = scrub_private_paths(inline).unwrap();
        assert!(!scrubbed.contains("lean-beam-bases"), "{scrubbed}");
        assert!(
            scrubbed.starts_with("object file '(a prefix base"),
            "{scrubbed}"
        );
        assert_eq!(scrub_private_paths("Unknown identifier `x`"), None);
    }

    #[test]
    fn counts_and_readiness() {
        let diags = vec![
            diagnostic(json!({"severity": 1, "message": "bad"})),
            diagnostic(json!({"severity": 2, "message": "meh"})),
            diagnostic(json!({"severity": 3, "message": "fyi"})),
        ];
        let c = counts(&diags);
        assert_eq!((c.error, c.warning, c.information, c.total), (1, 1, 1, 3));
        let r = readiness(&diags, false);
        assert!(!r.save_ready);
        assert_eq!(r.reason, ReadinessReason::Errors);
        assert!(readiness(&diags[1..], false).save_ready);
        let fatal = readiness(&[], true);
        assert_eq!(fatal.blocking_error_count, 1);
        assert_eq!(fatal.reason, ReadinessReason::FatalError);
    }

    /// Publishes recorded from the Lean 4.35 test server with a `LAKE` whose
    /// `setup-file` writes build lines to stderr (see `tests/lean/lake_setup.rs`).
    #[test]
    fn lake_setup_lines_are_told_apart_from_diagnostics() {
        let header =
            json!({"start": {"line": 0, "character": 0}, "end": {"line": 1, "character": 0}});
        let whole =
            json!({"start": {"line": 0, "character": 0}, "end": {"line": 62, "character": 0}});
        let line = json!({"fullRange": whole, "message": "✔ [1/2] Built Fix.Basic (0.4s)\n", "range": header, "severity": 3});
        let read = |list: &[Value]| -> Vec<Diagnostic> {
            list.iter().map(|d| diagnostic(d.clone())).collect()
        };
        assert_eq!(
            lake_setup_line(&read(std::slice::from_ref(&line))),
            Some("✔ [1/2] Built Fix.Basic (0.4s)\n")
        );
        // A failed setup: the same place, but an error from the elaborator.
        let failed = json!({"fullRange": whole, "message": "`lake setup-file …` failed:\n", "range": header, "severity": 1, "source": "Lean 4"});
        assert_eq!(lake_setup_line(&read(&[failed])), None);
        // An information message of the first command.
        let mut elab = line.clone();
        elab["source"] = json!("Lean 4");
        assert_eq!(lake_setup_line(&read(&[elab])), None);
        // The sticky notice of a rebuilt dependency.
        let mut stale = line.clone();
        stale["message"] = json!(
            "Imports are out of date and should be rebuilt; use the \"Restart File\" command in your editor."
        );
        assert_eq!(lake_setup_line(&read(&[stale])), None);
        // Not alone in its publish, or nothing at all.
        assert_eq!(lake_setup_line(&read(&[line.clone(), line])), None);
        assert_eq!(lake_setup_line(&read(&[])), None);
    }
}
