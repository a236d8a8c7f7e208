//! The broker's errors as agents see them: one conversion from
//! [`broker::Error`] to the tool error (code, message, data), saying what
//! happened and what to do next. The broker matches on its variants; only
//! this module writes prose about them.

use std::time::Duration;

use serde_json::{Value, json};

use crate::broker::{
    self, HandleProblem, Limit, MemoryKill, NotModule, ProbeProblem, SaveError, SourceProblem,
};
use crate::feedback::{self, BundleDirProblem};
use crate::lsp::LeanErrorCode;
use crate::lsp::LspError;
use crate::safe_fs::FsError;
use crate::surface::{ErrorCode, ToolError};

/// The names of the variables that set the bounds, as messages cite them.
use crate::broker::env;

impl From<broker::Error> for ToolError {
    fn from(error: broker::Error) -> Self {
        use broker::Error as E;
        match error {
            E::Lsp { method, error } => lsp_error(*error, method),
            E::Timeout { method, limit } => timeout(method, limit),
            E::Setup {
                command,
                root,
                error,
            } => runtime_setup(&command, &root, &error),
            E::WorkerStopped { path, version } => ToolError::new(
                ErrorCode::WorkerCrashed,
                format!(
                    "the Lean worker of {path} stopped (fatal file progress) and Lean holds requests for it until it is reopened; the next lean_sync reopens the file"
                ),
            )
            .with_data(json!({ "reason": "workerStopped", "path": path, "version": version })),
            E::BarrierIncomplete {
                path,
                version,
                limit,
                progress,
                counts,
            } => ToolError::new(
                ErrorCode::SyncBarrierIncomplete,
                format!(
                    "Lean did not finish elaborating {path} version {version} within {} s (LEAN_BEAM_SYNC_TIMEOUT_SECS); the diagnostics so far are partial, not a clean result",
                    limit.as_secs()
                ),
            )
            .with_data(json!({
                "path": path,
                "version": version,
                "partial": true,
                "document_progress": progress,
                "counts_so_far": counts,
            })),
            E::ProbeIncomplete { path, limit } => ToolError::new(
                ErrorCode::SyncBarrierIncomplete,
                format!(
                    "Lean did not finish elaborating the text probed in {path} within {} s (LEAN_BEAM_SYNC_TIMEOUT_SECS); pass timeout_ms to bound a probe, which then says `timeout`",
                    limit.as_secs()
                ),
            )
            .with_data(json!({ "path": path, "partial": true })),
            E::VersionMismatch {
                path,
                expected,
                current,
            } => ToolError::new(
                ErrorCode::ContentModified,
                mismatch_message(&path, expected, current),
            )
            .with_data(json!({
                "reason": "versionMismatch",
                "path": path,
                "expected": expected,
                "current": current,
            })),
            E::NeverSynced { path } => ToolError::new(
                ErrorCode::InvalidParams,
                format!("{path} has not been synced in this workspace: call lean_sync (or lean_update) on it first and pass the version it returns"),
            )
            .with_data(json!({ "reason": "notSynced", "path": path })),
            E::Position { error, line_text } => position_error(&error, line_text),
            E::InvalidInput { field, value, rule } => ToolError::new(
                ErrorCode::InvalidInput,
                format!("{field} {value:?}: {rule}"),
            )
            .with_data(json!({ "field": field, "value": value, "rule": rule })),
            E::Argument { what, rule } => {
                ToolError::new(ErrorCode::InvalidParams, format!("{what} {rule}"))
            }
            E::Declaration { name, problem } => declaration_error(&name, problem),
            E::Source { path, problem } => source_error(&path, problem),
            E::Fs(error) => fs_error(&error),
            E::ResourceLimit(limit) => resource_limit(limit),
            E::Handle { handle, problem } => handle_error(&handle, problem),
            E::Probe {
                line,
                character,
                problem,
            } => probe_error(line, character, problem),
            E::Save(error) => save_error(error),
            E::HeaderFailed {
                path,
                version,
                import,
                message,
            } => header_failed(&path, version, import, message),
            E::Unexpected(what) => ToolError::new(ErrorCode::InternalError, what),
            E::Candidate { index, error } => ToolError::new(
                ErrorCode::InvalidParams,
                format!("texts[{index}]: {}", ToolError::from(*error).message),
            ),
        }
    }
}

