//! Every resource has a bound that answers clearly, and handles are
//! capabilities (issue 14, items 4 and 7), against the real Lean server.
//!
//! Per bound: set it low, check the eviction or the clear `resourceLimit`
//! error (naming the variable that raises it), that `beam_stats` shows the
//! bound and its use, and, where processes are involved, that the number of
//! `lean` processes of the server never goes past the bound (a thread samples
//! `/proc` for the whole test).
//!
//! Every test works on private copies of the fixtures, so the process counts
//! of parallel tests do not mix.

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::{Value, json};

use common::lean::{Proc, TempWorkspace, eventually, lean_processes_of_server};
use common::mcp::{CallOpts, Era, Mcp, ws};
use common::procfs;

const GOALS: &str = "Fix/Goals.lean";
const ERRORS: &str = "Fix/Errors.lean";
const SORRY: &str = "Fix/Sorry.lean";
const WAIT: &str = "Fix/Wait.lean";

const GUARD: Duration = Duration::from_secs(60);

fn spawn(extra: &[(&str, &str)]) -> Mcp {
    // Bases compile with a batch `lean` outside the server's trees; probes
    // here carry their whole prefix.
    let mut env = vec![("LEAN_BEAM_PREFIX_BASES", "0")];
    env.extend_from_slice(extra);
    Mcp::on_lean(Era::Modern, &env)
}

fn doc(root: &TempWorkspace, path: &str) -> Value {
    json!({"workspace": ws(&root.root_str()), "path": path})
}

fn sync(m: &mut Mcp, root: &TempWorkspace, path: &str) -> u64 {
    let r = m.call("lean_sync", doc(root, path));
    r["version"].as_u64().expect("version")
}

fn at(
    root: &TempWorkspace,
    path: &str,
    version: u64,
    line: u64,
    character: u64,
    text: &str,
) -> Value {
    json!({
        "workspace": ws(&root.root_str()), "path": path, "version": version,
        "line": line, "character": character, "text": text,
    })
}

fn handle_of(result: &Value) -> String {
    result["next_handle"]
        .as_str()
        .unwrap_or_else(|| panic!("no next_handle in {result}"))
        .to_string()
}

/// A file whose elaboration takes `ms` (the fixtures' `sleep` tactic).
fn waits(ms: u64) -> String {
    format!(
        "prelude\nimport Fix.Basic\n\nnamespace Fix\n\ntheorem waits : Eq one one := by\n  sleep {ms}\n  exact Eq.refl one\n\nend Fix\n"
    )
}

/// A `resourceLimit` error of `kind` that names `env` and the bound.
fn assert_limit(error: &Value, kind: &str, env: &str, limit: u64) {
    assert_eq!(error["code"], "resourceLimit", "{error}");
    assert_eq!(error["data"]["kind"], kind, "{error}");
    assert_eq!(error["data"]["env"], env, "{error}");
    assert_eq!(error["data"]["limit"], limit, "{error}");
    let message = error["message"].as_str().expect("message");
    assert!(
        message.contains(&format!("{env}={limit}")) && message.contains("raise"),
        "the message names the bound and how to raise it: {message}"
    );
}

/// `beam_stats.limits[env]`.
fn limit_stats(m: &mut Mcp, env: &str) -> Value {
    let stats = m.stats();
    stats["limits"][env].clone()
}

/// The `lean` processes of one server, sampled every few milliseconds from
/// start to [`Sampler::finish`]: the most Lean servers, other processes of
/// their trees (workers) and processes in all seen at once.
struct Sampler {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<(usize, usize, usize)>,
}

impl Sampler {
    fn start(server: u32) -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            let (mut servers, mut workers, mut total) = (0, 0, 0);
            while !flag.load(Ordering::Relaxed) {
                // One scan of /proc is not one instant: a worker read early
                // in it may be gone before a newer one (a higher pid) is read,
                // and under load a scan takes long enough for that. Only the
                // processes still there once the scan ends were there
                // together (each was there from its reading until then).
                let mut procs = lean_processes_of_server(server);
                procs.retain(still_there);
                // A worker being started is, until its exec, a fork of the
                // server that still shows the server's command line.
                let started: Vec<u32> = procs
                    .iter()
                    .filter(|p| p.cmdline.contains("--server"))
                    .map(|p| p.pid)
                    .collect();
                let top = procs
                    .iter()
                    .filter(|p| p.cmdline.contains("--server") && !started.contains(&p.ppid))
                    .count();
                servers = servers.max(top);
                workers = workers.max(procs.len() - top);
                total = total.max(procs.len());
                std::thread::sleep(Duration::from_millis(2));
            }
            (servers, workers, total)
        });
        Sampler { stop, thread }
    }

    /// `(servers, workers, all)`: the most seen at once.
    fn finish(self) -> (usize, usize, usize) {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().expect("sampler")
    }
}

