//! Every producer of a `results::Goal`, in one feature: structured goals
//! from Lean's builtin RPC `Lean.Widget.getInteractiveGoals` (hypotheses as
//! names/type/value, not re-parsed text; `interactive.rs`), with
//! `$/lean/plainGoal` as the fallback where RPC is unavailable; plain goal
//! text and Lean's unsolved-goals report read into the same shape
//! (`plain.rs`); the type expected in a term (`term.rs`). The other
//! features (inspection, probes, `lean_term_goal`) call these.

mod interactive;
mod plain;
mod term;

pub use plain::{plain_goal, unsolved};
pub use term::term_goal;

use std::time::Duration;

use crate::broker::ask::GoalsMode;
use crate::broker::engine::snapshot::Target;
use crate::broker::error::Result;
use crate::log_warn;
use crate::lsp::LeanErrorCode;
use crate::lsp::protocol::{
    DocumentPositionParams, GET_INTERACTIVE_GOALS, InteractiveGoals, PlainGoal, RpcCall,
    RpcCallParams, RpcConnect, RpcConnectParams, RpcKeepAlive, RpcKeepAliveParams, RpcRelease,
    RpcReleaseParams, RpcSessionId, collect_rpc_refs,
};
use crate::results::{Goal, GoalSource};
use interactive::interactive_goal;
use lsp_types::Position;
use serde::Deserialize;

/// Lean drops an RPC session that is not kept alive for about 30 s.
const KEEP_ALIVE: Duration = Duration::from_secs(5);

/// The position whose goals answer `mode` for the tactic at `(line, character)`.
/// Lean reports the goals *before* a tactic at its first character and the
/// goals *after* it anywhere inside or at its end, so "before" moves to the
/// start of the tactic and "after" to the end of its text on that line.
pub fn query_position(line_text: &str, character: usize, mode: GoalsMode) -> usize {
    let chars: Vec<(usize, char)> = line_text.char_indices().collect();
    // Column (in chars) of the position, clamped to the line.
    let col = chars
        .iter()
        .position(|(i, _)| *i >= byte_of_utf16(line_text, character))
        .unwrap_or(chars.len());
    match mode {
        GoalsMode::Before => {
            // The tactic starts after the last separator before the position.
            let upto: String = chars[..col].iter().map(|(_, c)| *c).collect();
            let mut start = 0;
            for sep in [":= by", " by", "=>", "·", ";", "<;>", "(", "{"] {
                if let Some(i) = upto.rfind(sep) {
                    start = start.max(i + sep.len());
                }
            }
            let rest: String = chars.iter().map(|(_, c)| *c).collect();
            let skipped = rest[start..].len() - rest[start..].trim_start().len();
            utf16_len(&rest[..start + skipped])
        }
        GoalsMode::After => {
            let content = match line_text.find("--") {
                Some(comment) => &line_text[..comment],
                None => line_text,
            };
            let end = content.trim_end().len();
            let at = byte_of_utf16(line_text, character);
            utf16_len(&line_text[..end.max(at.min(line_text.len()))])
        }
    }
}

/// Whether text after `before` (its line up to there) is in the place of a
/// tactic: first on its line, or right after `by`, `=>`, `·`, `;` or `<;>`.
/// Elsewhere in a tactic block it is part of a term.
pub fn starts_tactic(before: &str) -> bool {
    let before = before.trim_end();
    before.trim_start().is_empty()
        || before == "by"
        || [" by", "(by", "=>", "·", ";", "<;>"]
            .iter()
            .any(|s| before.ends_with(s))
}

fn utf16_len(s: &str) -> usize {
    s.chars().map(char::len_utf16).sum()
}

fn byte_of_utf16(s: &str, units: usize) -> usize {
    let mut n = 0;
    for (i, c) in s.char_indices() {
        if n >= units {
            return i;
        }
        n += c.len_utf16();
    }
    s.len()
}

/// Which RPC session a goal query uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Connect {
    /// The document's session in this Lean session, if it has one.
    Reuse,
    /// A new one: Lean no longer knows the previous one.
    Fresh,
}

