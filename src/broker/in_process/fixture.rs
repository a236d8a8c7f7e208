//! What the in-process broker tests share: a quiet progress sink, a
//! temporary workspace, brokers on the scripted Lean, the scripted rules
//! (see the parent module's comment) and small steps every test takes.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::Semaphore;

use crate::broker::{
    At, Broker, Budget, Continue, DiagnosticScope, EditMode, Launcher, Limits, LogLevel,
    ProgressSink, Result, SinkFuture, SyncOptions, Timeouts,
};
use crate::lsp::testing::{Elaboration, Received, Report, Script, ScriptedLean, diagnostic};
use crate::results::RunResult;

/// A progress sink that follows nothing.
pub(super) struct Quiet;

impl ProgressSink for Quiet {
    fn has_progress_token(&self) -> bool {
        false
    }
    fn admits(&self, _: LogLevel) -> bool {
        false
    }
    fn follows_lake_setup(&self) -> bool {
        false
    }
    fn progress<'a>(&'a self, _: &'a str, _: Option<Value>) -> SinkFuture<'a, bool> {
        Box::pin(async { false })
    }
    fn log<'a>(&'a self, _: LogLevel, _: &'a str, _: Value) -> SinkFuture<'a, ()> {
        Box::pin(async {})
    }
    fn lake_setup<'a>(&'a self, _: &'a str, _: &'a str) -> SinkFuture<'a, ()> {
        Box::pin(async {})
    }
}

/// A workspace in the temp dir (a `lean-toolchain` makes it a project),
/// removed at the end.
pub(super) struct Workspace {
    pub(super) root: PathBuf,
}