/// Whether `p` still runs the command line it was seen with (not gone, not a
/// zombie, not its pid reused by another program).
fn still_there(p: &Proc) -> bool {
    std::fs::read(format!("/proc/{}/cmdline", p.pid))
        .is_ok_and(|c| String::from_utf8_lossy(&c).replace('\0', " ") == p.cmdline)
}

// ---------------------------------------------------------------------------
// Runtimes.

#[test]
fn the_least_recently_used_idle_runtime_is_evicted_at_the_runtime_bound() {
    let (a, b, c) = (
        TempWorkspace::copy("basic"),
        TempWorkspace::copy("basic"),
        TempWorkspace::copy("basic"),
    );
    let mut m = spawn(&[
        ("LEAN_BEAM_MAX_RUNTIMES", "2"),
        ("LEAN_BEAM_MAX_DOCUMENTS", "2"),
    ]);
    let sampler = Sampler::start(m.pid());
    let va = sync(&mut m, &a, GOALS);
    let h = handle_of(&m.call("lean_run_at_handle", at(&a, GOALS, va, 33, 2, "intro h")));
    sync(&mut m, &b, GOALS);
    // a is now the least recently used, and idle: c's runtime evicts it.
    sync(&mut m, &c, GOALS);
    let stats = m.stats();
    let mut cached: Vec<&String> = stats["workspaces"].as_object().unwrap().keys().collect();
    cached.sort();
    let mut expected = [b.root_str(), c.root_str()];
    expected.sort();
    assert_eq!(cached, expected.iter().collect::<Vec<_>>(), "{stats}");
    assert_eq!(
        stats["limits"]["LEAN_BEAM_MAX_RUNTIMES"]["limit"], 2,
        "{stats}"
    );
    assert_eq!(
        stats["limits"]["LEAN_BEAM_MAX_RUNTIMES"]["used"], 2,
        "{stats}"
    );
    assert!(
        eventually(GUARD, || !common::lean::lean_processes_of(a.root())
            .iter()
            .any(|p| p.cmdline.contains("--server"))),
        "the evicted runtime's Lean server is gone"
    );
    // As after lean_drop_workspace: its handles are invalid, with the
    // documented error, and its versions continue above the old ones.
    let e = m.call_err(
        "lean_run_with",
        json!({"workspace": ws(&a.root_str()), "path": GOALS, "handle": h, "text": "cases h"}),
    );
    assert_eq!(e["code"], "invalidParams", "{e}");
    let va2 = sync(&mut m, &a, GOALS);
    assert!(va2 > va, "versions continue: {va} then {va2}");
    // a came back by evicting b (now the least recently used).
    let stats = m.stats();
    assert!(stats["workspaces"].get(b.root_str()).is_none(), "{stats}");
    let (servers, workers, total) = sampler.finish();
    assert!(
        servers <= 2,
        "{servers} Lean servers at once with LEAN_BEAM_MAX_RUNTIMES=2"
    );
    assert!(
        workers <= 4 && total <= 6,
        "{workers} workers, {total} lean processes at once with 2 runtimes of at most 2 documents"
    );
}

#[test]
fn at_the_runtime_bound_with_every_runtime_busy_the_call_gets_a_clear_error() {
    let (a, b) = (TempWorkspace::copy("basic"), TempWorkspace::copy("basic"));
    a.write(WAIT, &waits(4000));
    let mut m = spawn(&[("LEAN_BEAM_MAX_RUNTIMES", "1")]);
    let sampler = Sampler::start(m.pid());
    let slow = m.start_call("lean_sync", doc(&a, WAIT), &CallOpts::default());
    // The slow call holds a's runtime once a's Lean server works on it.
    assert!(
        eventually(GUARD, || {
            common::lean::lean_processes_of(a.root())
                .iter()
                .any(|p| p.cmdline.contains("--worker"))
        }),
        "a's worker starts"
    );
    let e = m.call_err("lean_sync", doc(&b, GOALS));
    assert_limit(&e, "runtimes", "LEAN_BEAM_MAX_RUNTIMES", 1);
    assert_eq!(e["data"]["used"], 1, "{e}");
    let limits = limit_stats(&mut m, "LEAN_BEAM_MAX_RUNTIMES");
    assert_eq!(
        (limits["limit"].as_u64(), limits["busy"].as_u64()),
        (Some(1), Some(1)),
        "{limits}"
    );
    let done = m.ok(&slow, "lean_sync", &doc(&a, WAIT));
    assert!(done["version"].is_u64(), "{done}");
    // Once a is idle, b's call evicts it.
    sync(&mut m, &b, GOALS);
    let (servers, _, _) = sampler.finish();
    assert!(
        servers <= 1,
        "{servers} Lean servers at once with LEAN_BEAM_MAX_RUNTIMES=1"
    );
}

