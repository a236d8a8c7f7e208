//! Results of the process utilities: `beam_version` and `beam_stats`, and the
//! runtime statistics the feedback report also collects. Statistics are
//! camelCase throughout; the bounds are keyed by the environment variable
//! that sets each one.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Facts about the build, recorded by build.rs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct BuildIdentity {
    pub commit: &'static str,
    pub profile: &'static str,
    pub target: &'static str,
    pub rustc: &'static str,
}

/// `beam_version`: this server's identity.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct VersionResult {
    pub name: &'static str,
    pub version: &'static str,
    /// Which of several servers behind a load balancer answered
    /// (`--replica-id`, else the host name).
    pub replica: String,
    /// The preferred revision (not state negotiated for this request).
    pub mcp_protocol: &'static str,
    /// Every revision served.
    pub mcp_protocols: Vec<&'static str>,
    pub build: BuildIdentity,
}

/// Requests since start, process-wide.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RequestStats {
    /// Tool calls.
    pub total: u64,
    /// Tool calls by protocol era (`modern`, `legacy`, `direct`).
    pub by_era: BTreeMap<String, u64>,
    /// Tool calls by tool, then era; tools never called are left out.
    pub by_tool: BTreeMap<String, BTreeMap<String, u64>>,
    pub tool_errors: u64,
    pub cancelled: u64,
    pub protocol_errors: u64,
}

/// One resource bound and what is used of it now (for bounds per runtime or
/// per document, the most any one uses).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct LimitUse {
    /// The bound; left out when it is unset (no bound).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<u64>,
    /// What is used of it; left out for bounds with nothing to count, and
    /// while nothing was measured yet.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub used: Option<u64>,
    /// Runtimes with a call in flight (which cannot be evicted).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub busy: Option<u64>,
    /// What the bound applies to (`server`, `runtime`, `document`, …).
    pub per: &'static str,
}

/// Every resource bound, by the environment variable that sets it (README,
/// "Resource bounds").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Limits {
    #[serde(rename = "LEAN_BEAM_MAX_RUNTIMES")]
    pub max_runtimes: LimitUse,
    #[serde(rename = "LEAN_BEAM_MAX_DOCUMENTS")]
    pub max_documents: LimitUse,
    #[serde(rename = "LEAN_BEAM_SHADOW_SLOTS")]
    pub shadow_slots: LimitUse,
    #[serde(rename = "LEAN_BEAM_MAX_HANDLES")]
    pub max_handles: LimitUse,
    #[serde(rename = "LEAN_BEAM_MAX_HANDLE_BYTES")]
    pub max_handle_bytes: LimitUse,
    /// In MiB.
    #[serde(rename = "LEAN_BEAM_MAX_LEAN_RSS_MIB")]
    pub max_lean_rss_mib: LimitUse,
    #[serde(rename = "LEAN_BEAM_MAX_LEAN_MEMORY")]
    pub max_lean_memory: LeanMemoryUse,
    #[serde(rename = "LEAN_BEAM_MAX_FILE_BYTES")]
    pub max_file_bytes: LimitUse,
    /// In seconds; `used` is the longest idle time.
    #[serde(rename = "LEAN_BEAM_RUNTIME_IDLE_SECS")]
    pub runtime_idle_secs: LimitUse,
}

/// The memory budget of the Lean processes: what they may hold together as
/// proportional memory (PSS: shared `.olean` pages counted once), what they
/// hold now by kind, and what the budget made probes do since the start.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LeanMemoryUse {
    pub limit_mib: u64,
    /// The variable, or how the default was derived.
    pub source: String,
    /// Every Lean process's PSS, with workers just opened and not measured
    /// yet counted at their estimate.
    pub used_mib: u64,
    /// The servers themselves (and Lake serving them).
    pub server_mib: u64,
    /// The workers of the agent's documents.
    pub documents_mib: u64,
    /// The workers of probe slots.
    pub shadows_mib: u64,
    /// The workers of `lean_run_code`'s header documents.
    pub snippets_mib: u64,
    pub processes: u64,
    /// What one more worker is estimated to add: the largest private memory
    /// of a worker (its shared pages are counted already).
    pub worker_estimate_mib: u64,
    /// Probes that waited for a slot.
    pub waited: u64,
    /// Times idle slots of other files were closed to make room.
    pub reclaimed: u64,
    /// Slots opened over the budget (the server and documents held it).
    pub over_budget: u64,
    /// Calls refused: one worker is larger than the whole budget.
    pub refused: u64,
    /// Snippet headers that took another header's document.
    pub headers_taken: u64,
    pub per: &'static str,
}

/// One document a runtime mirrors.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DocumentStats {
    pub path: String,
    pub version: u64,
    /// Open in Lean now.
    pub open: bool,
    /// Lean's report for the version is final.
    pub settled: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub worker_pid: Option<u32>,
}

/// The memory of a runtime's Lean processes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MemoryStats {
    /// The largest resident set at the last check.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub largest_mib: Option<u64>,
    /// Processes killed for exceeding `LEAN_BEAM_MAX_LEAN_RSS_MIB`.
    pub killed: u64,
}

/// A runtime's proof handles.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HandleStats {
    pub live: u64,
    pub capacity: u64,
    pub bytes: u64,
    pub byte_capacity: u64,
    /// Document texts shared by the live handles.
    pub shared_texts: u64,
    pub evicted: u64,
}

/// A runtime's prefix bases (compiled prefixes probes import).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PrefixBaseStats {
    pub enabled: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dir: Option<String>,
    pub ready: u64,
    pub uses: u64,
    pub compiling: bool,
    pub compiled: u64,
    pub failed: u64,
    /// Compiles put off for the memory budget (`LEAN_BEAM_MAX_LEAN_MEMORY`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub deferred: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// One cached workspace runtime.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RuntimeStats {
    pub root: String,
    pub server_command: String,
    /// The Lean server's process id, while one runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    pub alive: bool,
    pub uptime_ms: u64,
    /// Time since the last call; 0 while one is in flight.
    pub idle_ms: u64,
    pub calls_in_flight: u64,
    pub documents: Vec<DocumentStats>,
    pub documents_open_in_lean: u64,
    pub memory: MemoryStats,
    pub requests: u64,
    /// LSP requests sent to the current Lean server.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lsp_requests: Option<u64>,
    pub starts: u64,
    pub restarts: u64,
    pub failed_starts: u64,
    pub handles: HandleStats,
    pub prefix_bases: PrefixBaseStats,
    pub shadow_slots: u64,
    pub shadow_slots_open: u64,
}

/// `beam_stats`: debug statistics, not context for later calls.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StatsResult {
    /// Which of several servers behind a load balancer answered.
    pub replica: String,
    pub uptime_ms: u64,
    pub pid: u32,
    pub requests: RequestStats,
    pub limits: Limits,
    /// The cached runtimes, by canonical root.
    pub workspaces: BTreeMap<String, RuntimeStats>,
}
