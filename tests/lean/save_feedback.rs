//! Checkpoints and feedback against the real Lean server (issue 6): `lean_save`
//! success and every refusal, atomic publication with rollback, the import
//! round trip through saved `.olean` files, `lean_close_save`, and
//! `beam_feedback_report` in all its modes, with planted secrets and the home
//! directory kept out of redacted reports and bundles.
//!
//! Every test works on a temp copy of the `basic` fixture (never the fixture
//! itself).

use crate::common;

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use common::lean::{TempDir, TempWorkspace, lean};
use common::mcp::{Era, Mcp, Spawn, ws};

fn spawn_with(extra: &[(&str, String)]) -> Mcp {
    let mut spawn = Spawn::default().envs(lean().server_env());
    for (k, v) in extra {
        spawn = spawn.env(k, v.clone());
    }
    Mcp::start(Era::Modern, spawn)
}

fn doc(root: &str, path: &str) -> Value {
    json!({"workspace": ws(root), "path": path})
}

fn assert_code(error: &Value, code: &str, what: &str) {
    assert_eq!(error["code"], code, "{what}: {error}");
    assert!(
        error["message"].as_str().is_some_and(|m| !m.is_empty()),
        "{what}: {error}"
    );
}

/// The server's source hash (64-bit FNV-1a, 16 hex digits).
fn fnv(text: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

/// Every path under `dir` (recursive).
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            out.extend(walk(&path));
        }
        out.push(path);
    }
    out
}

/// No scratch directory or set-aside artifact remains under `.lake/build`.
fn assert_no_save_leftovers(root: &Path) {
    let leftovers: Vec<PathBuf> = walk(&root.join(".lake/build"))
        .into_iter()
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            name.starts_with(".beam-save-") || name.ends_with(".beam-old")
        })
        .collect();
    assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");
}

fn lib(root: &Path) -> PathBuf {
    root.join(".lake/build/lib/lean/Fix")
}

const NEW_THM: &str = "\nnamespace Fix\n\n/-- Added after the first checkpoint. -/\ntheorem new_thm (n : N) : Eq (N.add N.zero n) n := zero_add' n\n\nend Fix\n";

#[test]
fn save_publishes_artifacts_and_syncs_the_disk_content_first() {
    let w = TempWorkspace::copy("basic");
    let root = w.root_str();
    let mut mcp = spawn_with(&[]);

    let saved = mcp.call("lean_save", doc(&root, "Fix/Goals.lean"));
    assert_eq!(saved["module"], "Fix.Goals", "{saved}");
    assert_eq!(saved["path"], "Fix/Goals.lean", "{saved}");
    assert!(saved["version"].as_u64().is_some(), "{saved}");
    assert_eq!(saved["source_hash"], fnv(&w.read("Fix/Goals.lean")));
    for (key, file) in [("olean", "Goals.olean"), ("ilean", "Goals.ilean")] {
        let expected = lib(w.root()).join(file);
        assert_eq!(
            Path::new(saved[key].as_str().expect(key)),
            expected,
            "{saved}"
        );
        assert!(expected.is_file(), "{key} not written: {saved}");
    }
    assert_eq!(saved["sync"]["readiness"]["save_ready"], true, "{saved}");
    assert_eq!(saved["sync"]["version"], saved["version"], "{saved}");
    assert!(saved["sync"]["diagnostics"].is_object(), "{saved}");
    assert!(!saved["document_progress"].is_null(), "{saved}");
    let note = saved["checkpoint"].as_str().expect("checkpoint note");
    assert!(
        note.contains("checkpoint") && note.contains("lake build"),
        "{note}"
    );
    assert_no_save_leftovers(w.root());

    // A file edited on disk after its last lean_sync is saved as the new disk
    // content: lean_save syncs first, so the version moves and the hash is the
    // new text's. (The race where the file changes between that sync and the
    // compile cannot be timed from a test; checkpoint::save re-hashes the disk
    // file before and after compiling and fails with contentModified when it
    // differs from the synced text's hash, so nothing unsynced is published.)
    let synced = mcp.call("lean_sync", doc(&root, "Fix/Goals.lean"));
    let v1 = synced["version"].as_u64().unwrap();
    let edited = format!("{}{NEW_THM}", w.read("Fix/Goals.lean"));
    w.write("Fix/Goals.lean", &edited);
    let resaved = mcp.call("lean_save", doc(&root, "Fix/Goals.lean"));
    assert!(
        resaved["version"].as_u64().unwrap() > v1,
        "lean_save did not sync the edit: {resaved}"
    );
    assert_eq!(resaved["source_hash"], fnv(&edited), "{resaved}");
    assert_ne!(resaved["source_hash"], saved["source_hash"]);
    assert_no_save_leftovers(w.root());

    // Atomicity: publication fails after the first artifact (the .olean) was
    // placed, because a non-empty directory sits where the .ilean goes. The
    // old .olean must come back byte for byte and no temporary file remain.
    let olean = lib(w.root()).join("Goals.olean");
    let ilean = lib(w.root()).join("Goals.ilean");
    let before = std::fs::read(&olean).unwrap();
    std::fs::remove_file(&ilean).unwrap();
    std::fs::create_dir_all(ilean.join("blocker")).unwrap();
    std::fs::write(ilean.join("blocker/file"), "x").unwrap();
    w.write(
        "Fix/Goals.lean",
        &format!("{edited}\n/-- Changes the olean. -/\ntheorem Fix.other : Eq Fix.one Fix.one := Eq.refl _\n"),
    );
    let error = mcp.call_err("lean_save", doc(&root, "Fix/Goals.lean"));
    assert!(error["code"].as_str().is_some(), "{error}");
    assert!(
        error["message"]
            .as_str()
            .is_some_and(|m| m.contains("ilean")),
        "{error}"
    );
    assert_eq!(
        std::fs::read(&olean).unwrap(),
        before,
        "the old .olean was not restored"
    );
    assert!(ilean.join("blocker/file").is_file());
    assert_no_save_leftovers(w.root());
}

