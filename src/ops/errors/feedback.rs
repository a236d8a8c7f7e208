//! The feedback report's errors (`feedback::Error`) as agents see them.

use serde_json::json;

use super::fs_error;
use crate::feedback::{self, BundleDirProblem};
use crate::safe_fs::FsError;
use crate::surface::{ErrorCode, ToolError};

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
