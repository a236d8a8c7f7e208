//! The requests sent to the server and not answered yet, and whether new ones
//! may still be sent.

use std::collections::HashMap;
use std::sync::Mutex;

use serde_json::Value;
use tokio::sync::oneshot;

use super::error::LspError;
use crate::util::lock;

/// What a request's caller receives: its `result`, or why there is none.
pub(super) type Answer = Result<Value, LspError>;

/// Requests by id, each with the channel its caller waits on.
#[derive(Default)]
pub(super) struct PendingTable {
    state: Mutex<TableState>,
}

#[derive(Default)]
struct TableState {
    waiting: HashMap<i64, oneshot::Sender<Answer>>,
    /// Why new requests fail at once; `None` while the connection is usable.
    closed: Option<LspError>,
}

impl PendingTable {
    /// Wait for the answer to `id`, or fail at once with the reason the
    /// connection closed.
    pub(super) fn register(&self, id: i64) -> Result<oneshot::Receiver<Answer>, LspError> {
        let mut st = lock(&self.state);
        if let Some(e) = &st.closed {
            return Err(e.clone());
        }
        let (tx, rx) = oneshot::channel();
        st.waiting.insert(id, tx);
        Ok(rx)
    }

    /// Hand `answer` to the caller of `id`; `false` when nobody waits for it
    /// (its caller gave up).
    pub(super) fn answer(&self, id: i64, answer: Answer) -> bool {
        let tx = lock(&self.state).waiting.remove(&id);
        match tx {
            Some(tx) => {
                let _ = tx.send(answer);
                true
            }
            None => false,
        }
    }

    /// Stop waiting for `id`; `true` if it was still waited for.
    pub(super) fn forget(&self, id: i64) -> bool {
        lock(&self.state).waiting.remove(&id).is_some()
    }

    /// Why the connection closed, if it did.
    pub(super) fn closed(&self) -> Option<LspError> {
        lock(&self.state).closed.clone()
    }

    pub(super) fn is_open(&self) -> bool {
        lock(&self.state).closed.is_none()
    }

    /// Requests waiting for their answer.
    pub(super) fn len(&self) -> usize {
        lock(&self.state).waiting.len()
    }

    /// The connection broke: new requests fail with the first reason given,
    /// and every waiting one with `err`.
    pub(super) fn break_off(&self, err: &LspError) {
        self.close(err, false);
    }

    /// The process is gone: from now on every request, waiting or new, fails
    /// with `err`, whatever broke the connection before.
    pub(super) fn finish(&self, err: &LspError) {
        self.close(err, true);
    }

    fn close(&self, err: &LspError, replace: bool) {
        let waiting: Vec<_> = {
            let mut st = lock(&self.state);
            if replace || st.closed.is_none() {
                st.closed = Some(err.clone());
            }
            st.waiting.drain().map(|(_, tx)| tx).collect()
        };
        for tx in waiting {
            let _ = tx.send(Err(err.clone()));
        }
    }
}

/// A request's caller waiting for its answer. Dropped before the answer
/// arrives, it forgets the id and, if the request reached the server, calls
/// `cancel` (which sends `$/cancelRequest`).
pub(super) struct PendingGuard<'a, C: FnMut(i64)> {
    table: &'a PendingTable,
    id: i64,
    sent: bool,
    answered: bool,
    cancel: C,
}

impl<'a, C: FnMut(i64)> PendingGuard<'a, C> {
    pub(super) fn new(table: &'a PendingTable, id: i64, cancel: C) -> Self {
        PendingGuard {
            table,
            id,
            sent: false,
            answered: false,
            cancel,
        }
    }

    /// The request was written to the server: cancel it there if dropped.
    pub(super) fn sent(&mut self) {
        self.sent = true;
    }

    /// The answer arrived (or the connection closed): nothing left to undo.
    pub(super) fn answered(&mut self) {
        self.answered = true;
    }
}

impl<C: FnMut(i64)> Drop for PendingGuard<'_, C> {
    fn drop(&mut self) {
        if !self.answered && self.table.forget(self.id) && self.sent {
            (self.cancel)(self.id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exited(status: i32) -> LspError {
        LspError::Exited(crate::lsp::ExitInfo {
            status: Some(status),
            ..Default::default()
        })
    }

    #[test]
    fn a_dropped_request_is_forgotten_and_cancelled_only_once_sent() {
        let table = PendingTable::default();
        let mut cancelled = Vec::new();
        {
            let _rx = table.register(1).unwrap();
            let _guard = PendingGuard::new(&table, 1, |id| cancelled.push(id));
        }
        assert_eq!(table.len(), 0, "forgotten");
        {
            let _rx = table.register(2).unwrap();
            let mut guard = PendingGuard::new(&table, 2, |id| cancelled.push(id));
            guard.sent();
        }
        {
            let rx = table.register(3).unwrap();
            let mut guard = PendingGuard::new(&table, 3, |id| cancelled.push(id));
            guard.sent();
            assert!(table.answer(3, Ok(Value::Null)));
            assert_eq!(rx.blocking_recv().unwrap().unwrap(), Value::Null);
            guard.answered();
        }
        assert_eq!(cancelled, vec![2], "only the sent, unanswered one");
        assert!(
            !table.answer(2, Ok(Value::Null)),
            "a late answer finds nobody"
        );
    }

    #[test]
    fn closing_fails_waiting_and_new_requests() {
        let table = PendingTable::default();
        let rx = table.register(1).unwrap();
        let broken = LspError::Protocol("garbled".into());
        table.break_off(&broken);
        assert_eq!(rx.blocking_recv().unwrap(), Err(broken.clone()));
        assert_eq!(table.register(2).unwrap_err(), broken);
        // A second break keeps the first reason; the exit replaces it.
        table.break_off(&LspError::Io("later".into()));
        assert_eq!(table.closed(), Some(broken));
        table.finish(&exited(1));
        assert_eq!(table.closed(), Some(exited(1)));
        assert!(!table.is_open());
    }
}
