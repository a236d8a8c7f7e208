//! Legacy (2025-11-25) sessions: one protocol `Session` per `Mcp-Session-Id`,
//! created by a successful `initialize`, ended by `DELETE`, by idle expiry, by
//! making room for a new one, or by shutdown.
//!
//! A session is idle while it has no request in flight and no open `GET` stream;
//! an idle session older than the configured limit is removed by the reaper. At
//! most `max` sessions exist: a new one replaces the session idle the longest,
//! and is refused when none is idle.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::sync::mpsc;

use crate::mcp::session::Session;
use crate::util::lock;

/// Serialized lines queued for one `GET` stream before the writer waits.
const STREAM_CAPACITY: usize = 256;

pub struct LegacySession {
    pub id: String,
    pub core: Arc<Session>,
    state: Mutex<State>,
}

struct State {
    last_active: Instant,
    in_flight: usize,
    /// The session's standalone `GET` stream, if one is open.
    stream: Option<mpsc::Sender<String>>,
}

impl LegacySession {
    fn state(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }

    /// Mark one request in flight until the returned guard drops.
    pub fn busy(self: &Arc<Self>) -> Busy {
        let mut state = self.state();
        state.in_flight += 1;
        state.last_active = Instant::now();
        Busy(Arc::clone(self))
    }

    /// Open the `GET` stream. `None` when one is already open.
    pub fn open_stream(&self) -> Option<mpsc::Receiver<String>> {
        let mut state = self.state();
        if state.stream.as_ref().is_some_and(|s| !s.is_closed()) {
            return None;
        }
        let (tx, rx) = mpsc::channel(STREAM_CAPACITY);
        state.stream = Some(tx);
        state.last_active = Instant::now();
        Some(rx)
    }

    /// Forget the `GET` stream (it ended): the session is idle from now on
    /// unless a request is in flight. This runs while the stream's receiver is
    /// still being dropped, so the sender cannot be asked whether it closed;
    /// it is the only stream (a second is refused while one is open).
    pub fn stream_closed(&self) {
        let mut state = self.state();
        state.stream = None;
        state.last_active = Instant::now();
    }

    /// Deliver a server message on the `GET` stream; dropped when none is open
    /// or it is full (notifications are best effort).
    pub fn to_stream(&self, line: String) {
        let stream = self.state().stream.clone();
        if let Some(stream) = stream {
            let _ = stream.try_send(line);
        }
    }

    fn idle_for(&self, now: Instant) -> Option<Duration> {
        let state = self.state();
        let attended = state.in_flight > 0 || state.stream.as_ref().is_some_and(|s| !s.is_closed());
        (!attended).then(|| now.saturating_duration_since(state.last_active))
    }

    /// End the session: cancel its calls and close its stream.
    fn end(&self) {
        self.core.cancel_all();
        self.state().stream = None;
    }
}

/// A request in flight on a session.
pub struct Busy(Arc<LegacySession>);

impl Drop for Busy {
    fn drop(&mut self) {
        let mut state = self.0.state();
        state.in_flight -= 1;
        state.last_active = Instant::now();
    }
}

pub struct Sessions {
    map: Mutex<HashMap<String, Arc<LegacySession>>>,
    pub idle: Duration,
    pub max: usize,
}

/// `register` found the table full and no session idle to replace.
#[derive(Debug, PartialEq, Eq)]
pub struct Full;

impl Sessions {
    pub fn new(idle: Duration, max: usize) -> Self {
        Self {
            map: Mutex::new(HashMap::new()),
            idle,
            max,
        }
    }

