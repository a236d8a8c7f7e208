//! `lean-beam-mcp doctor [ROOT]`: what the first call will meet, checked now.
//!
//! Hosts report a stdio server "connected" whether or not Lean can start, so a
//! broken toolchain used to show only at the first tool call. The doctor runs
//! the checks that call would run — the server's configuration, the Lean or
//! Lake it will start and from where, whether that program answers
//! `--version` within a time limit, the root's project files and build layout
//! — and says each as one line, OK / WARN / FAIL, with the fix. The exit
//! status is the worst line's (0, 1, 2). Then it prints the host snippets for
//! this binary's absolute path.
//!
//! Nothing here is a second copy of the server's rules: the launch command is
//! the broker's `Launcher`, the bounds are `Limits::from_env`, the descriptor
//! rule is `Broker::check_descriptor`, the core's tunables `Config::from_env`.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use crate::broker::{self, Broker, Launcher, Limits, Root, Timeouts};
use crate::identity;
use crate::mcp::config::Config;
use crate::surface::{ToolError, ToolSet};

/// How long `lean --version` (or `lake env lean --version`) may take. Lean
/// answers in tens of milliseconds; elan may first have to resolve a
/// toolchain, which without a network fails quickly rather than hangs.
pub const VERSION_TIMEOUT: Duration = Duration::from_secs(20);

/// How bad a line is; the order is the exit status's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Ok,
    Warn,
    Fail,
}

impl Level {
    pub fn label(self) -> &'static str {
        match self {
            Level::Ok => "OK",
            Level::Warn => "WARN",
            Level::Fail => "FAIL",
        }
    }

    /// 0 every line OK, 1 the worst a warning, 2 a failure.
    pub fn exit_code(self) -> u8 {
        self as u8
    }
}

/// One finding: what was checked, what was found, and the fix when it is not OK.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    pub level: Level,
    pub subject: &'static str,
    pub found: String,
    pub fix: Option<String>,
}

impl Line {
    fn ok(subject: &'static str, found: impl Into<String>) -> Line {
        Line {
            level: Level::Ok,
            subject,
            found: found.into(),
            fix: None,
        }
    }

    fn warn(subject: &'static str, found: impl Into<String>, fix: impl Into<String>) -> Line {
        Line {
            level: Level::Warn,
            subject,
            found: found.into(),
            fix: Some(fix.into()),
        }
    }

    fn fail(subject: &'static str, found: impl Into<String>, fix: impl Into<String>) -> Line {
        Line {
            level: Level::Fail,
            subject,
            found: found.into(),
            fix: Some(fix.into()),
        }
    }
}

/// The whole report: its lines in order, and the worst of them.
#[derive(Debug, Default)]
pub struct Report {
    pub lines: Vec<Line>,
}

impl Report {
    pub fn worst(&self) -> Level {
        self.lines
            .iter()
            .map(|l| l.level)
            .max()
            .unwrap_or(Level::Ok)
    }

    pub fn render(&self) -> String {
        let mut out = String::new();
        for line in &self.lines {
            let _ = writeln!(
                out,
                "{:<4}  {:<14} {}",
                line.level.label(),
                line.subject,
                line.found
            );
            if let Some(fix) = &line.fix {
                let _ = writeln!(out, "      {:<14} fix: {fix}", "");
            }
        }
        out
    }
}

/// What the environment says, read once (tests pass their own).
pub struct Env<'a> {
    pub var: &'a dyn Fn(&str) -> Option<String>,
    /// `PATH`, for finding `lake` and `elan` as the server's spawn would.
    pub path: Option<String>,
}

/// Run every check: the server's, then the root's when one is given (an
/// absolute path, or relative to the current directory).
pub async fn run(root: Option<&str>, env: &Env<'_>) -> Report {
    let mut report = Report::default();
    let binary = std::env::current_exe()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| identity::NAME.into());
    report.lines.push(Line::ok(
        "server",
        format!("{} {} at {binary}", identity::NAME, identity::VERSION),
    ));
    configuration(&mut report, env);
    let launcher = Launcher::from_env();
    let root = root.map(absolute);
    let resolved = match &root {
        Some(root) => match Broker::canonical_root(&root.to_string_lossy()) {
            Ok(canonical) => {
                report.lines.push(Line::ok(
                    "root",
                    format!("{} is a Lean/Lake project", canonical.path().display()),
                ));
                Some(canonical)
            }
            Err(error) => {
                report.lines.push(Line::fail(
                    "root",
                    ToolError::from(error).message,
                    "give the root of a Lean project: the directory with its lean-toolchain and lakefile",
                ));
                None
            }
        },
        None => None,
    };
    lean(
        &mut report,
        &launcher,
        resolved.as_ref().map(Root::path),
        env,
    )
    .await;
    if let Some(root) = &resolved {
        project(&mut report, &launcher, root);
    }
    report
}

