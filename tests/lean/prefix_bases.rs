//! Prefix bases (issue 5, point 4) against the real Lean 4.35.0 test
//! toolchain: a probe at the end of `tests/fixtures/long/Long.lean` runs on a
//! compiled module of the text before its declaration instead of the whole
//! prefix. The property tested is exactness: every result on a base equals the
//! result of the same probe on the whole prefix (a second server with
//! `LEAN_BEAM_PREFIX_BASES=0`), in proof and command mode, for successes,
//! failures, `sorry` warnings and handle chains; and a base that does not
//! import falls back to the whole prefix with the same results. Under
//! `lake serve` (stand-ins that run the test toolchain, with and without the
//! inherited `LEAN_PATH`) bases work or turn themselves off. Speed is
//! measured by `scripts/bench-speculate.py`, not here.

use crate::common;

use std::time::Duration;

use serde_json::{Value, json};

use common::lean::{eventually, lean};
use common::mcp::{Era, Mcp, Spawn, ws};

const FILE: &str = "Long.lean";
/// Block 164, the last: `sc164`'s `show` tactic is at (1995, 2); line 1997 is
/// the blank line before `end LongFix`.
const SHOW: (u64, u64) = (1995, 2);
const INDUCTION: (u64, u64) = (1990, 2);
const BETWEEN: (u64, u64) = (1997, 0);

fn spawn(bases: bool) -> Mcp {
    let mut spawn = Spawn::default().envs(lean().server_env());
    if !bases {
        spawn = spawn.env("LEAN_BEAM_PREFIX_BASES", "0");
    }
    Mcp::start(Era::Modern, spawn)
}

fn root() -> String {
    lean().fixture("long").to_string_lossy().into_owned()
}

fn sync(mcp: &mut Mcp) -> u64 {
    let r = mcp.call("lean_sync", json!({"workspace": ws(&root()), "path": FILE}));
    r["version"].as_u64().expect("version")
}

fn run_at(mcp: &mut Mcp, tool: &str, version: u64, at: (u64, u64), text: &str) -> Value {
    mcp.call(
        tool,
        json!({
            "workspace": ws(&root()), "path": FILE, "version": version,
            "line": at.0, "character": at.1, "text": text,
        }),
    )
}

fn run_with(mcp: &mut Mcp, tool: &str, handle: &str, text: &str) -> Value {
    mcp.call(
        tool,
        json!({"workspace": ws(&root()), "path": FILE, "handle": handle, "text": text}),
    )
}

fn bases(mcp: &mut Mcp) -> Value {
    mcp.workspace_stats(&root()).expect("workspace stats")["prefixBases"].clone()
}

/// A result without its handle (handles differ by construction).
fn comparable(result: &Value) -> Value {
    let mut r = result.clone();
    if r["next_handle"].is_string() {
        r["next_handle"] = json!("<handle>");
    }
    r
}

/// Probe at `at` until a base for its prefix is ready (it is compiled in the
/// background after the second probe at the same place).
fn warm(mcp: &mut Mcp, version: u64, at: (u64, u64), text: &str) {
    let ready = eventually(Duration::from_secs(120), || {
        run_at(mcp, "lean_run_at", version, at, text);
        bases(mcp)["ready"].as_u64().unwrap_or(0) >= 1
    });
    assert!(ready, "no base became ready: {}", bases(mcp));
}

/// The base directory and everything in it are private to this user:
/// directories 0700, files 0600 (issue 14, item 8).
fn assert_private(stats: &Value) {
    use std::os::unix::fs::PermissionsExt;
    let dir = std::path::PathBuf::from(stats["dir"].as_str().expect("bases dir"));
    let mut pending = vec![dir];
    let mut files = 0;
    while let Some(path) = pending.pop() {
        let meta = std::fs::symlink_metadata(&path).unwrap();
        let mode = meta.permissions().mode() & 0o777;
        if meta.is_dir() {
            assert_eq!(mode, 0o700, "{path:?} is {mode:o}");
            pending.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
        } else {
            assert_eq!(mode, 0o600, "{path:?} is {mode:o}");
            files += 1;
        }
    }
    assert!(files >= 1, "no base file: {stats}");
}

