//! Runs of the workspace's batch compiler (`lean`, or `lake env lean`): for
//! checkpoints and for prefix bases. Each run has its own process group with
//! the parent-death signal, is killed with its whole group when the caller
//! gives up (time limit, cancellation, drop), and never sees the server's
//! stdout.

use std::path::PathBuf;
use std::process::{Output, Stdio};
use std::time::Duration;

use tokio::io::AsyncWriteExt;

use super::launch::Launcher;
use super::workspace::Root;

/// Why a compiler run produced no output to look at.
#[derive(Debug)]
pub enum RunError {
    Spawn(std::io::Error),
    TimedOut,
    Wait(std::io::Error),
}

/// Kills a process group when dropped unless it was reaped first.
struct GroupGuard(Option<u32>);

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if let Some(pgid) = self.0 {
            let _ = crate::process::sys::kill_process_group(pgid, crate::process::sys::SIGKILL);
        }
    }
}

/// The command line a run of `args` would have, for messages.
pub fn describe(launcher: &Launcher, root: &Root, args: &[String]) -> String {
    let (program, mut all, _) = launcher.compiler(root);
    all.extend(args.iter().cloned());
    format!("{} {}", program.display(), all.join(" "))
}

/// Run the compiler of `root`'s toolchain with `args` in the root, feeding
/// `stdin` (or nothing), within `limit`.
pub async fn run(
    launcher: &Launcher,
    root: &Root,
    args: &[String],
    stdin: Option<String>,
    limit: Duration,
) -> (String, Result<Output, RunError>) {
    let describe = describe(launcher, root, args);
    let (program, mut all, env) = launcher.compiler(root);
    all.extend(args.iter().cloned());
    let result = run_program(&program, &all, &env, root.path(), stdin, limit).await;
    (describe, result)
}

/// Run `program` with `args` and `env` in `cwd` (the same supervision as
/// [`run`]): `lean_verify`'s fresh builds run the toolchain's `lean` with a
/// search path of their own.
pub async fn run_program(
    program: &std::path::Path,
    args: &[String],
    env: &[(String, String)],
    cwd: &std::path::Path,
    stdin: Option<String>,
    limit: Duration,
) -> Result<Output, RunError> {
    let mut command = tokio::process::Command::new(program);
    command
        .args(args)
        .envs(env.iter().cloned())
        .env_remove("LAKE")
        .current_dir(cwd)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        // Never the server's stdout: that is the MCP stream.
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = match crate::process::spawn_supervised(command).await {
        Ok(child) => child,
        Err(e) => return Err(RunError::Spawn(e)),
    };
    let mut group = GroupGuard(child.id());
    if let (Some(text), Some(mut pipe)) = (stdin, child.stdin.take()) {
        // Lean reads all of its input before it prints anything; a write
        // error means it died, which its exit status reports.
        tokio::spawn(async move {
            let _ = pipe.write_all(text.as_bytes()).await;
        });
    }
    match tokio::time::timeout(limit, child.wait_with_output()).await {
        Ok(Ok(output)) => {
            // Reaped: the group id may be reused from now on.
            group.0 = None;
            Ok(output)
        }
        Ok(Err(e)) => Err(RunError::Wait(e)),
        Err(_) => Err(RunError::TimedOut),
    }
}

/// The last ~4000 bytes of a child's output, cut on a character boundary.
pub fn tail(bytes: &[u8]) -> String {
    let s = String::from_utf8_lossy(bytes);
    let mut start = s.len().saturating_sub(4000);
    while !s.is_char_boundary(start) {
        start += 1;
    }
    s[start..].to_string()
}

/// The toolchain a workspace builds with.
#[derive(Debug, Clone)]
pub struct Toolchain {
    /// Its `lean` (`<prefix>/bin/lean`).
    pub lean: PathBuf,
    /// Its own library (`<prefix>/lib/lean`).
    pub lib: PathBuf,
    /// The first line of `lean --version`.
    pub version: String,
}

impl Toolchain {
    /// Ask the workspace's compiler for its prefix and version.
    pub async fn find(launcher: &Launcher, root: &Root, limit: Duration) -> Result<Self, String> {
        let ask = |flag: &str| {
            let args = [flag.to_string()];
            async move {
                let (describe, run) = run(launcher, root, &args, None, limit).await;
                match run {
                    Ok(o) if o.status.success() => {
                        let text = String::from_utf8_lossy(&o.stdout);
                        Ok(text.lines().next().unwrap_or("").trim().to_string())
                    }
                    Ok(o) => Err(format!("`{describe}` failed: {}", tail(&o.stderr))),
                    Err(e) => Err(format!("`{describe}` did not run: {e:?}")),
                }
            }
        };
        let prefix = PathBuf::from(ask("--print-prefix").await?);
        let version = ask("--version").await?;
        Ok(Toolchain {
            lean: prefix.join("bin/lean"),
            lib: prefix.join("lib/lean"),
            version,
        })
    }
}
