//! Lake setting up a file's imports, as the real Lean 4.35.0 server shows it to
//! a client, and what lean-beam-mcp makes of it (issue 3, point 5): the one
//! `beam.status` notice "on Lake setup" without a progress token, Lake setup
//! progress updates with one.
//!
//! What Lean does (Lean 4.35.0, `src/Lean/Server/FileWorker.lean`,
//! `setupImports`, and `FileWorker/SetupFile.lean`, `setupFile` /
//! `runLakeSetupFile`): before it processes the header of an opened file, the
//! worker runs `$LAKE setup-file <file> -`, writes the module header as JSON on
//! Lake's stdin, and publishes every line Lake writes to stderr (its build
//! progress) as a `textDocument/publishDiagnostics` of exactly one information
//! diagnostic at 0:0–1:0 without `source`; an empty publish clears it when
//! Lake exits, and Lake's stdout (the module setup as JSON) configures the
//! imports. `lake serve` starts `lean --server` with `LAKE` naming itself.
//!
//! The test toolchain has no Lake, so the `lake` here is a stand-in for that
//! protocol, not for the LSP peer: `serve` execs the real `lean --server` with
//! Lake's environment (`LAKE` included), and `setup-file` reads the header from
//! stdin, takes time "building" each import while printing Lake's job line for
//! it on stderr, and prints the module setup on stdout. Everything the client
//! sees comes from the real Lean server.
//!
//! The tests at the end run the protocol-faithful stand-in `tests/lake/lake`
//! instead (its README), for what only a real Lake set-up produces: a header
//! Lake rejects because an import fails to build.

use crate::common;

use std::path::Path;

use serde_json::{Value, json};

use common::lean::{TempDir, TempWorkspace, lean};
use common::mcp::{CallOpts, Era, Mcp, Spawn, StatusNotice, ws};

/// One import (Fix.Basic), and one error after the header.
const SETUP_FILE: &str =
    "prelude\nimport Fix.Basic\n\nnamespace Fix\n\ndef bad : N := missingThing\n\nend Fix\n";

fn write_script(dir: &Path, name: &str, body: &str) -> String {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    std::fs::write(&path, body).expect("write script");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    path.to_string_lossy().into_owned()
}

/// A stand-in `lake` whose `setup-file` rebuilds every import, `build_ms` each,
/// and appends its arguments and stdin to `log`.
fn building_lake(dir: &Path, log: &Path, build_ms: u64) -> String {
    let lean = lean().lean.to_string_lossy().into_owned();
    let secs = format!("{}.{:03}", build_ms / 1000, build_ms % 1000);
    write_script(
        dir,
        "lake",
        &format!(
            r#"#!/bin/sh
log='{log}'
case "$1" in
serve)
  shift
  if [ "$1" = -- ]; then shift; fi
  LAKE="$0"; LEAN_PATH="$PWD/.lake/build/lib/lean"; LEAN_SRC_PATH="$PWD"
  export LAKE LEAN_PATH LEAN_SRC_PATH
  exec '{lean}' --server "$@";;
setup-file)
  file="$2"
  IFS= read -r header
  printf 'setup-file %s %s\n%s\n' "$file" "$3" "$header" >> "$log"
  modules=$(printf '%s' "$header" | grep -o '"module": *"[^"]*"' | sed 's/.*"\([^"]*\)"$/\1/')
  total=$(printf '%s\n' "$modules" | grep -c .)
  i=0
  for m in $modules; do
    i=$((i + 1))
    sleep {secs}
    echo "✔ [$i/$total] Built $m ({secs}s)" >&2
  done
  # One name component per path component, escaped as Lean's Name.toString
  # writes it (`Fix.«.Setup.beam-shadow-0»`): an unescaped one is "Invalid output".
  name=$(printf '%s' "${{file#"$PWD"/}}" | sed 's/\.lean$//' | awk -F/ '{{
    for (i = 1; i <= NF; i++) {{
      c = $i
      if (c !~ /^[A-Za-z_][A-Za-z0-9_]*$/) c = "«" c "»"
      printf "%s%s", (i > 1 ? "." : ""), c
    }}
  }}')
  printf '{{"name":"%s","isModule":false,"importArts":{{}},"dynlibs":[],"plugins":[],"options":{{}}}}\n' "$name"
  exit 0;;
*)
  echo "stand-in lake: unsupported command $1" >&2
  exit 2;;
esac
"#,
            log = log.display()
        ),
    )
}

struct Setup {
    tw: TempWorkspace,
    _bin: TempDir,
    lake: String,
    log: std::path::PathBuf,
}

fn setup(build_ms: u64) -> Setup {
    let tw = TempWorkspace::copy("basic");
    tw.write("Fix/Setup.lean", SETUP_FILE);
    let bin = TempDir::new("building-lake");
    let log = bin.path().join("lake.log");
    let lake = building_lake(bin.path(), &log, build_ms);
    Setup {
        tw,
        _bin: bin,
        lake,
        log,
    }
}

