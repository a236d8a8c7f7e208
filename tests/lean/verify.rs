//! `lean_verify` against the real Lean 4.35.0 test toolchain, on the `Ver/`
//! files of the `basic` fixture (`tests/fixtures/EXPECTED.md`, "Snippets and
//! certification"): axioms with and without `sorryAx`, the allowlist,
//! reference statements, a scan hit in an imported module, a stale `.olean`.

use crate::common;

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

use common::lean::{TempWorkspace, lean};
use common::mcp::{Era, Mcp, Spawn, ws};

fn spawn() -> Mcp {
    Mcp::on_lean(Era::Modern, &[])
}

fn sync(mcp: &mut Mcp, root: &str, path: &str) -> u64 {
    let r = mcp.call("lean_sync", json!({ "workspace": ws(root), "path": path }));
    r["version"].as_u64().expect("version")
}

fn verify(mcp: &mut Mcp, root: &str, path: &str, version: u64, extra: Value) -> Value {
    let mut args = json!({ "workspace": ws(root), "path": path, "version": version });
    for (k, v) in extra.as_object().expect("object") {
        args[k] = v.clone();
    }
    mcp.call("lean_verify", args)
}

/// SHA-256 of a file, by the system's `sha256sum` (not the server's code).
fn sha256sum(file: &Path) -> String {
    let out = Command::new("sha256sum")
        .arg(file)
        .output()
        .expect("sha256sum");
    String::from_utf8(out.stdout).unwrap()[..64].to_string()
}

fn reasons(r: &Value) -> Vec<&str> {
    r["failures"]
        .as_array()
        .expect("failures")
        .iter()
        .map(|f| f["reason"].as_str().unwrap())
        .collect()
}

fn range(sl: u64, sc: u64, el: u64, ec: u64) -> Value {
    json!({ "start": { "line": sl, "character": sc }, "end": { "line": el, "character": ec } })
}

fn declaration<'a>(r: &'a Value, name: &str) -> &'a Value {
    r["declarations"]
        .as_array()
        .expect("declarations")
        .iter()
        .find(|d| d["name"] == name)
        .unwrap_or_else(|| panic!("{name} in {r}"))
}

/// The scan hits in the `Ver/` files (`Fix/Basic.lean`, imported by all of
/// them, declares the axioms the elaborator needs).
fn ver_hatches(r: &Value) -> Value {
    let hits = r["hatches"].as_array().expect("hatches");
    assert!(
        hits.iter()
            .any(|h| h["path"] == "Fix/Basic.lean" && h["text"] == "axiom"),
        "the transitive import is scanned too: {r}"
    );
    hits.iter()
        .filter(|h| h["path"].as_str().unwrap().starts_with("Ver/"))
        .cloned()
        .collect()
}

#[test]
fn axioms_with_and_without_sorry_the_allowlist_and_references() {
    let fixture = lean().fixture("basic");
    let root = fixture.to_string_lossy().into_owned();
    let path = "Ver/Good.lean";
    let mut mcp = spawn();
    let version = sync(&mut mcp, &root, path);

    // Named: no axioms (certified from a fresh build), and an allowed
    // name that the workspace declares (`Ver/Clean.lean`), not the
    // toolchain: no certificate.
    let r = verify(
        &mut mcp,
        &root,
        path,
        version,
        json!({ "declarations": [{ "name": "Ver.no_axioms" }] }),
    );
    assert_eq!(r["certified"], true, "{r}");
    assert_eq!(r["tier"], "rebuilt", "{r}");
    assert_eq!(r["failures"], json!([]));
    let named =
        json!({ "declarations": [{ "name": "Ver.no_axioms" }, { "name": "Ver.uses_propext" }] });
    let r = verify(&mut mcp, &root, path, version, named.clone());
    assert_eq!(r["certified"], false, "{r}");
    assert_eq!(reasons(&r), ["axiom_origin"], "{r}");
    assert_eq!(declaration(&r, "Ver.no_axioms")["axioms"], json!([]));
    assert_eq!(
        declaration(&r, "Ver.uses_propext")["axioms"],
        json!(["propext"])
    );
    assert_eq!(
        r["provenance"]["reused"], 3,
        "a repeat verify rebuilds nothing: {r}"
    );
    assert_eq!(r["provenance"]["rebuilt"], 0, "{r}");
    // The scan: `sorry` in this file and the axiom of the imported module,
    // reported, neither failing by itself; `with_sorry` is no hit.
    assert_eq!(
        ver_hatches(&r),
        json!([
            { "kind": "axiom", "path": "Ver/Clean.lean", "range": range(8, 0, 8, 5), "text": "axiom", "fails": false },
            { "kind": "sorry", "path": "Ver/Good.lean", "range": range(11, 66, 11, 71), "text": "sorry", "fails": false },
        ]),
        "{r}"
    );
    let provenance = &r["provenance"];
    assert_eq!(provenance["source_sha256"], sha256sum(&fixture.join(path)));
    let imports = provenance["imports"].as_array().expect("imports");
    let modules: Vec<&str> = imports
        .iter()
        .map(|i| i["module"].as_str().unwrap())
        .collect();
    assert_eq!(modules, ["Fix.Basic", "Ver.Clean"], "{r}");
    assert_eq!(
        imports[1]["sha256"],
        sha256sum(&fixture.join("Ver/Clean.lean"))
    );
    assert!(
        provenance["lean_version"]
            .as_str()
            .unwrap()
            .starts_with("Lean (version 4.35.0"),
        "{r}"
    );
    assert_eq!(provenance["server"]["name"], "lean-beam-mcp");

    // An empty allowlist is the default one; a narrower one fails propext.
    let r = verify(
        &mut mcp,
        &root,
        path,
        version,
        json!({ "declarations": named["declarations"], "allowed_axioms": ["Quot.sound"] }),
    );
    assert_eq!(r["certified"], false, "{r}");
    assert_eq!(reasons(&r), ["axiom"], "{r}");

    // All theorems of the file: `with_sorry` depends on sorryAx.
    let r = verify(&mut mcp, &root, path, version, json!({}));
    let names: Vec<&str> = r["declarations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["Ver.no_axioms", "Ver.uses_propext", "Ver.with_sorry"]
    );
    assert_eq!(
        declaration(&r, "Ver.with_sorry")["axioms"],
        json!(["sorryAx"])
    );
    assert_eq!(r["certified"], false, "{r}");
    assert_eq!(reasons(&r), ["sorry", "axiom_origin"], "{r}");

    // sorryAx fails even when allowed.
    let r = verify(
        &mut mcp,
        &root,
        path,
        version,
        json!({ "declarations": [{ "name": "Ver.with_sorry" }], "allowed_axioms": ["sorryAx"] }),
    );
    assert_eq!(reasons(&r), ["sorry"], "{r}");

    // References: the declaration's own type matches; another does not.
    let r = verify(
        &mut mcp,
        &root,
        path,
        version,
        json!({ "declarations": [
            { "name": "Ver.no_axioms", "reference": "∀ (n : Fix.N), Eq (Fix.N.add n Fix.N.zero) n" },
            { "name": "Ver.uses_propext", "reference": "Eq False False" },
            { "name": "Ver.nope" },
        ] }),
    );
    assert_eq!(
        declaration(&r, "Ver.no_axioms")["reference"]["matches"],
        true,
        "{r}"
    );
    let mismatch = &declaration(&r, "Ver.uses_propext")["reference"];
    assert_eq!(mismatch["matches"], false, "{r}");
    assert!(
        mismatch["message"]
            .as_str()
            .unwrap()
            .contains("Type mismatch"),
        "{r}"
    );
    assert!(
        declaration(&r, "Ver.nope")["error"]
            .as_str()
            .unwrap()
            .contains("Unknown constant"),
        "{r}"
    );
    assert_eq!(r["certified"], false);
    assert_eq!(
        reasons(&r),
        ["reference_mismatch", "unknown_declaration", "axiom_origin"],
        "{r}"
    );

    // Bad input: a name that is not one Lean name, a stale version, a file
    // never synced.
    let e = mcp.call_err(
        "lean_verify",
        json!({ "workspace": ws(&root), "path": path, "version": version, "declarations": [{ "name": "a\n#eval 1" }] }),
    );
    assert_eq!(e["code"], "invalidParams", "{e}");
    let e = mcp.call_err(
        "lean_verify",
        json!({ "workspace": ws(&root), "path": path, "version": version + 1 }),
    );
    assert_eq!(e["code"], "contentModified", "{e}");
    let e = mcp.call_err(
        "lean_verify",
        json!({ "workspace": ws(&root), "path": "Ver/Bad.lean", "version": 1 }),
    );
    assert_eq!(e["data"]["reason"], "notSynced", "{e}");

    // The document itself never saw the shadow's commands.
    let s = mcp.call(
        "lean_sync",
        json!({ "workspace": ws(&root), "path": path, "diagnostics_in_result": true, "diagnostic_scope": "all" }),
    );
    assert_eq!(s["version"], version);
    assert_eq!(
        s["diagnostics"]["counts"]["total"], 1,
        "only the file's own sorry warning: {s}"
    );
}

