//! Structured proof goals, from Lean's builtin RPC
//! `Lean.Widget.getInteractiveGoals` (hypotheses as names/type/value, not
//! re-parsed text), with `$/lean/plainGoal` as the fallback where RPC is
//! unavailable.

use std::time::Duration;

use crate::broker::ask::GoalsMode;
use crate::broker::engine::snapshot::Target;
use crate::broker::error::Result;
use crate::log_warn;
use crate::lsp::LeanErrorCode;
use crate::lsp::protocol::{
    DocumentPositionParams, GET_INTERACTIVE_GOALS, InteractiveGoal, InteractiveGoals, PlainGoal,
    RpcCall, RpcCallParams, RpcConnect, RpcConnectParams, RpcKeepAlive, RpcKeepAliveParams,
    RpcRelease, RpcReleaseParams, RpcSessionId, collect_rpc_refs, flatten_tagged_text,
};
use crate::results::{Goal, GoalParts, GoalSource, Hypothesis};
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

/// One interactive goal (`Lean.Widget.InteractiveGoal`) as agents see it:
/// tagged text flattened, hypotheses with their names, type and value.
fn interactive_goal(goal: &InteractiveGoal) -> Goal {
    let hyps = goal
        .hyps
        .iter()
        .map(|h| Hypothesis {
            names: h.names.clone(),
            ty: flatten_tagged_text(&h.ty),
            value: h.val.as_ref().map(flatten_tagged_text),
        })
        .collect();
    let parts = GoalParts {
        goal_prefix: goal.goal_prefix.as_deref().unwrap_or("⊢ ").to_owned(),
        target: flatten_tagged_text(&goal.target),
        hyps,
        user_name: goal.user_name.clone(),
    };
    Goal {
        pretty: pretty(&parts),
        parts: Some(parts),
    }
}

/// A structured goal as Lean prints it (`ppGoal`): the case name, one line
/// per hypothesis group (`a b : T`, `x : T := v`), then the target after
/// its prefix.
pub fn pretty(goal: &GoalParts) -> String {
    let mut out = String::new();
    if let Some(name) = &goal.user_name {
        out.push_str("case ");
        out.push_str(name);
        out.push('\n');
    }
    for hyp in &goal.hyps {
        out.push_str(&hyp.names.join(" "));
        out.push_str(" : ");
        out.push_str(&hyp.ty);
        if let Some(value) = &hyp.value {
            out.push_str(" := ");
            out.push_str(value);
        }
        out.push('\n');
    }
    out.push_str(&goal.goal_prefix);
    out.push_str(&goal.target);
    out
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

/// A rendered goal (`case x\nh : T\n⊢ target`) in the structured shape, for
/// the fallback path and for Lean's `plainTermGoal`.
pub fn plain_goal(text: &str) -> Goal {
    let mut lines = text.lines().peekable();
    let mut user_name = None;
    if let Some(first) = lines.peek() {
        if let Some(name) = first.strip_prefix("case ") {
            user_name = Some(name.to_string());
            lines.next();
        }
    }
    let mut hyps = Vec::new();
    let mut target = String::new();
    let mut in_target = false;
    for line in lines {
        if in_target {
            target.push('\n');
            target.push_str(line);
        } else if let Some(t) = line.strip_prefix("⊢ ") {
            target = t.to_string();
            in_target = true;
        } else if let Some((names, ty)) = line.split_once(" : ") {
            let (ty, value) = match ty.split_once(" := ") {
                Some((t, v)) => (t, Some(v)),
                None => (ty, None),
            };
            hyps.push(Hypothesis {
                names: names.split_whitespace().map(str::to_owned).collect(),
                ty: ty.to_owned(),
                value: value.map(str::to_owned),
            });
        } else if let Some(last) = hyps.last_mut() {
            last.ty.push('\n');
            last.ty.push_str(line);
        }
    }
    Goal {
        // Lean's own text, as it printed it.
        pretty: text.to_owned(),
        parts: Some(GoalParts {
            goal_prefix: "⊢ ".to_owned(),
            target,
            hyps,
            user_name,
        }),
    }
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

    #[test]
    fn plain_goal_fallback_parses_cases_and_lets() {
        let g = plain_goal("case succ\nm : N\nt : N := one.add one\n⊢ Eq t two");
        assert_eq!(g.user_name(), Some("succ"));
        assert_eq!(g.hyps()[1].value.as_deref(), Some("one.add one"));
        let parts = g.parts.as_ref().expect("parts");
        assert_eq!(parts.target, "Eq t two");
        // Rendering the parsed goal gives Lean's text back.
        let text = "case succ\nm : N\nt : N := one.add one\n⊢ Eq t two";
        assert_eq!(g.pretty, text);
        assert_eq!(pretty(parts), text);
    }

    #[test]
    fn interactive_goals_print_as_lean_prints_them() {
        let goal: InteractiveGoal = serde_json::from_value(serde_json::json!({
            "userName": "succ",
            "goalPrefix": "⊢ ",
            "type": { "text": "Eq (N.add m n) n" },
            "hyps": [
                { "names": ["m", "n"], "type": { "text": "N" } },
                { "names": ["t"], "type": { "text": "N" }, "val": { "text": "one" } },
            ],
        }))
        .unwrap();
        let goal = interactive_goal(&goal);
        assert_eq!(
            goal.pretty,
            "case succ\nm n : N\nt : N := one\n⊢ Eq (N.add m n) n"
        );
    }
}