/// A version whose header Lean did not get past: say which import, and
/// Lean's first line (all of it, Lake's stderr included, in `data`).
fn header_failed(path: &str, version: u64, import: Option<String>, message: String) -> ToolError {
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
fn lsp_error(error: LspError, method: &str) -> ToolError {
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
fn runtime_setup(command: &str, root: &str, error: &LspError) -> ToolError {
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
        "stderrTail": tail,
        "error": error.to_string(),
    }))
}

fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.trim().lines().collect();
    lines[lines.len().saturating_sub(n)..].join(" | ")
}

fn timeout(method: &str, limit: Duration) -> ToolError {
    ToolError::new(
        ErrorCode::InternalError,
        format!(
            "Lean did not answer {method} within {} s (LEAN_BEAM_REQUEST_TIMEOUT_SECS); nothing was assumed about the result",
            limit.as_secs()
        ),
    )
    .with_data(json!({ "lspMethod": method, "timeoutSecs": limit.as_secs(), "partial": true }))
}

/// Versions count up from 1 per document, so one above the current was never
/// returned (a typo or another document's version), and one below it is stale.
fn mismatch_message(path: &str, expected: u64, current: u64) -> String {
    if expected > current {
        format!(
            "{path} has no version {expected}: this server never returned that version for it (the latest is {current}). Pass the version lean_update or lean_sync returned for this file"
        )
    } else {
        format!(
            "{path} is at version {current}, not {expected}: the file changed since that version was returned. Call lean_update or lean_sync and retry with the version it returns"
        )
    }
}

/// A position that names no place of the document; `line_text` is the text
/// of its line when the line exists.
fn position_error(error: &broker::PositionError, line_text: Option<String>) -> ToolError {
    use broker::PositionError as P;
    let mut data = match error {
        P::LineOutOfRange { line, line_count } => {
            json!({ "reason": "lineOutOfRange", "line": line, "lineCount": line_count })
        }
        P::CharacterOutOfRange {
            line,
            character,
            line_length,
        } => json!({
            "reason": "characterOutOfRange", "line": line, "character": character, "lineLength": line_length,
        }),
        P::InsideSurrogatePair { line, character } => {
            json!({ "reason": "insideSurrogatePair", "line": line, "character": character })
        }
    };
    if let Some(text) = line_text {
        data["line_text"] = Value::from(text);
    }
    ToolError::new(
        ErrorCode::InvalidParams,
        format!("position outside the document: {error}"),
    )
    .with_data(data)
}

