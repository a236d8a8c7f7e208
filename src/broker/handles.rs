//! Proof handles: opaque tokens naming a speculative state to continue from.
//!
//! A handle is bound to this server process (a per-process nonce), to one
//! workspace runtime (its identity number), to one document and version, and to
//! the Lean session it was computed in. The store is bounded: past its capacity
//! the least recently used handle is evicted.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Mutex;

use serde_json::json;

use crate::surface::{ErrorCode, ToolError};

/// The token prefix (and format version).
const PREFIX: &str = "bh1";

/// What a handle continues from.
#[derive(Debug, Clone)]
pub struct HandleState {
    pub file: PathBuf,
    pub shown: String,
    /// The user document version the chain started from.
    pub version: u64,
    /// The Lean session generation it was computed in.
    pub generation: u64,
    /// The shadow text up to the end of the last step.
    pub shadow: String,
    /// Indentation for continuation steps (the column of the first step).
    pub indent: usize,
    /// True in proof mode (tactics), false in command mode.
    pub proof: bool,
    /// Where the chain's text sits in the shadow and in the user's file.
    pub placement: super::shadow::Placement,
}

#[derive(Debug)]
struct Entry {
    state: HandleState,
    last_used: u64,
}

#[derive(Debug)]
pub struct HandleStore {
    process_nonce: u64,
    runtime_id: u64,
    capacity: usize,
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    next: u64,
    clock: u64,
    entries: HashMap<u64, Entry>,
    evicted: u64,
}

/// A parsed token.
struct Token {
    nonce: u64,
    runtime: u64,
    id: u64,
}

fn parse(token: &str) -> Option<Token> {
    let mut parts = token.split('.');
    if parts.next()? != PREFIX {
        return None;
    }
    let nonce = u64::from_str_radix(parts.next()?, 16).ok()?;
    let runtime = parts.next()?.parse().ok()?;
    let id = parts.next()?.parse().ok()?;
    parts
        .next()
        .is_none()
        .then_some(Token { nonce, runtime, id })
}

/// Check that a token is well formed and was issued by this process.
fn check_origin(handle: &str, process_nonce: u64) -> Result<Token, ToolError> {
    let token = parse(handle).ok_or_else(|| {
        invalid(
            handle,
            "malformed: pass a handle exactly as lean_run_at_handle or lean_run_with returned it",
        )
    })?;
    if token.nonce != process_nonce {
        return Err(stale(
            handle,
            "it was issued by another lean-beam-mcp process (handles do not survive a restart)",
            "otherProcess",
        ));
    }
    Ok(token)
}

/// The process-level check of a handle, before any workspace is looked up.
pub fn check_process(handle: &str, process_nonce: u64) -> Result<(), ToolError> {
    check_origin(handle, process_nonce).map(|_| ())
}

fn invalid(handle: &str, why: &str) -> ToolError {
    ToolError::new(
        ErrorCode::InvalidParams,
        format!("handle {handle:?}: {why}"),
    )
    .with_data(json!({ "handle": handle, "reason": why }))
}

fn stale(handle: &str, why: &str, reason: &str) -> ToolError {
    ToolError::new(
        ErrorCode::ContentModified,
        format!("handle {handle:?}: {why}; start again with lean_run_at_handle on a fresh lean_sync version"),
    )
    .with_data(json!({ "handle": handle, "reason": reason }))
}

impl HandleStore {
    pub fn new(process_nonce: u64, runtime_id: u64, capacity: usize) -> Self {
        HandleStore {
            process_nonce,
            runtime_id,
            capacity: capacity.max(1),
            inner: Mutex::new(Inner::default()),
        }
    }