#[test]
fn save_refusals_and_close_save() {
    let w = TempWorkspace::copy("basic");
    let root = w.root_str();
    let mut mcp = spawn_with(&[]);

    // Not ready: a result with the sync and its blocking diagnostics, and
    // nothing written.
    let refused = mcp.call("lean_save", doc(&root, "Fix/Errors.lean"));
    assert_eq!(refused["written"], false, "{refused}");
    let sync = &refused["sync"];
    assert_eq!(sync["readiness"]["save_ready"], false, "{refused}");
    assert_eq!(sync["readiness"]["reason"], "errors", "{refused}");
    assert_eq!(
        sync["readiness"]["blocking_diagnostics"]
            .as_array()
            .map(Vec::len),
        Some(3),
        "{refused}"
    );
    assert!(!lib(w.root()).join("Errors.olean").exists());
    assert!(!lib(w.root()).join("Errors.ilean").exists());
    assert_no_save_leftovers(w.root());

    // Outside the root.
    let elsewhere = TempDir::new("save-outside");
    let outside = elsewhere.path().join("Outside.lean");
    std::fs::write(&outside, "prelude\ndef x : Nat := 1\n").unwrap();
    let error = mcp.call_err("lean_save", doc(&root, outside.to_str().unwrap()));
    assert_code(&error, "saveTargetNotModule", "outside the root");

    // A path component that is no Lean identifier.
    w.write("Fix/bad-name.lean", "prelude\nimport Fix.Basic\n");
    let error = mcp.call_err("lean_save", doc(&root, "Fix/bad-name.lean"));
    assert_code(&error, "saveTargetNotModule", "bad-name");
    assert!(!lib(w.root()).join("bad-name.olean").exists());

    // close_save: saved then closed.
    let closed = mcp.call("lean_close_save", doc(&root, "Fix/Goals.lean"));
    assert_eq!(closed["closed"], true, "{closed}");
    assert_eq!(closed["saved"]["module"], "Fix.Goals", "{closed}");
    assert!(lib(w.root()).join("Goals.olean").is_file());
    // A close_save that wrote nothing leaves the document open.
    let kept = mcp.call("lean_close_save", doc(&root, "Fix/Errors.lean"));
    assert_eq!(
        (&kept["closed"], &kept["saved"]["written"]),
        (&json!(false), &json!(false)),
        "{kept}"
    );
    let stats = mcp.workspace_stats(&root).expect("workspace stats");
    let docs = stats["documents"].as_array().expect("documents");
    let find = |p: &str| docs.iter().find(|d| d["path"] == p).cloned();
    assert_eq!(
        find("Fix/Errors.lean").map(|d| d["open"].clone()),
        Some(json!(true)),
        "{stats}"
    );
    assert_eq!(
        find("Fix/Goals.lean").map(|d| d["open"].clone()),
        Some(json!(false)),
        "{stats}"
    );

    // Batch-only Lean arguments: a setup a checkpoint cannot reproduce.
    w.write(
        "lakefile.lean",
        "import Lake\nopen Lake DSL\n\npackage fix where\n  moreLeanArgs := #[\"-DmaxHeartbeats=0\"]\n\n@[default_target] lean_lib Fix\n",
    );
    let error = mcp.call_err("lean_save", doc(&root, "Fix/Goals.lean"));
    assert_code(&error, "saveUnsupportedSetup", "moreLeanArgs");
    assert_eq!(error["data"]["reason"], "moreLeanArgs", "{error}");
    assert_no_save_leftovers(w.root());
}

