//! `lean_search` on the real server (issue 28): declarations of a workspace
//! with imports and of a Lake package found by name and by statement
//! pattern, the index kept fresh after edits (and by its watch where the
//! stamps cannot tell), its bound, cancellation, and
//! bad input answered with clear errors.

use crate::common;

use serde_json::{Value, json};

use common::lean::{TempWorkspace, lean};
use common::mcp::{CallOpts, Era, Mcp, Spawn, ws};

const PACKAGE: &str = "prelude\nimport Sec.Base\n\nnamespace Pkg\n\n/-- Flipping twice is the identity.\n\nA second paragraph. -/\ntheorem flip_flip_eq (b : Sec.Bit) : Eq (Sec.Bit.flip (Sec.Bit.flip b)) b := sorry\n\ntheorem eq_comm' {α : Sort u} {a b : α} (h : Eq a b) : Eq b a := h.symm\n\nend Pkg\n";

fn workspace() -> TempWorkspace {
    let ws = TempWorkspace::copy("second");
    ws.write(".lake/packages/pkg/Pkg/Lemmas.lean", PACKAGE);
    ws.write(
        ".lake/packages/pkg/lakefile.lean",
        "theorem not_a_module : True := trivial\n",
    );
    ws
}

fn search(mcp: &mut Mcp, root: &str, query: &str, limit: u64) -> Value {
    mcp.call(
        "lean_search",
        json!({"workspace": ws(root), "query": query, "limit": limit}),
    )
}

fn names(found: &Value) -> Vec<String> {
    found["hits"]
        .as_array()
        .unwrap_or_else(|| panic!("{found}"))
        .iter()
        .map(|h| h["name"].as_str().unwrap().to_string())
        .collect()
}

fn hit<'a>(found: &'a Value, name: &str) -> &'a Value {
    found["hits"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["name"] == name)
        .unwrap_or_else(|| panic!("{name} not in {found:#}"))
}

#[test]
fn finds_declarations_by_name_and_statement_across_modules_and_packages() {
    let tmp = workspace();
    let root = tmp.root_str();
    let mut mcp = Mcp::on_lean(Era::Modern, &[]);
    // The workspace's open file elaborates against its import as usual.
    let synced = mcp.call(
        "lean_sync",
        json!({"workspace": ws(&root), "path": "Sec/Main.lean"}),
    );
    assert_eq!(synced["version"], 1, "{synced}");

    // By name: `Bit.flip_flip` (namespace-qualified) and `flip_flip`.
    let found = search(&mut mcp, &root, "Bit.flip_flip", 10);
    assert_eq!(names(&found)[0], "Sec.Bit.flip_flip", "{found:#}");
    let base = hit(&found, "Sec.Bit.flip_flip");
    assert_eq!(base["kind"], "theorem");
    assert_eq!(base["module"], "Sec.Base");
    assert_eq!(base["path"], "Sec/Base.lean");
    assert_eq!(base["origin"], "workspace");
    assert_eq!(base["statement"], "(b : Bit) : Eq b.flip.flip b");
    assert_eq!(base["name_match"], "suffix");
    assert_eq!(base["range"]["start"], json!({"line": 111, "character": 0}));
    let found = search(&mut mcp, &root, "flip_flip", 10);
    assert_eq!(
        names(&found),
        ["Sec.Bit.flip_flip", "Pkg.flip_flip_eq"],
        "exact suffix first, the package's prefix match after: {found:#}"
    );
    let package = hit(&found, "Pkg.flip_flip_eq");
    assert_eq!(package["origin"], "package");
    assert_eq!(package["module"], "Pkg.Lemmas");
    assert_eq!(package["path"], ".lake/packages/pkg/Pkg/Lemmas.lean");
    assert_eq!(package["doc"], "Flipping twice is the identity.");
    assert_eq!(
        package["range"]["start"],
        json!({"line": 5, "character": 0})
    );
    assert_eq!(package["range"]["end"], json!({"line": 8, "character": 82}));
    // A package's lakefile is no module.
    assert_eq!(search(&mut mcp, &root, "not_a_module", 10)["matched"], 0);

    // By statement: symmetry in two modules (`?a` holes must agree), as
    // written: a hypothesis binder is not an arrow.
    let sym = search(&mut mcp, &root, "Eq ?a ?b → Eq ?b ?a", 10);
    assert_eq!(
        sym["matched"], 0,
        "written as a hypothesis binder, not an arrow: {sym:#}"
    );
    let sym = search(&mut mcp, &root, "(h : Eq ?a ?b) : Eq ?b ?a", 10);
    let mut found = names(&sym);
    found.sort();
    assert_eq!(found, ["Eq.symm", "Pkg.eq_comm'"], "{sym:#}");
    let twice = search(&mut mcp, &root, "⊢ Eq (_ (_ ?b)) ?b", 10);
    assert_eq!(
        names(&twice),
        ["Sec.flip_twice", "Pkg.flip_flip_eq"],
        "{twice:#}"
    );
    assert_eq!(hit(&twice, "Sec.flip_twice")["module"], "Sec.Main");
    assert_eq!(hit(&twice, "Sec.flip_twice")["name_match"], Value::Null);
    // A name part and a pattern together.
    let both = search(&mut mcp, &root, "\"flip\", Eq _ _", 10);
    assert!(
        names(&both).contains(&"Pkg.flip_flip_eq".to_string()),
        "{both:#}"
    );
    assert!(!names(&both).contains(&"Eq.symm".to_string()), "{both:#}");

    // `limit` caps the hits and `more` counts the rest.
    let all = search(&mut mcp, &root, "flip", 200);
    let matched = all["matched"].as_u64().unwrap();
    assert!(matched >= 5, "{all:#}");
    let one = search(&mut mcp, &root, "flip", 1);
    assert_eq!(one["hits"].as_array().unwrap().len(), 1);
    assert_eq!(
        (one["matched"].as_u64(), one["more"].as_u64()),
        (Some(matched), Some(matched - 1))
    );
    assert_eq!(one["hits"][0], all["hits"][0]);
    assert_eq!(one["index"]["complete"], true);
    assert_eq!(
        one["index"]["refreshed_files"], 0,
        "nothing changed: nothing read again"
    );
}