#[test]
fn an_idle_runtime_gives_its_lean_processes_back() {
    let a = TempWorkspace::copy("basic");
    let mut m = spawn(&[("LEAN_BEAM_RUNTIME_IDLE_SECS", "1")]);
    let v = sync(&mut m, &a, GOALS);
    assert!(!lean_processes_of_server(m.pid()).is_empty());
    assert!(
        eventually(GUARD, || lean_processes_of_server(m.pid()).is_empty()),
        "an idle runtime's Lean processes are stopped: {:?}",
        lean_processes_of_server(m.pid())
    );
    let rt = m
        .workspace_stats(&a.root_str())
        .expect("the runtime stays cached");
    assert_eq!(rt["alive"], false, "{rt}");
    assert_eq!(
        limit_stats(&mut m, "LEAN_BEAM_RUNTIME_IDLE_SECS")["limit"],
        1
    );
    // The next call starts a new server; the version still holds.
    let r = m.call(
        "lean_goals",
        json!({"workspace": ws(&a.root_str()), "path": GOALS, "version": v, "line": 33, "character": 2, "mode": "before"}),
    );
    assert_eq!(r["version"], v, "{r}");
    assert!(r["goals"].as_array().is_some_and(|g| !g.is_empty()), "{r}");
}

// ---------------------------------------------------------------------------
// Documents.

#[test]
fn the_least_recently_used_idle_document_is_closed_at_the_document_bound() {
    let a = TempWorkspace::copy("basic");
    let root = a.root_str();
    let mut m = spawn(&[("LEAN_BEAM_MAX_DOCUMENTS", "2")]);
    let sampler = Sampler::start(m.pid());
    let vg = sync(&mut m, &a, GOALS);
    sync(&mut m, &a, ERRORS);
    sync(&mut m, &a, SORRY);
    let open = |m: &mut Mcp, path: &str| m.document_stats(&root, path)["open"].clone();
    assert_eq!(
        open(&mut m, GOALS),
        false,
        "the least recently used one was closed"
    );
    assert_eq!(
        (open(&mut m, ERRORS), open(&mut m, SORRY)),
        (json!(true), json!(true))
    );
    let rt = m.workspace_stats(&root).unwrap();
    assert_eq!(rt["documentsOpenInLean"], 2, "{rt}");
    let limits = limit_stats(&mut m, "LEAN_BEAM_MAX_DOCUMENTS");
    assert_eq!(
        (limits["limit"].as_u64(), limits["used"].as_u64()),
        (Some(2), Some(2)),
        "{limits}"
    );

    // A closed document's version still answers: it is reopened, and the
    // least recently used other one (Errors) makes room.
    let r = m.call(
        "lean_goals",
        json!({"workspace": ws(&root), "path": GOALS, "version": vg, "line": 33, "character": 2, "mode": "before"}),
    );
    assert!(r["goals"].as_array().is_some_and(|g| !g.is_empty()), "{r}");
    assert_eq!(open(&mut m, ERRORS), false);
    assert_eq!(open(&mut m, GOALS), true);

    // Probe slots count too: a probe on Goals closes Sorry.
    let r = m.call("lean_run_at", at(&a, GOALS, vg, 33, 2, "intro h"));
    assert_eq!(r["success"], true, "{r}");
    assert_eq!(open(&mut m, SORRY), false);
    assert_eq!(m.workspace_stats(&root).unwrap()["documentsOpenInLean"], 2);

    let (servers, workers, total) = sampler.finish();
    assert!(
        servers <= 1 && workers <= 2 && total <= 3,
        "{servers} servers, {workers} workers, {total} lean processes at once with LEAN_BEAM_MAX_DOCUMENTS=2"
    );
}