#[test]
fn saved_module_is_seen_by_its_importers_and_updates() {
    let w = TempWorkspace::copy("basic");
    let root = w.root_str();
    let mut mcp = spawn_with(&[]);
    let use_goals = |extra: &str| {
        format!(
            "prelude\nimport Fix.Goals\n\nnamespace Fix\n\ntheorem uses (n : N) : Eq (N.add N.zero n) n := zero_add' n\n{extra}\nend Fix\n"
        )
    };
    w.write("Fix/UseGoals.lean", &use_goals(""));

    mcp.call("lean_save", doc(&root, "Fix/Goals.lean"));
    let synced = mcp.call("lean_sync", doc(&root, "Fix/UseGoals.lean"));
    assert_eq!(synced["diagnostics"]["counts"]["error"], 0, "{synced}");

    let edited = format!("{}{NEW_THM}", w.read("Fix/Goals.lean"));
    w.write("Fix/Goals.lean", &edited);
    mcp.call("lean_save", doc(&root, "Fix/Goals.lean"));
    w.write(
        "Fix/UseGoals.lean",
        &use_goals("\ntheorem uses_new (n : N) : Eq (N.add N.zero n) n := new_thm n\n"),
    );
    let synced = mcp.call("lean_sync", doc(&root, "Fix/UseGoals.lean"));
    assert_eq!(
        synced["diagnostics"]["counts"]["error"], 0,
        "the importer still sees the old checkpoint: {synced}"
    );
}

fn report_args(root: &str, extra: Value) -> Value {
    let mut args = json!({
        "workspace": ws(root),
        "title": "Save checkpoint report",
        "summary": "A summary.",
        "reproduction": "Call lean_save.",
        "expected": "A checkpoint.",
        "actual": "A checkpoint.",
    });
    for (k, v) in extra.as_object().unwrap() {
        args[k] = v.clone();
    }
    args
}

