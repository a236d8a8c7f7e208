//! Proof handles: opaque tokens naming a speculative state to continue from.
//!
//! A handle is a capability: whoever holds its text may run and release it, so
//! it cannot be guessed. Its text is `bh2.<process>.<runtime>.<secret>`:
//!
//! * `process`: 16 hex digits drawn at random when this server process
//!   started. A handle whose parts are well formed but whose process part is
//!   not ours was minted by another server process (one that is gone, or a
//!   replica), which is told apart from a malformed handle (see [`Origin`]).
//! * `runtime`: the decimal identity of the workspace runtime that minted it,
//!   so that a handle of a dropped (or evicted) runtime, or of another
//!   workspace, gets its own error instead of "unknown".
//! * `secret`: 128 random bits (32 hex digits), the key of the state in the
//!   store: knowing other handles tells nothing about it.
//!
//! Each handle has one spelling: lowercase hex of fixed width and a decimal
//! without leading zeros. Anything else is refused as malformed, so a handle
//! is never accepted under an alternate spelling.
//!
//! The store of a runtime is bounded by count and by bytes; past either, the
//! least recently used handle is evicted. A handle's state shares the
//! document text it was cut from (see [`Shadow`]) instead of copying it, so
//! what a handle holds of its own is the probe text, not the file.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

pub use super::launch::HandleLimits;
use crate::broker::ask::Taking;
use crate::broker::error::{Error, HandleProblem, Limit, Result};
use crate::results::HandleStats;
use crate::util::lock;

/// The token prefix (and format version).
const PREFIX: &str = "bh2";
/// Hex digits of the process part (64 bits).
const PROCESS_DIGITS: usize = 16;
/// Hex digits of the secret (128 bits).
const SECRET_DIGITS: usize = 32;

/// The random identity of one server process in its handles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcessTag(u64);

impl ProcessTag {
    /// A fresh tag from the operating system's randomness.
    pub fn random() -> Self {
        let mut bytes = [0u8; 8];
        getrandom::fill(&mut bytes).expect("the operating system provides randomness");
        ProcessTag(u64::from_le_bytes(bytes))
    }
}

/// 128 random bits.
fn new_secret() -> u128 {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).expect("the operating system provides randomness");
    u128::from_le_bytes(bytes)
}

/// A shadow text that shares the document snapshot it was cut from: the
/// first `cut` bytes of `base`, then `tail` (what the probe steps added).
#[derive(Debug, Clone)]
pub struct Shadow {
    base: Arc<str>,
    cut: usize,
    tail: String,
}

impl Shadow {
    /// `base[..cut]` followed by `tail`. `cut` must be a character boundary
    /// of `base`. (Handles are made with [`Shadow::sharing`]; tests build
    /// shadows directly.)
    #[cfg(test)]
    pub fn new(base: Arc<str>, cut: usize, tail: String) -> Self {
        assert!(base.is_char_boundary(cut), "a shadow is cut at a character");
        Shadow { base, cut, tail }
    }

    /// `whole` as a shadow of `base`: the longest prefix they share is
    /// `base`'s, the rest is its own.
    pub fn sharing(base: Arc<str>, whole: &str) -> Self {
        let mut cut = base
            .bytes()
            .zip(whole.bytes())
            .take_while(|(a, b)| a == b)
            .count();
        while !base.is_char_boundary(cut) {
            cut -= 1;
        }
        let tail = whole[cut..].to_owned();
        Shadow { base, cut, tail }
    }

    /// The length of the whole text, in bytes.
    pub fn len(&self) -> usize {
        self.cut + self.tail.len()
    }

    /// The whole text (a copy, for Lean).
    pub fn text(&self) -> String {
        let mut text = String::with_capacity(self.len());
        text.push_str(&self.base[..self.cut]);
        text.push_str(&self.tail);
        text
    }