#[test]
fn the_index_follows_edits_new_files_and_deletions() {
    let tmp = workspace();
    let root = tmp.root_str();
    let mut mcp = Mcp::on_lean(Era::Modern, &[]);
    let first = search(&mut mcp, &root, "brand_new", 10);
    assert_eq!(first["matched"], 0);
    let files = first["index"]["files"].as_u64().unwrap();

    tmp.write(
        "Sec/New.lean",
        "prelude\nimport Sec.Base\ntheorem brand_new (b : Sec.Bit) : Eq b b := Eq.refl b\n",
    );
    let added = search(&mut mcp, &root, "brand_new", 10);
    assert_eq!(names(&added), ["brand_new"], "{added:#}");
    assert_eq!(added["index"]["refreshed_files"], 1);
    assert_eq!(added["index"]["files"].as_u64(), Some(files + 1));

    // An edit of the statement (the file's size changes too).
    tmp.write(
        "Sec/New.lean",
        "prelude\nimport Sec.Base\ntheorem brand_new (b c : Sec.Bit) : Eq c c := Eq.refl c\n",
    );
    let edited = search(&mut mcp, &root, "brand_new", 10);
    assert_eq!(
        edited["hits"][0]["statement"], "(b c : Sec.Bit) : Eq c c",
        "{edited:#}"
    );
    assert_eq!(edited["index"]["refreshed_files"], 1);
    // A package updated in place.
    tmp.write(
        ".lake/packages/pkg/Pkg/Lemmas.lean",
        &PACKAGE.replace("flip_flip_eq", "flip_flip_id"),
    );
    let package = search(&mut mcp, &root, "flip_flip_", 10);
    assert_eq!(names(&package), ["Pkg.flip_flip_id"], "{package:#}");

    std::fs::remove_file(tmp.root().join("Sec/New.lean")).unwrap();
    let gone = search(&mut mcp, &root, "brand_new", 10);
    assert_eq!(gone["matched"], 0, "{gone:#}");
    assert_eq!(gone["index"]["files"].as_u64(), Some(files));
}

/// The watch (inotify) reports what the stamps cannot: a rewrite that keeps
/// the file's size, inode and modification time is read again at the next
/// query, and listing nothing, an unchanged query reads nothing. A new
/// directory (which the watch does not describe) makes the query list the
/// trees again, and its file is found; a file added to it later is seen by
/// the watch the listing put on it.
#[test]
fn the_watch_sees_what_the_stamps_cannot() {
    let tmp = workspace();
    let root = tmp.root_str();
    let mut mcp = Mcp::on_lean(Era::Modern, &[]);
    let path = tmp.root().join(".lake/packages/pkg/Pkg/Lemmas.lean");
    let first = search(&mut mcp, &root, "flip_flip_", 10);
    assert_eq!(names(&first), ["Pkg.flip_flip_eq"], "{first:#}");
    let quiet = search(&mut mcp, &root, "flip_flip_", 10);
    assert_eq!(quiet["index"]["refreshed_files"], 0, "{quiet:#}");

    // Same length, same inode (written in place), the old modification time.
    let modified = std::fs::metadata(&path).unwrap().modified().unwrap();
    let same_size = PACKAGE.replace("flip_flip_eq", "flip_flip_id");
    assert_eq!(same_size.len(), PACKAGE.len());
    std::fs::write(&path, &same_size).unwrap();
    std::fs::File::options()
        .write(true)
        .open(&path)
        .unwrap()
        .set_modified(modified)
        .unwrap();
    let renamed = search(&mut mcp, &root, "flip_flip_", 10);
    assert_eq!(names(&renamed), ["Pkg.flip_flip_id"], "{renamed:#}");
    assert_eq!(renamed["index"]["refreshed_files"], 1, "{renamed:#}");

    // A new directory and a file in it.
    tmp.write(
        "Sec/Deep/New.lean",
        "prelude\ntheorem deep_new (n : Nat) : Eq n n := Eq.refl n\n",
    );
    let deep = search(&mut mcp, &root, "deep_new", 10);
    assert_eq!(names(&deep), ["deep_new"], "{deep:#}");
    assert_eq!(deep["hits"][0]["module"], "Sec.Deep.New", "{deep:#}");
    // And a file added to that directory afterwards: its watch is in place.
    tmp.write(
        "Sec/Deep/Other.lean",
        "prelude\ntheorem deep_other (n : Nat) : Eq n n := Eq.refl n\n",
    );
    let other = search(&mut mcp, &root, "deep_other", 10);
    assert_eq!(names(&other), ["deep_other"], "{other:#}");
    assert_eq!(other["index"]["refreshed_files"], 1, "{other:#}");
}