#[test]
fn a_hatch_in_an_imported_module_and_a_stale_olean() {
    let copy = TempWorkspace::copy("basic");
    let root = copy.root_str();
    let path = "Ver/Bad.lean";
    let mut mcp = spawn();
    let version = sync(&mut mcp, &root, path);
    let r = verify(&mut mcp, &root, path, version, json!({}));
    assert_eq!(
        declaration(&r, "Ver.one_is_two")["axioms"],
        json!(["Ver.cheat"])
    );
    assert_eq!(r["certified"], false, "{r}");
    assert_eq!(reasons(&r), ["hatch", "axiom"], "{r}");
    assert_eq!(
        ver_hatches(&r),
        json!([
            { "kind": "axiom", "path": "Ver/Clean.lean", "range": range(8, 0, 8, 5), "text": "axiom", "fails": false },
            { "kind": "axiom", "path": "Ver/Hatch.lean", "range": range(9, 0, 9, 5), "text": "axiom", "fails": false },
            { "kind": "skip_kernel_tc", "path": "Ver/Hatch.lean", "range": range(11, 0, 11, 34), "text": "set_option debug.skipKernelTC true", "fails": true },
        ]),
        "{r}"
    );

    // A source edited after its .olean was built (and dated after it): the
    // verdict comes from a fresh build of the new text, and names the
    // workspace's .olean stale by its content.
    let good = "Ver/Good.lean";
    let version = sync(&mut mcp, &root, good);
    let named = json!({ "declarations": [{ "name": "Ver.no_axioms" }] });
    let r = verify(&mut mcp, &root, good, version, named.clone());
    assert_eq!(r["certified"], true, "{r}");
    let clean = copy.read("Ver/Clean.lean");
    let olean = copy.root().join(".lake/build/lib/lean/Ver/Clean.olean");
    let built = std::fs::metadata(&olean).unwrap().modified().unwrap();
    copy.write(
        "Ver/Clean.lean",
        &format!("{clean}\ntheorem Ver.edited : True := True.intro\n"),
    );
    let file = std::fs::File::options()
        .write(true)
        .open(copy.root().join("Ver/Clean.lean"))
        .unwrap();
    file.set_modified(built + std::time::Duration::from_secs(5))
        .unwrap();
    let r = verify(&mut mcp, &root, good, version, named);
    assert_eq!(r["certified"], true, "{r}");
    let clean = &r["provenance"]["imports"][1];
    assert_eq!(clean["module"], "Ver.Clean", "{r}");
    assert_eq!(clean["stale"], true, "{r}");
    assert_eq!(
        clean["sha256"],
        sha256sum(&copy.root().join("Ver/Clean.lean"))
    );
    assert!(r["provenance"]["imports"][0].get("stale").is_none(), "{r}");
}

