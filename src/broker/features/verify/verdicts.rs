//! Verdicts of `lean_verify` kept for a repeat: what a fresh build and its
//! checks concluded, keyed by everything it is a function of, most recently
//! used last.

use std::sync::{Arc, Mutex};

use super::Closure;
use crate::broker::ask::Declaration;
use crate::broker::engine::workspace::Root;
use crate::results::{CheckedDeclaration, FailureReason, Tier, VerifyFailure};
use crate::sha256;

/// What a fresh build and its checks concluded: the part of a verdict that
/// is a function of its key alone.
#[derive(Debug, Clone)]
pub(super) struct Verdict {
    pub(super) failures: Vec<VerifyFailure>,
    pub(super) checked: Vec<CheckedDeclaration>,
    pub(super) tier: Tier,
    pub(super) rebuilt: u32,
    pub(super) reused: u32,
}

impl Verdict {
    /// Kept for a repeat only when it rests on a whole build and check: not
    /// a build that failed or timed out, nor a check or replay that did not
    /// answer (which a busy machine can cause).
    pub(super) fn cacheable(&self) -> bool {
        self.tier != Tier::None
            && !self
                .failures
                .iter()
                .any(|f| f.reason == FailureReason::CheckFailed)
    }
}

/// The whole key of a verdict: the root, the file's module and its cache key
/// (which covers every module of its closure: sources, the lakefile's
/// arguments, packages' `.olean` hashes, the Lean version and toolchain),
/// the kernel replay's checker (which file, which build of it), and the request (declarations with their
/// references, allowed axioms). `None` when the file has no key.
pub(super) fn verdict_key(
    root: &Root,
    module: &str,
    closure: &Closure,
    replays: Option<&str>,
    named: &[Declaration],
    allowed: &[String],
) -> Option<String> {
    let file_key = closure.keys.get(module)?;
    let request = serde_json::json!({
        "declarations": named
            .iter()
            .map(|d| serde_json::json!([d.name, d.reference]))
            .collect::<Vec<_>>(),
        "allowed_axioms": allowed,
    });
    let text = format!(
        "lean-beam-verdict 1\n{}\n{module}\n{file_key}\n{replays:?}\n{request}\n",
        root.path().display()
    );
    Some(sha256::hex(text.as_bytes()))
}

/// Verdicts kept, at most.
const MAX_VERDICTS: usize = 256;

/// This process's verdicts by key, the most recently used last.
static VERDICTS: Mutex<Vec<(String, Arc<Verdict>)>> = Mutex::new(Vec::new());

/// The verdict under `key`, now the most recently used.
pub(super) fn get(key: &str) -> Option<Arc<Verdict>> {
    let mut all = crate::util::lock(&VERDICTS);
    let at = all.iter().position(|(k, _)| k == key)?;
    let entry = all.remove(at);
    let v = Arc::clone(&entry.1);
    all.push(entry);
    Some(v)
}

/// Keep `verdict` under `key`, the least recently used one dropped when full.
pub(super) fn put(key: String, verdict: Verdict) {
    let mut all = crate::util::lock(&VERDICTS);
    all.retain(|(k, _)| *k != key);
    if all.len() >= MAX_VERDICTS {
        all.remove(0);
    }
    all.push((key, Arc::new(verdict)));
}
