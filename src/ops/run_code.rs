//! `lean_run_code`: a self-contained snippet (its own header, then commands)
//! elaborated in a header-keyed virtual document of the workspace's Lean
//! server (see `broker::snippets`), never in a file.

use std::time::Duration;

use serde_json::{Value, json};

use crate::broker::Broker;
use crate::broker::diagnostics::{self, ERROR};
use crate::broker::shadow::{self, Placement};
use crate::broker::snippets;
use crate::broker::text::LineIndex;
use crate::results::{HeaderError, Range, RunCodeResult, SnippetBudget, SnippetMessage};
use crate::surface::{CallContext, ErrorCode, ToolError, Workspace};

pub struct RunCode<'a> {
    pub workspace: &'a Workspace,
    pub code: &'a str,
    pub max_heartbeats: Option<u64>,
    pub timeout_ms: Option<u64>,
}

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

/// Whether a message says that a declaration uses `sorry`.
fn says_sorry(text: &str) -> bool {
    text.starts_with("declaration uses") && text.contains("sorry")
}

/// A range of the elaborated text in the snippet's coordinates.
fn snippet_range(range: &Value, placement: Option<&Placement>) -> Range {
    let at = |which: &str| {
        let p = |k: &str| range[which][k].as_u64().unwrap_or(0) as u32;
        let position = (p("line"), p("character"));
        placement.map_or(position, |placement| placement.to_user(position))
    };
    Range::new(at("start"), at("end"))
}

/// Every snippet header document has a call in flight.
fn headers_busy() -> ToolError {
    let n = snippets::HEADERS;
    ToolError::new(
        ErrorCode::ResourceLimit,
        format!("{n} other snippet headers are in use by calls in flight in this workspace; retry when one has finished, or use one of their headers"),
    )
    .with_data(json!({ "kind": "snippetHeaders", "limit": n, "used": n }))
}

pub async fn run_code(
    broker: &Broker,
    ctx: &CallContext,
    args: &RunCode<'_>,
) -> Result<RunCodeResult, ToolError> {
    let root = broker.resolve_root(&args.workspace.root)?;
    let rt = broker.runtime(&root).await?;
    rt.record_request();
    let (text, placement) = budgeted(args.code, args.max_heartbeats);
    let header = shadow::header(&text).to_string();
    let claim = rt.snippets.claim(&header).ok_or_else(headers_busy)?;
    let server = rt.server().await?;
    let pool = rt.shadow_pool(&claim.path(&rt.root));
    let mut slot = pool.acquire(&text).await;
    let shown = "snippet";
    let elaborate = shadow::elaborate(
        &server,
        rt.timeouts.sync,
        ctx,
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
            snippets::abandon(&server, &slot, &header).await?;
            let mut snap = snap;
            if snap.version != current {
                snap.diagnostics = Default::default();
            }
            (snap, true)
        }
    };
    let blocked = !timed_out && snippets::header_failed(&snap, &text);
    if !timed_out {
        slot.confirm_header((!blocked).then_some(header.as_str()));
    }
    let header_error = blocked.then(|| {
        let first = snippets::header_errors(&snap, &text).next();
        HeaderError {
            import: first.and_then(|e| snippets::failed_import(&text, e)),
            message: first.map_or_else(
                || "Lean stopped processing the snippet's header".to_string(),
                |e| diagnostics::message(e).to_string(),
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
            let severity = diagnostics::severity(d);
            let text = diagnostics::message(d).to_string();
            success &= severity != ERROR;
            sorry |= says_sorry(&text);
            out_of_heartbeats |= severity == ERROR && text.contains(OUT_OF_HEARTBEATS);
            SnippetMessage {
                severity: diagnostics::severity_name(severity),
                range: snippet_range(d.get("range").unwrap_or(&Value::Null), placement.as_ref()),
                text,
            }
        })
        .collect();
    let exhausted = if timed_out {
        Some(SnippetBudget::Timeout)
    } else {
        out_of_heartbeats.then_some(SnippetBudget::Heartbeats)
    };
    Ok(RunCodeResult {
        workspace: rt.root.descriptor(),
        success,
        sorry,
        messages,
        header_error,
        exhausted,
    })
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

    #[test]
    fn sorry_warnings_are_recognized() {
        assert!(says_sorry("declaration uses `sorry`"));
        assert!(says_sorry("declaration uses 'sorry'"));
        assert!(!says_sorry("unknown identifier 'sorry_free'"));
    }
}