/// A killed server's verify cache goes, in the background: the sweep once
/// ran inside the 10 s bound on creating this server's own cache, and a
/// large dead cache made `lean_verify` fail with "create the verify cache
/// ... did not finish within 10 s". A live process's cache stays, and a
/// server that exits gracefully takes its own with it.
#[test]
fn a_dead_servers_verify_cache_is_swept_a_live_ones_kept_and_an_exiting_ones_removed() {
    let copy = TempWorkspace::copy("basic");
    let root = copy.root_str();
    let temp = std::env::temp_dir();
    // No process has this pid (above Linux's largest pid_max, 2^22).
    let dead = temp.join(format!("lean-beam-verify-{}-test", 4_194_304 + 17));
    let live = temp.join(format!("lean-beam-verify-{}-test", std::process::id()));
    for dir in [&dead, &live] {
        for i in 0..200 {
            let sub = dir.join(format!("k{i}"));
            std::fs::create_dir_all(&sub).unwrap();
            std::fs::write(sub.join("M.olean"), [0u8; 512]).unwrap();
        }
    }
    let path = "Ver/Good.lean";
    let mut mcp = spawn();
    let version = sync(&mut mcp, &root, path);
    let named = json!({ "declarations": [{ "name": "Ver.no_axioms" }] });
    let r = verify(&mut mcp, &root, path, version, named);
    assert_eq!(r["certified"], true, "{r}");
    let swept = common::lean::eventually(std::time::Duration::from_secs(120), || !dead.exists());
    let kept = live.exists();
    let _ = std::fs::remove_dir_all(&live);
    let _ = std::fs::remove_dir_all(&dead);
    assert!(swept, "the dead server's cache {dead:?} was not removed");
    assert!(kept, "the cache of a live process {live:?} was removed");

    let own = format!("lean-beam-verify-{}-", mcp.pid());
    let caches = || -> Vec<std::ffi::OsString> {
        std::fs::read_dir(&temp)
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .filter(|n| n.to_string_lossy().starts_with(&own))
            .collect()
    };
    assert_eq!(caches().len(), 1, "the server made its cache: {own}*");
    mcp.close_stdin();
    assert!(mcp.wait_exit(std::time::Duration::from_secs(120)).success());
    assert_eq!(caches(), Vec::<std::ffi::OsString>::new(), "left at exit");
}

// The attacks of issue 24, each on a copy of the fixture: a verdict that
// certified any of them was the bug (each of these failed before the fresh
// build).