fn absolute(root: &str) -> PathBuf {
    let path = Path::new(root);
    if path.is_absolute() {
        return path.to_path_buf();
    }
    std::env::current_dir()
        .map(|cwd| cwd.join(path))
        .unwrap_or_else(|_| path.to_path_buf())
}

/// The variables the server reads for its bounds and time limits: each one
/// set must parse, or the server silently uses its default (broker bounds) or
/// refuses to start (the protocol core's).
const POSITIVE_VARIABLES: &[&str] = &[
    broker::env::MAX_RUNTIMES,
    broker::env::MAX_DOCUMENTS,
    broker::env::SHADOW_SLOTS,
    broker::env::MAX_HANDLES,
    broker::env::MAX_HANDLE_BYTES,
    broker::env::MAX_LEAN_RSS_MIB,
    broker::env::MAX_FILE_BYTES,
    broker::env::RUNTIME_IDLE_SECS,
    "LEAN_BEAM_SHADOW_IDLE_SECS",
    "LEAN_BEAM_STARTUP_TIMEOUT_SECS",
    "LEAN_BEAM_SYNC_TIMEOUT_SECS",
    "LEAN_BEAM_REQUEST_TIMEOUT_SECS",
];

fn configuration(report: &mut Report, env: &Env<'_>) {
    match Config::from_env() {
        Ok(config) => report.lines.push(Line::ok(
            "calls",
            format!(
                "at most {} Lean calls at once (LEAN_BEAM_MAX_IN_FLIGHT), {} admitted per stream (LEAN_BEAM_MAX_ADMITTED)",
                config.max_in_flight, config.max_admitted_per_stream
            ),
        )),
        Err(message) => report.lines.push(Line::fail(
            "calls",
            format!("the server will not start: {message}"),
            "set a positive integer, or unset the variable for its default",
        )),
    }
    match ToolSet::from_flag_or_env(None, env.var) {
        Ok(tools) => report.lines.push(Line::ok(
            "tools",
            format!(
                "serves `{}` (LEAN_BEAM_TOOLS; --tools wins)",
                tools.spelling()
            ),
        )),
        Err(message) => report.lines.push(Line::fail(
            "tools",
            format!("the server will not start: {message}"),
            "name a profile or tools that exist, or unset LEAN_BEAM_TOOLS",
        )),
    }
    for name in POSITIVE_VARIABLES {
        if let Some(value) = (env.var)(name) {
            if !matches!(value.trim().parse::<u64>(), Ok(n) if n > 0) {
                report.lines.push(Line::warn(
                    "bounds",
                    format!("{name}={value:?} is not a positive integer: the server ignores it and uses its default"),
                    format!("set {name} to a positive integer, or unset it"),
                ));
            }
        }
    }
    let limits = Limits::from_env();
    let timeouts = Timeouts::from_env();
    let rss = limits
        .lean_rss
        .map_or("unbounded".to_string(), |b| format!("{} MiB", b >> 20));
    report.lines.push(Line::ok(
        "bounds",
        format!(
            "{} runtimes, {} documents per runtime ({} probe slots each), {} handles / {} MiB per runtime, Lean memory {rss}, files up to {} MiB, idle runtimes stop after {} s",
            limits.runtimes,
            limits.documents,
            limits.shadow_slots,
            limits.handles.count,
            limits.handles.bytes >> 20,
            limits.max_file_bytes >> 20,
            limits.runtime_idle.as_secs()
        ),
    ));
    report.lines.push(Line::ok(
        "time limits",
        format!(
            "Lean start-up {} s, a sync {} s, any other Lean request {} s",
            timeouts.startup.as_secs(),
            timeouts.sync.as_secs(),
            timeouts.request.as_secs()
        ),
    ));
}

