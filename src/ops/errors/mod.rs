//! The broker's errors as agents see them: one conversion from
//! [`broker::Error`] to the tool error (code, message, data), saying what
//! happened and what to do next. The broker matches on its variants; only
//! this module (with its children, one a family of
//! errors: `lean`, `limits`, `save`, `feedback`) writes prose about them.

mod feedback;
mod lean;
mod limits;
mod save;

use serde_json::{Value, json};

use crate::broker::{self, HandleProblem, ProbeProblem, SourceProblem};
use crate::safe_fs::FsError;
use crate::surface::{ErrorCode, ToolError};
use lean::{header_failed, lsp_error, runtime_setup, timeout};
use limits::resource_limit;
use save::save_error;

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
            json!({ "reason": "lineOutOfRange", "line": line, "line_count": line_count })
        }
        P::CharacterOutOfRange {
            line,
            character,
            line_length,
        } => json!({
            "reason": "characterOutOfRange", "line": line, "character": character, "line_length": line_length,
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

/// An `invalidInput` tool error naming the path and what is wrong with it.
pub(super) fn fs_error(error: &FsError) -> ToolError {
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
        HandleProblem::ContinuesCommands => invalid(
            "it continues commands, not a proof: suggestion tactics need a goal; give a handle minted after a tactic, or a position in a proof",
            "continuesCommands",
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
        ProbeProblem::NoGoal => ToolError::new(
            ErrorCode::InvalidParams,
            format!(
                "({line}, {character}) is between commands: suggestion tactics need a goal; give a position in a proof (a tactic block, or a term such as a `sorry`), or declaration"
            ),
        ),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::broker::{Limit, MemoryKill};
    use crate::lsp::ExitInfo;
    use crate::lsp::{LeanErrorCode, LspError};

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
