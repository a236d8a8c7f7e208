//! `lean_save`'s errors: a path that is no module, a setup the language
//! server cannot match, a compiler that failed, a source changed on disk.

use serde_json::json;

use super::fs_error;
use crate::broker::{NotModule, SaveError};
use crate::safe_fs::FsError;
use crate::surface::{ErrorCode, ToolError};

pub(super) fn save_error(error: SaveError) -> ToolError {
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