    fn inner(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Store a state and return its token.
    pub fn mint(&self, state: HandleState) -> String {
        let mut inner = self.inner();
        inner.next += 1;
        inner.clock += 1;
        let id = inner.next;
        let last_used = inner.clock;
        inner.entries.insert(id, Entry { state, last_used });
        while inner.entries.len() > self.capacity {
            let oldest = inner
                .entries
                .iter()
                .min_by_key(|(_, e)| e.last_used)
                .map(|(id, _)| *id)
                .expect("non-empty");
            inner.entries.remove(&oldest);
            inner.evicted += 1;
        }
        format!(
            "{PREFIX}.{:016x}.{}.{id}",
            self.process_nonce, self.runtime_id
        )
    }

    /// Check a token against this store, without consuming it.
    fn locate(&self, handle: &str) -> Result<u64, ToolError> {
        let token = check_origin(handle, self.process_nonce)?;
        if token.runtime != self.runtime_id {
            return Err(invalid(
                handle,
                "it belongs to another workspace runtime (another workspace, or one dropped since)",
            ));
        }
        Ok(token.id)
    }

    /// The state of a live handle (refreshing its recency); `consume` removes it.
    pub fn take(&self, handle: &str, consume: bool) -> Result<HandleState, ToolError> {
        let id = self.locate(handle)?;
        let mut inner = self.inner();
        inner.clock += 1;
        let clock = inner.clock;
        let state = if consume {
            inner.entries.remove(&id).map(|e| e.state)
        } else {
            inner.entries.get_mut(&id).map(|e| {
                e.last_used = clock;
                e.state.clone()
            })
        };
        state.ok_or_else(|| {
            invalid(
                handle,
                "unknown: it was released, consumed by lean_run_with_linear, evicted (least recently used), or never issued",
            )
        })
    }

    /// Check that a handle's state still matches the document and Lean session.
    pub fn check_current(
        handle: &str,
        state: &HandleState,
        file: &std::path::Path,
        version: u64,
        generation: u64,
    ) -> Result<(), ToolError> {
        if state.file != file {
            return Err(invalid(
                handle,
                &format!("it belongs to {}, not to this path", state.shown),
            ));
        }
        if state.version != version {
            return Err(stale(
                handle,
                &format!(
                    "it was computed for version {} of {}, which is now at version {version}",
                    state.version, state.shown
                ),
                "versionMismatch",
            ));
        }
        if state.generation != generation {
            return Err(stale(
                handle,
                "the Lean server it was computed in has since restarted",
                "backendRestarted",
            ));
        }
        Ok(())
    }

    pub fn len(&self) -> usize {
        self.inner().entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn stats(&self) -> serde_json::Value {
        let inner = self.inner();
        json!({ "live": inner.entries.len(), "capacity": self.capacity, "evicted": inner.evicted })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state() -> HandleState {
        HandleState {
            file: PathBuf::from("/w/A.lean"),
            shown: "A.lean".into(),
            version: 1,
            generation: 1,
            shadow: String::new(),
            indent: 2,
            proof: true,
            placement: Default::default(),
        }
    }

    #[test]
    fn tokens_are_bound_to_process_and_runtime() {
        let store = HandleStore::new(0xabc, 7, 8);
        let token = store.mint(state());
        assert!(store.take(&token, false).is_ok());
        let other_process = HandleStore::new(0xdef, 7, 8);
        assert_eq!(
            other_process.take(&token, false).unwrap_err().code,
            ErrorCode::ContentModified
        );
        let other_runtime = HandleStore::new(0xabc, 8, 8);
        assert_eq!(
            other_runtime.take(&token, false).unwrap_err().code,
            ErrorCode::InvalidParams
        );
        assert_eq!(
            store.take("garbage", false).unwrap_err().code,
            ErrorCode::InvalidParams
        );
        assert!(store.take(&token, true).is_ok());
        assert_eq!(
            store.take(&token, false).unwrap_err().code,
            ErrorCode::InvalidParams
        );
    }

    #[test]
    fn least_recently_used_is_evicted() {
        let store = HandleStore::new(1, 1, 2);
        let a = store.mint(state());
        let b = store.mint(state());
        store.take(&a, false).unwrap(); // a is now more recent than b
        let _c = store.mint(state());
        assert!(store.take(&a, false).is_ok());
        assert!(store.take(&b, false).is_err());
        assert_eq!(store.stats()["evicted"], 1);
    }
}