#[test]
fn probes_on_a_base_equal_probes_on_the_whole_prefix() {
    let mut on = spawn(true);
    let mut off = spawn(false);
    let v_on = sync(&mut on);
    let v_off = sync(&mut off);
    assert_eq!(bases(&mut off)["enabled"], false);
    assert_eq!(bases(&mut on)["enabled"], true);

    warm(&mut on, v_on, SHOW, "exact Eq.refl _");
    assert_private(&bases(&mut on));
    let uses_before = bases(&mut on)["uses"].as_u64().unwrap();

    let probes: Vec<(&str, (u64, u64), &str)> = vec![
        // Success, goals closed.
        ("lean_run_at", SHOW, "exact (fun (_x : U) => Eq.refl _) U.z"),
        // A step that leaves a goal.
        (
            "lean_run_at",
            SHOW,
            "show Eq (U.s (U.add c164 U.z)) (U.s c164)",
        ),
        // A type error: goals before the failed step.
        ("lean_run_at", SHOW, "exact U.z_add c163"),
        // An unknown identifier.
        ("lean_run_at", SHOW, "exact no_such_lemma"),
        // `sorry`: a warning on the declaration, before the step.
        ("lean_run_at", SHOW, "exact sorry"),
        // Inside the declaration before: the base ends after it, so none.
        ("lean_run_at", INDUCTION, "cases a"),
        // Command mode after the last declaration: the base, then the
        // declaration's text as a tail.
        (
            "lean_run_at",
            BETWEEN,
            "theorem extra : Eq c164 c164 := Eq.refl _",
        ),
        ("lean_run_at", BETWEEN, "def bad : U := U.z U.z"),
        (
            "lean_run_at",
            BETWEEN,
            "theorem two : Eq c164 c164 := by\n  exact Eq.refl _",
        ),
    ];
    let mut results = Vec::new();
    for (tool, at, text) in &probes {
        let a = run_at(&mut on, tool, v_on, *at, text);
        let b = run_at(&mut off, tool, v_off, *at, text);
        assert_eq!(
            comparable(&a),
            comparable(&b),
            "{text:?} at {at:?}: a base gives a different result than the whole prefix"
        );
        results.push(a);
    }
    // The comparisons are not vacuous: what each probe must report.
    let has =
        |r: &Value, severity: &str, needle: &str| {
            r["messages"].as_array().unwrap().iter().any(|m| {
                m["severity"] == severity && m["text"].as_str().unwrap_or("").contains(needle)
            })
        };
    assert_eq!(results[0]["success"], true, "{}", results[0]);
    assert_eq!(
        results[1]["proof_state"]["goals"].as_array().map(Vec::len),
        Some(1)
    );
    assert!(
        results[2]["success"] == false && has(&results[2], "error", ""),
        "{}",
        results[2]
    );
    assert!(has(&results[3], "error", "no_such_lemma"), "{}", results[3]);
    assert!(has(&results[4], "warning", "sorry"), "{}", results[4]);
    assert_eq!(results[6]["success"], true, "{}", results[6]);
    assert!(
        results[7]["success"] == false && has(&results[7], "error", ""),
        "{}",
        results[7]
    );
    let stats = bases(&mut on);
    assert!(
        stats["uses"].as_u64().unwrap() >= uses_before + probes.len() as u64 - 1,
        "the probes did not run on the base: {stats}"
    );
    assert_eq!(bases(&mut off)["uses"], 0);

    // A handle chain on the base: run_at_handle → run_with (a failure, the
    // handle stays valid) → run_with_linear.
    let chain = |mcp: &mut Mcp, version: u64| -> Vec<Value> {
        let first = run_at(
            mcp,
            "lean_run_at_handle",
            version,
            SHOW,
            "show Eq (U.s (U.add c164 U.z)) (U.s c164)",
        );
        let h = first["next_handle"].as_str().expect("a handle").to_string();
        let second = run_with(mcp, "lean_run_with", &h, "exact U.z_add c163");
        let third = run_with(mcp, "lean_run_with_linear", &h, "exact Eq.refl _");
        vec![comparable(&first), comparable(&second), comparable(&third)]
    };
    let a = chain(&mut on, v_on);
    let b = chain(&mut off, v_off);
    assert_eq!(
        a, b,
        "a handle chain on a base differs from one on the whole prefix"
    );
    assert_eq!(
        a[0]["proof_state"]["goals"].as_array().map(Vec::len),
        Some(1),
        "{}",
        a[0]
    );
    assert_eq!(a[1]["success"], false, "{}", a[1]);
    assert_eq!(a[2]["success"], true, "{}", a[2]);
    assert_eq!(a[2]["proof_state"]["goals"], json!([]), "{}", a[2]);
}

