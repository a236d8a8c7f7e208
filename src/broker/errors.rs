//! Lean-side failures as structured tool errors that say what happened and
//! what to do next.

use std::time::Duration;

use serde_json::json;

use super::workspace::Root;
use crate::lsp::{LeanErrorCode, LspError};
use crate::surface::{ErrorCode, ToolError};

pub fn from_lsp(error: LspError, method: &str) -> ToolError {
    match error {
        LspError::Rpc {
            code,
            message,
            data,
        } => {
            let data = json!({ "lspMethod": method, "lspCode": code, "lspMessage": message, "lspData": data });
            match code {
                LeanErrorCode::WorkerCrashed => ToolError::new(
                    ErrorCode::WorkerCrashed,
                    format!("the Lean worker crashed while answering {method}: {message}; the next lean_sync reopens the file"),
                ),
                LeanErrorCode::WorkerExited => ToolError::new(
                    ErrorCode::WorkerExited,
                    format!("the Lean worker exited while answering {method}: {message}; the next lean_sync reopens the file"),
                ),
                LeanErrorCode::RequestCancelled => ToolError::new(
                    ErrorCode::RequestCancelled,
                    format!("Lean cancelled {method}"),
                ),
                LeanErrorCode::ContentModified => ToolError::new(
                    ErrorCode::ContentModified,
                    format!("Lean refused {method}: {message}; call lean_sync and retry"),
                ),
                _ => ToolError::new(
                    ErrorCode::InternalError,
                    format!("Lean answered {method} with error {code}: {message}"),
                ),
            }
            .with_data(data)
        }
        LspError::Exited(info) => ToolError::new(
            ErrorCode::WorkerExited,
            format!(
                "the Lean server exited during {method} ({}); the next request restarts it",
                describe_exit(info.status, info.signal)
            ),
        )
        .with_data(json!({
            "lspMethod": method,
            "status": info.status,
            "signal": info.signal,
            "stderrTail": info.stderr_tail,
        })),
        // The connection is dead (a broken frame, or I/O): the process is killed.
        LspError::Protocol(problem) | LspError::Io(problem) => ToolError::new(
            ErrorCode::WorkerExited,
            format!(
                "the connection to the Lean server failed during {method}: {problem}; the next request restarts it"
            ),
        ),
    }
}

fn describe_exit(status: Option<i32>, signal: Option<i32>) -> String {
    match (status, signal) {
        (Some(code), _) => format!("exit status {code}"),
        (None, Some(sig)) => format!("killed by signal {sig}"),
        _ => "exit status unknown".to_string(),
    }
}

/// The Lean server of a workspace could not be started.
pub fn runtime_setup(command: &str, root: &Root, error: LspError) -> ToolError {
    let (detail, status, signal, tail) = match &error {
        LspError::Exited(info) => (
            describe_exit(info.status, info.signal),
            info.status,
            info.signal,
            info.stderr_tail.clone(),
        ),
        other => (other.to_string(), None, None, String::new()),
    };
    ToolError::new(
        ErrorCode::RuntimeSetup,
        format!(
            "could not start the Lean server for {} with `{command}`: {detail}{}. Check that the project's toolchain is installed (elan/lake on PATH, or LEAN_BEAM_LEAN), then retry; the next request tries again",
            root.display(),
            if tail.trim().is_empty() { String::new() } else { format!("; stderr: {}", last_lines(&tail, 5)) }
        ),
    )
    .with_data(json!({
        "command": command,
        "root": root.display(),
        "status": status,
        "signal": signal,
        "stderrTail": tail,
        "error": error.to_string(),
    }))
}

pub fn timeout(method: &str, limit: Duration) -> ToolError {
    ToolError::new(
        ErrorCode::InternalError,
        format!(
            "Lean did not answer {method} within {} s (LEAN_BEAM_REQUEST_TIMEOUT_SECS); nothing was assumed about the result",
            limit.as_secs()
        ),
    )
    .with_data(json!({ "lspMethod": method, "timeoutSecs": limit.as_secs(), "partial": true }))
}

/// A configured bound was reached. `what` says what could not be done and
/// why; the message adds the bound and how to raise it. `data.kind` names the
/// resource, `data.env` the variable that sets the bound.
pub fn resource_limit(kind: &str, env: &str, limit: u64, used: u64, what: String) -> ToolError {
    ToolError::new(
        ErrorCode::ResourceLimit,
        format!(
            "{what}. The bound is {env}={limit}; raise it in the server's environment if this machine can afford more"
        ),
    )
    .with_data(json!({ "kind": kind, "env": env, "limit": limit, "used": used }))
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

impl MemoryKill {
    /// The error of the calls that were running on the killed process.
    /// `path`: the document whose worker it was.
    pub fn error(&self, path: Option<&str>) -> ToolError {
        const MIB: u64 = 1024 * 1024;
        let (process, what) = if self.server {
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
        let used = self.rss.div_ceil(MIB);
        let mut error = resource_limit(
            "memory",
            super::launch::env::MAX_LEAN_RSS_MIB,
            self.limit / MIB,
            used,
            format!(
                "{what} (pid {}) used {used} MiB of memory, more than allowed, and was killed; the next call starts a new one, and a smaller file (or one split into modules) needs less",
                self.pid,
            ),
        );
        if let Some(serde_json::Value::Object(data)) = &mut error.data {
            data.insert("process".into(), json!(process));
            data.insert("pid".into(), json!(self.pid));
            if let Some(path) = path {
                data.insert("path".into(), json!(path));
            }
        }
        error
    }
}

fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.trim().lines().collect();
    lines[lines.len().saturating_sub(n)..].join(" | ")
}