/// The RPC session of the bound document, connecting (and keeping it alive) on
/// first use in this Lean session.
async fn rpc_session(bound: &Target<'_>, connect: Connect) -> Result<String> {
    let generation = bound.server.generation;
    if connect == Connect::Reuse {
        if let Some(id) = bound.doc.rpc_session(generation) {
            return Ok(id);
        }
    }
    let connect = RpcConnectParams {
        uri: bound.doc.uri.clone(),
    };
    let id = bound
        .request_typed::<RpcConnect>(connect)
        .await?
        .session_id
        .0;
    let rpc = std::sync::Arc::downgrade(&bound.doc.set_rpc_session(generation, id.clone()));
    let client = std::sync::Arc::downgrade(&bound.server.client);
    let uri = bound.doc.uri.clone();
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(KEEP_ALIVE).await;
            // Stop when the document dropped or replaced the session, or Lean is gone.
            let (Some(client), Some(rpc)) = (client.upgrade(), rpc.upgrade()) else {
                return;
            };
            let params = RpcKeepAliveParams {
                uri: uri.clone(),
                session_id: RpcSessionId(rpc.id.clone()),
            };
            if !client.is_alive() || client.notify_typed::<RpcKeepAlive>(params).is_err() {
                return;
            }
        }
    });
    Ok(id)
}

/// Goals at the query position: RPC first (reconnecting once if Lean asks),
/// `plainGoal` where RPC is unavailable.
pub async fn goals(
    bound: &Target<'_>,
    line: u64,
    character: u64,
) -> Result<(Vec<Goal>, GoalSource)> {
    let position = Position::new(line as u32, character as u32);
    for attempt in 0..2 {
        let connect = if attempt == 0 {
            Connect::Reuse
        } else {
            Connect::Fresh
        };
        let session = match rpc_session(bound, connect).await {
            Ok(id) => RpcSessionId(id),
            Err(_) => break,
        };
        let params = RpcCallParams::at_position(
            &bound.doc.uri,
            position,
            session.clone(),
            GET_INTERACTIVE_GOALS,
        );
        match bound.request_unchecked_typed::<RpcCall>(params).await {
            Ok(answer) => {
                let now = bound.doc.state().version;
                if now != bound.version {
                    return Err(crate::broker::engine::snapshot::version_mismatch(
                        bound.doc,
                        bound.version,
                        now,
                    ));
                }
                let refs = collect_rpc_refs(&answer);
                if !refs.is_empty() {
                    let release = RpcReleaseParams {
                        uri: bound.doc.uri.clone(),
                        session_id: session,
                        refs,
                    };
                    let _ = bound.server.client.notify_typed::<RpcRelease>(release);
                }
                // `null` where Lean has no goals to show.
                let goals = match InteractiveGoals::deserialize(&answer) {
                    Ok(read) => read.goals.iter().flatten().map(interactive_goal).collect(),
                    Err(_) if answer.is_null() => Vec::new(),
                    Err(e) => {
                        log_warn!(
                            "Lean's interactive goals do not read as goals ({e}); asking plainGoal"
                        );
                        break;
                    }
                };
                return Ok((goals, GoalSource::Rpc));
            }
            Err(error) => {
                let needs_reconnect = error.lean_code() == Some(LeanErrorCode::RpcNeedsReconnect);
                if needs_reconnect && attempt == 0 {
                    continue;
                }
                // Any other failure of Lean's RPC (not of the document or its
                // worker) falls back to `plainGoal`.
                if !error.is_internal() {
                    return Err(error);
                }
                break;
            }
        }
    }
    let params =
        DocumentPositionParams::new(bound.doc.uri.as_str(), position.line, position.character);
    let answer = bound.request_typed::<PlainGoal>(params).await?;
    let goals = answer
        .map(|a| a.goals.iter().map(|text| plain_goal(text)).collect())
        .unwrap_or_default();
    Ok((goals, GoalSource::PlainGoal))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn before_moves_to_the_tactic_start_and_after_to_its_end() {
        let line = "    show Eq (N.succ (N.add N.zero m)) (N.succ m)";
        assert_eq!(query_position(line, 9, GoalsMode::Before), 4);
        assert_eq!(query_position(line, 4, GoalsMode::After), line.len());
        let arm = "  | succ m ih => exact congrArg N.succ ih -- done";
        assert_eq!(query_position(arm, 30, GoalsMode::Before), 17);
        assert_eq!(
            query_position(arm, 17, GoalsMode::After),
            "  | succ m ih => exact congrArg N.succ ih".len()
        );
    }

    #[test]
    fn tactic_places_are_told_from_terms() {
        for before in [
            "  ",
            "  | succ k ih => ",
            "theorem t : P := by ",
            "  · ",
            "  skip; ",
        ] {
            assert!(starts_tactic(before), "{before:?}");
        }
        for before in [
            "  exact ",
            "def x : N := ",
            "  exact And.intro ",
            "  apply foo_by ",
        ] {
            assert!(!starts_tactic(before), "{before:?}");
        }
    }
}