/// The file ends inside `namespace Evil` (with `open` and `section`), with a
/// harmless twin of the theorem there.
#[test]
fn a_file_ending_inside_a_namespace_cannot_redirect_the_checks() {
    let copy = TempWorkspace::copy("basic");
    let root = copy.root_str();
    let head = "prelude\nimport Fix.Basic\n";
    let mut mcp = spawn();
    let named = |name: &str| json!({ "declarations": [{ "name": name }] });
    copy.write(
        "Atk/Evil.lean",
        &format!(
            "{head}namespace Ver\ntheorem one_is_two : Eq Fix.one Fix.two := sorry\nend Ver\nnamespace Evil\nnamespace Ver\ntheorem one_is_two : True := True.intro\nend Ver\nopen Ver\nsection\n"
        ),
    );
    let v = sync(&mut mcp, &root, "Atk/Evil.lean");
    let r = verify(&mut mcp, &root, "Atk/Evil.lean", v, named("Ver.one_is_two"));
    assert_eq!(r["certified"], false, "{r}");
    assert_eq!(reasons(&r), ["sorry"], "{r}");
    // Without names: every declaration Lean reports, the twin too.
    let r = verify(&mut mcp, &root, "Atk/Evil.lean", v, json!({}));
    let names: Vec<&str> = r["declarations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["Ver.one_is_two", "Evil.Ver.one_is_two"], "{r}");
    assert_eq!(r["certified"], false, "{r}");
}

/// A reference that is not one term, and one whose names the file shadows.
#[test]
fn a_reference_is_one_term_resolved_from_the_root() {
    let copy = TempWorkspace::copy("basic");
    let root = copy.root_str();
    let head = "prelude\nimport Fix.Basic\n";
    let mut mcp = spawn();
    copy.write(
        "Atk/Evil.lean",
        &format!(
            "{head}namespace Ver\ntheorem one_is_two : Eq Fix.one Fix.two := sorry\nend Ver\nnamespace Evil\nnamespace Ver\ntheorem one_is_two : True := True.intro\nend Ver\nopen Ver\nsection\n"
        ),
    );
    let v = sync(&mut mcp, &root, "Atk/Evil.lean");
    // A reference that is not one term: Lean's parser, where only a term
    // fits, says so (and the `#exit` never runs); text that would close
    // the term early is refused before Lean sees it.
    let r = verify(
        &mut mcp,
        &root,
        "Atk/Evil.lean",
        v,
        json!({ "declarations": [{ "name": "Evil.Ver.one_is_two", "reference": "True := True.intro\n#exit" }] }),
    );
    assert_eq!(r["certified"], false, "{r}");
    assert_eq!(reasons(&r), ["reference_mismatch"], "{r}");
    let reference = &declaration(&r, "Evil.Ver.one_is_two")["reference"];
    assert!(
        reference["message"]
            .as_str()
            .unwrap()
            .contains("unexpected token"),
        "{r}"
    );
    for reference in ["True) := True.intro\nexample : (True", "True /-", "(True"] {
        let e = mcp.call_err(
            "lean_verify",
            json!({ "workspace": ws(&root), "path": "Atk/Evil.lean", "version": v,
                    "declarations": [{ "name": "Evil.Ver.one_is_two", "reference": reference }] }),
        );
        assert_eq!(e["code"], "invalidParams", "{reference:?}: {e}");
    }
    // One that is a term but names a twin of `True` resolves from the root.
    let r = verify(
        &mut mcp,
        &root,
        "Atk/Evil.lean",
        v,
        json!({ "declarations": [{ "name": "Evil.Ver.one_is_two", "reference": "True" }] }),
    );
    assert_eq!(r["certified"], true, "{r}");
}

/// `axiom propext : False` in the file.
#[test]
fn an_axiom_with_an_allowed_name_declared_by_the_file_fails() {
    let copy = TempWorkspace::copy("basic");
    let root = copy.root_str();
    let head = "prelude\nimport Fix.Basic\n";
    let mut mcp = spawn();
    let named = |name: &str| json!({ "declarations": [{ "name": name }] });
    // An axiom with an allowed name, declared by the file.
    copy.write(
        "Atk/Propext.lean",
        &format!(
            "{head}axiom propext : False\ntheorem bad : Eq Fix.one Fix.two := False.elim propext\n"
        ),
    );
    let v = sync(&mut mcp, &root, "Atk/Propext.lean");
    let r = verify(&mut mcp, &root, "Atk/Propext.lean", v, named("bad"));
    assert_eq!(declaration(&r, "bad")["axioms"], json!(["propext"]), "{r}");
    assert_eq!(r["certified"], false, "{r}");
    assert_eq!(reasons(&r), ["axiom_origin"], "{r}");
}

/// The kernel bypass spelled with guillemets after a raw string, in a module
/// imported as `«Atk».Lib`.
#[test]
fn the_kernel_bypass_behind_a_raw_string_in_a_quoted_import_fails() {
    let copy = TempWorkspace::copy("basic");
    let root = copy.root_str();
    let head = "prelude\nimport Fix.Basic\n";
    let mut mcp = spawn();
    let named = |name: &str| json!({ "declarations": [{ "name": name }] });
    // The kernel bypass spelled with guillemets after a raw string that
    // hid it from a textual scan, in a module imported as `«Atk».Lib`.
    copy.write(
        "Atk/Lib.lean",
        &format!("{head}def s := r\"\\\"\nset_option «debug».skipKernelTC true in\ntheorem hidden : True := True.intro\n"),
    );
    copy.write(
        "Atk/UsesLib.lean",
        "prelude\nimport «Atk».Lib\ntheorem uses : True := hidden\n",
    );
    // Built in the workspace, as an agent's checkpoint would be.
    let saved = mcp.call(
        "lean_save",
        json!({ "workspace": ws(&root), "path": "Atk/Lib.lean" }),
    );
    assert_eq!(saved["written"], true, "{saved}");
    let v = sync(&mut mcp, &root, "Atk/UsesLib.lean");
    let r = verify(&mut mcp, &root, "Atk/UsesLib.lean", v, named("uses"));
    assert_eq!(r["certified"], false, "{r}");
    assert_eq!(reasons(&r), ["hatch"], "{r}");
    assert!(
        r["hatches"]
            .as_array()
            .unwrap()
            .iter()
            .any(|h| h["path"] == "Atk/Lib.lean"
                && h["text"] == "set_option «debug».skipKernelTC true"),
        "{r}"
    );
    let modules: Vec<&str> = r["provenance"]["imports"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["module"].as_str().unwrap())
        .collect();
    assert_eq!(modules, ["Fix.Basic", "Atk.Lib"], "{r}");
}

/// `«..»` components and a link out of the root.
#[test]
fn dots_and_links_out_of_the_root_are_refused() {
    let copy = TempWorkspace::copy("basic");
    let root = copy.root_str();
    let head = "prelude\nimport Fix.Basic\n";
    let mut mcp = spawn();
    let named = |name: &str| json!({ "declarations": [{ "name": name }] });
    // `«..»` components and a link out of the root are refused.
    let outside = common::lean::TempDir::new("verify-outside");
    std::fs::write(
        outside.path().join("Secret.lean"),
        "prelude\ntheorem s : True := True.intro\n",
    )
    .unwrap();
    std::fs::create_dir_all(copy.root().join("Atk")).unwrap();
    std::os::unix::fs::symlink(
        outside.path().join("Secret.lean"),
        copy.root().join("Atk/Link.lean"),
    )
    .unwrap();
    for (file, import) in [
        ("Atk/Dots.lean", "«..».«..».x"),
        ("Atk/ViaLink.lean", "Atk.Link"),
    ] {
        copy.write(
            file,
            &format!("{head}import {import}\ntheorem t : True := True.intro\n"),
        );
        let v = sync(&mut mcp, &root, file);
        let r = verify(&mut mcp, &root, file, v, named("t"));
        assert_eq!(r["certified"], false, "{r}");
        assert_eq!(r["tier"], "none", "{r}");
        assert_eq!(reasons(&r), ["import_refused"], "{r}");
        let detail = r["failures"][0]["detail"].as_str().unwrap();
        assert!(detail.contains("refused"), "{detail}");
        assert!(
            !r.to_string()
                .contains(&sha256sum(&outside.path().join("Secret.lean"))),
            "nothing of the file outside is revealed: {r}"
        );
    }
}

/// `theorem «x» … := sorry` and a Prop-valued `def`, and a huge
/// `declarations` list.
#[test]
fn a_verify_without_names_covers_every_declaration_and_names_are_capped() {
    let copy = TempWorkspace::copy("basic");
    let root = copy.root_str();
    let head = "prelude\nimport Fix.Basic\n";
    let mut mcp = spawn();
    // A guillemet-named theorem and a Prop-valued `def`, both `sorry`, next
    // to a clean theorem: a verify without names covers them.
    copy.write(
        "Atk/Hidden.lean",
        &format!("{head}theorem ok : True := True.intro\ntheorem «x» : Eq Fix.one Fix.two := sorry\ndef p : Prop := Eq Fix.one Fix.two\ndef q : p := sorry\n"),
    );
    let v = sync(&mut mcp, &root, "Atk/Hidden.lean");
    let r = verify(&mut mcp, &root, "Atk/Hidden.lean", v, json!({}));
    let names: Vec<&str> = r["declarations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["ok", "x", "p", "q"], "{r}");
    assert_eq!(declaration(&r, "x")["axioms"], json!(["sorryAx"]), "{r}");
    assert_eq!(declaration(&r, "q")["axioms"], json!(["sorryAx"]), "{r}");
    assert_eq!(r["certified"], false, "{r}");

    // `declarations` is capped.
    let many: Vec<Value> = (0..65)
        .map(|i| json!({ "name": format!("d{i}") }))
        .collect();
    let e = mcp.call_err(
        "lean_verify",
        json!({ "workspace": ws(&root), "path": "Atk/Hidden.lean", "version": v, "declarations": many }),
    );
    assert_eq!(e["code"], "invalidParams", "{e}");
    assert!(e["message"].as_str().unwrap().contains("64"), "{e}");
}

/// The stale dependency, done as an ordinary agent would: `lean_save` B,
/// `lean_save` A (proved against B), change B, `lean_save` B again. A's
/// `.olean` still holds a proof checked against the old B, and C, which
/// imports A, loads it with the new B's: Lean's editor view of C has no
/// error. The verdict comes from a fresh build of all three, which fails.
#[test]
fn a_proof_against_an_old_dependency_is_not_certified() {
    let copy = TempWorkspace::copy("basic");
    let root = copy.root_str();
    let mut mcp = spawn();
    let doc = |path: &str| json!({ "workspace": ws(&root), "path": path });
    copy.write(
        "Dep/B.lean",
        "prelude\nimport Fix.Basic\ndef Dep.f : Fix.N := Fix.one\n",
    );
    let saved = mcp.call("lean_save", doc("Dep/B.lean"));
    assert_eq!(saved["written"], true, "{saved}");
    copy.write(
        "Dep/A.lean",
        "prelude\nimport Dep.B\ntheorem Dep.a_thm : Eq Dep.f Fix.one := Eq.refl Fix.one\n",
    );
    let saved = mcp.call("lean_save", doc("Dep/A.lean"));
    assert_eq!(saved["written"], true, "{saved}");
    copy.write(
        "Dep/C.lean",
        "prelude\nimport Dep.A\ntheorem Dep.c : Eq Dep.f Fix.one := Dep.a_thm\n",
    );
    let v = sync(&mut mcp, &root, "Dep/C.lean");
    let r = verify(&mut mcp, &root, "Dep/C.lean", v, json!({}));
    assert_eq!(r["certified"], true, "the honest state certifies: {r}");
    let r = verify(&mut mcp, &root, "Dep/C.lean", v, json!({}));
    assert_eq!(r["certified"], true, "{r}");
    assert_eq!(
        r["provenance"]["cached"], true,
        "a repeat is answered again: {r}"
    );

    copy.write(
        "Dep/B.lean",
        "prelude\nimport Fix.Basic\ndef Dep.f : Fix.N := Fix.two\n",
    );
    let saved = mcp.call("lean_save", doc("Dep/B.lean"));
    assert_eq!(saved["written"], true, "{saved}");
    let s = mcp.call("lean_sync", doc("Dep/C.lean"));
    assert_eq!(
        s["diagnostics"]["counts"]["error"], 0,
        "C itself has no error: {s}"
    );
    let v = s["version"].as_u64().unwrap();
    // The very request the cache answered: B's new text is a new key.
    let r = verify(&mut mcp, &root, "Dep/C.lean", v, json!({}));
    assert_eq!(r["certified"], false, "{r}");
    assert!(r["provenance"].get("cached").is_none(), "{r}");
    assert_eq!(reasons(&r), ["build_failed"], "{r}");
    let v = s["version"].as_u64().unwrap();
    let r = verify(
        &mut mcp,
        &root,
        "Dep/C.lean",
        v,
        json!({ "declarations": [{ "name": "Dep.c" }, { "name": "Dep.a_thm" }] }),
    );
    assert_eq!(r["certified"], false, "{r}");
    assert_eq!(reasons(&r), ["build_failed"], "{r}");
    assert!(
        r["failures"][0]["detail"]
            .as_str()
            .unwrap()
            .starts_with("Dep.A does not compile"),
        "{r}"
    );
    assert_eq!(r["tier"], "none", "{r}");
}

/// A copy of the test toolchain whose own library (`lib/lean`) holds a
/// compiled prelude module declaring `propext`, as Lean's `Init` does: the
/// allowed axiom counts when it is that declaration. A stand-in
/// `leanchecker` in the copy's `bin/` (the test toolchain ships none) checks
/// that the replay tier runs it on every workspace module of the fresh
/// build, and that a failing replay fails the verdict.
struct Toolchain {
    dir: common::lean::TempDir,
}

impl Toolchain {
    fn new() -> Toolchain {
        let dir = common::lean::TempDir::new("verify-toolchain");
        let d = dir.path();
        std::fs::create_dir_all(d.join("bin")).unwrap();
        std::fs::create_dir_all(d.join("lib/lean")).unwrap();
        let real = Path::new(&lean().server_env()[0].1).to_path_buf();
        std::fs::copy(&real, d.join("bin/lean")).unwrap();
        let lib = real.parent().unwrap().join("../lib/lean/libleanshared.so");
        std::os::unix::fs::symlink(
            lib.canonicalize().unwrap(),
            d.join("lib/lean/libleanshared.so"),
        )
        .unwrap();
        std::fs::write(
            d.join("TcBase.lean"),
            "prelude\ninductive True : Prop where\n  | intro : True\ninductive Eq {α : Sort u} : α → α → Prop where\n  | refl (a : α) : Eq a a\naxiom propext {a b : Prop} (ab : a → b) (ba : b → a) : Eq a b\n",
        )
        .unwrap();
        let out = Command::new(d.join("bin/lean"))
            .args(["-o", "lib/lean/TcBase.olean", "TcBase.lean"])
            .current_dir(d)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        Toolchain { dir }
    }

    fn lean(&self) -> String {
        self.dir
            .path()
            .join("bin/lean")
            .to_string_lossy()
            .into_owned()
    }

    /// A `leanchecker` that checks each module's `.olean` is on its
    /// `LEAN_PATH`, records its arguments, and exits with `status`.
    fn checker(&self, status: i32) {
        let script = format!(
            "#!/bin/sh\necho \"$@\" > \"{}/replayed\"\nfor m in \"$@\"; do test -f \"$LEAN_PATH/$(echo $m | tr . /).olean\" || exit 3; done\nexit {status}\n",
            self.dir.path().display()
        );
        let path = self.dir.path().join("bin/leanchecker");
        std::fs::write(&path, script).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
}

#[test]
fn the_toolchains_own_axiom_is_allowed_and_a_replay_is_a_tier() {
    let tc = Toolchain::new();
    let w = common::lean::TempDir::new("verify-tc-ws");
    let root = w.path().to_string_lossy().into_owned();
    std::fs::create_dir_all(w.path().join("Tc")).unwrap();
    std::fs::write(
        w.path().join("lean-toolchain"),
        "leanprover/lean4:v4.35.0\n",
    )
    .unwrap();
    std::fs::write(
        w.path().join("Tc/Lemma.lean"),
        "prelude\nimport TcBase\ntheorem Tc.lemma : Eq True True := propext (fun h => h) (fun h => h)\n",
    )
    .unwrap();
    std::fs::write(
        w.path().join("Tc/Good.lean"),
        "prelude\nimport Tc.Lemma\ntheorem Tc.good : Eq True True := Tc.lemma\n",
    )
    .unwrap();
    let mut mcp = Mcp::start(
        Era::Modern,
        Spawn::default().envs(vec![("LEAN_BEAM_LEAN".to_string(), tc.lean())]),
    );
    let v = sync(&mut mcp, &root, "Tc/Good.lean");
    let r = verify(&mut mcp, &root, "Tc/Good.lean", v, json!({}));
    assert_eq!(
        declaration(&r, "Tc.good")["axioms"],
        json!(["propext"]),
        "{r}"
    );
    assert_eq!(r["certified"], true, "{r}");
    assert_eq!(r["tier"], "rebuilt", "{r}");

    tc.checker(0);
    let r = verify(&mut mcp, &root, "Tc/Good.lean", v, json!({}));
    assert_eq!(r["certified"], true, "{r}");
    assert_eq!(r["tier"], "replayed", "{r}");
    let replayed = std::fs::read_to_string(tc.dir.path().join("replayed")).unwrap();
    assert_eq!(replayed.trim(), "Tc.Lemma Tc.Good");

    tc.checker(1);
    let r = verify(&mut mcp, &root, "Tc/Good.lean", v, json!({}));
    assert_eq!(r["certified"], false, "{r}");
    assert_eq!(r["tier"], "rebuilt", "{r}");
    assert_eq!(reasons(&r), ["check_failed"], "{r}");
}

/// Lean 4.35's own hashes, from its runtime (`libleanshared.so` of the test
/// toolchain, loaded into the test): what Lake computes, independent of the
/// server's code.
mod lean_runtime {
    use std::ffi::CString;
    use std::sync::OnceLock;

    type Hash1 = unsafe extern "C" fn(*const u8) -> u64;
    type Mix = unsafe extern "C" fn(u64, u64) -> u64;

    struct Runtime {
        string_hash: Hash1,
        byte_array_hash: Hash1,
        mix: Mix,
    }

    fn runtime() -> &'static Runtime {
        static R: OnceLock<Runtime> = OnceLock::new();
        R.get_or_init(|| {
            let lib = super::lean()
                .lean
                .parent()
                .unwrap()
                .join("../lib/lean/libleanshared.so");
            let path = CString::new(lib.to_string_lossy().as_bytes()).unwrap();
            // SAFETY: a C library loaded once and never unloaded; the three
            // symbols are plain functions of Lean's runtime with these types
            // (lean.h).
            unsafe {
                let h = libc::dlopen(path.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL);
                assert!(!h.is_null(), "dlopen {}", lib.display());
                let sym = |name: &str| {
                    let n = CString::new(name).unwrap();
                    let p = libc::dlsym(h, n.as_ptr());
                    assert!(!p.is_null(), "{name} in libleanshared.so");
                    p
                };
                Runtime {
                    string_hash: std::mem::transmute::<*mut libc::c_void, Hash1>(sym(
                        "lean_string_hash",
                    )),
                    byte_array_hash: std::mem::transmute::<*mut libc::c_void, Hash1>(sym(
                        "lean_byte_array_hash",
                    )),
                    mix: std::mem::transmute::<*mut libc::c_void, Mix>(sym("lean_uint64_mix_hash")),
                }
            }
        })
    }

    /// A Lean object in 8-byte words: the header (rc, size, other, tag),
    /// then `fields`, then the bytes.
    fn object(tag: u8, fields: &[u64], bytes: &[u8]) -> Vec<u64> {
        let header = 1u64 | (u64::from(tag) << 56);
        let mut words = vec![header];
        words.extend_from_slice(fields);
        let mut data = bytes.to_vec();
        data.resize(bytes.len().div_ceil(8) * 8 + 8, 0);
        words.extend(
            data.chunks(8)
                .map(|c| u64::from_le_bytes(c.try_into().unwrap())),
        );
        words
    }

    /// `String.hash`: a string object (size with the NUL, capacity, length).
    pub fn string_hash(text: &str) -> u64 {
        let n = text.len() as u64 + 1;
        let o = object(249, &[n, n, text.chars().count() as u64], text.as_bytes());
        // SAFETY: a well-formed string object that outlives the call.
        unsafe { (runtime().string_hash)(o.as_ptr().cast()) }
    }

    /// `ByteArray.hash`: a scalar array object (size, capacity).
    pub fn bytes_hash(bytes: &[u8]) -> u64 {
        let n = bytes.len() as u64;
        let o = object(248, &[n, n], bytes);
        // SAFETY: a well-formed scalar array object that outlives the call.
        unsafe { (runtime().byte_array_hash)(o.as_ptr().cast()) }
    }

    pub fn mix(h: u64, k: u64) -> u64 {
        // SAFETY: a pure function of two integers.
        unsafe { (runtime().mix)(h, k) }
    }

    /// Lake's `Hash.ofText`: `\r\n` as `\n`, then `mixHash 1723 (hash s)`.
    pub fn text_hash(text: &str) -> u64 {
        mix(1723, string_hash(&text.replace("\r\n", "\n")))
    }
}

/// A Lake package in `.lake/packages/pkg` of a workspace, built with the test
/// toolchain, with `.olean.hash` and `.trace` files written as Lake 4.35
/// writes them (hashes from Lean's runtime).
struct Package {
    root: std::path::PathBuf,
}

impl Package {
    const DIR: &'static str = ".lake/packages/pkg";

    fn lib(&self) -> std::path::PathBuf {
        self.root.join(Self::DIR).join(".lake/build/lib/lean")
    }

    /// Compile `Pkg/<name>.lean` and write its `.olean.hash` and `.trace`:
    /// the source as Lake captions it (`./.lake/packages/pkg/./Pkg/X.lean`),
    /// each import's `.olean` leaf, Lean's and the options' leaves.
    fn build(&self, name: &str, imports: &[&str]) {
        let lib = self.lib();
        std::fs::create_dir_all(lib.join("Pkg")).unwrap();
        let src = format!("Pkg/{name}.lean");
        let out = Command::new(&lean().lean)
            .current_dir(self.root.join(Self::DIR))
            .env("LEAN_PATH", &lib)
            .arg("-o")
            .arg(lib.join(format!("Pkg/{name}.olean")))
            .arg("-i")
            .arg(lib.join(format!("Pkg/{name}.ilean")))
            .arg(&src)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        let olean = std::fs::read(lib.join(format!("Pkg/{name}.olean"))).unwrap();
        self.write_hash(name, lean_runtime::bytes_hash(&olean));
        let text = std::fs::read_to_string(self.root.join(Self::DIR).join(&src)).unwrap();
        self.write_trace(name, lean_runtime::text_hash(&text), imports);
    }

    fn write_hash(&self, name: &str, hash: u64) {
        std::fs::write(
            self.lib().join(format!("Pkg/{name}.olean.hash")),
            format!("{hash:016x}"),
        )
        .unwrap();
    }

    fn write_trace(&self, name: &str, source_hash: u64, imports: &[&str]) {
        let hex = |h: u64| format!("{h:016x}");
        let mut dep = lean_runtime::mix(1723, source_hash);
        let imported: Vec<Value> = imports
            .iter()
            .map(|i| {
                let olean = format!("./{}/.lake/build/lib/lean/Pkg/{i}.olean", Self::DIR);
                let h = std::fs::read_to_string(self.lib().join(format!("Pkg/{i}.olean.hash")))
                    .unwrap();
                let h = u64::from_str_radix(h.trim(), 16).unwrap();
                dep = lean_runtime::mix(dep, h);
                json!([format!("Pkg.{i}"), [[olean, hex(h)]]])
            })
            .collect();
        let lean_hash = lean_runtime::mix(1723, lean_runtime::string_hash("4.35.0"));
        dep = lean_runtime::mix(dep, lean_hash);
        let trace = json!({
            "schemaVersion": "2025-09-10",
            "depHash": hex(dep),
            "inputs": [
                [format!("./{}/./Pkg/{name}.lean", Self::DIR), hex(source_hash)],
                [format!("Pkg.{name}:setup"), imported],
                ["Lean 4.35.0", hex(lean_hash)],
                ["options", []],
            ],
            "outputs": { "o": [hex(source_hash)] },
            "log": [],
            "synthetic": false,
        });
        std::fs::write(
            self.lib().join(format!("Pkg/{name}.trace")),
            serde_json::to_string_pretty(&trace).unwrap(),
        )
        .unwrap();
    }

    fn write_source(&self, name: &str, text: &str) {
        let dir = self.root.join(Self::DIR).join("Pkg");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(format!("{name}.lean")), text).unwrap();
    }
}

fn failures_of<'a>(r: &'a Value, reason: &str) -> Vec<&'a str> {
    r["failures"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["reason"] == reason)
        .map(|f| f["detail"].as_str().unwrap())
        .collect()
}

