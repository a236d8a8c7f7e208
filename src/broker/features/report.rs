//! What a feedback report (`beam_feedback_report`) collects from the
//! broker: the workspace's toolchain, lakefiles, server command and, when a
//! runtime is cached, its stats and open files.

use crate::broker::engine::runtimes::Runtimes;
use crate::broker::engine::workspace::Root;
use crate::results::FeedbackCollected;
use crate::safe_fs;

impl Runtimes {
    /// Project context of a workspace, from files and the cached runtime
    /// only: a report never starts Lean.
    pub async fn collect_for_report(
        &self,
        root: &Root,
        warnings: &mut Vec<String>,
    ) -> FeedbackCollected {
        let toolchain = match safe_fs::read_small_text(&root.path().join("lean-toolchain")).await {
            Ok(Some(text)) => Some(text.trim().to_string()),
            Ok(None) => {
                warnings.push("the workspace has no lean-toolchain file".into());
                None
            }
            Err(e) => {
                warnings.push(format!("lean-toolchain not read: {e}"));
                None
            }
        };
        // A stat each, off the runtime and within the file time limit.
        let mut lakefiles = Vec::new();
        for name in ["lakefile.lean", "lakefile.toml"] {
            let stat = tokio::fs::metadata(root.path().join(name));
            let meta = tokio::time::timeout(safe_fs::TIME_LIMIT, stat).await;
            if meta.is_ok_and(|m| m.is_ok_and(|m| m.is_file())) {
                lakefiles.push(name.to_owned());
            }
        }
        let runtime = self.cached(root);
        if runtime.is_none() {
            warnings.push("no runtime is cached for this workspace, so there are no live stats or open files (a report never starts Lean)".into());
        }
        FeedbackCollected {
            root: root.display(),
            toolchain,
            lakefiles,
            server_command: self.launcher().describe(root),
            runtime: runtime.as_ref().map(|rt| rt.stats()),
            open_files: runtime.as_ref().map(|rt| rt.open_documents()),
        }
    }
}
