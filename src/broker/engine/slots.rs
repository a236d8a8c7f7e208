//! Taking a shadow slot under the memory budget ([`super::memory`]): an idle
//! slot of the pool is always taken; a new one (a new Lean worker) only when
//! it fits, else the probe reuses, reclaims or waits as [`decide`] says, and
//! its slot carries a note saying what it did and why.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::edit;
use super::memory::{Decision, Events, Memory, Situation, decide};
use super::server::LeanServer;
use super::shadow::{Pool, SlotGuard};
use crate::broker::error::{Error, Limit, Result};
use crate::lsp::uri::path_to_uri;
use crate::util::lock;

/// A probe waiting on the budget looks again at least this often (memory
/// also comes back when workers exit or shrink, which nothing announces).
const LOOK_AGAIN: Duration = Duration::from_secs(2);

/// What the budget made a probe do before it had its slot.
#[derive(Debug, Default)]
struct Path {
    waited: Option<Instant>,
    reclaimed: usize,
    /// The figures of the last decision that did not open at once.
    said: Option<String>,
}

impl Path {
    fn note(&self, over: bool) -> Option<String> {
        let said = self.said.as_deref()?;
        let mut parts = Vec::new();
        if let Some(since) = self.waited {
            parts.push(format!(
                "waited {:.1} s for a probe slot and reused it",
                since.elapsed().as_secs_f64()
            ));
        }
        if self.reclaimed > 0 {
            parts.push(format!(
                "closed {} idle probe slot(s) of other files",
                self.reclaimed
            ));
        }
        if over {
            parts.push(
                "opened a probe slot over the budget: the server and the workspace's documents hold it, and a probe needs one slot"
                    .to_string(),
            );
        }
        (!parts.is_empty()).then(|| format!("{}: {said}", parts.join("; ")))
    }
}

/// A slot of `pool` for text `wanted`, within the memory budget; `others`
/// are the runtime's other pools (whose idle slots may be closed, on
/// `server`, to make room).
pub async fn acquire(
    memory: &Memory,
    server: &LeanServer,
    pool: &Pool,
    others: &[Arc<Pool>],
    wanted: &str,
) -> Result<SlotGuard> {
    let mut path = Path::default();
    loop {
        let permit = pool.permit().await;
        // Registered before looking: a slot given back between the look and
        // the wait wakes this probe.
        let returned = memory.returned.notified();
        tokio::pin!(returned);
        returned.as_mut().enable();
        let permit = match pool.take_idle_slot(permit, wanted) {
            Ok(mut slot) => {
                slot.note = path.note(false);
                return Ok(slot);
            }
            Err(permit) => permit,
        };
        let reading = memory.reading().await;
        let decided = {
            // Decided and reserved in one step: two probes never both take
            // the last room.
            let _one = lock(&memory.deciding);
            let used = memory.used(&reading);
            let new_worker = reading.new_worker(&path_to_uri(&pool.path().file));
            let situation = Situation {
                slots_here: pool.busy(),
                used,
                new_worker,
                limit: memory.budget.bytes,
                idle_elsewhere: others.iter().map(|p| p.idle_open()).sum(),
                busy_elsewhere: others.iter().map(|p| p.busy()).sum(),
            };
            let decision = decide(&situation);
            // The figures that made it wait or reclaim (not those after).
            if decision != Decision::Open {
                path.said = Some(memory.said(used, new_worker));
            }
            match decision {
                Decision::Open | Decision::OpenOver => {
                    let mut slot = pool.open(permit);
                    memory.reserve(&slot.doc().uri, new_worker);
                    let over = decision == Decision::OpenOver;
                    if over {
                        Events::count(&memory.events.over);
                    }
                    slot.note = path.note(over);
                    return Ok(slot);
                }
                Decision::Refuse => {
                    Events::count(&memory.events.refused);
                    return Err(Error::ResourceLimit(Limit::LeanMemory {
                        limit: memory.budget.bytes,
                        worker: new_worker,
                        source: memory.budget.source.clone(),
                    }));
                }
                other => other,
            }
        };
        drop(permit);
        match decided {
            Decision::Reclaim => {
                let closed = close_idle(memory, server, others).await;
                path.reclaimed += closed;
                if closed > 0 {
                    Events::count(&memory.events.reclaimed);
                    memory.invalidate();
                }
                continue;
            }
            _ => {
                if path.waited.is_none() {
                    path.waited = Some(Instant::now());
                    Events::count(&memory.events.waited);
                    crate::log_debug!(
                        "{}: waiting for a probe slot ({})",
                        pool.path().shown,
                        path.said.as_deref().unwrap_or("")
                    );
                }
                let _ = tokio::time::timeout(LOOK_AGAIN, returned).await;
            }
        }
    }
}

/// Close the idle slots of `pools` that are open in Lean, giving their
/// workers back; how many were closed.
async fn close_idle(memory: &Memory, server: &LeanServer, pools: &[Arc<Pool>]) -> usize {
    let mut closed = 0;
    for pool in pools {
        for slot in pool.take_idle(Duration::ZERO) {
            let edit = slot.doc().lock_edit().await;
            if edit::close(&edit, Some(server)).await {
                crate::log_debug!(
                    "closed idle shadow {} for the memory budget",
                    slot.doc().path.shown
                );
                memory.release(&slot.doc().uri);
                closed += 1;
            }
        }
    }
    closed
}