/// Issue 24: a package module is taken from its build only while what Lake
/// recorded of it (its source's hash, its imports' `.olean` hashes) still
/// holds; else the verdict names it stale, and without a trace it is refused.
#[test]
fn a_package_module_is_used_only_while_its_lake_trace_matches_its_sources() {
    let w = common::lean::TempDir::new("verify-pkg-ws");
    let root = w.path().to_string_lossy().into_owned();
    std::fs::write(
        w.path().join("lean-toolchain"),
        "leanprover/lean4:v4.35.0\n",
    )
    .unwrap();
    let pkg = Package {
        root: w.path().to_path_buf(),
    };
    pkg.write_source(
        "Base",
        "prelude\r\ninductive Pkg.PTrue : Prop where\r\n  | intro\r\n",
    );
    pkg.write_source(
        "Lemma",
        "prelude\nimport Pkg.Base\ntheorem Pkg.lemma : Pkg.PTrue := Pkg.PTrue.intro\n",
    );
    pkg.build("Base", &[]);
    pkg.build("Lemma", &["Base"]);
    std::fs::create_dir_all(w.path().join("Use")).unwrap();
    std::fs::write(
        w.path().join("Use/Main.lean"),
        "prelude\nimport Pkg.Lemma\ntheorem Use.t : Pkg.PTrue := Pkg.lemma\n",
    )
    .unwrap();
    let mut mcp = spawn();
    let path = "Use/Main.lean";
    let v = sync(&mut mcp, &root, path);

    // Everything Lake recorded holds (Base's source has CRLF line ends,
    // which Lake hashes as LF): certified from the package's .oleans.
    let r = verify(&mut mcp, &root, path, v, json!({}));
    assert_eq!(r["certified"], true, "{r}");
    assert_eq!(r["tier"], "rebuilt", "{r}");
    let base_text = "prelude\ninductive Pkg.PTrue : Prop where\n  | intro\n";
    assert_eq!(
        r["provenance"]["packages"],
        json!([
            {
                "module": "Pkg.Base",
                "path": ".lake/packages/pkg/Pkg/Base.lean",
                "olean": ".lake/packages/pkg/.lake/build/lib/lean/Pkg/Base.olean",
                "lake_hash": format!("{:016x}", lean_runtime::text_hash(base_text)),
            },
            {
                "module": "Pkg.Lemma",
                "path": ".lake/packages/pkg/Pkg/Lemma.lean",
                "olean": ".lake/packages/pkg/.lake/build/lib/lean/Pkg/Lemma.olean",
                "lake_hash": format!("{:016x}", lean_runtime::text_hash(&std::fs::read_to_string(w.path().join(".lake/packages/pkg/Pkg/Lemma.lean")).unwrap())),
            },
        ]),
        "{r}"
    );

    // The package's source edited after Lake built it (a false statement
    // the stale .olean does not hold): stale, named; nothing is built.
    let lemma = w.path().join(".lake/packages/pkg/Pkg/Lemma.lean");
    let honest = std::fs::read_to_string(&lemma).unwrap();
    pkg.write_source(
        "Lemma",
        "prelude\nimport Pkg.Base\ntheorem Pkg.lemma : Pkg.PTrue := sorry\n",
    );
    let r = verify(&mut mcp, &root, path, v, json!({}));
    assert_eq!(r["certified"], false, "{r}");
    assert_eq!(r["tier"], "none", "{r}");
    assert_eq!(reasons(&r), ["package_stale"], "{r}");
    let stale = failures_of(&r, "package_stale");
    assert!(
        stale[0].starts_with("Pkg.Lemma (.lake/packages/pkg/.lake/build/lib/lean/Pkg/Lemma.olean) is stale: its source .lake/packages/pkg/Pkg/Lemma.lean changed"),
        "{r}"
    );
    std::fs::write(&lemma, &honest).unwrap();

    // An import rebuilt since (Base's .olean.hash is Lake's record of the
    // .olean now): the importer Lemma is stale, Base is not.
    let base_olean = pkg.lib().join("Pkg/Base.olean");
    let real = lean_runtime::bytes_hash(&std::fs::read(&base_olean).unwrap());
    pkg.write_hash("Base", real ^ 1);
    let r = verify(&mut mcp, &root, path, v, json!({}));
    assert_eq!(reasons(&r), ["package_stale"], "{r}");
    let stale = failures_of(&r, "package_stale");
    assert_eq!(stale.len(), 1, "{r}");
    assert!(
        stale[0].starts_with("Pkg.Lemma ")
            && stale[0].contains("built against ./.lake/packages/pkg/.lake/build/lib/lean/Pkg/Base.olean, which changed since"),
        "{r}"
    );
    pkg.write_hash("Base", real);

    // No trace: refused, saying what is missing; an old-format trace (a bare
    // hash) records no inputs: refused too.
    let trace = pkg.lib().join("Pkg/Lemma.trace");
    let kept = std::fs::read(&trace).unwrap();
    std::fs::remove_file(&trace).unwrap();
    let r = verify(&mut mcp, &root, path, v, json!({}));
    assert_eq!(r["certified"], false, "{r}");
    assert_eq!(reasons(&r), ["package_unchecked"], "{r}");
    assert!(
        failures_of(&r, "package_unchecked")[0].contains(
            "has no readable Lake trace .lake/packages/pkg/.lake/build/lib/lean/Pkg/Lemma.trace"
        ),
        "{r}"
    );
    std::fs::write(&trace, "1234567").unwrap();
    let r = verify(&mut mcp, &root, path, v, json!({}));
    assert_eq!(reasons(&r), ["package_unchecked"], "{r}");
    assert!(
        failures_of(&r, "package_unchecked")[0].contains("its inputs are not recorded"),
        "{r}"
    );
    std::fs::write(&trace, kept).unwrap();
    let r = verify(&mut mcp, &root, path, v, json!({}));
    assert_eq!(r["certified"], true, "restored: {r}");
}

