//! A configured bound reached: the resource, the variable that sets the
//! bound, and what could not be done.

use serde_json::{Value, json};

/// `env`: the names of the variables that set the bounds, as messages cite them.
use crate::broker::{Limit, MemoryKill, env};
use crate::surface::{ErrorCode, ToolError};

/// A configured bound was reached. `what` says what could not be done and
/// why; the message adds the bound and how to raise it. `data.kind` names the
/// resource, `data.env` the variable that sets the bound.
fn limit_error(kind: &str, env: &str, limit: u64, used: u64, what: String) -> ToolError {
    ToolError::new(
        ErrorCode::ResourceLimit,
        format!(
            "{what}. The bound is {env}={limit}; raise it in the server's environment if this machine can afford more"
        ),
    )
    .with_data(json!({ "kind": kind, "env": env, "limit": limit, "used": used }))
}

pub(super) fn resource_limit(limit: Limit) -> ToolError {
    match limit {
        Limit::Runtimes { root, limit, used } => limit_error(
            "runtimes",
            env::MAX_RUNTIMES,
            limit as u64,
            used as u64,
            format!(
                "cannot start a Lean runtime for {root}: {used} workspace runtimes are cached and every one has a call in flight, so none can be evicted. Retry when a call has finished, or free one with lean_drop_workspace"
            ),
        ),
        Limit::Documents { path, limit, open } => limit_error(
            "documents",
            env::MAX_DOCUMENTS,
            limit as u64,
            open as u64,
            format!(
                "cannot open {path} in Lean: {open} documents of this workspace are open (each a Lean worker, probe slots included) and every one has a call in flight, so none can be closed to make room. Retry when a call has finished, or close a document with lean_close"
            ),
        ),
        Limit::HandleBytes {
            shown,
            limit,
            alone,
        } => limit_error(
            "handleBytes",
            env::MAX_HANDLE_BYTES,
            limit as u64,
            alone as u64,
            format!(
                "a proof handle on {shown} would hold {alone} bytes (its document's text included), more than the handles of a workspace may hold together"
            ),
        ),
        Limit::Memory { kill, path } => memory_error(kill, path.as_deref()),
        Limit::LeanMemory {
            limit,
            worker,
            source,
        } => {
            const MIB: u64 = 1024 * 1024;
            ToolError::new(
                ErrorCode::ResourceLimit,
                format!(
                    "no Lean worker can be opened for this call: one needs about {} MiB, more than the whole memory budget of the Lean processes, {} MiB ({source}). Raise it in the server's environment, e.g. {}={}G",
                    worker.div_ceil(MIB),
                    limit / MIB,
                    env::MAX_LEAN_MEMORY,
                    (worker.saturating_mul(4)).div_ceil(1 << 30).max(1)
                ),
            )
            .with_data(json!({
                "kind": "leanMemory",
                "env": env::MAX_LEAN_MEMORY,
                "limit": limit,
                "used": worker,
            }))
        }
        // A fixed number, not a variable: no bound to raise.
        Limit::SnippetHeaders { limit } => ToolError::new(
            ErrorCode::ResourceLimit,
            format!("{limit} other snippet headers are in use by calls in flight in this workspace; retry when one has finished, or use one of their headers"),
        )
        .with_data(json!({ "kind": "snippetHeaders", "limit": limit, "used": limit })),
    }
}

/// The error of the calls that were running on a process killed for its
/// memory. `path`: the document whose worker it was.
fn memory_error(kill: MemoryKill, path: Option<&str>) -> ToolError {
    const MIB: u64 = 1024 * 1024;
    let (process, what) = if kill.server {
        (
            "server",
            "the workspace's Lean server (with its workers)".to_string(),
        )
    } else {
        (
            "worker",
            format!("the Lean worker of {}", path.unwrap_or("the document")),
        )
    };
    // Rounded up: a process over the bound never reads as at it.
    let used = kill.rss.div_ceil(MIB);
    let mut error = limit_error(
        "memory",
        env::MAX_LEAN_RSS_MIB,
        kill.limit / MIB,
        used,
        format!(
            "{what} (pid {}) used {used} MiB of memory, more than allowed, and was killed; the next call starts a new one, and a smaller file (or one split into modules) needs less",
            kill.pid,
        ),
    );
    if let Some(Value::Object(data)) = &mut error.data {
        data.insert("process".into(), json!(process));
        data.insert("pid".into(), json!(kill.pid));
        if let Some(path) = path {
            data.insert("path".into(), json!(path));
        }
    }
    error
}
