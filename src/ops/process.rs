//! Process-wide utilities: `beam_version` and `beam_stats`.

use serde_json::{Value, json};

use crate::identity;
use crate::mcp::era::MODERN_VERSION;
use crate::replica::ReplicaId;
use crate::stats::Stats;

/// `replica`: which of several servers behind a load balancer answered.
pub fn version(replica: &ReplicaId) -> Value {
    json!({
        "name": identity::NAME,
        "version": identity::VERSION,
        "replica": replica.as_str(),
        "mcp_protocol": MODERN_VERSION,
        "mcp_protocols": [MODERN_VERSION, crate::mcp::era::LEGACY_VERSION],
        "build": identity::build(),
    })
}

/// `limits`: every resource bound by the variable that sets it, with what is
/// used of it now.
pub fn stats(stats: &Stats, replica: &ReplicaId, workspaces: Value, limits: Value) -> Value {
    json!({
        "replica": replica.as_str(),
        "uptimeMs": stats.uptime_ms(),
        "pid": std::process::id(),
        "requests": stats.snapshot(),
        "limits": limits,
        "workspaces": workspaces,
    })
}
