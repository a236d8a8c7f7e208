use super::*;

#[test]
fn a_rollup_gives_proportional_and_private_memory() {
    let rollup = "55d0-7ffd ---p 00000000 00:00 0 [rollup]\nRss: 300 kB\nPss: 120 kB\n\
Pss_Anon: 80 kB\nShared_Clean: 200 kB\nPrivate_Clean: 10 kB\nPrivate_Dirty: 70 kB\n";
    assert_eq!(
        parse_rollup(rollup),
        Some(Proportional {
            pss: 120 * 1024,
            private: 80 * 1024
        })
    );
    assert_eq!(parse_rollup("Rss: 3 kB\n"), None, "no Pss line");
    let me = proportional(std::process::id()).expect("our own rollup");
    assert!(me.pss > 0 && me.private > 0 && me.private <= me.pss);
}

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
    // Right after spawning, /proc can still show the environment of
    // before the exec.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while processes_with_token(&token).is_empty() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    assert_eq!(processes_with_token(&token), vec![marked.id()]);
    let used = usage(&members(&token, marked.id()));
    assert_eq!(used.len(), 1);
    assert_eq!(used[0].seen.pid, marked.id());
    assert!(used[0].rss > 0, "a running process holds memory");
    assert_eq!(used[0].worker_uri, None);
    assert_eq!(used[0].ppid, std::process::id());
    assert!(!used[0].server);
    marked.kill().unwrap();
    other.kill().unwrap();
    marked.wait().unwrap();
    other.wait().unwrap();
    assert!(processes_with_token(&token).is_empty());
}

/// The pids `members` finds for `token` under `root`, once `count` of
/// them show the mark (right after a spawn, /proc can still show the
/// environment of before the exec).
fn members_when(token: &str, root: u32, count: usize) -> Vec<u32> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let found = members(token, root);
        if found.len() >= count || std::time::Instant::now() > deadline {
            return found;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

#[test]
fn a_running_roots_tree_is_walked_and_a_dead_ones_found_by_the_scan() {
    let token = new_token();
    // A root with two children, as Lean's server starts its workers
    // (their sessions do not matter: the walk follows parents), and a
    // marked process outside the tree.
    let mut root = std::process::Command::new("sh")
        .args(["-c", "sleep 30 & sleep 30 & wait"])
        .env(TREE_ENV, &token)
        .spawn()
        .unwrap();
    let mut outside = std::process::Command::new("sleep")
        .arg("30")
        .env(TREE_ENV, &token)
        .spawn()
        .unwrap();
    let walked = members_when(&token, root.id(), 3);
    assert_eq!(walked.len(), 3, "the root and its two children: {walked:?}");
    assert!(walked.contains(&root.id()));
    assert!(
        !walked.contains(&outside.id()),
        "a walk stays in the tree: {walked:?}"
    );
    let workers: Vec<u32> = walked.iter().copied().filter(|&p| p != root.id()).collect();
    assert!(processes_with_token(&token).contains(&outside.id()));
    // The root dies: its children are re-parented away from it, and the
    // scan finds them (and, with the same mark, the one outside).
    root.kill().unwrap();
    root.wait().unwrap();
    assert_eq!(walk(&token, root.id()), None, "no walk from a dead root");
    let scanned = members(&token, root.id());
    for worker in &workers {
        assert!(scanned.contains(worker), "{worker} in {scanned:?}");
    }
    assert!(scanned.contains(&outside.id()));
    for pid in workers {
        crate::process::sys::kill_process(pid, crate::process::sys::SIGKILL).unwrap();
    }
    outside.kill().unwrap();
    outside.wait().unwrap();
}

#[test]
fn environments_hold_whole_entries_only() {
    let entry = "LEAN_BEAM_LSP_TREE=1-2-ab";
    for (environ, holds_it) in [
        (&b"A=1\0LEAN_BEAM_LSP_TREE=1-2-ab\0B=2\0"[..], true),
        (b"LEAN_BEAM_LSP_TREE=1-2-ab", true),
        (b"LEAN_BEAM_LSP_TREE=1-2-abc\0", false),
        (b"XLEAN_BEAM_LSP_TREE=1-2-ab\0", false),
        (b"", false),
    ] {
        assert_eq!(holds(environ, entry), holds_it, "{environ:?}");
    }
}

#[test]
fn a_seen_process_stops_running_the_moment_it_is_killed() {
    let token = new_token();
    // The duration doubles as an argument no other process has.
    let marker = format!("29.{}", std::process::id());
    let mut child = std::process::Command::new("sleep")
        .arg(&marker)
        .env(TREE_ENV, &token)
        .spawn()
        .unwrap();
    // Until the child has exec'd, /proc shows the parent's environment.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let mut found = find_with_arg(&members(&token, child.id()), &marker);
    while found.is_none() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(5));
        found = find_with_arg(&members(&token, child.id()), &marker);
    }
    let seen = found.expect("found by its argument");
    assert_eq!(find_with_arg(&members(&token, child.id()), "30"), None);
    assert_eq!(seen.pid, child.id());
    assert!(seen.is_running());
    assert!(runs(seen.pid));
    let reused = Seen {
        start: seen.start + 1,
        ..seen
    };
    assert!(
        !reused.is_running(),
        "another start time is another process"
    );
    child.kill().unwrap();
    // At once: killed but maybe not yet dead, and not reaped (so not
    // gone from /proc either).
    assert!(!seen.is_running(), "killed is not running");
    assert!(!runs(seen.pid));
    assert_eq!(find_with_arg(&processes_with_token(&token), &marker), None);
    child.wait().unwrap();
    assert!(!seen.is_running());
}

#[test]
fn a_watched_child_stops_running_the_moment_it_is_killed_and_when_reaped() {
    let mut child = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .unwrap();
    let watched = Watched::new(child.id());
    assert!(watched.files.is_some(), "the stat files are kept open");
    assert!(watched.runs());
    assert!(watched.runs(), "every look reads the file again");
    child.kill().unwrap();
    // As `runs`: killed counts as gone at once, before the exit.
    assert!(!watched.runs(), "killed is not running");
    child.wait().unwrap();
    // Reaped: the kept descriptor reads nothing any more.
    assert!(!watched.runs());
    assert!(!runs(child.id()));
}

/// A sighting of a just-spawned child (with its start time).
fn seen_child(child: &std::process::Child) -> Seen {
    let stat = stat_of(child.id()).expect("the child's stat");
    Seen {
        pid: child.id(),
        start: stat.start,
    }
}

#[test]
fn waiting_for_a_seen_process_ends_at_its_exit_not_at_the_limit() {
    let mut child = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .unwrap();
    let seen = seen_child(&child);
    // Running: the wait ends at the limit, saying so.
    assert!(!seen.wait_exit(std::time::Duration::from_millis(50)));
    // Killed from another thread while the wait runs: the wait ends with
    // the exit, long before its limit, and says so (the zombie is not
    // reaped until after the wait).
    let pid = child.id();
    let killer = std::thread::spawn(move || {
        crate::process::sys::kill_process(pid, crate::process::sys::SIGKILL).unwrap();
    });
    let started = std::time::Instant::now();
    assert!(seen.wait_exit(std::time::Duration::from_secs(600)));
    assert!(started.elapsed() < std::time::Duration::from_secs(300));
    killer.join().unwrap();
    child.wait().unwrap();
    // Gone, and a pid taken for another start time: at once.
    assert!(seen.wait_exit(std::time::Duration::from_secs(600)));
    let other = Seen {
        start: seen.start + 1,
        ..seen
    };
    assert!(other.wait_exit(std::time::Duration::from_secs(600)));
}