#[test]
fn a_base_that_does_not_import_falls_back_to_the_whole_prefix() {
    let mut on = spawn(true);
    let mut off = spawn(false);
    let v_on = sync(&mut on);
    let v_off = sync(&mut off);
    warm(&mut on, v_on, SHOW, "exact Eq.refl _");
    // Replace the base on disk by garbage (through a rename: the Lean worker
    // that imported it maps the old file), then kill the Lean server: the
    // restarted one reads the import again.
    let dir = bases(&mut on)["dir"]
        .as_str()
        .expect("base dir")
        .to_string();
    let mut corrupted = 0;
    for entry in std::fs::read_dir(std::path::Path::new(&dir).join("LeanBeamBase")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "olean") {
            let garbage = path.with_extension("garbage");
            std::fs::write(&garbage, b"not an olean").unwrap();
            std::fs::rename(&garbage, &path).unwrap();
            corrupted += 1;
        }
    }
    assert!(corrupted >= 1);
    let pid = on.workspace_stats(&root()).unwrap()["pid"]
        .as_u64()
        .expect("pid");
    std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .unwrap();
    assert!(eventually(Duration::from_secs(30), || {
        on.workspace_stats(&root()).unwrap()["alive"] == false
    }));
    let text = "exact (fun (_y : U) => Eq.refl _) U.z";
    let a = run_at(&mut on, "lean_run_at", v_on, SHOW, text);
    let b = run_at(&mut off, "lean_run_at", v_off, SHOW, text);
    assert_eq!(comparable(&a), comparable(&b));
    assert_eq!(a["success"], true, "{a}");
    let stats = bases(&mut on);
    assert!(stats["failed"].as_u64().unwrap() >= 1, "{stats}");
    assert_eq!(stats["ready"], 0, "{stats}");
}

/// A stand-in `lake` for `serve` and `env`: the test toolchain's `lean` with
/// the workspace's build on `LEAN_PATH`, after the inherited one when `keep`
/// (as Lake does with the `LEAN_PATH` it starts with), else instead of it.
fn stand_in_lake(dir: &std::path::Path, keep: bool) -> String {
    use std::os::unix::fs::PermissionsExt;
    let lean = lean().lean.to_string_lossy().into_owned();
    let path = if keep {
        "${LEAN_PATH:+$LEAN_PATH:}$PWD/.lake/build/lib/lean"
    } else {
        "$PWD/.lake/build/lib/lean"
    };
    let script = format!(
        "#!/bin/sh\n\
         LEAN_PATH=\"{path}\"; LEAN_SRC_PATH=\"$PWD\"; export LEAN_PATH LEAN_SRC_PATH\n\
         case \"$1\" in\n\
         serve) shift; if [ \"$1\" = -- ]; then shift; fi; exec '{lean}' --server \"$@\";;\n\
         env) shift; if [ \"$1\" = lean ]; then shift; exec '{lean}' \"$@\"; fi; exec \"$@\";;\n\
         *) echo \"stand-in lake: unsupported $1\" >&2; exit 2;;\n\
         esac\n"
    );
    let file = dir.join("lake");
    std::fs::write(&file, script).unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o755)).unwrap();
    file.to_string_lossy().into_owned()
}