#[test]
fn at_the_document_bound_with_every_document_busy_the_call_gets_a_clear_error() {
    let a = TempWorkspace::copy("basic");
    a.write(WAIT, &waits(4000));
    let root = a.root_str();
    let mut m = spawn(&[("LEAN_BEAM_MAX_DOCUMENTS", "1")]);
    let sampler = Sampler::start(m.pid());
    let slow = m.start_call("lean_sync", doc(&a, WAIT), &CallOpts::default());
    assert!(
        eventually(GUARD, || {
            lean_processes_of_server(m.pid())
                .iter()
                .any(|p| p.cmdline.contains("--worker"))
        }),
        "the slow document's worker starts"
    );
    let e = m.call_err("lean_sync", doc(&a, GOALS));
    assert_limit(&e, "documents", "LEAN_BEAM_MAX_DOCUMENTS", 1);
    m.ok(&slow, "lean_sync", &doc(&a, WAIT));
    // Once the slow document is idle, it makes room.
    sync(&mut m, &a, GOALS);
    assert_eq!(m.document_stats(&root, WAIT)["open"], false);
    let (_, workers, _) = sampler.finish();
    assert!(
        workers <= 1,
        "{workers} workers at once with LEAN_BEAM_MAX_DOCUMENTS=1"
    );
}

/// `lean_close` (like the idle close of a probe slot) gives a document's
/// worker back before the room counts as free: another document opened right
/// after never runs next to the closing worker (the soak saw 3 workers with
/// LEAN_BEAM_MAX_DOCUMENTS=2 while a closed document's worker was exiting).
#[test]
fn a_closed_documents_worker_is_gone_before_another_document_opens() {
    let a = TempWorkspace::copy("basic");
    let mut m = spawn(&[("LEAN_BEAM_MAX_DOCUMENTS", "1")]);
    let sampler = Sampler::start(m.pid());
    for _ in 0..4 {
        for path in [GOALS, ERRORS] {
            sync(&mut m, &a, path);
            let r = m.call("lean_close", doc(&a, path));
            assert_eq!(r["wasOpen"], true, "{r}");
        }
    }
    let (servers, workers, _) = sampler.finish();
    assert!(
        servers <= 1 && workers <= 1,
        "{servers} servers, {workers} workers at once with LEAN_BEAM_MAX_DOCUMENTS=1"
    );
}

/// A document evicted right after its `didOpen` was sent (`lean_update` has
/// no barrier), before Lean started its worker, still has that worker waited
/// for: Lean starts it when it reads the `didOpen` and stops it at the
/// `didClose`, so another document opened right after must wait until Lean
/// has read both (the hostile soak saw 3 workers with
/// LEAN_BEAM_MAX_DOCUMENTS=2).
#[test]
fn a_document_evicted_before_its_worker_started_is_still_waited_for() {
    let a = TempWorkspace::copy("basic");
    let mut m = spawn(&[("LEAN_BEAM_MAX_DOCUMENTS", "1")]);
    sync(&mut m, &a, GOALS);
    let sampler = Sampler::start(m.pid());
    for _ in 0..6 {
        for path in [ERRORS, GOALS] {
            let r = m.call("lean_update", doc(&a, path));
            assert!(r["version"].is_u64(), "{r}");
        }
    }
    sync(&mut m, &a, GOALS);
    let (servers, workers, _) = sampler.finish();
    assert!(
        servers <= 1 && workers <= 1,
        "{servers} servers, {workers} workers at once with LEAN_BEAM_MAX_DOCUMENTS=1"
    );
}

// ---------------------------------------------------------------------------
// Proof handles: bytes and capabilities.