    fn map(&self) -> MutexGuard<'_, HashMap<String, Arc<LegacySession>>> {
        lock(&self.map)
    }

    /// A new, unregistered session (registered once `initialize` succeeds).
    pub fn create(&self, core: Arc<Session>) -> Arc<LegacySession> {
        Arc::new(LegacySession {
            id: new_session_id(),
            core,
            state: Mutex::new(State {
                last_active: Instant::now(),
                in_flight: 0,
                stream: None,
            }),
        })
    }

    /// Add a session. At the cap, the session idle the longest is ended to
    /// make room (returned, to be logged); with none idle, `Err(Full)`.
    pub fn register(
        &self,
        session: Arc<LegacySession>,
    ) -> Result<Option<Arc<LegacySession>>, Full> {
        let replaced = {
            let mut map = self.map();
            let replaced = if map.len() >= self.max {
                let now = Instant::now();
                let oldest = map
                    .values()
                    .filter_map(|s| s.idle_for(now).map(|idle| (idle, s.id.clone())))
                    .max()
                    .map(|(_, id)| id)
                    .ok_or(Full)?;
                map.remove(&oldest)
            } else {
                None
            };
            map.insert(session.id.clone(), session);
            replaced
        };
        if let Some(old) = &replaced {
            old.end();
        }
        Ok(replaced)
    }

    pub fn get(&self, id: &str) -> Option<Arc<LegacySession>> {
        self.map().get(id).cloned()
    }

    /// Remove and end a session; false if it did not exist.
    pub fn remove(&self, id: &str) -> bool {
        let removed = self.map().remove(id);
        match removed {
            Some(session) => {
                session.end();
                true
            }
            None => false,
        }
    }

    pub fn len(&self) -> usize {
        self.map().len()
    }

    /// Remove every session idle for longer than the limit; returns their ids.
    pub fn expire(&self, now: Instant) -> Vec<String> {
        let expired: Vec<Arc<LegacySession>> = {
            let mut map = self.map();
            let ids: Vec<String> = map
                .values()
                .filter(|s| s.idle_for(now).is_some_and(|idle| idle > self.idle))
                .map(|s| s.id.clone())
                .collect();
            ids.iter().filter_map(|id| map.remove(id)).collect()
        };
        for session in &expired {
            session.end();
        }
        expired.into_iter().map(|s| s.id.clone()).collect()
    }

    /// End every session (shutdown); returns the cancelled call count.
    pub fn end_all(&self) -> usize {
        let all: Vec<Arc<LegacySession>> = self.map().drain().map(|(_, s)| s).collect();
        let mut cancelled = 0;
        for session in all {
            cancelled += session.core.cancel_all();
            session.end();
        }
        cancelled
    }

    /// Cancel the cancellable calls of every session without ending it.
    pub fn cancel_all(&self) -> usize {
        self.map().values().map(|s| s.core.cancel_all()).sum()
    }
}

/// 128 random bits as 32 lowercase hex digits (visible ASCII, as the spec requires).
fn new_session_id() -> String {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).expect("the operating system provides randomness");
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_visible_ascii() {
        let a = new_session_id();
        let b = new_session_id();
        assert_ne!(a, b);
        assert_eq!(a.len(), 32);
        assert!(a.bytes().all(|c| (0x21..=0x7e).contains(&c)));
    }

    #[test]
    fn only_unattended_sessions_expire() {
        let sessions = Sessions::new(Duration::from_millis(10), 8);
        let idle = sessions.create(Arc::new(Session::default()));
        let busy = sessions.create(Arc::new(Session::default()));
        let streaming = sessions.create(Arc::new(Session::default()));
        for s in [&idle, &busy, &streaming] {
            sessions.register(Arc::clone(s)).unwrap();
        }
        let _guard = busy.busy();
        let _rx = streaming.open_stream().expect("first stream");
        assert!(
            streaming.open_stream().is_none(),
            "one GET stream per session"
        );
        let later = Instant::now() + Duration::from_secs(1);
        assert_eq!(sessions.expire(later), vec![idle.id.clone()]);
        assert_eq!(sessions.len(), 2);
        assert!(sessions.remove(&busy.id));
        assert!(!sessions.remove(&busy.id));
    }

    #[test]
    fn at_the_cap_the_longest_idle_session_makes_room() {
        let sessions = Sessions::new(Duration::from_secs(3600), 2);
        let first = sessions.create(Arc::new(Session::default()));
        let second = sessions.create(Arc::new(Session::default()));
        sessions.register(Arc::clone(&first)).unwrap();
        sessions.register(Arc::clone(&second)).unwrap();
        // `first` is busy; `second` is idle, so it goes.
        let guard = first.busy();
        let third = sessions.create(Arc::new(Session::default()));
        let replaced = sessions.register(Arc::clone(&third)).unwrap();
        assert_eq!(replaced.map(|s| s.id.clone()), Some(second.id.clone()));
        assert!(sessions.get(&second.id).is_none());
        assert_eq!(sessions.len(), 2);
        // With every session attended, a new one is refused.
        let _stream = third.open_stream().unwrap();
        let fourth = sessions.create(Arc::new(Session::default()));
        assert!(matches!(sessions.register(fourth), Err(Full)));
        drop(guard);
        // `first` is idle again and replaceable.
        let fifth = sessions.create(Arc::new(Session::default()));
        let replaced = sessions.register(fifth).unwrap();
        assert_eq!(replaced.map(|s| s.id.clone()), Some(first.id.clone()));
    }
}