fn spawn_lake(lake: &str) -> Mcp {
    Mcp::start(Era::Modern, Spawn::default().env("LEAN_BEAM_LAKE", lake))
}

#[test]
fn under_lake_serve_bases_work_when_the_search_path_reaches_them() {
    let bin = common::lean::TempDir::new("lake-keeps-path");
    let mut on = spawn_lake(&stand_in_lake(bin.path(), true));
    let mut off = spawn(false);
    let v_on = sync(&mut on);
    let v_off = sync(&mut off);
    warm(&mut on, v_on, SHOW, "exact Eq.refl _");
    let text = "exact (fun (_z : U) => Eq.refl _) U.z";
    let a = run_at(&mut on, "lean_run_at", v_on, SHOW, text);
    let b = run_at(&mut off, "lean_run_at", v_off, SHOW, text);
    assert_eq!(comparable(&a), comparable(&b));
    let stats = bases(&mut on);
    assert_eq!(stats["failed"], 0, "{stats}");
    assert_eq!(stats["enabled"], true, "{stats}");
    assert!(stats["uses"].as_u64().unwrap() >= 1, "{stats}");
}

#[test]
fn under_lake_serve_bases_turn_off_when_they_do_not_import() {
    let bin = common::lean::TempDir::new("lake-drops-path");
    let mut on = spawn_lake(&stand_in_lake(bin.path(), false));
    let mut off = spawn(false);
    let v_on = sync(&mut on);
    let v_off = sync(&mut off);
    // Probe until the base is compiled and a probe has used it: its import
    // fails, that probe is answered on the whole prefix, and bases are off
    // for this runtime. Every answer equals the whole prefix's.
    let mut n = 0;
    let turned_off = eventually(Duration::from_secs(120), || {
        n += 1;
        let text = format!("exact (fun (_z{n} : U) => Eq.refl _) U.z");
        let a = run_at(&mut on, "lean_run_at", v_on, SHOW, &text);
        let b = run_at(&mut off, "lean_run_at", v_off, SHOW, &text);
        assert_eq!(comparable(&a), comparable(&b), "{text}");
        bases(&mut on)["failed"].as_u64().unwrap_or(0) >= 1
    });
    assert!(turned_off, "{}", bases(&mut on));
    for text in ["exact U.z_add c163", "exact Eq.refl _"] {
        let a = run_at(&mut on, "lean_run_at", v_on, SHOW, text);
        let b = run_at(&mut off, "lean_run_at", v_off, SHOW, text);
        assert_eq!(comparable(&a), comparable(&b), "{text}");
    }
    let stats = bases(&mut on);
    assert_eq!(stats["failed"], 1, "{stats}");
    assert_eq!(stats["enabled"], false, "{stats}");
    assert_eq!(stats["ready"], 0, "{stats}");
}

#[test]
fn base_directories_of_killed_servers_are_removed_and_unused_runtimes_make_none() {
    let mut on = spawn(true);
    let v = sync(&mut on);
    warm(&mut on, v, SHOW, "exact Eq.refl _");
    let dir = bases(&mut on)["dir"].as_str().expect("dir").to_string();
    assert!(std::path::Path::new(&dir).join("LeanBeamBase").is_dir());
    // Killed, a server cannot clean up: its directory stays behind...
    std::process::Command::new("kill")
        .args(["-9", &on.pid().to_string()])
        .status()
        .unwrap();
    drop(on); // reaps it
    assert!(std::path::Path::new(&dir).exists());
    // ...until the next server's first runtime removes it.
    let mut next = spawn(true);
    sync(&mut next);
    assert!(!std::path::Path::new(&dir).exists(), "{dir} is still there");
    // A runtime that never built a base has made no directory.
    let unused = bases(&mut next)["dir"].as_str().expect("dir").to_string();
    assert!(!std::path::Path::new(&unused).exists(), "{unused}");
}
