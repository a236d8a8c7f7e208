//! `lean_search`: the workspace's declaration index (`crate::search`) asked
//! off the runtime, with the toolchain's library found once per workspace,
//! progress while files are read, and the call's cancellation stopping the
//! refresh.

use std::path::PathBuf;
use std::time::Duration;

use crate::broker::engine::compiler::Toolchain;
use crate::broker::engine::runtimes::Runtimes;
use crate::broker::engine::workspace::Root;
use crate::broker::error::{Error, Result};
use crate::broker::progress::ProgressSink;
use crate::results::SearchResult;
use crate::search::{self, Trees};

/// The bound of `limit` (operations.toml says so, and its default, 20).
pub const MAX_LIMIT: usize = 200;

/// How long `lean --print-prefix` may take.
const PREFIX_LIMIT: Duration = Duration::from_secs(30);

/// How often progress is reported while files are read.
const PROGRESS_EVERY: Duration = Duration::from_millis(250);

impl Runtimes {
    pub async fn search(
        &self,
        sink: &dyn ProgressSink,
        workspace: &str,
        query: &str,
        limit: u64,
    ) -> Result<SearchResult> {
        search(self, sink, workspace, query, limit).await
    }
}

async fn search(
    broker: &Runtimes,
    sink: &dyn ProgressSink,
    workspace: &str,
    query: &str,
    limit: u64,
) -> Result<SearchResult> {
    let root = broker.resolve_root(workspace)?;
    let parsed = search::parse(query).map_err(|rule| Error::InvalidInput {
        field: "query",
        value: query.to_string(),
        rule,
    })?;
    let limit = match limit {
        n if (1..=MAX_LIMIT as u64).contains(&n) => n as usize,
        n => {
            return Err(Error::InvalidInput {
                field: "limit",
                value: n.to_string(),
                rule: format!(
                    "give 1 to {MAX_LIMIT}; `more` says how many matched beyond the hits"
                ),
            });
        }
    };
    let trees = Trees {
        root: root.path().to_path_buf(),
        toolchain: toolchain(broker, &root).await,
    };
    let mut job = broker.indexes.start(trees, parsed, limit);
    let mut tick = tokio::time::interval(PROGRESS_EVERY);
    tick.tick().await;
    let found = loop {
        tokio::select! {
            done = &mut job.task => break done,
            _ = tick.tick(), if sink.has_progress_token() => {
                let (read, total) = job.files_read();
                if total > 0 {
                    sink.progress(
                        &format!("indexing declarations: {read} of {total} files read"),
                        Some(serde_json::json!({ "done": false, "phase": "index", "read": read, "total": total })),
                    )
                    .await;
                }
            }
        }
    };
    let found = found
        .map_err(|e| Error::Unexpected(format!("the search index task failed: {e}")))?
        .map_err(|search::Cancelled| Error::Unexpected("the index refresh was cancelled".into()))?;
    Ok(SearchResult {
        workspace: root.descriptor(),
        more: found.matched - found.hits.len(),
        matched: found.matched,
        hits: found.hits,
        index: found.index,
    })
}

/// The toolchain's prefix, asked of its `lean` once per workspace; `None`
/// when it cannot say (its library is then not searched).
async fn toolchain(broker: &Runtimes, root: &Root) -> Option<PathBuf> {
    if let Some(known) = broker.indexes.toolchain(root.path()) {
        return known;
    }
    match Toolchain::find(&broker.launcher, root, PREFIX_LIMIT).await {
        Ok(t) => t.lib.parent().and_then(|p| p.parent()).map(PathBuf::from),
        Err(e) => {
            crate::log_warn!("lean_search leaves the toolchain's library out: {e}");
            None
        }
    }
}
