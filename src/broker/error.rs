//! What goes wrong in the broker, as facts to match on. No agent prose here:
//! `src/ops/errors.rs` turns each variant into the tool error agents see
//! (code, message, data), in one place.

use std::time::Duration;

pub use crate::lean_source::declarations::Unresolved;
use crate::lean_source::text::PositionError;
use crate::lsp::LeanErrorCode;
use crate::lsp::LspError;
use crate::results::{DiagnosticCounts, DocumentProgress};
use crate::safe_fs::FsError;

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug)]
pub enum Error {
    /// Lean answered `method` with an error, or the connection to it failed
    /// while `method` was under way.
    Lsp {
        method: &'static str,
        /// Boxed: an exit's details would make every `Result` of the broker
        /// as large.
        error: Box<LspError>,
    },
    /// Lean did not answer `method` within the request time limit.
    Timeout {
        method: &'static str,
        limit: Duration,
    },
    /// The Lean server of a workspace could not be started.
    Setup {
        command: String,
        root: String,
        error: Box<LspError>,
    },
    /// Lean reported the file's worker stopped (fatal file progress) and holds
    /// every request for the file until it is reopened.
    WorkerStopped { path: String, version: u64 },
    /// Lean did not finish elaborating `version` within the sync time limit;
    /// `progress` and `counts` are what it had reported by then.
    BarrierIncomplete {
        path: String,
        version: u64,
        limit: Duration,
        progress: Box<DocumentProgress>,
        counts: Box<DiagnosticCounts>,
    },
    /// Lean did not finish elaborating a probe's text (in a shadow of
    /// `path`, the user's file) within the sync time limit. Said of the
    /// user's file: a shadow document's name and version mean nothing to an
    /// agent.
    ProbeIncomplete { path: String, limit: Duration },
    /// A call named a version of `path` that is not the current one.
    VersionMismatch {
        path: String,
        expected: u64,
        current: u64,
    },
    /// A snapshot-bound call on a file this runtime never read.
    NeverSynced { path: String },
    /// A position that names no place of the pinned text.
    Position {
        error: PositionError,
        line_text: Option<String>,
    },
    /// A descriptor or path that names no workspace or source file.
    InvalidInput {
        field: &'static str,
        value: String,
        rule: String,
    },
    /// A tool argument the schema allows but the broker cannot take:
    /// `what` it is (e.g. "declaration name \"a b\"") and the `rule` it
    /// breaks, which says what to give instead.
    Argument { what: String, rule: &'static str },
    /// A `declaration` argument that names no single place of the pinned text.
    Declaration { name: String, problem: Unresolved },
    /// The source file of `path` (as results name it) cannot be read.
    Source {
        path: String,
        problem: SourceProblem,
    },
    /// A file the broker reads for its own use was refused (a lakefile that
    /// is not a regular file, for example).
    Fs(FsError),
    /// A configured bound was reached.
    ResourceLimit(Limit),
    /// A proof handle that cannot be used.
    Handle {
        handle: String,
        problem: HandleProblem,
    },
    /// A probe that cannot run at (`line`, `character`).
    Probe {
        line: u64,
        character: u64,
        problem: ProbeProblem,
    },
    /// A checkpoint that could not be made.
    Save(SaveError),
    /// Lean did not get past the header of `path` at `version` (an import
    /// that does not load, or Lake's set-up of the imports failed): nothing
    /// after it was elaborated, so no position has anything to read.
    HeaderFailed {
        path: String,
        version: u64,
        /// The import the error is about, when it names one.
        import: Option<String>,
        /// Lean's message (for Lake, its command line and stderr).
        message: String,
    },
    /// Lean answered something the broker cannot use.
    Unexpected(String),
    /// A batch's candidate `index` (of `texts`) that cannot run at the
    /// batch's place, and why.
    Candidate { index: usize, error: Box<Error> },
}

/// Why a source file cannot be read.
#[derive(Debug)]
pub enum SourceProblem {
    /// Refused by `safe_fs` (not a regular file, too large, unreadable).
    Fs(FsError),
    /// Not UTF-8 (the decoder's account of where).
    NotUtf8(String),
}

/// A bound that could not give way: what it is about, its value and its use.
#[derive(Debug, Clone)]
pub enum Limit {
    /// Every cached runtime has a call in flight, so none can be evicted for
    /// `root`.
    Runtimes {
        root: String,
        limit: usize,
        used: usize,
    },
    /// Every document open in the workspace's Lean server has a call in
    /// flight, so none can be closed to open `path`.
    Documents {
        path: String,
        limit: usize,
        open: usize,
    },
    /// A proof handle on `shown` would hold `alone` bytes by itself.
    HandleBytes {
        shown: String,
        limit: usize,
        alone: usize,
    },
    /// Every one of a workspace's `limit` snippet header documents has a
    /// call in flight.
    SnippetHeaders { limit: usize },
    /// One more Lean worker (`worker` bytes, estimated) is larger than the
    /// whole memory budget (`limit` bytes, from `source`): no probe slot can
    /// ever fit.
    LeanMemory {
        limit: u64,
        worker: u64,
        source: String,
    },
    /// A Lean process was killed for its memory; `path` is the document
    /// whose worker it was (or that the call was about).
    Memory {
        kill: MemoryKill,
        path: Option<String>,
    },
}

/// A Lean process killed for holding more resident memory than
/// `LEAN_BEAM_MAX_LEAN_RSS_MIB` allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryKill {
    pub pid: u32,
    /// Its resident set when it was killed, in bytes.
    pub rss: u64,
    /// The bound, in bytes.
    pub limit: u64,
    /// The server (with every worker of it), not one file's worker.
    pub server: bool,
}