    /// This text with `more` appended (the base stays shared).
    pub fn then(&self, more: &str) -> Shadow {
        let mut tail = String::with_capacity(self.tail.len() + more.len());
        tail.push_str(&self.tail);
        tail.push_str(more);
        Shadow {
            base: Arc::clone(&self.base),
            cut: self.cut,
            tail,
        }
    }

    /// The bytes of the shared text (all of it stays alive, not only the cut).
    fn base_bytes(&self) -> usize {
        self.base.len()
    }

    /// Identifies the shared text while some handle holds it.
    fn base_key(&self) -> usize {
        Arc::as_ptr(&self.base) as *const u8 as usize
    }
}

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
    pub shadow: Shadow,
    /// Indentation for continuation steps (the column of the first step).
    pub indent: usize,
    /// What the chain's steps are: tactics or commands (a term step takes
    /// no handle).
    pub kind: crate::results::StepKind,
    /// Where the chain's text sits in the shadow and in the user's file.
    pub placement: crate::lean_source::placement::Placement,
}

impl HandleState {
    /// The bytes this state holds of its own (the shared text aside).
    fn own_bytes(&self) -> usize {
        std::mem::size_of::<Entry>()
            + self.shadow.tail.len()
            + self.shown.len()
            + self.file.as_os_str().len()
    }
}

#[derive(Debug)]
struct Entry {
    state: HandleState,
    last_used: u64,
}

#[derive(Debug)]
pub struct HandleStore {
    process: ProcessTag,
    runtime_id: u64,
    limits: HandleLimits,
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    clock: u64,
    entries: HashMap<u128, Entry>,
    /// Shared texts held by live handles: their bytes and how many hold them.
    bases: HashMap<usize, (usize, usize)>,
    /// Own bytes of every entry plus each shared text once.
    bytes: usize,
    evicted: u64,
}

impl Inner {
    /// Count what `state` holds.
    fn charge(&mut self, state: &HandleState) {
        let base = self
            .bases
            .entry(state.shadow.base_key())
            .or_insert((state.shadow.base_bytes(), 0));
        if base.1 == 0 {
            self.bytes += base.0;
        }
        base.1 += 1;
        self.bytes += state.own_bytes();
    }

    fn discharge(&mut self, state: &HandleState) {
        let key = state.shadow.base_key();
        if let Some(base) = self.bases.get_mut(&key) {
            base.1 -= 1;
            if base.1 == 0 {
                self.bytes -= base.0;
                self.bases.remove(&key);
            }
        }
        self.bytes -= state.own_bytes();
    }

    fn remove(&mut self, key: u128) -> Option<HandleState> {
        let entry = self.entries.remove(&key)?;
        self.discharge(&entry.state);
        Some(entry.state)
    }
}

/// A parsed token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Token {
    process: ProcessTag,
    runtime: u64,
    secret: u128,
}

impl Token {
    /// The one spelling of the token.
    fn render(&self) -> String {
        format!(
            "{PREFIX}.{:0pw$x}.{}.{:0sw$x}",
            self.process.0,
            self.runtime,
            self.secret,
            pw = PROCESS_DIGITS,
            sw = SECRET_DIGITS
        )
    }
}

/// Where a handle's text says it comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// Not a handle in its one spelling.
    Malformed,
    /// A well-formed handle minted by another server process.
    OtherProcess(Token),
    /// Minted by this process (which does not mean it is still live).
    ThisProcess(Token),
}