impl Setup {
    fn spawn(&self, era: Era, status_delay_ms: u64) -> Mcp {
        Mcp::start(
            era,
            Spawn::default()
                .env("LEAN_BEAM_LAKE", self.lake.clone())
                .env("LEAN_BEAM_STATUS_DELAY_MS", status_delay_ms.to_string()),
        )
    }

    fn args(&self) -> Value {
        json!({"workspace": ws(&self.tw.root_str()), "path": "Fix/Setup.lean"})
    }

    fn setups(&self) -> usize {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter(|l| l.starts_with("setup-file "))
            .count()
    }
}

/// The notice of a call whose worker waits for Lake to set `Fix/Setup.lean` up.
const SETUP_NOTICE: StatusNotice = StatusNotice {
    state: "lakeSetup",
    path: "Fix/Setup.lean",
    says: &["Lake", "Built Fix.Basic"],
};

#[test]
fn lake_setup_brings_the_one_status_notice_before_the_delay() {
    let s = setup(400);
    // A delay no call reaches: only Lake setup can cause a notice.
    let mut mcp = s.spawn(Era::Legacy, 600_000);
    let all = json!({"workspace": ws(&s.tw.root_str()), "path": "Fix/Setup.lean",
                     "diagnostic_scope": "all", "diagnostics_in_result": true});
    let (id, result, notices) =
        mcp.call_with_status_notices("lean_sync", all.clone(), &CallOpts::default());
    assert_eq!(notices.len(), 1, "{notices:?}");
    SETUP_NOTICE.assert(&notices[0], &id, "lean_sync");
    // The worker really ran the stand-in's `setup-file FILE -` with the header
    // on stdin.
    let log = std::fs::read_to_string(&s.log).expect("lake log");
    let file = s.tw.root().join("Fix/Setup.lean");
    assert!(
        log.contains(&format!("setup-file {} -\n", file.display())),
        "{log}"
    );
    assert!(log.contains("\"module\":\"Fix.Basic\""), "{log}");
    // Lake's lines are progress, never diagnostics: not counted, not listed,
    // not logged as lean.diagnostic.
    let counts = &result["diagnostics"]["counts"];
    assert_eq!(
        (counts["error"].as_u64(), counts["information"].as_u64()),
        (Some(1), Some(0)),
        "{result}"
    );
    let items = result["diagnostics"]["items"].as_array().unwrap();
    assert!(
        items
            .iter()
            .all(|d| !d["message"].as_str().unwrap().contains("Built")),
        "{items:?}"
    );
    assert!(
        mcp.logs("lean.diagnostic")
            .iter()
            .all(|l| !l["data"].to_string().contains("Built")),
        "{:?}",
        mcp.logs("lean.diagnostic")
    );

    // Unchanged file, same worker: no setup, no notice (the call is quick).
    let before = s.setups();
    let (_, _, notices) = mcp.call_with_status_notices("lean_sync", s.args(), &CallOpts::default());
    assert!(notices.is_empty(), "{notices:?}");
    assert_eq!(s.setups(), before, "no new worker, no setup");

    // A refresh reopens the file: a new worker, Lake again, one notice.
    let (id, _, notices) =
        mcp.call_with_status_notices("lean_refresh", s.args(), &CallOpts::default());
    assert_eq!(notices.len(), 1, "{notices:?}");
    SETUP_NOTICE.assert(&notices[0], &id, "lean_refresh");
    assert_eq!(s.setups(), before + 1);

    // Same log-level rules as the delay notice.
    mcp.set_level("warning");
    let (_, _, notices) =
        mcp.call_with_status_notices("lean_refresh", s.args(), &CallOpts::default());
    assert!(notices.is_empty(), "level warning hides it: {notices:?}");
    mcp.set_level("notice");
    let (id, _, notices) =
        mcp.call_with_status_notices("lean_refresh", s.args(), &CallOpts::default());
    assert_eq!(notices.len(), 1, "{notices:?}");
    SETUP_NOTICE.assert(&notices[0], &id, "lean_refresh");
}

#[test]
fn one_notice_when_lake_setup_and_the_delay_both_happen() {
    // The delay passes while Lake still builds: one notice per call, from
    // whichever came first.
    let s = setup(700);
    let mut mcp = s.spawn(Era::Legacy, 300);
    let (id, _, notices) =
        mcp.call_with_status_notices("lean_sync", s.args(), &CallOpts::default());
    assert_eq!(notices.len(), 1, "{notices:?}");
    assert_eq!(notices[0]["data"]["requestId"], id);
    assert_eq!(
        notices[0]["data"]["state"], "running",
        "the delay came first"
    );
}