/// Why a proof handle cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HandleProblem {
    /// Not a handle in its one spelling.
    Malformed,
    /// Well formed, but minted by another server process.
    OtherProcess,
    /// Minted by another workspace runtime of this process.
    OtherRuntime,
    /// Released, consumed, evicted or never issued.
    Unknown,
    /// It continues another document, `shown`.
    OtherFile { shown: String },
    /// Released on another document than the one it continues.
    ReleasedOnOtherFile { shown: String, path: String },
    /// Its document moved on from `version` to `now`.
    VersionMoved {
        version: u64,
        shown: String,
        now: u64,
    },
    /// The Lean server it was computed in has restarted.
    ServerRestarted,
    /// Its workspace has no runtime (dropped, or never used).
    NoRuntime,
}

/// Why a probe cannot run where it was asked to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProbeProblem {
    /// Neither inside a tactic block, nor on a term, nor between commands.
    NotAPlace,
    /// On a term, where a handle was asked for: handles continue tactics or
    /// commands.
    TermTakesNoHandle,
    /// Between commands a probe runs exactly one command; the text holds
    /// `commands`.
    NotOneCommand { commands: usize },
}

/// Why no checkpoint was written.
#[derive(Debug)]
pub enum SaveError {
    /// The file is not a module of the workspace.
    NotModule {
        path: String,
        root: String,
        why: NotModule,
    },
    /// A lakefile passes batch-only `moreLeanArgs`.
    MoreLeanArgs { lakefile: &'static str },
    /// The compiler could not be started.
    Spawn { command: String, error: String },
    /// The compiler did not finish within `limit`.
    CompileTimeout { path: String, limit: Duration },
    /// Waiting for the compiler failed.
    CompilerWait { command: String, error: String },
    /// The compiler failed although the language server accepted the file.
    CompileFailed {
        command: String,
        status: String,
        code: Option<i32>,
        stdout: String,
        stderr: String,
    },
    /// The source changed on disk (`when`: since it was synced, or while it
    /// was being compiled).
    SourceChanged { path: String, when: &'static str },
    /// Preparing or publishing the artifacts failed.
    Publish(FsError),
}

/// Why a file names no module.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotModule {
    OutsideRoot,
    /// A path component that is not a Lean identifier.
    NotIdentifier(String),
    InsideLake,
}

impl Error {
    pub fn lsp(method: &'static str, error: LspError) -> Self {
        Error::Lsp {
            method,
            error: Box::new(error),
        }
    }

    pub fn invalid_input(field: &'static str, value: &str, rule: impl Into<String>) -> Self {
        Error::InvalidInput {
            field,
            value: value.to_owned(),
            rule: rule.into(),
        }
    }

    pub fn handle(handle: &str, problem: HandleProblem) -> Self {
        Error::Handle {
            handle: handle.to_owned(),
            problem,
        }
    }

    /// The JSON-RPC code of Lean's error answer, if this is one.
    pub fn lean_code(&self) -> Option<LeanErrorCode> {
        match self {
            Error::Lsp { error, .. } => error.rpc_code(),
            _ => None,
        }
    }

    /// Lean lost what was to answer: the file's worker crashed, exited or
    /// stopped, or the connection to the server broke.
    pub fn lost_worker(&self) -> bool {
        match self {
            Error::Lsp { error, .. } => match &**error {
                LspError::Rpc { code, .. } => {
                    matches!(
                        *code,
                        LeanErrorCode::WorkerCrashed | LeanErrorCode::WorkerExited
                    )
                }
                LspError::Exited(_) | LspError::Io(_) | LspError::Protocol(_) => true,
            },
            Error::WorkerStopped { .. } => true,
            _ => false,
        }
    }

    /// Lean failed in a way that says nothing about the document or the
    /// worker: an error answer of another kind than the named ones, or no
    /// answer in time (agents see `internalError`).
    pub fn is_internal(&self) -> bool {
        match self {
            Error::Lsp { error, .. } => !matches!(
                error.rpc_code(),
                None | Some(
                    LeanErrorCode::WorkerCrashed
                        | LeanErrorCode::WorkerExited
                        | LeanErrorCode::RequestCancelled
                        | LeanErrorCode::ContentModified
                )
            ),
            Error::Timeout { .. } | Error::Unexpected(_) => true,
            _ => false,
        }
    }
}

impl From<SaveError> for Error {
    fn from(error: SaveError) -> Self {
        Error::Save(error)
    }
}

impl From<Limit> for Error {
    fn from(limit: Limit) -> Self {
        Error::ResourceLimit(limit)
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The agent-facing wording is the tool error's (src/ops/errors.rs);
        // this is for logs.
        write!(f, "{self:?}")
    }
}

impl std::error::Error for Error {}