/// A `declaration` argument that names no single place: the close or the
/// matching names in `data.matches`, best first.
fn declaration_error(name: &str, problem: broker::Unresolved) -> ToolError {
    use broker::Unresolved as U;
    let listed = |names: &[String]| {
        names
            .iter()
            .map(|n| format!("`{n}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let (reason, message, matches) = match problem {
        U::Unknown { close } if close.is_empty() => (
            "unknownDeclaration",
            format!(
                "no declaration {name:?} in this version (names are read from the synced text; lean_document_symbols lists them)"
            ),
            close,
        ),
        U::Unknown { close } => (
            "unknownDeclaration",
            format!(
                "no declaration {name:?} in this version; close: {}",
                listed(&close)
            ),
            close,
        ),
        U::Ambiguous { matches } => (
            "ambiguousDeclaration",
            format!(
                "declaration {name:?} is ambiguous: give one of {} in full",
                listed(&matches)
            ),
            matches,
        ),
        U::NoGap { name: full } => (
            "noSorry",
            format!(
                "declaration `{full}` has no sorry or hole: pass at \"start\" or \"end\", or a line and character"
            ),
            vec![full],
        ),
        U::NoProof { name: full } => (
            "noProof",
            format!("declaration `{full}` has no `:=` proof to go to: pass a line and character"),
            vec![full],
        ),
    };
    ToolError::new(ErrorCode::InvalidParams, message)
        .with_data(json!({ "reason": reason, "declaration": name, "matches": matches }))
}

/// A source file that cannot be read: `path` as results name it.
fn source_error(path: &str, problem: SourceProblem) -> ToolError {
    match problem {
        SourceProblem::Fs(e) => {
            let mut error = fs_error(&e);
            if let FsError::TooLarge { .. } = e {
                error
                    .message
                    .push_str(" (LEAN_BEAM_MAX_FILE_BYTES raises the limit)");
            }
            if let Some(data) = error.data.as_mut() {
                data["field"] = json!("path");
                data["value"] = json!(path);
            }
            error
        }
        SourceProblem::NotUtf8(why) => ToolError::new(
            ErrorCode::InvalidInput,
            format!("{path} is not valid UTF-8 ({why}); Lean sources are UTF-8"),
        )
        .with_data(json!({ "field": "path", "value": path })),
    }
}

impl From<feedback::Error> for ToolError {
    fn from(error: feedback::Error) -> Self {
        use feedback::Error as E;
        match error {
            E::Broker(error) => error.into(),
            E::BundleDir {
                given,
                base,
                problem,
            } => {
                let why = match problem {
                    BundleDirProblem::Outside => "is not inside the workspace's feedback folder",
                    BundleDirProblem::NotPlainNames => {
                        "must name a folder by plain names (no `.`, `..` or root)"
                    }
                };
                ToolError::new(
                    ErrorCode::InvalidInput,
                    format!(
                        "bundle_dir {given:?} {why}; bundles are written only under {}",
                        base.display()
                    ),
                )
                .with_data(json!({ "field": "bundle_dir", "value": given, "base": base.to_string_lossy() }))
            }
            E::Bundle(e) => match e {
                FsError::WrongType { .. } | FsError::Outside { .. } => fs_error(&e),
                _ => ToolError::new(
                    ErrorCode::InternalError,
                    format!("cannot write the bundle: {e}"),
                )
                .with_data(json!({ "path": e.path().to_string_lossy(), "reason": e.reason() })),
            },
            E::Redact(e) => ToolError::new(
                ErrorCode::InternalError,
                format!("could not redact the report: {e}"),
            ),
        }
    }
}

/// An `invalidInput` tool error naming the path and what is wrong with it.
fn fs_error(error: &FsError) -> ToolError {
    let mut data = json!({
        "path": error.path().to_string_lossy(),
        "reason": error.reason(),
    });
    match error {
        FsError::WrongType { kind, .. } => data["type"] = json!(kind),
        FsError::TooLarge { size, limit, .. } => {
            data["size"] = json!(size);
            data["limit"] = json!(limit);
        }
        _ => {}
    }
    ToolError::new(ErrorCode::InvalidInput, error.to_string()).with_data(data)
}

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

fn resource_limit(limit: Limit) -> ToolError {
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

/// What to call after a handle that cannot be used: the probe again, from
/// a version the document has now.
const HANDLE_NEXT: &str = "start again: lean_sync the file, then lean_run_batch at the place with the version it returns (its candidates that progress carry handles)";

fn handle_error(handle: &str, problem: HandleProblem) -> ToolError {
    let next = json!(["lean_sync", "lean_run_batch"]);
    let error = |code: ErrorCode, why: &str, reason: &str| {
        ToolError::new(code, format!("handle {handle:?}: {why}; {HANDLE_NEXT}"))
            .with_data(json!({ "handle": handle, "reason": reason, "next": next }))
    };
    let invalid = |why: &str, reason: &str| error(ErrorCode::InvalidParams, why, reason);
    let stale = |why: &str, reason: &str| error(ErrorCode::ContentModified, why, reason);
    match problem {
        HandleProblem::Malformed => invalid(
            "malformed: pass a handle exactly as lean_run_batch, lean_run_at_handle or lean_run_with returned it",
            "malformed",
        ),
        // Another server process: one that stopped or restarted, or another
        // replica behind the same load balancer (the workspace moved here
        // when that replica went away). Its state lived only there.
        HandleProblem::OtherProcess => stale(
            "it belongs to another lean-beam-mcp server process, which is gone (it stopped or restarted, or it was another replica and this workspace moved here); a handle lives only in the process that issued it. Repeat the probe",
            "otherProcess",
        ),
        HandleProblem::OtherRuntime => invalid(
            "it belongs to another workspace runtime (another workspace, or one dropped since)",
            "otherRuntime",
        ),
        HandleProblem::Unknown => invalid(
            "unknown: it was released, consumed by lean_run_with_linear, evicted (least recently used), or never issued",
            "unknown",
        ),
        HandleProblem::OtherFile { shown } => ToolError::new(
            ErrorCode::InvalidParams,
            format!("handle {handle:?}: it belongs to {shown}, not to this path: call again with path {shown:?}"),
        )
        .with_data(json!({ "handle": handle, "reason": "otherFile", "path": shown })),
        HandleProblem::ReleasedOnOtherFile { shown, path } => ToolError::new(
            ErrorCode::InvalidParams,
            format!("handle {handle:?} belongs to {shown}, not to {path}: call lean_release again with path {shown:?}"),
        )
        .with_data(json!({ "handle": handle, "reason": "otherFile", "path": shown })),
        HandleProblem::VersionMoved {
            version,
            shown,
            now,
        } => stale(
            &format!(
                "it was computed for version {version} of {shown}, which is now at version {now}"
            ),
            "versionMismatch",
        ),
        HandleProblem::ServerRestarted => stale(
            "the Lean server it was computed in has since restarted",
            "backendRestarted",
        ),
        HandleProblem::NoRuntime => invalid(
            "this workspace has no live runtime or document for it (dropped, or never used in this server)",
            "noRuntime",
        ),
    }
}

fn probe_error(line: u64, character: u64, problem: ProbeProblem) -> ToolError {
    match problem {
        ProbeProblem::NotAPlace => ToolError::new(
            ErrorCode::InvalidParams,
            format!(
                "({line}, {character}) is neither inside a tactic block, nor on a term, nor between commands: give a position in a proof (for tactics), on a term such as a `sorry` (for a term to put in its place), or at the start of a line between commands (for one command)"
            ),
        ),
        ProbeProblem::TermTakesNoHandle => ToolError::new(
            ErrorCode::InvalidParams,
            format!(
                "({line}, {character}) is on a term: a handle continues tactics or commands, not a term. Try the term with lean_run_at, or write `by` there in the file and continue its tactics"
            ),
        ),
        ProbeProblem::NotOneCommand { commands } => ToolError::new(
            ErrorCode::InvalidParams,
            format!("between commands a probe runs exactly one command; the text holds {commands}"),
        )
        .with_data(json!({ "commands": commands })),
    }
}

fn save_error(error: SaveError) -> ToolError {
    match error {
        SaveError::NotModule { path, root, why } => {
            let why = match why {
                NotModule::OutsideRoot => {
                    "it lies outside the workspace root, in no source directory of the package"
                        .to_string()
                }
                NotModule::NotIdentifier(part) => {
                    format!("`{part}` is not a Lean identifier, so the path names no module")
                }
                NotModule::InsideLake => {
                    "it is inside .lake (a build or dependency directory)".to_string()
                }
            };
            ToolError::new(
                ErrorCode::SaveTargetNotModule,
                format!("{path} is not a module of the workspace: {why}"),
            )
            .with_data(json!({ "path": path, "root": root }))
        }
        SaveError::MoreLeanArgs { lakefile } => ToolError::new(
            ErrorCode::SaveUnsupportedSetup,
            format!(
                "{lakefile} passes batch-only `moreLeanArgs`, which the language server does not apply, so a checkpoint would not match a build. Move shared -D settings to `leanOptions`, or use `lake build` when the arguments are meant for batch builds only"
            ),
        )
        .with_data(json!({ "reason": "moreLeanArgs", "lakefile": lakefile })),
        SaveError::Spawn { command, error } => ToolError::new(
            ErrorCode::RuntimeSetup,
            format!("cannot run `{command}`: {error}"),
        )
        .with_data(json!({ "command": command })),
        SaveError::CompileTimeout { path, limit } => ToolError::new(
            ErrorCode::InternalError,
            format!(
                "compiling {path} took longer than {} s; nothing was published",
                limit.as_secs()
            ),
        ),
        SaveError::CompilerWait { command, error } => ToolError::new(
            ErrorCode::InternalError,
            format!("`{command}` failed: {error}"),
        ),
        SaveError::CompileFailed {
            command,
            status,
            code,
            stdout,
            stderr,
        } => ToolError::new(
            ErrorCode::InternalError,
            format!(
                "`{command}` failed ({status}) although the language server accepted the file; nothing was published"
            ),
        )
        .with_data(json!({
            "command": command,
            "status": code,
            "stdout": stdout,
            "stderr": stderr,
        })),
        SaveError::SourceChanged { path, when } => ToolError::new(
            ErrorCode::ContentModified,
            format!(
                "{path} changed on disk {when}; nothing was saved. Call lean_sync, then lean_save again"
            ),
        )
        .with_data(json!({ "reason": "sourceChanged", "path": path })),
        SaveError::Publish(e) => match e {
            FsError::WrongType { .. } | FsError::Outside { .. } => {
                let mut error = fs_error(&e);
                error.message.push_str("; nothing was published");
                error
            }
            _ => ToolError::new(
                ErrorCode::InternalError,
                format!("{e}; nothing was published"),
            )
            .with_data(json!({ "path": e.path().to_string_lossy(), "reason": e.reason() })),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lsp::ExitInfo;

    fn rpc(code: LeanErrorCode) -> broker::Error {
        broker::Error::lsp(
            "$/lean/rpc/call",
            LspError::Rpc {
                code,
                message: "m".into(),
                data: None,
            },
        )
    }

    /// The broker decides by variant what agents see by code: the two must
    /// agree, or a retry or a fallback would follow one and the agent the
    /// other.
    #[test]
    fn the_brokers_predicates_agree_with_the_codes_agents_see() {
        let samples = vec![
            rpc(LeanErrorCode::WorkerCrashed),
            rpc(LeanErrorCode::WorkerExited),
            rpc(LeanErrorCode::RequestCancelled),
            rpc(LeanErrorCode::ContentModified),
            rpc(LeanErrorCode::RpcNeedsReconnect),
            rpc(LeanErrorCode::InternalError),
            broker::Error::lsp("m", LspError::Exited(ExitInfo::default())),
            broker::Error::lsp("m", LspError::Io("gone".into())),
            broker::Error::lsp("m", LspError::Protocol("garbled".into())),
            broker::Error::Timeout {
                method: "m",
                limit: Duration::from_secs(1),
            },
            broker::Error::WorkerStopped {
                path: "A.lean".into(),
                version: 3,
            },
            broker::Error::Unexpected("odd".into()),
            broker::Error::VersionMismatch {
                path: "A.lean".into(),
                expected: 1,
                current: 2,
            },
            broker::Error::ResourceLimit(Limit::Memory {
                kill: MemoryKill {
                    pid: 1,
                    rss: 1,
                    limit: 1,
                    server: false,
                },
                path: None,
            }),
        ];
        for error in samples {
            let (lost, internal) = (error.lost_worker(), error.is_internal());
            let debug = format!("{error:?}");
            let code = ToolError::from(error).code;
            assert_eq!(
                lost,
                matches!(code, ErrorCode::WorkerCrashed | ErrorCode::WorkerExited),
                "{debug}"
            );
            assert_eq!(internal, code == ErrorCode::InternalError, "{debug}");
        }
        assert_eq!(
            rpc(LeanErrorCode::RpcNeedsReconnect).lean_code(),
            Some(LeanErrorCode::RpcNeedsReconnect)
        );
    }

    #[test]
    fn a_version_above_the_latest_is_called_never_returned() {
        let future = mismatch_message("Fix/Goals.lean", 7, 2);
        assert!(future.contains("never returned"), "{future}");
        assert!(!future.contains("changed since"), "{future}");
        assert!(future.contains("lean_update or lean_sync"), "{future}");
        let stale = mismatch_message("Fix/Goals.lean", 1, 2);
        assert!(
            stale.contains("changed since that version was returned"),
            "{stale}"
        );
    }
}