fn lower_hex(part: &str, digits: usize) -> bool {
    part.len() == digits && part.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

fn parse(handle: &str) -> Option<Token> {
    let mut parts = handle.split('.');
    if parts.next()? != PREFIX {
        return None;
    }
    let process = parts.next().filter(|p| lower_hex(p, PROCESS_DIGITS))?;
    let runtime = parts.next()?;
    let secret = parts.next().filter(|p| lower_hex(p, SECRET_DIGITS))?;
    if parts.next().is_some() || !runtime.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let token = Token {
        process: ProcessTag(u64::from_str_radix(process, 16).ok()?),
        runtime: runtime.parse().ok()?,
        secret: u128::from_str_radix(secret, 16).ok()?,
    };
    // One spelling only (this also refuses leading zeros in the runtime).
    (token.render() == handle).then_some(token)
}

/// Where `handle` comes from, as far as its text tells.
pub fn origin(handle: &str, process: ProcessTag) -> Origin {
    match parse(handle) {
        None => Origin::Malformed,
        Some(token) if token.process != process => Origin::OtherProcess(token),
        Some(token) => Origin::ThisProcess(token),
    }
}

/// Check that a token is well formed and was issued by this process.
fn check_origin(handle: &str, process: ProcessTag) -> Result<Token> {
    match origin(handle, process) {
        Origin::Malformed => Err(Error::handle(handle, HandleProblem::Malformed)),
        Origin::OtherProcess(_) => Err(Error::handle(handle, HandleProblem::OtherProcess)),
        Origin::ThisProcess(token) => Ok(token),
    }
}

/// The process-level check of a handle, before any workspace is looked up.
pub fn check_process(handle: &str, process: ProcessTag) -> Result<()> {
    check_origin(handle, process).map(|_| ())
}

impl HandleStore {
    pub fn new(process: ProcessTag, runtime_id: u64, limits: HandleLimits) -> Self {
        HandleStore {
            process,
            runtime_id,
            limits: HandleLimits {
                count: limits.count.max(1),
                bytes: limits.bytes.max(1),
            },
            inner: Mutex::new(Inner::default()),
        }
    }

    fn inner(&self) -> std::sync::MutexGuard<'_, Inner> {
        lock(&self.inner)
    }

    /// Store a state and return its token. Older handles are evicted (least
    /// recently used first) to stay within the count and the bytes; a state
    /// that alone holds more than the bytes allowed is refused.
    pub fn mint(&self, state: HandleState) -> Result<String> {
        let alone = state.own_bytes() + state.shadow.base_bytes();
        if alone > self.limits.bytes {
            return Err(Error::ResourceLimit(Limit::HandleBytes {
                shown: state.shown,
                limit: self.limits.bytes,
                alone,
            }));
        }
        let secret = new_secret();
        let mut inner = self.inner();
        inner.clock += 1;
        let last_used = inner.clock;
        inner.charge(&state);
        inner.entries.insert(secret, Entry { state, last_used });
        while inner.entries.len() > self.limits.count || inner.bytes > self.limits.bytes {
            let oldest = inner
                .entries
                .iter()
                .filter(|(key, _)| **key != secret)
                .min_by_key(|(_, e)| e.last_used)
                .map(|(key, _)| *key)
                .expect("the new handle fits alone, so another one is over the bound");
            inner.remove(oldest);
            inner.evicted += 1;
        }
        Ok(Token {
            process: self.process,
            runtime: self.runtime_id,
            secret,
        }
        .render())
    }

    /// Check a token against this store, without consuming it.
    fn locate(&self, handle: &str) -> Result<u128> {
        let token = check_origin(handle, self.process)?;
        if token.runtime != self.runtime_id {
            return Err(Error::handle(handle, HandleProblem::OtherRuntime));
        }
        Ok(token.secret)
    }

    /// The state of a live handle: kept (its recency refreshed) or consumed.
    pub fn take(&self, handle: &str, taking: Taking) -> Result<HandleState> {
        let key = self.locate(handle)?;
        let mut inner = self.inner();
        inner.clock += 1;
        let clock = inner.clock;
        let state = match taking {
            Taking::Consume => inner.remove(key),
            Taking::Keep => inner.entries.get_mut(&key).map(|e| {
                e.last_used = clock;
                e.state.clone()
            }),
        };
        state.ok_or_else(|| Error::handle(handle, HandleProblem::Unknown))
    }

    /// Check that a handle's state still matches the document and Lean session.
    pub fn check_current(
        handle: &str,
        state: &HandleState,
        file: &std::path::Path,
        version: u64,
        generation: u64,
    ) -> Result<()> {
        if state.file != file {
            return Err(Error::handle(
                handle,
                HandleProblem::OtherFile {
                    shown: state.shown.clone(),
                },
            ));
        }
        if state.version != version {
            return Err(Error::handle(
                handle,
                HandleProblem::VersionMoved {
                    version: state.version,
                    shown: state.shown.clone(),
                    now: version,
                },
            ));
        }
        if state.generation != generation {
            return Err(Error::handle(handle, HandleProblem::ServerRestarted));
        }
        Ok(())
    }

    pub fn len(&self) -> usize {
        self.inner().entries.len()
    }

    pub fn stats(&self) -> HandleStats {
        let inner = self.inner();
        HandleStats {
            live: inner.entries.len() as u64,
            capacity: self.limits.count as u64,
            bytes: inner.bytes as u64,
            byte_capacity: self.limits.bytes as u64,
            shared_texts: inner.bases.len() as u64,
            evicted: inner.evicted,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(count: usize) -> HandleLimits {
        HandleLimits {
            count,
            bytes: 1 << 30,
        }
    }

    fn state_on(base: &Arc<str>, tail: &str) -> HandleState {
        HandleState {
            file: PathBuf::from("/w/A.lean"),
            shown: "A.lean".into(),
            version: 1,
            generation: 1,
            shadow: Shadow::new(Arc::clone(base), base.len(), tail.into()),
            indent: 2,
            kind: crate::results::StepKind::Tactic,
            placement: Default::default(),
        }
    }

    fn state() -> HandleState {
        state_on(&Arc::from("theorem t : T := by\n"), "  intro h\n")
    }

    /// The problem of a refused handle.
    fn problem(error: Error) -> HandleProblem {
        match error {
            Error::Handle { problem, .. } => problem,
            other => panic!("not a handle error: {other:?}"),
        }
    }

    #[test]
    fn tokens_are_bound_to_process_and_runtime() {
        let store = HandleStore::new(ProcessTag(0xabc), 7, limits(8));
        let token = store.mint(state()).unwrap();
        assert!(store.take(&token, Taking::Keep).is_ok());
        let other_process = HandleStore::new(ProcessTag(0xdef), 7, limits(8));
        assert_eq!(
            problem(other_process.take(&token, Taking::Keep).unwrap_err()),
            HandleProblem::OtherProcess
        );
        let other_runtime = HandleStore::new(ProcessTag(0xabc), 8, limits(8));
        assert_eq!(
            problem(other_runtime.take(&token, Taking::Keep).unwrap_err()),
            HandleProblem::OtherRuntime
        );
        assert_eq!(
            problem(store.take("garbage", Taking::Keep).unwrap_err()),
            HandleProblem::Malformed
        );
        assert!(store.take(&token, Taking::Consume).is_ok());
        assert_eq!(
            problem(store.take(&token, Taking::Keep).unwrap_err()),
            HandleProblem::Unknown
        );
    }

    #[test]
    fn a_token_carries_128_random_bits_in_one_spelling() {
        let process = ProcessTag(0x0123_4567_89ab_cdef);
        let store = HandleStore::new(process, 12, limits(8));
        let a = store.mint(state()).unwrap();
        let b = store.mint(state()).unwrap();
        let parts: Vec<&str> = a.split('.').collect();
        assert_eq!(parts.len(), 4, "{a}");
        assert_eq!(parts[0], "bh2");
        assert_eq!(parts[1], "0123456789abcdef");
        assert_eq!(parts[2], "12");
        assert_eq!(parts[3].len(), 32, "128 bits: {a}");
        assert_ne!(parts[3], b.split('.').nth(3).unwrap());
        assert!(matches!(origin(&a, process), Origin::ThisProcess(_)));
        // Alternate spellings of the same numbers are not the handle.
        let upper = format!(
            "{}.{}.{}.{}",
            parts[0],
            parts[1].to_uppercase(),
            parts[2],
            parts[3]
        );
        let zero = format!("{}.{}.0{}.{}", parts[0], parts[1], parts[2], parts[3]);
        let plus = format!("{}.{}.+{}.{}", parts[0], parts[1], parts[2], parts[3]);
        let short = format!("{}.{}.{}.{}", parts[0], parts[1], parts[2], &parts[3][1..]);
        let prefixed = format!(
            "{}.{}.{}.0x{}",
            parts[0],
            parts[1],
            parts[2],
            &parts[3][2..]
        );
        let spaced = format!(" {a}");
        for other in [&upper, &zero, &plus, &short, &prefixed, &spaced] {
            assert_eq!(origin(other, process), Origin::Malformed, "{other}");
            assert_eq!(
                problem(store.take(other, Taking::Keep).unwrap_err()),
                HandleProblem::Malformed,
                "{other}"
            );
        }
        // Well formed but from another process: told apart from malformed.
        let foreign = a.replace("0123456789abcdef", "fedcba9876543210");
        assert!(matches!(origin(&foreign, process), Origin::OtherProcess(_)));
        assert!(store.take(&a, Taking::Keep).is_ok());
    }

    #[test]
    fn least_recently_used_is_evicted() {
        let store = HandleStore::new(ProcessTag(1), 1, limits(2));
        let a = store.mint(state()).unwrap();
        let b = store.mint(state()).unwrap();
        store.take(&a, Taking::Keep).unwrap(); // a is now more recent than b
        let _c = store.mint(state()).unwrap();
        assert!(store.take(&a, Taking::Keep).is_ok());
        assert!(store.take(&b, Taking::Keep).is_err());
        assert_eq!(store.stats().evicted, 1);
    }

    #[test]
    fn handles_share_the_document_text_and_are_bounded_by_bytes() {
        let text: Arc<str> = Arc::from("x".repeat(1 << 20));
        let one = state_on(&text, "  a\n").own_bytes() + text.len();
        let store = HandleStore::new(
            ProcessTag(1),
            1,
            HandleLimits {
                count: 100,
                bytes: one + 10 * 1024,
            },
        );
        let first = store.mint(state_on(&text, "  a\n")).unwrap();
        let mut last = first.clone();
        for _ in 0..20 {
            let state = store.take(&last, Taking::Keep).unwrap();
            last = store
                .mint(HandleState {
                    shadow: state.shadow.then("  b\n"),
                    ..state
                })
                .unwrap();
        }
        let stats = store.stats();
        assert_eq!(stats.live, 21, "one text, shared: {stats:?}");
        assert_eq!(stats.shared_texts, 1, "{stats:?}");
        assert!(stats.bytes < (one + 10 * 1024) as u64, "{stats:?}");
        assert_eq!(
            store.take(&last, Taking::Keep).unwrap().shadow.text(),
            format!("{text}  a\n{}", "  b\n".repeat(20))
        );
        // Another text does not fit beside the first: the older handles go.
        let other: Arc<str> = Arc::from("y".repeat(1 << 20));
        store.mint(state_on(&other, "  c\n")).unwrap();
        let stats = store.stats();
        assert_eq!((stats.live, stats.shared_texts), (1, 1), "{stats:?}");
        assert!(store.take(&first, Taking::Keep).is_err());
        // A state larger than the bound alone is refused, clearly.
        let huge: Arc<str> = Arc::from("z".repeat(2 << 20));
        let e = store.mint(state_on(&huge, "")).unwrap_err();
        assert!(
            matches!(e, Error::ResourceLimit(Limit::HandleBytes { alone, .. }) if alone > 2 << 20),
            "{e:?}"
        );
    }
}