#[test]
fn feedback_collects_context_or_keeps_it_confidential() {
    let w = TempWorkspace::copy("basic");
    let root = w.root_str();
    let mut mcp = spawn_with(&[]);
    let bundles = w.root().join(".lake/beam-feedback");

    // Nothing written without a bundle; no runtime started by a report.
    let plain = mcp.call(
        "beam_feedback_report",
        report_args(&root, json!({"include_collected": true})),
    );
    assert!(!bundles.exists(), "bundle:none wrote {bundles:?}");
    assert_eq!(plain["workspace"]["root"], root.as_str(), "{plain}");
    let collected = &plain["collected"];
    assert!(collected["toolchain"].is_string(), "{plain}");
    assert!(collected["serverCommand"].is_string(), "{plain}");
    assert!(collected["runtime"].is_null(), "{plain}");
    assert!(
        mcp.workspace_stats(&root).is_none(),
        "a report started Lean"
    );
    assert!(
        plain["markdown"]
            .as_str()
            .unwrap()
            .starts_with("# Save checkpoint report")
    );
    assert_eq!(plain["metadata"]["uploaded"], false);

    mcp.call("lean_sync", doc(&root, "Fix/Goals.lean"));
    let live = mcp.call(
        "beam_feedback_report",
        report_args(&root, json!({"include_collected": true})),
    );
    assert!(live["collected"]["runtime"].is_object(), "{live}");
    assert_eq!(
        live["collected"]["openFiles"],
        json!(["Fix/Goals.lean"]),
        "{live}"
    );

    // Confidential: no workspace, no collected context, no root anywhere.
    let secret = mcp.call(
        "beam_feedback_report",
        report_args(
            &root,
            json!({"include_collected": true, "confidential": true}),
        ),
    );
    assert!(secret.get("workspace").is_none(), "{secret}");
    assert!(secret.get("collected").is_none(), "{secret}");
    assert!(!secret.to_string().contains(&root), "{secret}");

    // bundle_dir must stay inside the root's feedback folder.
    let error = mcp.call_err(
        "beam_feedback_report",
        report_args(&root, json!({"bundle": "dir", "bundle_dir": "../dir"})),
    );
    assert_code(&error, "invalidInput", "bundle_dir outside");
    assert!(!w.root().join(".lake/dir").exists());

    // Evidence over the cap is truncated, with a warning.
    w.write("big.txt", &"0123456789abcdef".repeat(300 * 1024 / 16));
    let big = mcp.call(
        "beam_feedback_report",
        report_args(
            &root,
            json!({"evidence": [{"name": "big", "path": "big.txt"}]}),
        ),
    );
    let item = &big["evidence"][0];
    assert_eq!(item["truncated"], true, "{item:.200}");
    assert_eq!(big["truncated"]["fields"], 1, "{}", big["truncated"]);
    assert_eq!(big["truncated"]["items"], 0, "{}", big["truncated"]);
    assert!(secret.get("truncated").is_none(), "nothing cut: {secret}");
    assert_eq!(item["content"].as_str().unwrap().len(), 256 * 1024);
    assert!(
        big["collection_warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w.as_str().is_some_and(|w| w.contains("truncated"))),
        "{}",
        big["collection_warnings"]
    );
}

/// The names of a stored zip's entries (local headers).
fn zip_names(bytes: &[u8]) -> Vec<String> {
    let mut names = Vec::new();
    let mut at = 0;
    while at + 30 <= bytes.len() && bytes[at..at + 4] == *b"PK\x03\x04" {
        let u16_at = |i: usize| u16::from_le_bytes([bytes[i], bytes[i + 1]]) as usize;
        let size = u32::from_le_bytes(bytes[at + 18..at + 22].try_into().unwrap()) as usize;
        let name_len = u16_at(at + 26);
        let extra = u16_at(at + 28);
        let name = &bytes[at + 30..at + 30 + name_len];
        names.push(String::from_utf8_lossy(name).into_owned());
        at += 30 + name_len + extra + size;
    }
    names
}

#[test]
fn redacted_reports_and_bundles_keep_secrets_and_home_out() {
    let w = TempWorkspace::copy("basic");
    let root = w.root_str();
    let home_dir = TempDir::new("feedback-home");
    let home = home_dir.path().to_string_lossy().into_owned();
    let mut mcp = spawn_with(&[("HOME", home.clone())]);

    let gh = format!("ghp_{}", "aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dF3hJ5");
    assert_eq!(gh.len(), 4 + 36);
    let api_value = "plainApiValue42";
    let evidence = w.root().join("evidence.log");
    std::fs::write(
        &evidence,
        format!("log from {home}/project\nauth header {gh}\ntoken=s3cr3tvalue\n"),
    )
    .unwrap();
    let planted = [gh.as_str(), "s3cr3tvalue", api_value, home.as_str()];
    let check = |what: &str, text: &str| {
        for p in planted {
            assert!(!text.contains(p), "{what} contains {p:?}:\n{text}");
        }
    };
    let args = |bundle: &str| {
        report_args(
            &root,
            json!({
                "summary": format!("Seen in {home}/work with {gh} and token=s3cr3tvalue."),
                "request": {"tool": "lean_save", "api_key": api_value},
                "evidence": [
                    {"name": "log", "path": evidence.to_string_lossy()},
                    {"name": "inline", "content": format!("{home} {gh}")},
                ],
                "include_collected": true,
                "bundle": bundle,
            }),
        )
    };

    let none = mcp.call("beam_feedback_report", args("none"));
    assert_eq!(none["metadata"]["redacted"], true);
    check("markdown", none["markdown"].as_str().unwrap());
    check("metadata", &none["metadata"].to_string());
    check("evidence", &none["evidence"].to_string());
    check("result", &none.to_string());
    assert!(
        none["evidence"][0]["content"]
            .as_str()
            .unwrap()
            .contains("log from"),
        "evidence file not read: {none}"
    );

    let dir = mcp.call("beam_feedback_report", args("dir"));
    check("result", &dir.to_string());
    let bundle = PathBuf::from(dir["bundle_dir"].as_str().expect("bundle_dir"));
    assert!(
        bundle.starts_with(w.root().join(".lake/beam-feedback")),
        "{bundle:?}"
    );
    for name in ["report.md", "report.json"] {
        assert!(bundle.join(name).is_file(), "{name} missing in {bundle:?}");
    }
    let files = walk(&bundle);
    assert!(files.len() >= 4, "{files:?}");
    for file in &files {
        let bytes = std::fs::read(file).unwrap();
        check(
            &file.display().to_string(),
            &String::from_utf8_lossy(&bytes),
        );
    }

    let zip = mcp.call("beam_feedback_report", args("zip"));
    check("result", &zip.to_string());
    let zip_path = PathBuf::from(zip["zip_path"].as_str().expect("zip_path"));
    let bytes = std::fs::read(&zip_path).unwrap();
    assert_eq!(&bytes[..4], b"PK\x03\x04");
    let names = zip_names(&bytes);
    for name in ["report.md", "report.json"] {
        assert!(names.iter().any(|n| n == name), "{names:?}");
    }
    check("zip", &String::from_utf8_lossy(&bytes));

    // An explicit absolute bundle_dir (inside the feedback folder), and no
    // half-written entries anywhere.
    let out = w.root().join(".lake/beam-feedback/explicit");
    let explicit = mcp.call(
        "beam_feedback_report",
        report_args(
            &root,
            json!({"bundle": "zip", "bundle_dir": out.to_string_lossy()}),
        ),
    );
    let zipped = PathBuf::from(explicit["zip_path"].as_str().unwrap());
    assert_eq!(zipped.parent(), Some(out.as_path()));
    let temps: Vec<PathBuf> = walk(&w.root().join(".lake/beam-feedback"))
        .into_iter()
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .contains(".beam-tmp-")
        })
        .collect();
    assert!(temps.is_empty(), "{temps:?}");
}