/// Issue 24: the fresh build elaborates as Lake's does: the lakefile's
/// `leanOptions` reach it (and its cache key: the module cached without them
/// is not reused), an option that lets declarations skip the kernel is a
/// hatch, and an argument that is not an option is refused.
#[test]
fn the_lakefiles_options_reach_the_fresh_build_and_a_kernel_bypass_is_refused() {
    let copy = TempWorkspace::copy("basic");
    let root = copy.root_str();
    let lakefile = copy.read("lakefile.toml");
    let path = "Opt/Main.lean";
    copy.write(
        path,
        "prelude\nimport Fix.Basic\ntheorem Opt.t {a : α} : Eq a a := Eq.refl a\n",
    );
    let mut mcp = spawn();
    let v = sync(&mut mcp, &root, path);
    let r = verify(&mut mcp, &root, path, v, json!({}));
    assert_eq!(r["certified"], true, "autoImplicit is on by default: {r}");

    copy.write(
        "lakefile.toml",
        &format!("{lakefile}\n[leanOptions]\nautoImplicit = false\n"),
    );
    let r = verify(&mut mcp, &root, path, v, json!({}));
    assert_eq!(r["certified"], false, "{r}");
    assert_eq!(reasons(&r), ["build_failed"], "{r}");
    let detail = failures_of(&r, "build_failed")[0];
    assert!(
        detail.starts_with("Opt.Main does not compile") && detail.contains("α"),
        "{r}"
    );

    for (setting, reason, says) in [
        (
            "[leanOptions]\ndebug.skipKernelTC = true\n",
            "hatch",
            "lakefile.toml sets debug.skipKernelTC=true: declarations would skip the kernel's check",
        ),
        (
            "[leanOptions]\n\"debug.skipKernelTC\" = \"yes\"\n",
            "hatch",
            "lakefile.toml sets debug.skipKernelTC=yes: declarations would skip the kernel's check",
        ),
        (
            "moreLeanArgs = [\"--load-dynlib=evil.so\"]\n",
            "build_failed",
            "lakefile.toml passes \"--load-dynlib=evil.so\" in moreLeanArgs: a fresh build passes only `-Dname=value` options",
        ),
    ] {
        copy.write("lakefile.toml", &format!("{setting}{lakefile}"));
        let r = verify(&mut mcp, &root, path, v, json!({}));
        assert_eq!(r["certified"], false, "{setting}: {r}");
        assert_eq!(r["tier"], "none", "not built: {r}");
        assert_eq!(failures_of(&r, reason), [says], "{r}");
    }
}

