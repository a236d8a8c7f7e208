//! The request vocabulary: what a caller asks the broker (a place in a
//! pinned version, a handle to continue, budgets, options of each intent),
//! in one module. The results are `crate::results`; the errors `error`.

pub use crate::lean_source::declarations::Spot;
use crate::results::TodoItemKind;

/// Options of a sync.
#[derive(Debug, Clone, Copy)]
pub struct SyncOptions {
    pub scope: DiagnosticScope,
    pub items: bool,
    pub mode: EditMode,
}

/// How an edit is applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EditMode {
    /// Send the change if the file differs (update, sync).
    IfChanged,
    /// Re-elaborate from scratch under a new version even if unchanged (refresh,
    /// imports rebuilt).
    Reelaborate,
}

/// Which diagnostics a call reports item by item (counts are always whole).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiagnosticScope {
    /// Errors only.
    Errors,
    /// Every severity.
    All,
    /// One category only.
    Only(crate::results::DiagnosticCategory),
}

/// What `engine::handles::HandleStore::take` does with the handle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Taking {
    /// It stays live (`lean_run_with`).
    Keep,
    /// It is used up (`lean_run_with_linear`, `lean_release_handle`).
    Consume,
}

/// A document version a call names, as the call gave it.
#[derive(Debug, Clone, Copy)]
pub struct Pinned<'a> {
    /// The workspace descriptor.
    pub workspace: &'a str,
    pub path: &'a str,
    pub version: u64,
}

/// Whether document symbols carry their declarations' signatures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signatures {
    /// Each declaration's signature, as the source writes it, is added.
    Added,
    /// Lean's symbols only.
    Omitted,
}

/// Whether the references of a name include its declaration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum References {
    WithDeclaration,
    WithoutDeclaration,
}

/// The first step of a chain, at a position of a pinned version.
pub struct At<'a> {
    /// The workspace descriptor, as the call gave it.
    pub workspace: &'a str,
    pub path: &'a str,
    pub version: u64,
    pub line: u64,
    pub character: u64,
}

/// Where a continuation runs: after a handle's chain, in a document.
#[derive(Debug, Clone, Copy)]
pub struct After<'a> {
    /// The workspace descriptor.
    pub workspace: &'a str,
    pub path: &'a str,
    pub handle: &'a str,
}

/// Whether the steps run from a place will be continued with handles (a
/// term step cannot be).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Continue {
    /// Handles will be minted after the steps that succeed.
    WithHandles,
    /// Only verdicts are wanted.
    NoHandles,
}

/// Per-probe budgets: Lean's `maxHeartbeats` (in thousands, as `set_option`
/// takes it) for the probe's command, and wall-clock time from when a slot
/// is free to when its answer is read.
#[derive(Debug, Clone, Copy, Default)]
pub struct Budget {
    pub max_heartbeats: Option<u64>,
    pub timeout: Option<std::time::Duration>,
}

impl Budget {
    pub fn new(max_heartbeats: Option<u64>, timeout_ms: Option<u64>) -> Self {
        Budget {
            max_heartbeats,
            timeout: timeout_ms.map(std::time::Duration::from_millis),
        }
    }
}

/// Which goals of a tactic a query asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GoalsMode {
    /// The goals the tactic starts from.
    Before,
    /// The goals it leaves.
    After,
}

/// What `lean_todo` asks: the unfinished work between `start` and `end`
/// (line, character) of a pinned version.
pub struct Todo<'a> {
    pub pinned: Pinned<'a>,
    pub start: (u64, u64),
    /// None: the end of the file.
    pub end: Option<(u64, u64)>,
    /// The kinds wanted; none means every kind.
    pub kinds: Vec<TodoItemKind>,
    /// Each item gets a text to try there with `lean_run_at`.
    pub suggest: bool,
}

/// What `lean_run_code` asks.
pub struct RunCode<'a> {
    /// The workspace descriptor.
    pub workspace: &'a str,
    pub code: &'a str,
    pub max_heartbeats: Option<u64>,
    pub timeout_ms: Option<u64>,
}

/// What `lean_verify` asks.
pub struct Verify<'a> {
    /// The workspace descriptor.
    pub workspace: &'a str,
    pub path: &'a str,
    pub version: u64,
    pub declarations: &'a [Declaration],
    pub allowed_axioms: &'a [String],
}

/// A declaration to certify, and the statement it must have, if any.
#[derive(Debug, Clone)]
pub struct Declaration {
    pub name: String,
    pub reference: Option<String>,
}

/// Where a batch's candidates run: a position of a pinned version, or after
/// a proof handle's chain (the handle is kept).
pub enum Place<'a> {
    At(At<'a>),
    After(After<'a>),
}

/// `lean_run_batch`: candidate texts run at one place, each with `budget`.
pub struct Batch<'a> {
    pub place: Place<'a>,
    pub texts: &'a [String],
    pub budget: Budget,
    /// Stop the candidates after the lowest-index one that closes the goal.
    pub stop_on_first_close: bool,
    /// Whether a handle is minted after each candidate that reaches a state
    /// (the place itself is probed without: a term position still takes
    /// candidates).
    pub handles: Continue,
    /// Say, for each candidate that progresses, how its goals differ from
    /// the start goals.
    pub diff: bool,
    /// How the goals are shown.
    pub form: crate::results::GoalForm,
}

/// `lean_suggest`: suggestion tactics run at one place, and every
/// suggestion they make checked there.
pub struct Suggest<'a> {
    pub place: Place<'a>,
    /// The tactics, each run alone (in a term, as `by` and the tactic).
    pub tactics: &'a [String],
    /// Each tactic's run and each check.
    pub budget: Budget,
    /// At most this many suggestions in the answer.
    pub limit: usize,
    /// How the goals are shown.
    pub form: crate::results::GoalForm,
}