/// Find `program` as a spawn would: a path with a slash as it is, a bare name
/// on `PATH`.
fn find_program(program: &Path, path: Option<&str>) -> Option<PathBuf> {
    if program.components().count() > 1 || program.is_absolute() {
        return Some(program.to_path_buf());
    }
    std::env::split_paths(path?)
        .map(|dir| dir.join(program))
        .find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The Lean the first call starts: which program, from where, and whether it
/// answers `--version` in time.
async fn lean(report: &mut Report, launcher: &Launcher, root: Option<&Path>, env: &Env<'_>) {
    let cwd = root
        .map(Path::to_path_buf)
        .unwrap_or_else(std::env::temp_dir);
    let (program, args, source): (PathBuf, Vec<&str>, String) = match launcher {
        Launcher::Lean { program } => (
            program.clone(),
            vec!["--version"],
            "named by LEAN_BEAM_LEAN: the server runs `lean --server`, no Lake".into(),
        ),
        Launcher::Lake { program } => {
            let source = if (env.var)("LEAN_BEAM_LAKE").is_some_and(|v| !v.is_empty()) {
                "named by LEAN_BEAM_LAKE: the server runs `lake serve`".to_string()
            } else {
                "`lake` on PATH (LEAN_BEAM_LEAN is unset): the server runs `lake serve`".to_string()
            };
            let args = if root.is_some() {
                // What `lean_save` runs, in the root: elan picks the root's toolchain.
                vec!["env", "lean", "--version"]
            } else {
                vec!["--version"]
            };
            (program.clone(), args, source)
        }
        // The in-process stand-in of tests: no program to look for.
        #[cfg(any(test, feature = "testing"))]
        Launcher::Scripted(_) => return,
    };
    let is_lean = matches!(launcher, Launcher::Lean { .. });
    let fix_missing = if is_lean {
        "point LEAN_BEAM_LEAN at a `lean` binary (`elan which lean` in the project prints one), or unset it to run `lake serve`"
    } else {
        "install elan (it puts `lake` and `lean` on PATH and installs the lean-toolchain of each project), or set LEAN_BEAM_LAKE to a lake program, or LEAN_BEAM_LEAN to a lean binary"
    };
    let Some(found) = find_program(&program, env.path.as_deref()) else {
        report.lines.push(Line::fail(
            "lean",
            format!("`{}` not found on PATH; {source}", program.display()),
            fix_missing,
        ));
        return;
    };
    if !is_executable(&found) {
        let what = if found.exists() {
            "is not an executable file"
        } else {
            "does not exist"
        };
        report.lines.push(Line::fail(
            "lean",
            format!("{} {what}; {source}", found.display()),
            fix_missing,
        ));
        return;
    }
    report
        .lines
        .push(Line::ok("lean", format!("{}, {source}", found.display())));
    if !is_lean {
        if let Some(elan) = find_program(Path::new("elan"), env.path.as_deref()) {
            report
                .lines
                .push(Line::ok("elan", format!("{}", elan.display())));
        } else {
            report.lines.push(Line::warn(
                "elan",
                "not on PATH: `lake` runs whatever toolchain it belongs to, whatever the root's lean-toolchain says",
                "install elan so that each project gets the toolchain its lean-toolchain names",
            ));
        }
    }
    let shown = std::iter::once(found.display().to_string())
        .chain(args.iter().map(|a| a.to_string()))
        .collect::<Vec<_>>()
        .join(" ");
    let mut command = tokio::process::Command::new(&found);
    command
        .args(&args)
        .current_dir(&cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    if is_lean {
        // As the server runs it: Lake's variables would redirect it.
        command.env_remove("LAKE");
    }
    let answer = match command.spawn() {
        Ok(child) => tokio::time::timeout(VERSION_TIMEOUT, child.wait_with_output()).await,
        Err(err) => {
            report.lines.push(Line::fail(
                "starts",
                format!("`{shown}` could not be started: {err}"),
                fix_missing,
            ));
            return;
        }
    };
    let version = match answer {
        Err(_) => {
            report.lines.push(Line::fail(
                "starts",
                format!(
                    "`{shown}` did not answer within {} s",
                    VERSION_TIMEOUT.as_secs()
                ),
                "run the command by hand: a toolchain that hangs at start-up hangs every first call too",
            ));
            return;
        }
        Ok(Err(err)) => {
            report.lines.push(Line::fail(
                "starts",
                format!("`{shown}` failed: {err}"),
                fix_missing,
            ));
            return;
        }
        Ok(Ok(out)) if !out.status.success() => {
            let said = first_line(&out.stderr)
                .or_else(|| first_line(&out.stdout))
                .unwrap_or_default();
            let status = out
                .status
                .code()
                .map_or_else(|| out.status.to_string(), |c| format!("status {c}"));
            report.lines.push(Line::fail(
                "starts",
                format!("`{shown}` exited with {status}: {said}"),
                fix_missing,
            ));
            return;
        }
        Ok(Ok(out)) => first_line(&out.stdout).unwrap_or_default(),
    };
    report
        .lines
        .push(Line::ok("starts", format!("`{shown}`: {version}")));
    if let (Some(root), true) = (root, is_lean) {
        toolchain_agreement(report, root, &version);
    }
}

fn first_line(bytes: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(bytes);
    text.lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map(str::to_owned)
}

/// The release a `lean-toolchain` names (`leanprover/lean4:v4.35.0` →
/// `4.35.0`), and the one `lean --version` printed (`Lean (version 4.35.0, …`).
fn toolchain_release(toolchain: &str) -> Option<&str> {
    let release = toolchain.trim().rsplit(':').next()?;
    Some(release.strip_prefix('v').unwrap_or(release))
}

fn printed_release(version: &str) -> Option<&str> {
    let rest = version.split("version ").nth(1)?;
    rest.split([',', ' ', ')']).next()
}

/// With `LEAN_BEAM_LEAN`, the root's `lean-toolchain` is not what runs: say
/// when the two differ (the `.olean`s of one release do not load in another).
fn toolchain_agreement(report: &mut Report, root: &Path, version: &str) {
    let Ok(toolchain) = std::fs::read_to_string(root.join("lean-toolchain")) else {
        return;
    };
    let (Some(wanted), Some(running)) = (toolchain_release(&toolchain), printed_release(version))
    else {
        return;
    };
    if wanted != running {
        report.lines.push(Line::warn(
            "toolchain",
            format!(
                "the root's lean-toolchain asks for {wanted}, LEAN_BEAM_LEAN is {running}: .olean files of one release do not load in another"
            ),
            "point LEAN_BEAM_LEAN at the toolchain the project names, or unset it so that elan picks it",
        ));
    }
}

/// The root's project files and Lake's build layout.
fn project(report: &mut Report, launcher: &Launcher, canonical: &Root) {
    let root = canonical.path();
    let lake = matches!(launcher, Launcher::Lake { .. });
    match std::fs::read_to_string(root.join("lean-toolchain")) {
        Ok(toolchain) => report.lines.push(Line::ok(
            "lean-toolchain",
            format!(
                "{}{}",
                toolchain.trim(),
                if lake {
                    " (elan runs it)"
                } else {
                    " (LEAN_BEAM_LEAN runs instead)"
                }
            ),
        )),
        Err(_) if lake => report.lines.push(Line::warn(
            "lean-toolchain",
            "none: elan runs its default toolchain for this root",
            "add a lean-toolchain naming the project's Lean release (e.g. leanprover/lean4:v4.35.0)",
        )),
        Err(_) => report.lines.push(Line::ok(
            "lean-toolchain",
            "none (LEAN_BEAM_LEAN names the lean that runs)",
        )),
    }
    let lakefile = ["lakefile.lean", "lakefile.toml"]
        .into_iter()
        .find(|f| root.join(f).is_file());
    match (lakefile, lake) {
        (Some(file), _) => report.lines.push(Line::ok("lakefile", file)),
        (None, true) => report.lines.push(Line::fail(
            "lakefile",
            "none: `lake serve` needs a lakefile.lean or lakefile.toml in the root",
            "add a lakefile (`lake init` writes one), or set LEAN_BEAM_LEAN to run a bare `lean --server`",
        )),
        (None, false) => report.lines.push(Line::ok(
            "lakefile",
            "none (a bare `lean --server` needs none)",
        )),
    }
    let build = root.join(".lake/build/lib/lean");
    if build.is_dir() {
        let oleans = count_oleans(&build, 0);
        report.lines.push(Line::ok(
            "build layout",
            format!(".lake/build/lib/lean: {oleans} .olean file(s)"),
        ));
    } else {
        report.lines.push(Line::warn(
            "build layout",
            "no .lake/build/lib/lean: a file that imports another module of this workspace fails to elaborate until it is built",
            "run `lake build` in the root (or lean_save the imported modules)",
        ));
    }
    report.lines.push(Line::ok(
        "first call",
        format!(
            "starts `{}` in {}",
            launcher.describe(canonical),
            root.display()
        ),
    ));
}

/// `.olean` files under `dir`, a few levels deep (module directories).
fn count_oleans(dir: &Path, depth: usize) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|entry| {
            let path = entry.path();
            match entry.file_type() {
                Ok(t) if t.is_dir() && depth < 16 => count_oleans(&path, depth + 1),
                Ok(t) if t.is_file() && path.extension().is_some_and(|e| e == "olean") => 1,
                _ => 0,
            }
        })
        .sum()
}

