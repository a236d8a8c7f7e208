//! The `max_heartbeats` budget cannot be lifted from inside a text: a text
//! that sets `maxHeartbeats` is refused under a budget. Used by the probes
//! and by `lean_run_code`, so it sits below both (a leaf over the lexer).

use crate::broker::error::{Error, Result};
use crate::lean_source::lexer;

/// Whether `text` names Lean's `maxHeartbeats` option in code (any
/// spelling: `«maxHeartbeats»` too; `synthInstance.maxHeartbeats` is
/// another option).
pub fn sets_heartbeats(text: &str) -> bool {
    lexer::lex(text).iter().any(|l| {
        l.kind == lexer::LexemeKind::Word
            && text[l.start..l.end].replace(['«', '»'], "") == "maxHeartbeats"
            && !text[..l.start].ends_with('.')
    })
}

/// Refuse a text that would set `maxHeartbeats` under a heartbeat budget:
/// inside the text it would lift the budget (a command's `set_option … in`
/// is innermost, so it wins over the one the server puts around it).
pub fn check_budget(what: &str, text: &str, max_heartbeats: Option<u64>) -> Result<()> {
    if max_heartbeats.is_some() && sets_heartbeats(text) {
        return Err(Error::Argument {
            what: what.to_owned(),
            rule: "sets `maxHeartbeats`, which would lift the max_heartbeats budget from inside: refused under a budget; drop that `set_option`, or leave out max_heartbeats",
        });
    }
    Ok(())
}
