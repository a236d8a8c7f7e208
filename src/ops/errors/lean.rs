//! Errors of Lean and its server as agents see them: Lean's error answers,
//! a connection or process that ended, a server that did not start, a
//! request that timed out, a header Lean did not get past.

use std::time::Duration;

use serde_json::json;

use crate::lsp::{LeanErrorCode, LspError};
use crate::surface::{ErrorCode, ToolError};

/// A version whose header Lean did not get past: say which import, and
/// Lean's first line (all of it, Lake's stderr included, in `data`).
pub(super) fn header_failed(
    path: &str,
    version: u64,
    import: Option<String>,
    message: String,
) -> ToolError {
    let about = import
        .as_deref()
        .map_or_else(String::new, |m| format!(" (import {m})"));
    // Lean's first line; Lake's command line comes first and its verdict last.
    let mut lines = message.lines().map(str::trim).filter(|l| !l.is_empty());
    let first = lines.next().unwrap_or("");
    let said = match lines.next_back() {
        Some(last) => format!("{first} … {last}"),
        None => first.to_owned(),
    };
    ToolError::new(
        ErrorCode::InvalidParams,
        format!(
            "{path} version {version} did not get past its header{about}, so nothing after it was elaborated and there is nothing to read at a position; Lean said: {said}. Fix the header or the imported module (lean_sync shows the whole error), then lean_sync"
        ),
    )
    .with_data(json!({
        "reason": "headerFailed",
        "path": path,
        "version": version,
        "import": import,
        "message": message,
    }))
}

/// Lean's error answer to `method`, or a broken connection during it.
pub(super) fn lsp_error(error: LspError, method: &str) -> ToolError {
    match error {
        LspError::Rpc {
            code,
            message,
            data,
        } => {
            let data = json!({ "lsp_method": method, "lsp_code": code, "lsp_message": message, "lsp_data": data });
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
            "lsp_method": method,
            "status": info.status,
            "signal": info.signal,
            "stderr_tail": info.stderr_tail,
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
pub(super) fn runtime_setup(command: &str, root: &str, error: &LspError) -> ToolError {
    let (detail, status, signal, tail) = match error {
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
            "could not start the Lean server for {root} with `{command}`: {detail}{}. Check that the project's toolchain is installed (elan/lake on PATH, or LEAN_BEAM_LEAN), then retry; the next request tries again",
            if tail.trim().is_empty() { String::new() } else { format!("; stderr: {}", last_lines(&tail, 5)) }
        ),
    )
    .with_data(json!({
        "command": command,
        "root": root,
        "status": status,
        "signal": signal,
        "stderr_tail": tail,
        "error": error.to_string(),
    }))
}

fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.trim().lines().collect();
    lines[lines.len().saturating_sub(n)..].join(" | ")
}

pub(super) fn timeout(method: &str, limit: Duration) -> ToolError {
    ToolError::new(
        ErrorCode::InternalError,
        format!(
            "Lean did not answer {method} within {} s (LEAN_BEAM_REQUEST_TIMEOUT_SECS); nothing was assumed about the result",
            limit.as_secs()
        ),
    )
    .with_data(json!({ "lsp_method": method, "timeout_secs": limit.as_secs(), "partial": true }))
}