/// How to register this binary with each host, by its absolute path.
pub fn host_snippets(binary: &str, lean: Option<&str>) -> String {
    let json_string = |s: &str| serde_json::to_string(s).expect("a string serializes");
    let (bin, env_json) = (json_string(binary), lean.map(json_string));
    let claude_env = lean
        .map(|l| format!(" -e LEAN_BEAM_LEAN={}", shell_word(l)))
        .unwrap_or_default();
    let codex_env = env_json
        .as_ref()
        .map(|l| format!("  env = {{ LEAN_BEAM_LEAN = {l} }}\n"))
        .unwrap_or_default();
    let json_env = env_json
        .as_ref()
        .map(|l| format!(", \"env\": {{\"LEAN_BEAM_LEAN\": {l}}}"))
        .unwrap_or_default();
    format!(
        "Claude Code:\n  claude mcp add lean-beam{claude_env} -- {}\n\n\
Codex (~/.codex/config.toml):\n  [mcp_servers.lean-beam]\n  command = {bin}\n{codex_env}\n\
Gemini CLI (~/.gemini/settings.json):\n  {{\"mcpServers\": {{\"lean-beam\": {{\"command\": {bin}{json_env}}}}}}}\n\n\
VS Code (.vscode/mcp.json):\n  {{\"servers\": {{\"lean-beam\": {{\"type\": \"stdio\", \"command\": {bin}{json_env}}}}}}}\n",
        shell_word(binary)
    )
}

