//! How the Lean language server of a workspace is started.
//!
//! Production runs `lake serve` in the root, so that elan picks the root's
//! toolchain and Lake sets up the search path. A `lean` binary can be named
//! instead (tests, or a checkout without Lake); it then runs `lean --server` with
//! Lake's build layout of the root on `LEAN_PATH`, which is what Lake would set.

use std::path::{Path, PathBuf};
use std::time::Duration;

use std::sync::Arc;

use tokio::sync::mpsc;

use crate::lsp::{LspClient, LspError, ServerCommand, ServerEvent};

use super::workspace::Root;

/// Options passed to every Lean server: report edits at once instead of after
/// the editor debounce (measured: 203 ms → 5 ms per edit-and-wait).
const LEAN_SERVER_OPTIONS: &[&str] = &["-Dserver.reportDelayMs=0"];

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Launcher {
    /// `<lake> serve -- <options>` in the root.
    Lake { program: PathBuf },
    /// `<lean> --server <options>` with `LEAN_PATH`/`LEAN_SRC_PATH` from the root.
    Lean { program: PathBuf },
    /// The in-process scripted Lean of tests (no process, no toolchain: see
    /// [`crate::lsp::testing`]); its "command" is only a name.
    #[cfg(any(test, feature = "testing"))]
    Scripted(crate::lsp::testing::ScriptedLean),
}

impl Launcher {
    /// `LEAN_BEAM_LEAN` names a lean binary; otherwise `LEAN_BEAM_LAKE` (default
    /// `lake`) is used.
    pub fn from_env() -> Self {
        if let Some(lean) = std::env::var_os("LEAN_BEAM_LEAN").filter(|v| !v.is_empty()) {
            return Launcher::Lean {
                program: PathBuf::from(lean),
            };
        }
        let lake = std::env::var_os("LEAN_BEAM_LAKE")
            .filter(|v| !v.is_empty())
            .unwrap_or_else(|| "lake".into());
        Launcher::Lake {
            program: PathBuf::from(lake),
        }
    }

    /// Start the Lean server of `root` from `command` (this launcher's
    /// [`Launcher::command`], perhaps with more search directories), its
    /// notifications to `events`: the one place a server comes into being.
    pub async fn start(
        &self,
        command: &ServerCommand,
        events: mpsc::UnboundedSender<ServerEvent>,
        startup: Duration,
    ) -> Result<Arc<LspClient>, LspError> {
        match self {
            #[cfg(any(test, feature = "testing"))]
            Launcher::Scripted(lean) => {
                let (output, input) = lean.start();
                let name = command.program.to_string_lossy();
                LspClient::connect(&name, output, input, &command.cwd, events, startup).await
            }
            _ => LspClient::start(command, events, startup).await,
        }
    }

    pub fn command(&self, root: &Root) -> ServerCommand {
        let options = LEAN_SERVER_OPTIONS.iter().map(|s| s.to_string());
        match self {
            #[cfg(any(test, feature = "testing"))]
            Launcher::Scripted(_) => ServerCommand {
                program: PathBuf::from("scripted-lean"),
                args: Vec::new(),
                env: Vec::new(),
                env_remove: Vec::new(),
                cwd: root.path().to_path_buf(),
            },
            Launcher::Lake { program } => ServerCommand {
                program: program.clone(),
                args: ["serve", "--"]
                    .iter()
                    .map(|s| s.to_string())
                    .chain(options)
                    .collect(),
                env: Vec::new(),
                env_remove: Vec::new(),
                cwd: root.path().to_path_buf(),
            },
            Launcher::Lean { program } => ServerCommand {
                program: program.clone(),
                args: std::iter::once("--server".to_string())
                    .chain(options)
                    .collect(),
                env: vec![
                    ("LEAN_PATH".into(), search_path(root.path(), true)),
                    ("LEAN_SRC_PATH".into(), search_path(root.path(), false)),
                ],
                // With `LAKE` set, every worker would run `$LAKE setup-file`
                // instead of using LEAN_PATH.
                env_remove: vec!["LAKE".into()],
                cwd: root.path().to_path_buf(),
            },
        }
    }

