//! Finding every process of one server tree, wherever it went.
//!
//! Lean's watchdog starts each file worker with `setsid`: a worker is the leader
//! of its own session and process group, so signalling the server's group does
//! not reach it, and once the server dies the worker is re-parented (no `ppid`
//! link either). A worker busy elaborating keeps running until it next writes to
//! the dead server. What every process of the tree does keep is the environment
//! it inherited, so the client puts a unique `LEAN_BEAM_LSP_TREE=<token>` entry
//! into the server's environment and finds the tree by scanning
//! `/proc/<pid>/environ` (our own processes only; others are unreadable).
//! Linux only; elsewhere the scan finds nothing and only the group is signalled.

use std::sync::atomic::{AtomicU64, Ordering};

/// Name of the environment variable that marks a server tree.
pub const TREE_ENV: &str = "LEAN_BEAM_LSP_TREE";

/// A token unique to this process and call.
pub fn new_token() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!(
        "{}-{}-{nanos:x}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// Pids of the live processes whose environment holds `TREE_ENV=token`.
#[cfg(target_os = "linux")]
pub fn processes_with_token(token: &str) -> Vec<u32> {
    let entry = format!("{TREE_ENV}={token}");
    let me = std::process::id();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut pids = Vec::new();
    for e in dir.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        if pid == me {
            continue;
        }
        // Zombies have an empty environ, so they drop out by themselves.
        let Ok(environ) = std::fs::read(e.path().join("environ")) else {
            continue;
        };
        if environ.split(|&b| b == 0).any(|kv| kv == entry.as_bytes()) {
            pids.push(pid);
        }
    }
    pids.sort_unstable();
    pids
}

#[cfg(not(target_os = "linux"))]
pub fn processes_with_token(_token: &str) -> Vec<u32> {
    Vec::new()
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn finds_a_marked_child_and_not_others() {
        let token = new_token();
        let mut marked = std::process::Command::new("sleep")
            .arg("30")
            .env(TREE_ENV, &token)
            .spawn()
            .unwrap();
        let mut other = std::process::Command::new("sleep")
            .arg("30")
            .env(TREE_ENV, format!("{token}0"))
            .spawn()
            .unwrap();
        assert_eq!(processes_with_token(&token), vec![marked.id()]);
        marked.kill().unwrap();
        other.kill().unwrap();
        marked.wait().unwrap();
        other.wait().unwrap();
        assert!(processes_with_token(&token).is_empty());
    }
}
