//! What Lean reports while a call waits on a document, forwarded to the
//! caller's [`ProgressSink`]: live `lean.diagnostic` logs, Lake's setup of the
//! imports and throttled file progress.

use std::borrow::Cow;
use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;

use super::diagnostics::{self};
use super::document::{DiagnosticSet, Doc, Snapshot};
use crate::broker::ask::DiagnosticScope;
use crate::broker::progress::{LogLevel, ProgressSink};
use crate::lsp::protocol::Diagnostic;
use crate::results::DiagnosticCategory;

/// Progress notifications are throttled to at most one per this interval
/// (the final `done` update is never throttled).
const PROGRESS_INTERVAL: Duration = Duration::from_millis(100);

/// Forwards what Lean reports while a call waits on a document: live
/// `lean.diagnostic` logs, Lake's setup of the imports and throttled file
/// progress, each at most once.
pub struct Forwarder<'a> {
    sink: &'a dyn ProgressSink,
    doc: &'a Doc,
    version: u64,
    /// The file progress names: the document's own path, or for a probe's
    /// shadow the user's file it probes.
    shown: &'a str,
    probe: bool,
    /// Which diagnostics go out live as `lean.diagnostic`; `None` for none.
    scope: Option<DiagnosticScope>,
    sent: HashSet<String>,
    /// The diagnostic set last looked at: progress updates far outnumber
    /// new sets, and each set is only looked at once.
    seen_diagnostics: Option<Arc<DiagnosticSet>>,
    /// The diagnostic set last read for logs: a later set that only appends
    /// to it is read from there on.
    read_diagnostics: Option<Arc<DiagnosticSet>>,
    last_progress: Option<Instant>,
    seen_updates: u64,
    done_sent: bool,
    /// Lake setup lines already observed, and when one last went out as progress.
    seen_setup_lines: u64,
    last_setup_progress: Option<Instant>,
}

impl<'a> Forwarder<'a> {
    /// `sent`: this call sent Lean the edit or (re)open that made `version`.
    pub fn new(
        sink: &'a dyn ProgressSink,
        doc: &'a Doc,
        version: u64,
        scope: Option<DiagnosticScope>,
        sent: bool,
    ) -> Self {
        Forwarder {
            sink,
            doc,
            version,
            shown: &doc.path.shown,
            probe: false,
            scope,
            sent: HashSet::new(),
            seen_diagnostics: None,
            read_diagnostics: None,
            last_progress: None,
            seen_updates: 0,
            done_sent: false,
            // A call that sent the version starts at 0: `apply` reset the
            // report before Lean heard of it, so every Lake line since is
            // this call's, even one that arrived before this forwarder was
            // made (a loaded machine delayed a probe that long, and its
            // `lakeSetup` notice was lost). Lake output of a version another
            // call sent is not something this one waits for (an unchanged
            // file keeps its worker).
            seen_setup_lines: Some(doc.snapshot())
                .filter(|snap| !sent && snap.version == version)
                .map_or(0, |snap| snap.lake_setup.lines),
            last_setup_progress: None,
        }
    }

    /// The progress of a probe elaborated in the shadow document `doc`,
    /// named after the user's file `shown`.
    pub fn for_probe(
        sink: &'a dyn ProgressSink,
        doc: &'a Doc,
        version: u64,
        shown: &'a str,
        sent: bool,
    ) -> Self {
        Forwarder {
            shown,
            probe: true,
            ..Forwarder::new(sink, doc, version, None, sent)
        }
    }

    /// The progress of a request that waits on `doc` at `version` (Lean
    /// answers a position once it has elaborated it): what changes while it
    /// waits. A version already elaborated has nothing to tell.
    pub fn for_wait(sink: &'a dyn ProgressSink, doc: &'a Doc, version: u64) -> Self {
        let mut forwarder = Forwarder::new(sink, doc, version, None, false);
        let snap = doc.snapshot();
        forwarder.done_sent = snap.version == version && snap.progress.done;
        forwarder
    }

    /// Lake building the imports (the worker's `lake setup-file`, seen through
    /// the build lines Lean publishes): for the tools whose status notice is
    /// "on Lake setup or after the delay", the call's one `beam.status` notice
    /// without a progress token, throttled progress updates with one.
    async fn observe_lake_setup(&mut self, snap: &Snapshot) {
        let setup = &snap.lake_setup;
        if setup.lines == self.seen_setup_lines || !self.sink.follows_lake_setup() {
            return;
        }
        self.seen_setup_lines = setup.lines;
        let output = setup.last.as_deref().unwrap_or("");
        let path = self.shown;
        self.sink.lake_setup(path, output).await;
        if self.sink.has_progress_token()
            && self
                .last_setup_progress
                .is_none_or(|t| t.elapsed() >= PROGRESS_INTERVAL)
        {
            let sent = self
                .sink
                .progress(
                    &format!("{path}: Lake setup: {output}"),
                    Some(json!({ "done": false, "phase": "lakeSetup", "lake": output })),
                )
                .await;
            if sent {
                self.last_setup_progress = Some(Instant::now());
            }
        }
    }

