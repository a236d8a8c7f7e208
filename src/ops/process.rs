//! Process-wide utilities: `beam_version` and `beam_stats`.

use std::collections::BTreeMap;

use crate::identity;
use crate::identity::ReplicaId;
use crate::identity::{MODERN_VERSION, SUPPORTED_LEGACY};
use crate::results::{Limits, RuntimeStats, StatsResult, VersionResult};
use crate::stats::Stats;

/// `replica`: which of several servers behind a load balancer answered.
pub fn version(replica: &ReplicaId) -> VersionResult {
    VersionResult {
        name: identity::NAME,
        version: identity::VERSION,
        replica: replica.as_str().to_owned(),
        mcp_protocol: MODERN_VERSION,
        mcp_protocols: [MODERN_VERSION]
            .iter()
            .chain(SUPPORTED_LEGACY)
            .copied()
            .collect(),
        build: identity::build(),
    }
}

/// `limits`: every resource bound by the variable that sets it, with what is
/// used of it now.
pub fn stats(
    stats: &Stats,
    replica: &ReplicaId,
    workspaces: BTreeMap<String, RuntimeStats>,
    limits: Limits,
) -> StatsResult {
    StatsResult {
        replica: replica.as_str().to_owned(),
        uptime_ms: stats.uptime_ms(),
        pid: std::process::id(),
        requests: stats.snapshot(),
        limits,
        workspaces,
    }
}