#[test]
fn handles_share_the_document_text_and_are_bounded_by_bytes() {
    let a = TempWorkspace::copy("basic");
    let big = "Fix/Big.lean";
    // 4 MiB of comment before a small proof: cheap for Lean, large to copy.
    let text = format!(
        "prelude\nimport Fix.Basic\n\nnamespace Fix\n\n/-\n{}-/\n\ntheorem t : Eq one one := by\n  exact Eq.refl one\n\nend Fix\n",
        format!("{}\n", "x".repeat(127)).repeat(32 * 1024)
    );
    a.write(big, &text);
    let line = text[..text.find("  exact").unwrap()].matches('\n').count() as u64;
    let mut m = spawn(&[]);
    let v = sync(&mut m, &a, big);
    let probe = at(&a, big, v, line, 2, "exact Eq.refl one");
    m.call("lean_run_at_handle", probe.clone());
    let rss_before = procfs::rss(m.pid());
    let mut handles = Vec::new();
    for _ in 0..12 {
        handles.push(handle_of(&m.call("lean_run_at_handle", probe.clone())));
    }
    let grown = procfs::rss(m.pid()).saturating_sub(rss_before);
    let stats = m.workspace_stats(&a.root_str()).unwrap()["handles"].clone();
    assert_eq!(stats["live"], 13, "{stats}");
    assert_eq!(
        stats["sharedTexts"], 1,
        "one document text for every handle: {stats}"
    );
    let bytes = stats["bytes"].as_u64().expect("bytes");
    assert!(
        bytes < text.len() as u64 + 13 * 4096,
        "13 handles on a {} byte file hold {bytes} bytes",
        text.len()
    );
    assert!(
        grown < 6 * text.len() as u64,
        "12 handles on a {} byte file grew the server by {grown} bytes",
        text.len()
    );
    eprintln!(
        "12 handles on a {} MiB file: server RSS +{} KiB; handles hold {bytes} bytes",
        text.len() >> 20,
        grown >> 10
    );
    let limits = limit_stats(&mut m, "LEAN_BEAM_MAX_HANDLE_BYTES");
    assert_eq!(limits["used"], bytes, "{limits}");

    // With less room than the file, a handle is refused clearly; a probe
    // without one still runs.
    let mut small = spawn(&[("LEAN_BEAM_MAX_HANDLE_BYTES", "1048576")]);
    let v = sync(&mut small, &a, big);
    let probe = at(&a, big, v, line, 2, "exact Eq.refl one");
    let e = small.call_err("lean_run_at_handle", probe.clone());
    assert_limit(&e, "handleBytes", "LEAN_BEAM_MAX_HANDLE_BYTES", 1_048_576);
    assert_eq!(small.call("lean_run_at", probe)["success"], true);
}

/// Neighbours of a handle's last part, read as a decimal or a hex number.
fn neighbours(handle: &str) -> Vec<String> {
    let (head, last) = handle.rsplit_once('.').expect("a dotted handle");
    let mut out = Vec::new();
    for k in 1..=4u128 {
        if let Ok(n) = last.parse::<u128>() {
            out.extend([n.wrapping_sub(k), n.wrapping_add(k)].map(|m| format!("{head}.{m}")));
        }
        if let Ok(n) = u128::from_str_radix(last, 16) {
            let width = last.len();
            out.extend(
                [n.wrapping_sub(k), n.wrapping_add(k)].map(|m| format!("{head}.{m:0width$x}")),
            );
        }
    }
    out
}

#[test]
fn a_handle_cannot_be_guessed_from_another_clients_handle() {
    let a = TempWorkspace::copy("basic");
    let root = a.root_str();
    let mut m = spawn(&[]);
    let v = sync(&mut m, &a, GOALS);
    // Client A's handle, then client B's.
    let h_a = handle_of(&m.call("lean_run_at_handle", at(&a, GOALS, v, 33, 2, "intro h")));
    let h_b = handle_of(&m.call("lean_run_at_handle", at(&a, GOALS, v, 33, 2, "intro hpq")));
    // B tries the handles next to its own: none is A's, none is accepted.
    for guess in neighbours(&h_b) {
        assert_ne!(guess, h_a, "A's handle is B's plus or minus a little");
        let e = m.call_err(
            "lean_release",
            json!({"workspace": ws(&root), "path": GOALS, "handle": guess}),
        );
        assert_eq!(e["code"], "invalidParams", "{guess}: {e}");
    }
    let secret = h_b.rsplit('.').next().unwrap();
    assert!(
        secret.len() >= 32 && secret.bytes().all(|b| b.is_ascii_hexdigit()),
        "at least 128 random bits: {h_b}"
    );
    // A's handle is still there.
    let r = m.call(
        "lean_run_with",
        json!({"workspace": ws(&root), "path": GOALS, "handle": h_a, "text": "cases h"}),
    );
    assert_eq!(r["success"], true, "{r}");
    let limits = limit_stats(&mut m, "LEAN_BEAM_MAX_HANDLES");
    assert_eq!(
        (limits["limit"].as_u64(), limits["used"].as_u64()),
        (Some(4096), Some(3)),
        "{limits}"
    );
}