/// A checkpoint reopens the open documents that may import its module,
/// directly or through other sources of the workspace, and leaves the others
/// (their workers and final reports) alone.
#[test]
fn a_save_reopens_only_the_documents_that_may_import_the_module() {
    let w = TempWorkspace::copy("basic");
    let root = w.root_str();
    let mut mcp = spawn_with(&[]);
    w.write(
        "Fix/UseGoals.lean",
        "prelude\nimport Fix.Goals\n\nnamespace Fix\n\ntheorem uses (n : N) : Eq (N.add N.zero n) n := zero_add' n\n\nend Fix\n",
    );
    w.write(
        "Fix/UseUse.lean",
        "prelude\nimport Fix.UseGoals\n\nnamespace Fix\n\ntheorem uses2 (n : N) : Eq (N.add N.zero n) n := uses n\n\nend Fix\n",
    );
    mcp.call("lean_save", doc(&root, "Fix/Goals.lean"));
    mcp.call("lean_save", doc(&root, "Fix/UseGoals.lean"));
    for path in ["Fix/UseUse.lean", "Fix/Errors.lean", "Fix/Sorry.lean"] {
        mcp.call("lean_sync", doc(&root, path));
    }
    let entry = |mcp: &mut Mcp, path: &str| mcp.document_stats(&root, path);
    let before: Vec<Value> = ["Fix/Errors.lean", "Fix/Sorry.lean"]
        .iter()
        .map(|p| entry(&mut mcp, p))
        .collect();
    for d in &before {
        assert_eq!(d["settled"], true, "{d}");
        assert!(d["workerPid"].is_u64(), "{d}");
    }

    let edited = format!("{}{NEW_THM}", w.read("Fix/Goals.lean"));
    w.write("Fix/Goals.lean", &edited);
    mcp.call("lean_save", doc(&root, "Fix/Goals.lean"));

    for path in ["Fix/UseGoals.lean", "Fix/UseUse.lean"] {
        assert_eq!(
            entry(&mut mcp, path)["settled"],
            false,
            "{path} imports Fix.Goals and must be reopened"
        );
    }
    for (path, old) in ["Fix/Errors.lean", "Fix/Sorry.lean"].iter().zip(&before) {
        assert_eq!(
            &entry(&mut mcp, path),
            old,
            "{path} does not import Fix.Goals"
        );
    }
    // The importer sees the new checkpoint; the others answer as before.
    w.write(
        "Fix/UseUse.lean",
        "prelude\nimport Fix.UseGoals\n\nnamespace Fix\n\ntheorem uses2 (n : N) : Eq (N.add N.zero n) n := new_thm n\n\nend Fix\n",
    );
    let synced = mcp.call("lean_sync", doc(&root, "Fix/UseUse.lean"));
    assert_eq!(synced["diagnostics"]["counts"]["error"], 0, "{synced}");
    let errors = mcp.call("lean_sync", doc(&root, "Fix/Errors.lean"));
    assert_eq!(errors["version"], before[0]["version"]);
    assert_eq!(entry(&mut mcp, "Fix/Errors.lean"), before[0]);
}
