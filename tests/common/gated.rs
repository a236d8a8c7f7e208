//! Operations for protocol tests that need calls to stay active: tools whose
//! workspace root is `/gate/NAME` block until the test opens gate NAME; every
//! other call answers at once. Each start and each cancellation (the
//! operation's future dropped before it finished) is reported as an `Event`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use lean_beam_mcp::context::CallContext;
use lean_beam_mcp::surface::*;
use serde_json::{Value, json};
use tokio::sync::{Semaphore, mpsc};

#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// The operation started running (it was dispatched).
    Started(&'static str, Value),
    /// The operation's future was dropped before it finished (cancelled).
    Dropped(&'static str, Value),
}

#[derive(Default)]
pub struct Gated {
    gates: Mutex<HashMap<String, Arc<Semaphore>>>,
    pub events: Mutex<Option<mpsc::UnboundedSender<Event>>>,
    /// Ids of the operations running right now.
    running: Arc<Mutex<Vec<Value>>>,
    /// For each id: the ids that were running when it started.
    running_at_start: Mutex<HashMap<String, Vec<Value>>>,
}

struct DropGuard {
    tool: &'static str,
    id: Value,
    finished: bool,
    events: Option<mpsc::UnboundedSender<Event>>,
    running: Arc<Mutex<Vec<Value>>>,
}

impl Drop for DropGuard {
    fn drop(&mut self) {
        self.running.lock().unwrap().retain(|id| *id != self.id);
        if !self.finished {
            if let Some(tx) = &self.events {
                let _ = tx.send(Event::Dropped(self.tool, self.id.clone()));
            }
        }
    }
}

impl Gated {
    /// Operations reporting their events to the returned receiver.
    pub fn with_events() -> (Arc<Gated>, mpsc::UnboundedReceiver<Event>) {
        let ops = Arc::new(Gated::default());
        let (tx, events) = mpsc::unbounded_channel();
        *ops.events.lock().unwrap() = Some(tx);
        (ops, events)
    }

    fn gate(&self, name: &str) -> Arc<Semaphore> {
        let mut gates = self.gates.lock().unwrap();
        Arc::clone(
            gates
                .entry(name.to_string())
                .or_insert_with(|| Arc::new(Semaphore::new(0))),
        )
    }

    /// The operations that were running when `id` started.
    /// How many operations are running right now.
    pub fn running(&self) -> usize {
        self.running.lock().unwrap().len()
    }

    pub fn running_at_start(&self, id: Value) -> Vec<Value> {
        self.running_at_start.lock().unwrap()[&id.to_string()].clone()
    }

    pub fn open(&self, name: &str) {
        self.gate(name).add_permits(1_000);
    }

    async fn run(&self, ctx: &CallContext, root: Option<&str>) -> ToolOutcome {
        let tool = ctx.tool.name;
        let id = ctx.request_id.to_value();
        let events = self.events.lock().unwrap().clone();
        {
            let mut running = self.running.lock().unwrap();
            self.running_at_start
                .lock()
                .unwrap()
                .insert(id.to_string(), running.clone());
            running.push(id.clone());
        }
        if let Some(tx) = &events {
            let _ = tx.send(Event::Started(tool, id.clone()));
        }
        let mut guard = DropGuard {
            tool,
            id: id.clone(),
            finished: false,
            events,
            running: Arc::clone(&self.running),
        };
        if let Some(name) = root.and_then(|r| r.strip_prefix("/gate/")) {
            let gate = self.gate(name);
            let _permit = gate.acquire().await.expect("gate open");
        }
        guard.finished = true;
        Ok(json!({ "tool": tool, "id": id }))
    }
}

/// Every tool runs through `Gated::run` (which answers `{tool, id}`, not the
/// tool's result: these doubles answer the protocol layer's `Handler` directly);
/// the ones with a workspace block on the gate named by its root.
impl Handler for Gated {
    async fn handle(&self, ctx: &CallContext, call: ToolCall) -> ToolOutcome {
        let root = call.workspace().map(|w| w.root.clone());
        self.run(ctx, root.as_deref()).await
    }
}