/// A word for a POSIX shell: as it is when it is plain, else single-quoted.
fn shell_word(word: &str) -> String {
    if !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+=:@,".contains(&b))
    {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn releases_are_read_from_both_spellings() {
        assert_eq!(
            toolchain_release("leanprover/lean4:v4.35.0\n"),
            Some("4.35.0")
        );
        assert_eq!(toolchain_release("v4.9.0-rc1"), Some("4.9.0-rc1"));
        assert_eq!(
            printed_release("Lean (version 4.35.0, x86_64-unknown-linux-gnu, commit abc, Release)"),
            Some("4.35.0")
        );
        assert_eq!(printed_release("garbage"), None);
    }

    #[test]
    fn the_worst_line_decides_the_exit_status() {
        let mut report = Report::default();
        assert_eq!(report.worst().exit_code(), 0);
        report.lines.push(Line::ok("a", "fine"));
        assert_eq!(report.worst().exit_code(), 0);
        report.lines.push(Line::warn("b", "meh", "do x"));
        assert_eq!(report.worst().exit_code(), 1);
        report.lines.push(Line::fail("c", "bad", "do y"));
        report.lines.push(Line::ok("d", "fine"));
        assert_eq!(report.worst(), Level::Fail);
        assert_eq!(report.worst().exit_code(), 2);
        let text = report.render();
        assert!(text.contains("FAIL  c"), "{text}");
        assert!(text.contains("fix: do y"), "{text}");
    }

    #[test]
    fn snippets_quote_what_a_shell_or_json_would_misread() {
        let text = host_snippets("/opt/my tools/lean-beam-mcp", Some("/l/\"q\"/lean"));
        assert!(
            text.contains("claude mcp add lean-beam -e LEAN_BEAM_LEAN='/l/\"q\"/lean' -- '/opt/my tools/lean-beam-mcp'"),
            "{text}"
        );
        assert!(
            text.contains(r#""command": "/opt/my tools/lean-beam-mcp""#),
            "{text}"
        );
        assert!(
            text.contains(r#""LEAN_BEAM_LEAN": "/l/\"q\"/lean""#),
            "{text}"
        );
        // Every JSON snippet parses.
        for line in text.lines().map(str::trim).filter(|l| l.starts_with('{')) {
            serde_json::from_str::<serde_json::Value>(line).expect(line);
        }
    }

    #[test]
    fn programs_are_found_as_a_spawn_finds_them() {
        let dir = std::env::temp_dir().join(format!("beam-doctor-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let exe = dir.join("lake");
        std::fs::write(&exe, "#!/bin/sh\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
        let path = format!("/nonexistent:{}", dir.display());
        assert_eq!(find_program(Path::new("lake"), Some(&path)), Some(exe));
        assert_eq!(find_program(Path::new("lean"), Some(&path)), None);
        assert_eq!(
            find_program(Path::new("/x/lean"), None),
            Some(PathBuf::from("/x/lean"))
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
