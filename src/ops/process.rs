//! Process-wide utilities: `beam_version` and `beam_stats`.

use std::collections::BTreeMap;

use crate::identity;
use crate::mcp::era::{LEGACY_VERSION, MODERN_VERSION};
use crate::results::{Limits, RuntimeStats, StatsResult, VersionResult};
use crate::stats::Stats;

pub fn version() -> VersionResult {
    VersionResult {
        name: identity::NAME,
        version: identity::VERSION,
        mcp_protocol: MODERN_VERSION,
        mcp_protocols: vec![MODERN_VERSION, LEGACY_VERSION],
        build: identity::build(),
    }
}

/// `limits`: every resource bound by the variable that sets it, with what is
/// used of it now.
pub fn stats(
    stats: &Stats,
    workspaces: BTreeMap<String, RuntimeStats>,
    limits: Limits,
) -> StatsResult {
    StatsResult {
        uptime_ms: stats.uptime_ms(),
        pid: std::process::id(),
        requests: stats.snapshot(),
        limits,
        workspaces,
    }
}
