//! Snippets (`lean_run_code`): text with its own module header, elaborated
//! without any project file, in virtual documents of the workspace's Lean
//! server (never written to disk).
//!
//! Importing a header is the expensive part of a snippet (seconds for a large
//! library), so snippets are kept by header: each header in use owns one of
//! [`HEADERS`] virtual documents, with its shadow slot pool (parallel snippets
//! of one header), and a later snippet of the same header edits a document
//! whose worker already imported it, so Lean elaborates only the commands.
//! A new header takes the least recently used document no call holds; Lean
//! restarts that document's worker on the header change. Every slot is a Lean
//! worker admitted within `LEAN_BEAM_MAX_DOCUMENTS` like any shadow.

use std::time::Duration;

use crate::broker::ask::{EditMode, RunCode};
use crate::broker::engine::edit;
use crate::broker::engine::memory::Events;
use crate::broker::engine::runtimes::Runtimes;
use crate::broker::engine::server::LeanServer;
use crate::broker::engine::shadow::Placement;
use crate::broker::engine::shadow::SlotGuard;
use crate::broker::engine::snippet_docs::{HEADERS, failed_import, header_errors, header_failed};
use crate::broker::engine::{diagnostics, shadow};
use crate::broker::error::{Error, Limit, Result};
use crate::broker::progress::ProgressSink;
use crate::lean_source::text::LineIndex;
use crate::results::{
    DiagnosticCategory, Exhausted, HeaderError, Range, RunCodeResult, SnippetMessage,
};

/// Give up on a slot's snippet (its time ran out): its text becomes the
/// header alone, so that Lean stops elaborating the commands, and its header
/// counts as unconfirmed.
pub async fn abandon(
    server: &LeanServer,
    slot: &SlotGuard,
    header: &str,
) -> crate::broker::error::Result<()> {
    let edit = slot.doc().lock_edit().await;
    slot.confirm_header(None);
    edit::apply(server, &edit, header.into(), None, EditMode::IfChanged).await?;
    Ok(())
}

// `lean_run_code` itself.

/// The text elaborated for a snippet: the snippet, with the heartbeat bound
/// set right after its header when one is asked for, and where the
/// snippet's own text is in it.
fn budgeted(code: &str, max_heartbeats: Option<u64>) -> (String, Option<Placement>) {
    let mut text = code.to_string();
    if !text.ends_with('\n') {
        text.push('\n');
    }
    let Some(heartbeats) = max_heartbeats else {
        return (text, None);
    };
    let cut = shadow::header(&text).len();
    let at = LineIndex::new(&text).position(&text, cut);
    let inserted = format!("\nset_option maxHeartbeats {heartbeats}\n");
    text.insert_str(cut, &inserted);
    let placement = Placement {
        anchor: at,
        text: (at.0 + 2, 0),
        origin: at,
        resume: None,
    };
    (text, Some(placement))
}

/// Lean's message when `maxHeartbeats` runs out: "(deterministic) timeout at
/// `whnf`, maximum number of heartbeats (N) has been reached".
const OUT_OF_HEARTBEATS: &str = "maximum number of heartbeats";

/// A range of the elaborated text in the snippet's coordinates.
fn snippet_range(range: lsp_types::Range, placement: Option<&Placement>) -> Range {
    let at = |p: lsp_types::Position| {
        let position = (p.line, p.character);
        placement.map_or(position, |placement| placement.to_user(position))
    };
    Range::new(at(range.start), at(range.end))
}

