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
    Mcp::start(Era::Modern, Spawn::default().envs(lean().server_env()))
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

    // Named: no axioms, and an allowed one.
    let named =
        json!({ "declarations": [{ "name": "Ver.no_axioms" }, { "name": "Ver.uses_propext" }] });
    let r = verify(&mut mcp, &root, path, version, named.clone());
    assert_eq!(r["certified"], true, "{r}");
    assert_eq!(r["failures"], json!([]));
    assert_eq!(declaration(&r, "Ver.no_axioms")["axioms"], json!([]));
    assert_eq!(
        declaration(&r, "Ver.uses_propext")["axioms"],
        json!(["propext"])
    );
    // The scan: `sorry` in this file and the axiom of the imported module,
    // reported, neither failing by itself; `with_sorry` is no hit.
    assert_eq!(
        ver_hatches(&r),
        json!([
            { "kind": "sorry", "path": "Ver/Good.lean", "range": range(11, 66, 11, 71), "text": "sorry", "fails": false },
            { "kind": "axiom", "path": "Ver/Clean.lean", "range": range(8, 0, 8, 5), "text": "axiom", "fails": false },
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
    assert_eq!(modules, ["Ver.Clean", "Fix.Basic"], "{r}");
    assert_eq!(
        imports[0]["sha256"],
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
    assert_eq!(reasons(&r), ["sorry"], "{r}");

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
        ["reference_mismatch", "unknown_declaration"],
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
    assert_eq!(reasons(&r), ["axiom", "hatch"], "{r}");
    assert_eq!(
        ver_hatches(&r),
        json!([
            { "kind": "axiom", "path": "Ver/Hatch.lean", "range": range(9, 0, 9, 5), "text": "axiom", "fails": false },
            { "kind": "skip_kernel_tc", "path": "Ver/Hatch.lean", "range": range(11, 0, 11, 34), "text": "set_option debug.skipKernelTC true", "fails": true },
            { "kind": "axiom", "path": "Ver/Clean.lean", "range": range(8, 0, 8, 5), "text": "axiom", "fails": false },
        ]),
        "{r}"
    );

    // A source edited after its .olean was built: Lean still answers from
    // the old .olean, so the verdict cannot stand.
    let good = "Ver/Good.lean";
    let version = sync(&mut mcp, &root, good);
    let named = json!({ "declarations": [{ "name": "Ver.no_axioms" }] });
    let r = verify(&mut mcp, &root, good, version, named.clone());
    assert_eq!(r["certified"], true, "{r}");
    let clean = copy.read("Ver/Clean.lean");
    let olean = copy.root().join(".lake/build/lib/lean/Ver/Clean.olean");
    let built = std::fs::metadata(&olean).unwrap().modified().unwrap();
    copy.write("Ver/Clean.lean", &format!("{clean}\n-- edited\n"));
    let file = std::fs::File::options()
        .write(true)
        .open(copy.root().join("Ver/Clean.lean"))
        .unwrap();
    file.set_modified(built + std::time::Duration::from_secs(5))
        .unwrap();
    let r = verify(&mut mcp, &root, good, version, named);
    assert_eq!(r["certified"], false, "{r}");
    assert_eq!(reasons(&r), ["stale_olean"], "{r}");
}