impl Workspace {
    pub(super) fn new() -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let root = std::env::temp_dir().join(format!(
            "beam-in-process-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&root).unwrap();
        std::fs::write(root.join("lean-toolchain"), "scripted\n").unwrap();
        Workspace {
            root: root.canonicalize().unwrap(),
        }
    }

    pub(super) fn descriptor(&self) -> String {
        self.root.display().to_string()
    }

    pub(super) fn write(&self, path: &str, text: &str) {
        std::fs::write(self.root.join(path), text).unwrap();
    }
}

impl Drop for Workspace {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

pub(super) fn broker(lean: &ScriptedLean) -> Broker {
    broker_with_limits(lean, test_limits())
}

/// The bounds of these tests: the environment's, without prefix bases.
pub(super) fn test_limits() -> Limits {
    Limits {
        prefix_bases: false,
        ..Limits::from_env()
    }
}

/// A broker on the scripted Lean whose time limits a busy machine never
/// reaches: every wait in these tests is on an event.
pub(super) fn broker_with_limits(lean: &ScriptedLean, limits: Limits) -> Broker {
    let timeouts = Timeouts {
        startup: Duration::from_secs(60),
        sync: Duration::from_secs(60),
        request: Duration::from_secs(60),
    };
    Broker::new(Launcher::Scripted(lean.clone()), timeouts, limits)
}

/// The rules, but a shadow's text holding `slow` is answered only when
/// `gate` gives a permit: a probe stays in flight until the test lets it go.
pub(super) fn gated(gate: &Arc<Semaphore>) -> ScriptedLean {
    let held = Arc::clone(gate);
    ScriptedLean::new(
        Script::new(move |e: &Elaboration| {
            if e.uri.contains(".beam-shadow") && e.text.contains("slow") {
                Report::Gated(Arc::clone(&held), read(&e.text))
            } else {
                Report::Diagnostics(read(&e.text))
            }
        })
        .goals(goals_at),
    )
}

/// What every probe's shadow document's URI holds.
pub(super) const SHADOW: &str = ".beam-shadow";

/// Whether Lean's request `r` is a `method` about a shadow whose URI holds
/// `shadow` (`SHADOW` for any).
pub(super) fn about_shadow(r: &Received, method: &str, shadow: &str) -> bool {
    r.method == method && r.uri.as_deref().is_some_and(|u| u.contains(shadow))
}

/// How many `method` requests Lean received about shadows holding `shadow`.
pub(super) fn shadow_count(lean: &ScriptedLean, method: &str, shadow: &str) -> usize {
    lean.received()
        .iter()
        .filter(|r| about_shadow(r, method, shadow))
        .count()
}

/// Until the broker waits for a shadow's diagnostics: a probe is in flight.
pub(super) async fn a_probe_waits(lean: &ScriptedLean) {
    lean.wait_for(|r| about_shadow(r, "textDocument/waitForDiagnostics", SHADOW))
        .await;
}

/// Run `text` at `place` in the default budget, without handles.
pub(super) async fn run(broker: &Broker, place: &At<'_>, text: &str) -> Result<RunResult> {
    broker
        .run_at(&Quiet, place, text, Budget::default(), Continue::NoHandles)
        .await
}

/// Sync `path` and answer the version it reached.
pub(super) async fn synced(broker: &Broker, d: &str, path: &str) -> u64 {
    broker
        .sync(&Quiet, d, path, sync_options())
        .await
        .unwrap()
        .version
}

/// What the rules make of a text (see the module's comment).
pub(super) fn read(text: &str) -> Vec<Value> {
    let mut found = Vec::new();
    let lines: Vec<&str> = text.lines().collect();
    for (n, line) in lines.iter().enumerate() {
        let n = n as u32;
        let width = line.chars().count() as u32;
        if line.contains("IMPORTS_STALE") {
            found.push(diagnostic(
                0,
                0,
                width,
                1,
                "Imports are out of date and must be rebuilt; use the \"Restart File\" command in your editor.",
            ));
        }
        if let Some(at) = line.find("oops") {
            found.push(diagnostic(
                n,
                at as u32,
                at as u32 + 4,
                1,
                "unknown identifier 'oops'",
            ));
        }
        if line.contains("sorry") {
            found.push(diagnostic(n, 0, width, 2, "declaration uses 'sorry'"));
        }
        if line.trim_end().ends_with("by") {
            let block: Vec<&str> = lines[n as usize + 1..]
                .iter()
                .take_while(|l| l.starts_with(' '))
                .copied()
                .collect();
            let settled = block
                .iter()
                .any(|l| l.contains("trivial") || l.contains("sorry") || l.contains("oops"));
            if !settled {
                let by = line.rfind("by").unwrap() as u32;
                let mut unsolved = diagnostic(n, by, by + 2, 1, "unsolved goals\n⊢ True");
                unsolved["leanTags"] = serde_json::json!([1]);
                found.push(unsolved);
            }
        }
    }
    found.sort_by_key(|d| d["range"]["start"]["line"].as_u64());
    found
}

/// The goals the rules see at (`line`, `character`).
pub(super) fn goals_at(text: &str, line: u32, character: u32) -> Option<Vec<String>> {
    let lines: Vec<&str> = text.lines().collect();
    let here = lines.get(line as usize)?;
    if !here.starts_with(' ') {
        return None;
    }
    let mut above = lines[..line as usize]
        .iter()
        .rev()
        .take_while(|l| l.starts_with(' '));
    let closed_above = above.any(|l| l.contains("trivial"));
    let closed_here = here
        .char_indices()
        .nth(character as usize)
        .map_or(here.len(), |(i, _)| i)
        .checked_sub(0)
        .is_some_and(|end| here[..end].contains("trivial"));
    Some(if closed_above || closed_here {
        Vec::new()
    } else {
        vec!["⊢ True".to_string()]
    })
}

pub(super) fn rules() -> Script {
    Script::new(|e: &Elaboration| Report::Diagnostics(read(&e.text))).goals(goals_at)
}

pub(super) fn sync_options() -> SyncOptions {
    SyncOptions {
        scope: DiagnosticScope::All,
        items: true,
        mode: EditMode::IfChanged,
    }
}

pub(super) const PROOF: &str = "theorem t : True := by\n  sorry\n";

pub(super) fn at<'a>(ws: &'a str, version: u64, line: u64, character: u64) -> At<'a> {
    At {
        workspace: ws,
        path: "A.lean",
        version,
        line,
        character,
    }
}