#[test]
fn modern_requests_see_the_setup_notice_only_when_their_level_admits_notice() {
    let s = setup(300);
    let mut mcp = s.spawn(Era::Modern, 600_000);
    let (_, _, notices) = mcp.call_with_status_notices("lean_sync", s.args(), &CallOpts::default());
    assert!(notices.is_empty(), "no per-request level: {notices:?}");
    for (level, shown) in [("warning", false), ("notice", true), ("debug", true)] {
        let (id, _, notices) =
            mcp.call_with_status_notices("lean_refresh", s.args(), &CallOpts::level(level));
        assert_eq!(
            notices.len(),
            usize::from(shown),
            "level {level}: {notices:?}"
        );
        if shown {
            SETUP_NOTICE.assert(&notices[0], &id, "lean_refresh");
        }
    }
}

#[test]
fn progress_reports_lake_setup_before_elaboration() {
    let s = setup(300);
    let mut mcp = s.spawn(Era::Modern, 600_000);
    let token = json!("setup");
    let (_, result, notices) =
        mcp.call_with_status_notices("lean_sync", s.args(), &CallOpts::token("setup"));
    assert!(
        notices.is_empty(),
        "a token replaces the notice: {notices:?}"
    );
    assert_eq!(result["diagnostics"]["counts"]["error"], 1);
    let progress = mcp.progress_of(&token);
    let phase = |p: &Value| p.pointer("/_meta/beam/phase").cloned();
    let setup_at = progress
        .iter()
        .position(|p| phase(p) == Some(json!("lakeSetup")))
        .unwrap_or_else(|| panic!("no Lake setup update: {progress:#?}"));
    let update = &progress[setup_at];
    assert_eq!(
        update["message"], "Fix/Setup.lean: Lake setup: ✔ [1/1] Built Fix.Basic (0.300s)",
        "{update}"
    );
    assert_eq!(update["_meta"]["beam"]["done"], false);
    assert_eq!(
        update["_meta"]["beam"]["lake"],
        "✔ [1/1] Built Fix.Basic (0.300s)"
    );
    // After the preparation update; before it Lean reported at most the
    // header in progress (the whole file from line 0), nothing elaborated.
    assert!(setup_at >= 1, "{progress:#?}");
    assert!(
        progress[..setup_at]
            .iter()
            .all(|p| p.pointer("/_meta/beam/line").is_none_or(|l| l == 0)),
        "{progress:#?}"
    );
    let last = progress.last().unwrap();
    assert_eq!(last["_meta"]["beam"]["done"], true, "{progress:#?}");
    let counters: Vec<f64> = progress
        .iter()
        .map(|p| p["progress"].as_f64().unwrap())
        .collect();
    assert!(counters.windows(2).all(|w| w[0] < w[1]), "{counters:?}");
}

#[test]
fn speculative_probes_report_the_setup_of_their_shadow_worker() {
    let s = setup(300);
    let mut mcp = s.spawn(Era::Legacy, 600_000);
    let synced = mcp.call("lean_sync", s.args());
    let version = synced["version"].as_u64().unwrap();
    let before = s.setups();
    let args = json!({
        "workspace": ws(&s.tw.root_str()), "path": "Fix/Setup.lean", "version": version,
        "line": 7, "character": 0, "text": "def probe : N := N.zero",
    });
    let (id, result, notices) =
        mcp.call_with_status_notices("lean_run_at", args, &CallOpts::default());
    assert!(s.setups() > before, "the shadow worker ran Lake");
    // The shadow's set-up answer is one Lean accepts: the probe elaborated.
    assert_eq!(result["success"], true, "{result}");
    assert_eq!(notices.len(), 1, "{notices:?} {result}");
    assert_eq!(notices[0]["data"]["state"], "lakeSetup");
    assert_eq!(notices[0]["data"]["requestId"], id);
}

// ---------------------------------------------------------------------------
// Through the faithful stand-in (`tests/lake/lake`): a header Lake rejects.

/// A server whose workspaces start with `lake serve` of the stand-in.
fn spawn_via_lake(era: Era) -> Mcp {
    let lean = lean();
    let sysroot = lean.lean.parent().and_then(Path::parent).unwrap();
    Mcp::start(
        era,
        Spawn::default()
            .env("LEAN_BEAM_LAKE", lean.lake().to_string_lossy())
            .env("LEAN_SYSROOT", sysroot.to_string_lossy()),
    )
}

const HELPER: &str = "prelude\nimport Fix.Basic\n\nnamespace Fix\n\ntheorem helper (n : N) : Eq n n := Eq.refl n\n\nend Fix\n";

const PROBED: &str = "prelude\nimport Fix.Helper\n\nnamespace Fix\n\ntheorem probed (n : N) : Eq n n := by\n  exact helper n\n\nend Fix\n";

