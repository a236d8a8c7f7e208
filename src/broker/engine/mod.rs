//! The document/Lean engine: runtimes, documents and their edits, waits,
//! shadows, prefix bases, handles, checkpoints and the imports Lean loaded.
//! The features drive it; it knows nothing of them.

pub(crate) mod bases;
pub(crate) mod checkpoint;
pub(crate) mod compiler;
pub(crate) mod concurrent;
pub(crate) mod diagnostics;
pub(crate) mod docs;
pub(crate) mod document;
pub(crate) mod edit;
pub(crate) mod forward;
pub(crate) mod handles;
pub(crate) mod import_stamps;
pub(crate) mod importers;
pub(crate) mod launch;
pub(crate) mod runtime;
pub(crate) mod server;
pub(crate) mod shadow;
pub(crate) mod snapshot;
pub(crate) mod sync;
pub(crate) mod wait;
pub(crate) mod workspace;
