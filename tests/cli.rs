//! The command line a newcomer meets first: `validate` applies the server's own
//! descriptor rules, an unknown tool name gets the nearest known one, and
//! `call` labels each result with its tool on stdout while progress and
//! diagnostics go to stderr, each on its own line, with a bar that shows how
//! far Lean got.

#[allow(dead_code)] // this binary uses a slice of the harness (see tests/common/mod.rs)
mod common;

use std::process::{Command, Output};

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_lean-beam-mcp");

fn run(args: &[&str], env: &[(String, String)]) -> Output {
    Command::new(BIN)
        .args(args)
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .env("LEAN_BEAM_LOG", "warn")
        .output()
        .expect("run lean-beam-mcp")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn fixture(name: &str) -> String {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
        .canonicalize()
        .expect("fixture")
        .to_string_lossy()
        .into_owned()
}

#[test]
fn validate_applies_the_servers_descriptor_rules() {
    let payload = |root: &str| format!(r#"{{"workspace":{{"root":"{root}"}},"path":"Main.lean"}}"#);

    // The server rejects a relative root; so does validate (it used to say "valid").
    let out = run(
        &["validate", "lean_sync", &payload("tests/fixtures/basic")],
        &[],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    let stdout = text(&out.stdout);
    assert!(
        stdout.starts_with("invalid:") && stdout.contains("must be an absolute path"),
        "{stdout}"
    );

    // An absolute root that is not a Lean project is rejected by the same rule.
    let not_a_project = std::env::temp_dir().canonicalize().unwrap();
    let out = run(
        &[
            "validate",
            "lean_sync",
            &payload(&not_a_project.to_string_lossy()),
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    assert!(
        text(&out.stdout).contains("is not a Lean/Lake project"),
        "{}",
        text(&out.stdout)
    );

    // A real project root passes.
    let out = run(&["validate", "lean_sync", &payload(&fixture("basic"))], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    assert!(text(&out.stdout).starts_with("valid:"));

    // A drop accepts a vanished absolute root (an echoed canonical descriptor),
    // as the server does, but not a relative one.
    let gone = r#"{"workspace":{"root":"/nonexistent/lean-beam-gone"}}"#;
    let out = run(&["validate", "lean_drop_workspace", gone], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    let relative = r#"{"workspace":{"root":"gone"}}"#;
    let out = run(&["validate", "lean_drop_workspace", relative], &[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));

    // Tools without a workspace have no descriptor rule.
    let out = run(&["validate", "beam_version", "{}"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
}

#[test]
fn an_unknown_tool_name_suggests_the_nearest_one() {
    for command in ["validate", "call"] {
        let out = run(&[command, "lean_synk", "{}"], &[]);
        assert_eq!(out.status.code(), Some(2), "{command}");
        let stderr = text(&out.stderr);
        assert!(
            stderr.contains("unknown tool `lean_synk`; did you mean `lean_sync`?"),
            "{command}: {stderr}"
        );
    }
}

/// `--tools` (or `LEAN_BEAM_TOOLS`, which the flag overrides) chooses the
/// tools every command serves: `tools` lists only those, `validate` and
/// `call` refuse the others by name, and an unknown name stops start-up with
/// the profiles and tools it could have been.
#[test]
fn the_tools_option_chooses_the_served_set_and_refuses_unknown_names() {
    let listed = |out: &Output| -> Vec<String> {
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let catalog: Value = serde_json::from_slice(&out.stdout).expect("tools prints JSON");
        catalog
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_string())
            .collect()
    };
    let env = |spec: &str| vec![("LEAN_BEAM_TOOLS".to_string(), spec.to_string())];

    let core = listed(&run(&["tools", "--tools", "core"], &[]));
    assert!(core.contains(&"lean_sync".to_string()), "{core:?}");
    assert!(!core.contains(&"lean_update".to_string()), "{core:?}");
    assert_eq!(listed(&run(&["tools"], &env("core"))), core);
    // The flag wins over the environment, anywhere on the line.
    assert_eq!(
        listed(&run(
            &["--tools=lean_update,lean_sync", "tools"],
            &env("core")
        )),
        ["lean_update", "lean_sync"]
    );

    let out = run(&["--tools", "core", "validate", "lean_update", "{}"], &[]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("`lean_update` is not in the tool set `core`"),
        "{stderr}"
    );

    for args in [&["--tools", "core,lean_synk", "tools"][..], &["tools"][..]] {
        let out = run(args, &env("nonsense"));
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = text(&out.stderr);
        let unknown = if args.len() > 1 {
            "lean_synk"
        } else {
            "nonsense"
        };
        for part in [
            unknown,
            "all (every tool)",
            "core (",
            "lean_sync",
            "beam_version",
        ] {
            assert!(stderr.contains(part), "{args:?}: {part}: {stderr}");
        }
        assert!(out.stdout.is_empty(), "{args:?}");
    }
    let out = run(&["tools", "--tools"], &[]);
    assert_eq!(out.status.code(), Some(2));
}

/// `[####......]  40% <message>` → 40, for the lines that carry a bar.
fn percent(line: &str) -> Option<u32> {
    let rest = line.split_once("] ")?.1.trim_start();
    rest.split_once('%')?.0.parse().ok()
}

#[test]
fn call_labels_results_and_puts_every_diagnostic_and_update_on_its_own_line() {
    let Some(lean) = common::lean::lean_or_skip() else {
        return;
    };
    let root = lean.fixture("basic");
    let root = root.to_string_lossy();
    let sync = format!(
        r#"{{"workspace":{{"root":"{root}"}},"path":"Fix/Errors.lean","diagnostic_scope":"all"}}"#
    );
    let hover = format!(
        r#"{{"workspace":{{"root":"{root}"}},"path":"Fix/Errors.lean","version":1,"line":0,"character":0}}"#
    );
    let out = run(
        &["call", "lean_sync", &sync, "lean_hover", &hover],
        &lean.server_env(),
    );
    let stdout = text(&out.stdout);
    let stderr = text(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(0),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );

    // stdout: one labelled JSON value per call, in order.
    let results: Vec<Value> = serde_json::Deserializer::from_str(&stdout)
        .into_iter::<Value>()
        .collect::<Result<_, _>>()
        .unwrap_or_else(|e| panic!("stdout is not a stream of JSON values ({e}):\n{stdout}"));
    let labels: Vec<&str> = results
        .iter()
        .map(|r| r["tool"].as_str().unwrap())
        .collect();
    assert_eq!(labels, ["lean_sync", "lean_hover"], "{stdout}");
    for labelled in &results {
        let tool = labelled["tool"].as_str().unwrap();
        match labelled.get("result") {
            Some(result) => common::outputs::check_content(tool, result, false),
            None => common::outputs::check_content(tool, &labelled["error"], true),
        }
    }
    assert_eq!(results[0]["result"]["version"], 1, "{stdout}");
    assert_eq!(
        results[0]["result"]["diagnostics"]["counts"]["total"], 4,
        "{stdout}"
    );

    // stderr (not a terminal): every diagnostic is a whole line of its own.
    let lines: Vec<&str> = stderr.lines().collect();
    let diagnostics: Vec<&&str> = lines
        .iter()
        .filter(|l| l.starts_with("lean_sync: Fix/Errors.lean:"))
        .collect();
    assert_eq!(diagnostics.len(), 4, "{stderr}");
    assert!(
        diagnostics
            .iter()
            .any(|l| l.contains(":9:28: error: Unknown identifier `missingThing`")),
        "{stderr}"
    );
    // The bar shows real progress: the final update is full, and any earlier
    // one matches the line it names ("line N of M" → (N-1)/M).
    let bars: Vec<(&str, u32)> = lines
        .iter()
        .filter_map(|l| percent(l).map(|p| (*l, p)))
        .collect();
    assert!(
        bars.iter()
            .any(|(l, p)| *p == 100 && l.contains("[##########]")),
        "{stderr}"
    );
    for (line, shown) in &bars {
        if let Some((n, m)) = line
            .split_once("line ")
            .and_then(|(_, rest)| rest.split_once(" of "))
            .and_then(|(n, rest)| {
                let m = rest.split(|c: char| !c.is_ascii_digit()).next()?;
                Some((n.parse::<f64>().ok()?, m.parse::<f64>().ok()?))
            })
        {
            let expected = ((n - 1.0) / m * 100.0).round() as u32;
            assert_eq!(*shown, expected, "{line}");
        }
    }
}

/// `doctor ROOT` with a clean environment but for `vars` (so that the
/// caller's LEAN_BEAM_* settings cannot change its verdict).
fn doctor(root: &std::path::Path, vars: &[(&str, String)]) -> (Option<i32>, String) {
    let out = Command::new(BIN)
        .arg("doctor")
        .arg(root)
        .env_clear()
        .envs(vars.iter().map(|(k, v)| (*k, v.as_str())))
        .output()
        .expect("run lean-beam-mcp doctor");
    (out.status.code(), text(&out.stdout))
}

/// The report's line about `subject`: (level, text).
fn doctor_line<'a>(report: &'a str, subject: &str) -> Option<(&'a str, &'a str)> {
    report.lines().find_map(|line| {
        let (level, rest) = line.split_once("  ")?;
        let rest = rest.trim_start();
        rest.strip_prefix(subject)
            .filter(|r| r.starts_with(' '))
            .map(|r| (level.trim(), r.trim()))
    })
}

#[test]
fn doctor_passes_a_good_root_and_prints_the_host_snippets() {
    let Some(lean) = common::lean::lean_or_skip() else {
        return;
    };
    let root = lean.fixture("basic");
    let (code, report) = doctor(
        &root,
        &[("LEAN_BEAM_LEAN", lean.lean.display().to_string())],
    );
    assert_eq!(code, Some(0), "{report}");
    for line in report.lines().take_while(|l| !l.is_empty()) {
        assert!(
            line.starts_with("OK ") || line.starts_with("      "),
            "{line}\n{report}"
        );
    }
    let (_, starts) = doctor_line(&report, "starts").expect(&report);
    assert!(starts.contains("Lean (version 4.35.0"), "{report}");
    let (_, layout) = doctor_line(&report, "build layout").expect(&report);
    assert!(
        layout.contains(".olean file(s)") && !layout.starts_with(": 0 "),
        "{report}"
    );
    let (_, first) = doctor_line(&report, "first call").expect(&report);
    assert!(
        first.contains("--server") && first.contains(&*root.to_string_lossy()),
        "{report}"
    );
    // The snippets name this binary by its absolute path, with the lean it runs.
    let bin = std::path::Path::new(BIN).canonicalize().unwrap();
    let bin = bin.to_string_lossy();
    assert!(
        report.contains(&format!(
            "claude mcp add lean-beam -e LEAN_BEAM_LEAN={} -- {bin}",
            lean.lean.display()
        )),
        "{report}"
    );
    for host in ["Codex", "Gemini CLI", "VS Code"] {
        assert!(report.contains(host), "{report}");
    }
    let vscode = report
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with(r#"{"servers""#))
        .expect(&report);
    let vscode: Value = serde_json::from_str(vscode).expect(vscode);
    assert_eq!(vscode["servers"]["lean-beam"]["command"], *bin);
}

#[test]
fn doctor_fails_a_root_without_a_toolchain() {
    let dir = common::lean::TempDir::new("doctor-bare");
    std::fs::write(dir.path().join("lakefile.toml"), "name = \"bare\"\n").unwrap();
    let empty_path = common::lean::TempDir::new("doctor-path");
    let (code, report) = doctor(
        dir.path(),
        &[("PATH", empty_path.path().display().to_string())],
    );
    assert_eq!(code, Some(2), "{report}");
    let (level, lean) = doctor_line(&report, "lean").expect(&report);
    assert_eq!(level, "FAIL", "{report}");
    assert!(lean.contains("`lake` not found on PATH"), "{report}");
    assert!(report.contains("fix: install elan"), "{report}");
    let (level, toolchain) = doctor_line(&report, "lean-toolchain").expect(&report);
    assert_eq!(
        (level, toolchain.starts_with("none")),
        ("WARN", true),
        "{report}"
    );
    assert!(report.contains("the first call will fail"), "{report}");
}

#[test]
fn doctor_fails_a_broken_lean_beam_lean() {
    let Some(lean) = common::lean::lean_or_skip() else {
        return;
    };
    let root = lean.fixture("basic");
    let dir = common::lean::TempDir::new("doctor-broken");

    // A path that is not there.
    let missing = dir.path().join("no-such-lean");
    let (code, report) = doctor(&root, &[("LEAN_BEAM_LEAN", missing.display().to_string())]);
    assert_eq!(code, Some(2), "{report}");
    let (level, line) = doctor_line(&report, "lean").expect(&report);
    assert_eq!(level, "FAIL", "{report}");
    assert!(
        line.contains("does not exist") && line.contains("LEAN_BEAM_LEAN"),
        "{report}"
    );
    assert!(
        report.contains("fix: point LEAN_BEAM_LEAN at a `lean` binary"),
        "{report}"
    );

    // A program that is there but does not start: what it said is shown.
    let broken = dir.path().join("lean");
    std::fs::write(
        &broken,
        "#!/bin/sh\necho 'lean: error while loading shared libraries: libleanshared.so' >&2\nexit 127\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&broken, std::fs::Permissions::from_mode(0o755)).unwrap();
    let (code, report) = doctor(&root, &[("LEAN_BEAM_LEAN", broken.display().to_string())]);
    assert_eq!(code, Some(2), "{report}");
    let (level, line) = doctor_line(&report, "starts").expect(&report);
    assert_eq!(level, "FAIL", "{report}");
    assert!(
        line.contains("exited with status 127") && line.contains("libleanshared.so"),
        "{report}"
    );

    // A lean of another release than the root's lean-toolchain: a warning.
    std::fs::write(
        &broken,
        "#!/bin/sh\necho 'Lean (version 4.9.0, x86_64-unknown-linux-gnu, commit 0, Release)'\n",
    )
    .unwrap();
    let (code, report) = doctor(&root, &[("LEAN_BEAM_LEAN", broken.display().to_string())]);
    assert_eq!(code, Some(1), "{report}");
    let (level, line) = doctor_line(&report, "toolchain").expect(&report);
    assert_eq!(level, "WARN", "{report}");
    assert!(
        line.contains("asks for 4.35.0") && line.contains("is 4.9.0"),
        "{report}"
    );
}