#[test]
fn a_handle_is_accepted_in_one_spelling_only() {
    let a = TempWorkspace::copy("basic");
    let root = a.root_str();
    let mut m = spawn(&[]);
    let v = sync(&mut m, &a, GOALS);
    let h = handle_of(&m.call("lean_run_at_handle", at(&a, GOALS, v, 33, 2, "intro h")));
    let parts: Vec<&str> = h.split('.').collect();
    // The same numbers, spelled otherwise: upper case, a leading zero or a
    // plus sign in any part after the prefix.
    let mut spellings = Vec::new();
    for i in 1..parts.len() {
        for respelled in [
            parts[i].to_uppercase(),
            format!("0{}", parts[i]),
            format!("+{}", parts[i]),
        ] {
            if respelled != parts[i] {
                let mut other = parts.clone();
                other[i] = &respelled;
                spellings.push(other.join("."));
            }
        }
    }
    for other in spellings {
        let e = m.call_err(
            "lean_release",
            json!({"workspace": ws(&root), "path": GOALS, "handle": other}),
        );
        assert_eq!(e["code"], "invalidParams", "{other}: {e}");
    }
    let r = m.call(
        "lean_run_with",
        json!({"workspace": ws(&root), "path": GOALS, "handle": h, "text": "cases h"}),
    );
    assert_eq!(r["success"], true, "the handle itself still works: {r}");
}

// ---------------------------------------------------------------------------
// Memory of the Lean processes.

/// A file whose worker grows by about 0.16 MiB per theorem while it
/// elaborates (1500: some 340 MiB), then goes on for `ms` more: the memory
/// check sees it over the bound while the call still waits.
fn heavy(theorems: usize, ms: u64) -> String {
    let mut text = String::from("prelude\nimport Fix.Basic\n\nnamespace Fix\n\n");
    for k in 0..theorems {
        text.push_str(&format!("theorem heavy{k} : Eq one one := Eq.refl one\n"));
    }
    text.push_str(&format!(
        "\ntheorem heavyLast : Eq one one := by\n  sleep {ms}\n  exact Eq.refl one\n\nend Fix\n"
    ));
    text
}

#[test]
fn a_worker_over_the_memory_bound_is_killed_with_a_clear_error_and_the_next_call_recovers() {
    let a = TempWorkspace::copy("basic");
    let root = a.root_str();
    let file = "Fix/Heavy.lean";
    a.write(file, &heavy(1500, 3000));
    let mut m = spawn(&[("LEAN_BEAM_MAX_LEAN_RSS_MIB", "250")]);
    sync(&mut m, &a, GOALS);
    let e = m.call_err("lean_sync", doc(&a, file));
    assert_limit(&e, "memory", "LEAN_BEAM_MAX_LEAN_RSS_MIB", 250);
    assert_eq!(e["data"]["process"], "worker", "{e}");
    assert_eq!(e["data"]["path"], file, "{e}");
    assert!(e["data"]["used"].as_u64().unwrap() > 250, "{e}");
    let rt = m.workspace_stats(&root).unwrap();
    assert_eq!(rt["memory"]["killed"], 1, "{rt}");
    // The next call recovers, as after any crash. (A worker killed while it
    // writes can take the server down with it: Lean's server then relays
    // half a message, and a server that breaks the protocol is killed. The
    // next call starts a new one.)
    a.write(file, &heavy(10, 0));
    let r = m.call("lean_sync", doc(&a, file));
    assert_eq!(r["diagnostics"]["counts"]["total"], 0, "{r}");
    let limits = limit_stats(&mut m, "LEAN_BEAM_MAX_LEAN_RSS_MIB");
    assert_eq!(limits["limit"], 250, "{limits}");
    assert!(
        limits["used"].as_u64().is_some_and(|u| u <= 250),
        "{limits}"
    );
}

#[test]
fn a_server_over_the_memory_bound_is_killed_with_a_clear_error() {
    let a = TempWorkspace::copy("basic");
    a.write(WAIT, &waits(5000));
    let mut m = spawn(&[("LEAN_BEAM_MAX_LEAN_RSS_MIB", "40")]);
    let e = m.call_err("lean_sync", doc(&a, WAIT));
    assert_limit(&e, "memory", "LEAN_BEAM_MAX_LEAN_RSS_MIB", 40);
    assert_eq!(e["data"]["process"], "server", "{e}");
    assert!(
        eventually(GUARD, || lean_processes_of_server(m.pid()).is_empty()),
        "the whole tree is gone"
    );
    // Still serving.
    assert_eq!(m.call("beam_version", json!({}))["name"], "lean-beam-mcp");
}
