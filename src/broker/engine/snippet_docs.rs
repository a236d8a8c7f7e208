//! The header-keyed virtual documents of `lean_run_code`, one runtime's
//! (engine state, so the runtime holds it; the feature is
//! `features::run_code`), and the reading of a document's header failures.

use std::sync::Mutex;
use std::time::Instant;

use super::document::Snapshot;
use super::shadow;
use super::workspace::{DocPath, Root};
use crate::lean_source::outline;
use crate::lsp::protocol::Diagnostic;

/// Headers kept warm per workspace runtime, each in its own virtual document.
pub const HEADERS: usize = 4;

/// The header-keyed virtual documents of one runtime.
pub struct Headers {
    entries: Mutex<Vec<Entry>>,
}

struct Entry {
    /// The normalized header (see [`key`]).
    key: String,
    /// Calls using it now: such an entry is never reassigned.
    users: usize,
    last_used: Instant,
}

/// A call's hold on the virtual document of its header; released on drop.
pub struct Claim<'a> {
    headers: &'a Headers,
    /// Which of the [`HEADERS`] documents it is (named in the logs).
    pub index: usize,
    /// The header had a document already (its worker may be warm).
    pub reused: bool,
    /// The header took another header's document instead of a new one,
    /// because the memory budget had no room for one more worker.
    pub for_memory: bool,
}

impl Drop for Claim<'_> {
    fn drop(&mut self) {
        let mut entries = self.headers.lock();
        let entry = &mut entries[self.index];
        entry.users -= 1;
        entry.last_used = Instant::now();
    }
}

impl Claim<'_> {
    /// The virtual document of the claimed header: the base path of its
    /// shadow pool (the slots are named after it, beside it, never written).
    pub fn path(&self, root: &Root) -> DocPath {
        DocPath {
            file: root.path().join(format!("snippet-{}.lean", self.index)),
            shown: "snippet".to_string(),
        }
    }
}

/// The header as a key: its lines without trailing white space, blank lines
/// and line comments dropped, so that layout alone does not cost an import.
pub fn key(header: &str) -> String {
    header
        .lines()
        .map(|l| l.find("--").map_or(l, |i| &l[..i]).trim_end())
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}

impl Default for Headers {
    fn default() -> Self {
        Headers {
            entries: Mutex::new(Vec::with_capacity(HEADERS)),
        }
    }
}

impl Headers {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Entry>> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Claim the document of `header`: the one it already has, else a new
    /// one while fewer than [`HEADERS`] exist and `room` (the memory budget
    /// has room for one more worker), else the least recently used one no
    /// call holds (or, when none is free, a new one after all: the slot
    /// then waits on the budget). `None` when every one is held.
    pub fn claim(&self, header: &str, room: bool) -> Option<Claim<'_>> {
        let key = key(header);
        let mut entries = self.lock();
        let free = |entries: &[Entry]| {
            entries
                .iter()
                .enumerate()
                .filter(|(_, e)| e.users == 0)
                .min_by_key(|(_, e)| e.last_used)
                .map(|(i, _)| i)
        };
        let mut for_memory = false;
        let (index, reused) = if let Some(i) = entries.iter().position(|e| e.key == key) {
            (i, true)
        } else if let Some(i) = free(&entries).filter(|_| !room && entries.len() < HEADERS) {
            for_memory = true;
            entries[i].key = key;
            (i, false)
        } else if entries.len() < HEADERS {
            entries.push(Entry {
                key,
                users: 0,
                last_used: Instant::now(),
            });
            (entries.len() - 1, false)
        } else {
            let i = free(&entries)?;
            entries[i].key = key;
            (i, false)
        };
        let entry = &mut entries[index];
        entry.users += 1;
        entry.last_used = Instant::now();
        Some(Claim {
            headers: self,
            index,
            reused,
            for_memory,
        })
    }
}

/// Whether Lean could not take the header of `text`: it stopped processing
/// the document, or reported an error within the header (a module that does
/// not import). Nothing after the header was elaborated then.
pub fn header_failed(snap: &Snapshot, text: &str) -> bool {
    header_errors(snap, text).next().is_some() || snap.progress.fatal
}

/// The errors Lean reported within the header of `text`.
pub fn header_errors<'s>(snap: &'s Snapshot, text: &str) -> impl Iterator<Item = &'s Diagnostic> {
    let header = shadow::header(text);
    let line = header.matches('\n').count() as u32;
    let character = (header.len() - header.rfind('\n').map_or(0, |i| i + 1)) as u32;
    snap.diagnostics
        .items()
        .iter()
        .filter(move |d| d.is_error() && d.start() < (line, character))
}

/// The import a header error is about: the module imported on the line the
/// error is on, else the one its message names.
pub fn failed_import(text: &str, error: &Diagnostic) -> Option<String> {
    let header = shadow::header(text);
    let modules = outline::imports(header).unwrap_or_default();
    let line = header
        .lines()
        .nth(error.range.start.line as usize)
        .unwrap_or("");
    let named_on_line = |m: &&String| {
        line.split(|c: char| c.is_whitespace())
            .any(|word| word == m.as_str())
    };
    let message = &error.message;
    modules
        .iter()
        .find(named_on_line)
        .or_else(|| modules.iter().find(|m| message.contains(m.as_str())))
        .cloned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_header_same_document_layout_aside() {
        let headers = Headers::default();
        let a = headers.claim("prelude\nimport A\n", true).unwrap();
        assert!(!a.reused);
        let again = headers
            .claim("prelude  \n\nimport A -- the same\n", true)
            .unwrap();
        assert!(again.reused);
        assert_eq!(a.index, again.index);
        let b = headers.claim("prelude\nimport B\n", true).unwrap();
        assert_ne!(a.index, b.index);
    }

    #[test]
    fn without_room_for_a_worker_a_new_header_takes_a_free_document() {
        let headers = Headers::default();
        let a = headers.claim("import A\n", true).unwrap().index;
        let b = headers.claim("import B\n", false).unwrap();
        assert_eq!((b.index, b.reused, b.for_memory), (a, false, true));
        // None free: a new document after all (its slot waits on the budget).
        let c = headers.claim("import C\n", false).unwrap();
        assert!(!c.for_memory);
        assert_ne!(c.index, b.index);
        drop((b, c));
        let again = headers.claim("import B\n", false).unwrap();
        assert!(again.reused && !again.for_memory, "its own document");
    }

    #[test]
    fn the_least_recently_used_free_header_gives_way_and_held_ones_never() {
        let headers = Headers::default();
        let held: Vec<Claim<'_>> = (0..HEADERS - 1)
            .map(|i| headers.claim(&format!("import M{i}\n"), true).unwrap())
            .collect();
        let free = headers.claim("import Free\n", true).unwrap().index;
        let taken = headers.claim("import New\n", true).unwrap();
        assert_eq!(taken.index, free, "the only header no call holds");
        assert!(!taken.reused);
        assert!(headers.claim("import Other\n", true).is_none(), "all held");
        drop(held);
        assert!(headers.claim("import M0\n", true).unwrap().reused);
    }
}