/// Issue 24: an unchanged re-verify is answered from the verdict cache
/// (nothing built or run), and any change of its whole key misses: the
/// request, an imported source, the file itself; a failed build is never
/// kept.
#[test]
fn an_unchanged_reverify_is_cached_and_any_change_of_its_key_misses() {
    let copy = TempWorkspace::copy("basic");
    let root = copy.root_str();
    let path = "Ver/Good.lean";
    let mut mcp = spawn();
    let v = sync(&mut mcp, &root, path);
    let named = json!({ "declarations": [{ "name": "Ver.no_axioms" }] });
    let timed = |mcp: &mut Mcp, v: u64, extra: Value| {
        let t = std::time::Instant::now();
        let r = verify(mcp, &root, path, v, extra);
        (r, t.elapsed())
    };
    let (first, _) = timed(&mut mcp, v, named.clone());
    assert_eq!(first["certified"], true, "{first}");
    assert!(first["provenance"].get("cached").is_none(), "{first}");
    // The same request, nothing built (every module reused), checks run:
    // the figure the cache saves.
    let (other, checked) = timed(
        &mut mcp,
        v,
        json!({ "declarations": [{ "name": "Ver.no_axioms" }], "allowed_axioms": ["propext"] }),
    );
    assert!(
        other["provenance"].get("cached").is_none(),
        "another request: {other}"
    );
    assert_eq!(other["provenance"]["rebuilt"], 0, "{other}");
    let (again, cached) = timed(&mut mcp, v, named.clone());
    assert_eq!(again["provenance"]["cached"], true, "{again}");
    for field in ["certified", "tier", "failures", "declarations", "hatches"] {
        assert_eq!(again[field], first[field], "{field}: {again}");
    }
    assert_eq!(again["provenance"]["rebuilt"], 0, "{again}");
    eprintln!(
        "lean_verify unchanged: checks run {} ms, from the cache {} ms",
        checked.as_millis(),
        cached.as_millis()
    );

    // An imported source edited on disk (the file's version unchanged).
    let clean = copy.read("Ver/Clean.lean");
    copy.write(
        "Ver/Clean.lean",
        &format!("{clean}\ntheorem Ver.more : True := True.intro\n"),
    );
    let r = verify(&mut mcp, &root, path, v, named.clone());
    assert!(r["provenance"].get("cached").is_none(), "{r}");
    assert!(
        r["provenance"]["rebuilt"].as_u64().unwrap() >= 2,
        "Clean and Good: {r}"
    );
    // Broken: the verdict changes, and a failed build is not kept.
    copy.write(
        "Ver/Clean.lean",
        &format!("{clean}\ntheorem Ver.broken : True := nope\n"),
    );
    for _ in 0..2 {
        let r = verify(&mut mcp, &root, path, v, named.clone());
        assert_eq!(reasons(&r), ["build_failed"], "{r}");
        assert!(r["provenance"].get("cached").is_none(), "{r}");
    }
    copy.write("Ver/Clean.lean", &clean);
    let r = verify(&mut mcp, &root, path, v, named.clone());
    assert_eq!(r["provenance"]["cached"], true, "the first key again: {r}");

    // The file itself: a new version is a new key.
    let good = copy.read(path);
    copy.write(
        path,
        &format!("{good}\ntheorem Ver.late : True := True.intro\n"),
    );
    let v2 = sync(&mut mcp, &root, path);
    let r = verify(&mut mcp, &root, path, v2, named.clone());
    assert!(r["provenance"].get("cached").is_none(), "{r}");
    assert_eq!(r["certified"], true, "{r}");
}