    pub async fn observe(&mut self, snap: &Snapshot) {
        if snap.version != self.version {
            return;
        }
        let new_set = !self
            .seen_diagnostics
            .as_ref()
            .is_some_and(|seen| Arc::ptr_eq(seen, &snap.diagnostics));
        if new_set {
            self.seen_diagnostics = Some(Arc::clone(&snap.diagnostics));
        }
        // Reading a set costs; most sets have nothing to log (no level
        // admitted, or errors only and none among them).
        let worth_reading = new_set
            && match self.scope {
                None => false,
                Some(_) if !self.sink.admits(LogLevel::Error) => false,
                Some(DiagnosticScope::Errors) => snap.diagnostics.may_hold_errors(),
                Some(DiagnosticScope::Only(
                    DiagnosticCategory::Error | DiagnosticCategory::UnsolvedGoals,
                )) => snap.diagnostics.may_hold_errors(),
                Some(DiagnosticScope::All | DiagnosticScope::Only(_)) => true,
            };
        let to_read: Cow<'_, [Diagnostic]> = if worth_reading {
            let added = self
                .read_diagnostics
                .as_ref()
                .and_then(|earlier| snap.diagnostics.appended_since(earlier));
            self.read_diagnostics = Some(Arc::clone(&snap.diagnostics));
            added.map_or_else(|| Cow::Borrowed(snap.diagnostics.items()), Cow::Owned)
        } else {
            Cow::Borrowed(&[])
        };
        for diagnostic in to_read.iter() {
            let Some(scope) = self.scope else { break };
            if !diagnostics::in_scope(diagnostic, scope) {
                continue;
            }
            let level = diagnostics::log_level(diagnostic);
            if !self.sink.admits(level) {
                continue;
            }
            let key = serde_json::to_string(diagnostic).unwrap_or_default();
            if self.sent.insert(key) {
                let data = json!({
                    "path": self.doc.path.shown,
                    "version": self.version,
                    "diagnostic": diagnostics::item(diagnostic),
                });
                self.sink.log(level, "lean.diagnostic", data).await;
            }
        }
        self.observe_lake_setup(snap).await;
        if !self.sink.has_progress_token()
            || snap.progress.updates == self.seen_updates
            || self.done_sent
        {
            return;
        }
        let p = &snap.progress;
        let path = self.shown;
        if p.done {
            self.seen_updates = p.updates;
            self.done_sent = true;
            let message = if self.probe {
                format!("{path}: probe elaborated")
            } else {
                let lines = self.doc.state().index.line_count();
                format!("{path}: elaborated ({lines} lines)")
            };
            self.sink
                .progress(
                    &message,
                    Some(json!({ "done": true, "line": p.frontier_line })),
                )
                .await;
        } else if self
            .last_progress
            .is_none_or(|t| t.elapsed() >= PROGRESS_INTERVAL)
        {
            self.seen_updates = p.updates;
            let line = p.frontier_line + 1;
            let lines = self.doc.state().index.line_count();
            // A probe's lines past the probe position are its own, so only
            // the line is told, not a count of the user's file.
            let message = if self.probe {
                format!("{path}: elaborating the probe, line {line}")
            } else {
                format!("{path}: elaborating, line {line} of {lines}")
            };
            // Lean reports changes of ranges that leave the first line being
            // processed where it was: such an update says nothing new and is
            // not sent (nor does it hold back the next one).
            let sent = self
                .sink
                .progress(
                    &message,
                    Some(json!({ "done": false, "line": p.frontier_line, "lines": lines })),
                )
                .await;
            if sent {
                self.last_progress = Some(Instant::now());
            }
        }
    }
}

impl Forwarder<'_> {
    /// When the newest file progress, held back by the throttle, is due: it
    /// goes out then even if Lean reports nothing more (a long command
    /// elaborates for minutes without a word, and the client must see where).
    pub fn progress_due(&self, snap: &Snapshot) -> Option<tokio::time::Instant> {
        let held_back = self.sink.has_progress_token()
            && !self.done_sent
            && snap.version == self.version
            && snap.progress.updates != self.seen_updates;
        let last = self.last_progress.filter(|_| held_back)?;
        Some(tokio::time::Instant::from_std(last + PROGRESS_INTERVAL))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::broker::engine::document::Content;
    use crate::broker::engine::workspace::DocPath;
    use crate::broker::progress::LakeLines;

    /// Version 2 of a document whose worker already printed one Lake line.
    async fn setting_up() -> Doc {
        let doc = Doc::new(
            DocPath {
                file: "/w/F.lean".into(),
                shown: "F.lean".into(),
            },
            "file:///w/F.lean".into(),
            0,
        );
        let edit = doc.lock_edit().await;
        let content = Content {
            version: 2,
            text: Arc::from("import A\n"),
            disk: None,
        };
        edit.open(1, Some(content));
        drop(edit);
        let line = r#"[{"range":{"start":{"line":0,"character":0},"end":{"line":1,"character":0}},"fullRange":{"start":{"line":0,"character":0},"end":{"line":1,"character":0}},"severity":3,"message":"✔ [1/1] Built A (0.3s)\n"}]"#;
        let raw = serde_json::value::RawValue::from_string(line.to_owned()).unwrap();
        doc.on_diagnostics(Some(2), DiagnosticSet::published(raw));
        assert_eq!(doc.snapshot().lake_setup.lines, 1);
        doc
    }

    /// A Lake line that arrived before the forwarder was made belongs to the
    /// call that sent the version (the `lakeSetup` notice a loaded machine
    /// lost), not to a call that only waits on a version another sent.
    #[tokio::test]
    async fn lake_lines_before_the_forwarder_count_for_the_call_that_sent_the_version() {
        for (sent, notices) in [(true, 1), (false, 0)] {
            let doc = setting_up().await;
            let sink = LakeLines::default();
            let mut forwarder = Forwarder::new(&sink, &doc, 2, None, sent);
            forwarder.observe(&doc.snapshot()).await;
            let seen = sink.lines();
            assert_eq!(seen.len(), notices, "sent {sent}: {seen:?}");
            if sent {
                assert_eq!(seen[0], "✔ [1/1] Built A (0.3s)");
            }
        }
    }
}