#[test]
fn past_its_bound_the_index_says_what_it_left_out() {
    let tmp = workspace();
    let root = tmp.root_str();
    let mut mcp = Mcp::start(
        Era::Modern,
        Spawn::default()
            .envs(lean().server_env())
            .env("LEAN_BEAM_SEARCH_MAX_DECLARATIONS", "30"),
    );
    let found = search(&mut mcp, &root, "flip", 10);
    assert_eq!(found["index"]["complete"], false, "{found:#}");
    assert!(found["index"]["declarations"].as_u64().unwrap() <= 30);
    let left_out = found["index"]["left_out"].as_str().unwrap();
    assert!(
        left_out.contains("past the bound of 30 declarations (LEAN_BEAM_SEARCH_MAX_DECLARATIONS)"),
        "{left_out}"
    );
}

#[test]
fn bad_queries_and_limits_get_clear_errors_and_the_server_goes_on() {
    let tmp = workspace();
    let root = tmp.root_str();
    let mut mcp = Mcp::on_lean(Era::Modern, &[]);
    let cases = [
        (
            json!({"workspace": ws(&root), "query": "  "}),
            "the query is empty",
        ),
        (
            json!({"workspace": ws(&root), "query": "⊢ Eq (a b"}),
            "`(` is not closed",
        ),
        (
            json!({"workspace": ws(&root), "query": "a,,b"}),
            "empty part",
        ),
        (
            json!({"workspace": ws(&root), "query": "x", "limit": 500}),
            "give 1 to 200",
        ),
    ];
    for (args, says) in cases {
        let e = mcp.call_err("lean_search", args.clone());
        assert_eq!(e["code"], "invalidInput", "{args}: {e:#}");
        let message = e["message"].as_str().unwrap_or("");
        assert!(message.contains(says), "{args}: `{says}` not in {e:#}");
    }
    // The schema's own bound.
    let e = mcp.call_err(
        "lean_search",
        json!({"workspace": ws(&root), "query": "x", "limit": 0}),
    );
    assert!(e["message"].as_str().unwrap().contains("limit"), "{e:#}");
    // No such workspace.
    let e = mcp.call_err(
        "lean_search",
        json!({"workspace": ws("/nonexistent/ws"), "query": "x"}),
    );
    assert!(
        e["message"].as_str().unwrap().contains("/nonexistent/ws"),
        "{e:#}"
    );
    // Still serving.
    assert_eq!(
        names(&search(&mut mcp, &root, "Bit.flip", 1)),
        ["Sec.Bit.flip"]
    );
}

#[test]
fn a_cancelled_search_stops_reading_and_the_next_one_continues() {
    let tmp = workspace();
    let root = tmp.root_str();
    // Enough files that reading them outlasts the first progress update.
    let body: String = (0..40)
        .map(|k| format!("theorem gen_{k} (n : Nat) : Eq n n := Eq.refl n\n"))
        .collect();
    for i in 0..4000 {
        tmp.write(
            &format!("Gen/M{}/F{i}.lean", i % 40),
            &format!("prelude\nnamespace G{i}\n{body}end G{i}\n"),
        );
    }
    let mut mcp = Mcp::on_lean(Era::Modern, &[]);
    let token = json!("index");
    let id = mcp.start_call(
        "lean_search",
        json!({"workspace": ws(&root), "query": "gen_39"}),
        &CallOpts::token("index"),
    );
    mcp.wait_notification("the index's progress", |m| {
        m["method"] == "notifications/progress"
            && m["params"]["progressToken"] == token
            && m["params"]["_meta"]["beam"]["phase"] == "index"
    });
    mcp.cancel(&id);
    // The next query reads what the cancelled one left, and answers whole.
    let next = search(&mut mcp, &root, "gen_39", 5);
    assert_eq!(next["index"]["complete"], true);
    assert_eq!(next["matched"], 4000, "{:#}", next["index"]);
    let refreshed = next["index"]["refreshed_files"].as_u64().unwrap();
    assert!(
        refreshed > 0,
        "the cancelled refresh read every file: it was not stopped ({:#})",
        next["index"]
    );
    assert!(next["index"]["files"].as_u64().unwrap() > 4000);
}