    /// How to run the batch compiler of `root`'s toolchain: program, leading
    /// arguments and environment (Lake provides its search path itself).
    pub fn compiler(&self, root: &Root) -> (PathBuf, Vec<String>, Vec<(String, String)>) {
        match self {
            Launcher::Lake { program } => (
                program.clone(),
                vec!["env".into(), "lean".into()],
                Vec::new(),
            ),
            Launcher::Lean { program } => (program.clone(), Vec::new(), self.command(root).env),
            // No compiler: a run fails to start, as with a missing toolchain.
            #[cfg(any(test, feature = "testing"))]
            Launcher::Scripted(_) => (PathBuf::from("scripted-lean"), Vec::new(), Vec::new()),
        }
    }

    /// A one-line rendering for stats, feedback and errors.
    pub fn describe(&self, root: &Root) -> String {
        let command = self.command(root);
        let mut line = command.program.to_string_lossy().into_owned();
        for arg in &command.args {
            line.push(' ');
            line.push_str(arg);
        }
        line
    }
}

/// Lake's layout: the package's own build, then each dependency's under
/// `.lake/packages`. `build` selects compiled modules, else sources.
fn search_path(root: &Path, build: bool) -> String {
    let mut dirs = vec![root.to_path_buf()];
    if let Ok(entries) = std::fs::read_dir(root.join(".lake/packages")) {
        let mut packages: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
        packages.sort();
        dirs.extend(packages);
    }
    let parts: Vec<String> = dirs
        .iter()
        .map(|d| {
            if build {
                d.join(".lake/build/lib/lean")
            } else {
                d.clone()
            }
        })
        .map(|d| d.to_string_lossy().into_owned())
        .collect();
    parts.join(":")
}

/// Time limits of the broker. No wait is unbounded.
#[derive(Debug, Clone)]
pub struct Timeouts {
    /// Start-up of a Lean server, up to its `initialize` answer.
    pub startup: Duration,
    /// One elaboration barrier (`waitForDiagnostics`).
    pub sync: Duration,
    /// Any other single Lean request.
    pub request: Duration,
}

impl Timeouts {
    pub fn from_env() -> Self {
        let secs = |name: &str, default: u64| {
            Duration::from_secs(
                std::env::var(name)
                    .ok()
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(default),
            )
        };
        Timeouts {
            startup: secs("LEAN_BEAM_STARTUP_TIMEOUT_SECS", 120),
            sync: secs("LEAN_BEAM_SYNC_TIMEOUT_SECS", 900),
            request: secs("LEAN_BEAM_REQUEST_TIMEOUT_SECS", 300),
        }
    }
}

/// Bounds on what the broker keeps, each set by an environment variable
/// (see the README). Defaults fit a 2-core, 8 GiB laptop.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Workspace runtimes cached at once (`LEAN_BEAM_MAX_RUNTIMES`): past it
    /// the least recently used idle one is evicted.
    pub runtimes: usize,
    /// Documents a runtime has open in Lean at once, shadow slots included,
    /// each a Lean worker process (`LEAN_BEAM_MAX_DOCUMENTS`): past it the
    /// least recently used idle one is closed.
    pub documents: usize,
    /// Shadow slots (each a Lean worker) per document, for parallel probes.
    pub shadow_slots: usize,
    /// Live proof handles per runtime, by count and by bytes (least recently
    /// used evicted past either).
    pub handles: HandleLimits,
    /// Probes may import a compiled prefix instead of carrying it
    /// (`LEAN_BEAM_PREFIX_BASES=0` turns this off).
    pub prefix_bases: bool,
    /// A shadow slot unused this long gives its Lean worker back (reopened by
    /// the next probe that takes the slot).
    pub shadow_idle: Duration,
    /// A runtime without a call this long stops its Lean server
    /// (`LEAN_BEAM_RUNTIME_IDLE_SECS`); the next call starts a new one.
    pub runtime_idle: Duration,
    /// The resident memory a Lean server or worker may use, in bytes
    /// (`LEAN_BEAM_MAX_LEAN_RSS_MIB`); `None`: no bound.
    pub lean_rss: Option<u64>,
    /// What the Lean processes may hold together, as PSS
    /// (`LEAN_BEAM_MAX_LEAN_MEMORY`): probes open new workers within it.
    pub lean_memory: super::memory::Budget,
    /// How that memory is measured (tests script it).
    pub meter: super::memory::Meter,
    /// Larger source files are refused (`invalidInput`), never read
    /// (`LEAN_BEAM_MAX_FILE_BYTES`).
    pub max_file_bytes: u64,
}