fn probed_args(tw: &TempWorkspace) -> Value {
    json!({"workspace": ws(&tw.root_str()), "path": "Fix/Probed.lean",
           "diagnostics_in_result": true})
}

/// Lean's start goals of `probed`'s tactic block, as a batch reports them.
const PROBED_GOAL: &str = "n : N\n⊢ Eq n n";

#[test]
fn a_shadow_whose_lake_setup_fails_reports_the_setup_error_not_a_crash() {
    let tw = TempWorkspace::copy("basic");
    tw.write("Fix/Helper.lean", HELPER);
    tw.write("Fix/Probed.lean", PROBED);
    let mut mcp = spawn_via_lake(Era::Modern);
    let synced = mcp.call("lean_sync", probed_args(&tw));
    assert_eq!(synced["diagnostics"]["counts"]["total"], 0, "{synced}");
    let batch = json!({"workspace": ws(&tw.root_str()), "path": "Fix/Probed.lean",
        "version": synced["version"], "line": 6, "character": 2,
        "texts": ["exact helper n", "exact Eq.refl n"]});
    // The imported module breaks on disk after the document set up: its
    // worker keeps the imports it has, but each new shadow worker's
    // `lake setup-file` rebuilds Fix.Helper and fails. Every candidate
    // says so; none of them crashed.
    tw.write(
        "Fix/Helper.lean",
        &HELPER.replace("Eq.refl n", "missingThing"),
    );
    let failed = mcp.call("lean_run_batch", batch.clone());
    assert_eq!(failed["start_goals"][0]["pretty"], PROBED_GOAL, "{failed}");
    let candidates = failed["candidates"].as_array().unwrap();
    assert_eq!(candidates.len(), 2, "{failed}");
    for candidate in candidates {
        assert_eq!(candidate["outcome"], "failed", "{failed}");
        let message = &candidate["messages"][0];
        let text = message["text"].as_str().unwrap();
        assert!(
            text.contains("setup-file")
                && text.contains("Failed to build module dependencies.")
                && text.contains("Fix.Helper"),
            "{message}"
        );
        assert_eq!(message["before_step"], true, "{message}");
        assert!(
            candidate["proof_state"].is_null(),
            "no goals were read: {candidate}"
        );
    }
    // Control: mended, the same slots set up again and both close the goal.
    tw.write("Fix/Helper.lean", HELPER);
    let closed = mcp.call("lean_run_batch", batch);
    for candidate in closed["candidates"].as_array().unwrap() {
        assert_eq!(candidate["outcome"], "closed", "{closed}");
    }
}

#[test]
fn lean_goals_after_a_header_failure_is_an_error_naming_it() {
    // Through Lake (its set-up fails: no source for Fix.Missing) and on a
    // bare `lean --server` (the import does not load).
    for via_lake in [true, false] {
        let tw = TempWorkspace::copy("basic");
        let probed = PROBED
            .replace("Fix.Helper", "Fix.Basic")
            .replace("helper n", "Eq.refl n");
        tw.write("Fix/Probed.lean", &probed);
        let mut mcp = if via_lake {
            spawn_via_lake(Era::Modern)
        } else {
            Mcp::start(Era::Modern, Spawn::default().envs(lean().server_env_bare()))
        };
        let goals_at = |version: &Value| {
            json!({"workspace": ws(&tw.root_str()), "path": "Fix/Probed.lean",
                   "version": version, "line": 6, "character": 2, "mode": "before"})
        };
        // Control: the goals at the position while the header imports.
        let synced = mcp.call("lean_sync", probed_args(&tw));
        let goals = mcp.call("lean_goals", goals_at(&synced["version"]));
        assert_eq!(goals["goals"][0]["pretty"], PROBED_GOAL, "{goals}");

        tw.write(
            "Fix/Probed.lean",
            &probed.replace("Fix.Basic", "Fix.Missing"),
        );
        let synced = mcp.call("lean_sync", probed_args(&tw));
        assert_eq!(synced["diagnostics"]["counts"]["error"], 1, "{synced}");
        let error = mcp.call_err("lean_goals", goals_at(&synced["version"]));
        assert_eq!(error["code"], "invalidParams", "lake {via_lake}: {error}");
        assert_eq!(error["data"]["reason"], "headerFailed", "{error}");
        assert_eq!(error["data"]["import"], "Fix.Missing", "{error}");
        assert_eq!(error["data"]["version"], synced["version"], "{error}");
        let message = error["message"].as_str().unwrap();
        assert!(
            message.contains("Fix/Probed.lean") && message.contains("header"),
            "{message}"
        );
        let lean_said = synced["diagnostics"]["items"][0]["message"]
            .as_str()
            .unwrap();
        assert_eq!(error["data"]["message"], lean_said, "{error}");
    }
}
