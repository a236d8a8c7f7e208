//! The document/Lean engine: runtimes, documents and their edits, waits,
//! shadows, prefix bases, handles, checkpoints and the imports Lean loaded.
//! The features drive it; it knows nothing of them.

pub(super) mod bases;
pub(super) mod checkpoint;
pub(super) mod compiler;
pub(super) mod concurrent;
pub(super) mod diagnostics;
pub(super) mod docs;
pub(super) mod document;
pub(super) mod edit;
pub(super) mod forward;
pub(super) mod handles;
pub(super) mod import_stamps;
pub(super) mod importers;
pub(super) mod launch;
pub(super) mod memory;
pub(super) mod runtime;
pub(super) mod runtimes;
pub(super) mod server;
pub(super) mod shadow;
pub(super) mod slots;
pub(super) mod snapshot;
pub(super) mod snippet_docs;
pub(super) mod sync;
pub(super) mod try_this;
pub(super) mod wait;
pub(super) mod workspace;