/// The names of the variables, for messages and `beam_stats`.
pub mod env {
    pub const MAX_RUNTIMES: &str = "LEAN_BEAM_MAX_RUNTIMES";
    pub const MAX_DOCUMENTS: &str = "LEAN_BEAM_MAX_DOCUMENTS";
    pub const MAX_HANDLES: &str = "LEAN_BEAM_MAX_HANDLES";
    pub const MAX_HANDLE_BYTES: &str = "LEAN_BEAM_MAX_HANDLE_BYTES";
    pub const MAX_LEAN_RSS_MIB: &str = "LEAN_BEAM_MAX_LEAN_RSS_MIB";
    pub const RUNTIME_IDLE_SECS: &str = "LEAN_BEAM_RUNTIME_IDLE_SECS";
    pub const SHADOW_SLOTS: &str = "LEAN_BEAM_SHADOW_SLOTS";
    pub const MAX_FILE_BYTES: &str = "LEAN_BEAM_MAX_FILE_BYTES";
    pub const MAX_LEAN_MEMORY: &str = super::super::memory::ENV;
}

const MIB: u64 = 1024 * 1024;

/// A positive integer from the environment; a value that is not one is
/// reported on stderr and the default applies.
fn positive(name: &str) -> Option<u64> {
    let value = std::env::var(name).ok()?;
    match value.trim().parse::<u64>() {
        Ok(n) if n > 0 => Some(n),
        _ => {
            crate::log_warn!("{name}={value:?} is not a positive integer; using the default");
            None
        }
    }
}

impl Limits {
    pub fn from_env() -> Self {
        let n = |name: &str, default: u64| positive(name).unwrap_or(default);
        let size =
            |name: &str, default: u64| usize::try_from(n(name, default)).unwrap_or(usize::MAX);
        Limits {
            runtimes: size(env::MAX_RUNTIMES, 8),
            documents: size(env::MAX_DOCUMENTS, 32),
            shadow_slots: size(env::SHADOW_SLOTS, 4),
            handles: HandleLimits {
                count: size(env::MAX_HANDLES, 4096),
                bytes: size(env::MAX_HANDLE_BYTES, 64 * MIB),
            },
            prefix_bases: std::env::var("LEAN_BEAM_PREFIX_BASES").map_or(true, |v| v != "0"),
            shadow_idle: Duration::from_secs(n("LEAN_BEAM_SHADOW_IDLE_SECS", 300)),
            runtime_idle: Duration::from_secs(n(env::RUNTIME_IDLE_SECS, 1800)),
            lean_rss: positive(env::MAX_LEAN_RSS_MIB).map(|mib| mib.saturating_mul(MIB)),
            lean_memory: super::memory::Budget::from_env(),
            meter: super::memory::Meter::proc(),
            max_file_bytes: positive(env::MAX_FILE_BYTES)
                .unwrap_or(crate::safe_fs::DEFAULT_MAX_FILE_BYTES),
        }
    }
}

/// Bounds of one runtime's proof-handle store.
#[derive(Debug, Clone, Copy)]
pub struct HandleLimits {
    /// Live handles (`LEAN_BEAM_MAX_HANDLES`).
    pub count: usize,
    /// Bytes held by live handles, each shared text counted once
    /// (`LEAN_BEAM_MAX_HANDLE_BYTES`).
    pub bytes: usize,
}