impl Runtimes {
    /// Elaborate a self-contained snippet in a header-keyed virtual
    /// document of the workspace's Lean server (`lean_run_code`).
    pub async fn run_code(
        &self,
        sink: &dyn ProgressSink,
        args: &RunCode<'_>,
    ) -> Result<RunCodeResult> {
        super::heartbeats::check_budget("the code", args.code, args.max_heartbeats)?;
        let root = self.resolve_root(args.workspace)?;
        let rt = self.runtime(&root).await?;
        rt.record_request();
        let (text, placement) = budgeted(args.code, args.max_heartbeats);
        let header = shadow::header(&text).to_string();
        let claim =
            rt.snippets
                .claim(&header, rt.room_for_worker(None))
                .ok_or(Error::ResourceLimit(Limit::SnippetHeaders {
                    limit: HEADERS,
                }))?;
        // Whether the header's worker may be warm: what tells a slow
        // snippet from a slow header in the logs.
        crate::log_debug!(
            "lean_run_code: header document {} ({})",
            claim.index,
            if claim.reused { "reused" } else { "new" }
        );
        let server = rt.server().await?;
        let pool = rt.shadow_pool(&claim.path(&rt.root));
        let mut slot = rt.slot(&server, &pool, &text).await?;
        if claim.for_memory {
            Events::count(&rt.memory().events.headers_reused);
        }
        let memory = slot.note.take().or_else(|| {
            claim.for_memory.then(|| {
                format!(
                    "took the document of another snippet header (its worker restarts on this header): {}",
                    rt.memory().said_now()
                )
            })
        });
        let shown = "snippet";
        let elaborate = shadow::elaborate(
            &server,
            rt.timeouts.sync,
            sink,
            shown,
            &mut slot,
            text.clone(),
        );
        let limit = args.timeout_ms.map(Duration::from_millis);
        let outcome = match limit {
            Some(limit) => tokio::time::timeout(limit, elaborate).await.ok(),
            None => Some(elaborate.await),
        };
        let (snap, timed_out) = match outcome {
            Some(done) => (done?.1, false),
            None => {
                // Keep what Lean reported for this text so far, then take the
                // commands away so that Lean stops working on them.
                let doc = slot.doc();
                let snap = doc.snapshot();
                let current = doc.state().version;
                abandon(&server, &slot, &header).await?;
                let mut snap = snap;
                if snap.version != current {
                    snap.diagnostics = Default::default();
                }
                (snap, true)
            }
        };
        let blocked = !timed_out && header_failed(&snap, &text);
        if !timed_out {
            slot.confirm_header((!blocked).then_some(header.as_str()));
        }
        let header_error = blocked.then(|| {
            let first = header_errors(&snap, &text).next();
            HeaderError {
                import: first.and_then(|e| failed_import(&text, e)),
                message: first.map_or_else(
                    || "Lean stopped processing the snippet's header".to_string(),
                    |e| e.message.clone(),
                ),
            }
        });
        let mut success = !blocked && !timed_out;
        let mut sorry = false;
        let mut out_of_heartbeats = false;
        let messages = snap
            .diagnostics
            .items()
            .iter()
            .map(|d| {
                let text = d.message.clone();
                let category = diagnostics::category(d);
                success &= !d.is_error();
                sorry |= category == DiagnosticCategory::Sorry;
                out_of_heartbeats |= d.is_error() && text.contains(OUT_OF_HEARTBEATS);
                SnippetMessage {
                    severity: diagnostics::severity_name(d.severity),
                    category,
                    range: snippet_range(d.range, placement.as_ref()),
                    text,
                }
            })
            .collect();
        let exhausted = if timed_out {
            Some(Exhausted::Timeout)
        } else {
            out_of_heartbeats.then_some(Exhausted::Heartbeats)
        };
        Ok(RunCodeResult {
            workspace: rt.root.descriptor(),
            success,
            sorry,
            messages,
            header_error,
            exhausted,
            memory,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_heartbeat_bound_goes_after_the_header_and_ranges_stay_the_snippets() {
        let code = "prelude\nimport A\ndef x := 1";
        let (text, placement) = budgeted(code, Some(50));
        assert_eq!(
            text,
            "prelude\nimport A\n\nset_option maxHeartbeats 50\ndef x := 1\n"
        );
        let placement = placement.expect("a bound was put in");
        assert_eq!(placement.to_user((4, 4)), (2, 4), "`x` in `def x`");
        assert_eq!(placement.to_user((1, 7)), (1, 7), "in the header");
        assert_eq!(budgeted(code, None).0, format!("{code}\n"));
        // No header: the bound is the first command.
        let (text, placement) = budgeted("def y := 2", Some(7));
        assert_eq!(text, "\nset_option maxHeartbeats 7\ndef y := 2\n");
        assert_eq!(placement.unwrap().to_user((2, 4)), (0, 4));
    }
}
