//! `lean_suggest` (issue 28 item 2) against the real Lean 4.35.0 test
//! toolchain: `exact?`'s "Try this" checked and put into a copy of the file
//! with its edit (then synced: the proof is done), `decide` closing by
//! itself, `apply?`'s partial steps with handles, a term position addressed
//! by declaration, a handle as the place, the tactics the toolchain lacks
//! reported `unavailable`, progress, every bad argument, and cancellation.
//!
//! The fixture is `tests/fixtures/basic/Fix/Suggest.lean` (see EXPECTED.md).

use crate::common;

use std::time::Duration;

use serde_json::{Value, json};

use common::lean::{TempWorkspace, eventually, lean};
use common::mcp::{CallOpts, Era, Mcp, Spawn, ws};

const FILE: &str = "Fix/Suggest.lean";
/// `  exact sorry` of `suggest_zero_add`.
const ZERO_ADD: (u64, u64) = (30, 2);
/// `  exact sorry` of `suggest_decide`.
const DECIDE: (u64, u64) = (34, 2);
/// `  exact sorry` of `suggest_intro`.
const INTRO: (u64, u64) = (46, 2);
/// `  exact sorry` of `suggest_partial`.
const PARTIAL: (u64, u64) = (50, 2);
/// The blank line after `suggest_zero_add`: between commands.
const BETWEEN: (u64, u64) = (31, 0);

fn spawn() -> Mcp {
    Mcp::start(Era::Modern, Spawn::default().envs(lean().server_env()))
}

fn fixture() -> String {
    lean().fixture("basic").to_string_lossy().into_owned()
}

fn sync(mcp: &mut Mcp, root: &str) -> u64 {
    let r = mcp.call("lean_sync", json!({"workspace": ws(root), "path": FILE}));
    r["version"].as_u64().expect("version")
}

fn at(root: &str, version: u64, (line, character): (u64, u64), more: Value) -> Value {
    let mut args = json!({
        "workspace": ws(root), "path": FILE, "version": version,
        "line": line, "character": character,
    });
    for (k, v) in more.as_object().expect("object") {
        args[k] = v.clone();
    }
    args
}

fn statuses(result: &Value) -> Vec<(String, String)> {
    result["tactics"]
        .as_array()
        .expect("tactics")
        .iter()
        .map(|t| {
            (
                t["tactic"].as_str().unwrap().to_owned(),
                t["status"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn suggestions(result: &Value) -> &Vec<Value> {
    result["suggestions"].as_array().expect("suggestions")
}

fn apply(text: &str, edit: &Value) -> String {
    let start = common::byte_offset(text, &edit["range"]["start"]);
    let end = common::byte_offset(text, &edit["range"]["end"]);
    let mut out = text.to_owned();
    out.replace_range(start..end, edit["newText"].as_str().unwrap());
    out
}

#[test]
fn exact_query_is_checked_and_its_edit_finishes_the_proof() {
    let copy = TempWorkspace::copy("basic");
    let root = copy.root_str();
    let mut mcp = spawn();
    let v = sync(&mut mcp, &root);
    let token = json!("suggest");
    // The default tactics.
    let r = mcp.call_with(
        "lean_suggest",
        at(&root, v, ZERO_ADD, json!({})),
        &CallOpts::token(token.clone()),
    );
    assert_eq!(r["mode"], "tactic", "{r:#}");
    assert_eq!(r["line_text"], "  exact sorry", "{r:#}");
    let s = suggestions(&r);
    assert_eq!(s[0]["text"], "exact N.zero_add n", "{r:#}");
    assert_eq!(s[0]["outcome"], "closed", "{r:#}");
    assert_eq!(s[0]["from"], json!(["exact?", "apply?"]), "{r:#}");
    assert_eq!(s[0]["replaces"], "sorry", "{r:#}");
    assert_eq!(
        s[0]["edit"],
        json!({
            "range": {"start": {"line": 30, "character": 2}, "end": {"line": 30, "character": 13}},
            "newText": "exact N.zero_add n",
        }),
        "{r:#}"
    );
    // Every tactic the toolchain lacks is said so, none is an error of the
    // call; `decide` ran and failed (the goal has a free variable).
    assert_eq!(
        statuses(&r),
        [
            ("exact?", "suggested"),
            ("apply?", "suggested"),
            ("simp?", "unavailable"),
            ("rw?", "unavailable"),
            ("aesop?", "unavailable"),
            ("omega", "unavailable"),
            ("decide", "failed"),
            ("grind", "unavailable"),
        ]
        .map(|(t, s)| (t.to_owned(), s.to_owned())),
        "{r:#}"
    );
    let tactic = |name: &str| {
        r["tactics"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["tactic"] == name)
            .unwrap()
            .clone()
    };
    assert_eq!(tactic("aesop?")["message"], "unknown tactic", "{r:#}");
    assert!(
        tactic("omega")["message"]
            .as_str()
            .unwrap()
            .contains("Classical.byContradiction"),
        "{r:#}"
    );
    assert!(
        tactic("rw?")["message"]
            .as_str()
            .unwrap()
            .contains("has not been implemented"),
        "{r:#}"
    );
    assert!(
        tactic("decide")["message"]
            .as_str()
            .unwrap()
            .contains("free variables"),
        "{r:#}"
    );
    // Progress counted the tactics, then the checks.
    let progress = mcp.progress_of(&token);
    let messages: Vec<&str> = progress
        .iter()
        .filter_map(|p| p["message"].as_str())
        .collect();
    assert!(messages.contains(&"8 of 8 tactics done"), "{messages:?}");
    assert!(
        messages.contains(&"1 of 1 suggestions done"),
        "{messages:?}"
    );

    // The edit, applied to the file and synced: the proof is done (one
    // `sorry` warning fewer, no error).
    let before = copy.read(FILE);
    copy.write(FILE, &apply(&before, &s[0]["edit"]));
    let after = mcp.call("lean_sync", json!({"workspace": ws(&root), "path": FILE}));
    assert_eq!(after["diagnostics"]["counts"]["warning"], 4, "{after:#}");
    assert_eq!(after["diagnostics"]["counts"]["error"], 0, "{after:#}");
}

#[test]
fn a_tactic_that_closes_by_itself_is_its_own_suggestion_and_closing_ones_rank_first() {
    let root = fixture();
    let mut mcp = spawn();
    let v = sync(&mut mcp, &root);
    let r = mcp.call(
        "lean_suggest",
        at(&root, v, DECIDE, json!({"tactics": ["exact?", "decide"]})),
    );
    let s = suggestions(&r);
    assert_eq!(statuses(&r)[1], ("decide".into(), "closed".into()), "{r:#}");
    let decide = s.iter().find(|x| x["text"] == "decide").expect("decide");
    assert_eq!(decide["outcome"], "closed", "{r:#}");
    assert_eq!(decide["from"], json!(["decide"]), "{r:#}");
    assert_eq!(decide["replaces"], "sorry", "{r:#}");
    // Closing first, then shorter.
    let ranks: Vec<(bool, usize)> = s
        .iter()
        .map(|x| {
            (
                x["outcome"] != "closed",
                x["text"].as_str().unwrap().chars().count(),
            )
        })
        .collect();
    let mut sorted = ranks.clone();
    sorted.sort();
    assert_eq!(ranks, sorted, "{r:#}");
}

#[test]
fn partial_suggestions_leave_goals_and_hand_out_handles() {
    let root = fixture();
    let mut mcp = Mcp::start(
        Era::Modern,
        Spawn::default()
            .envs(lean().server_env())
            .env("LEAN_BEAM_LOG", "debug"),
    );
    let v = sync(&mut mcp, &root);
    let r = mcp.call(
        "lean_suggest",
        at(&root, v, PARTIAL, json!({"tactics": ["exact?", "apply?"]})),
    );
    assert_eq!(
        statuses(&r),
        [("exact?", "failed"), ("apply?", "suggested")].map(|(t, s)| (t.into(), s.into())),
        "{r:#}"
    );
    let s = suggestions(&r);
    let texts: Vec<&str> = s.iter().map(|x| x["text"].as_str().unwrap()).collect();
    // apply?'s remark on the remaining goals is not part of the text.
    assert_eq!(texts, ["refine P_of_S n ?_", "refine P_of_T n ?_"], "{r:#}");
    for (x, goal) in s.iter().zip(["S n", "T n"]) {
        assert_eq!(x["outcome"], "progressed", "{x:#}");
        assert_eq!(x["goals"][0]["pretty"], format!("n : N\n⊢ {goal}"), "{x:#}");
        let handle = x["handle"].as_str().expect("a handle");
        // The handle continues after the suggestion.
        let next = mcp.call(
            "lean_run_batch",
            json!({"workspace": ws(&root), "path": FILE, "handle": handle,
                   "texts": ["exact sorry"]}),
        );
        assert_eq!(next["candidates"][0]["outcome"], "sorry", "{next:#}");
    }
    // Lean 4.35 offers each suggestion as a code action too, which is what
    // was read (its text is the edit exactly, without the message's remark).
    assert!(
        mcp.stderr()
            .contains("2 suggestions from Lean's code actions"),
        "{}",
        mcp.stderr()
    );
    // `limit` cuts, and says how many more there were.
    let one = mcp.call(
        "lean_suggest",
        at(
            &root,
            v,
            PARTIAL,
            json!({"tactics": ["apply?"], "limit": 1}),
        ),
    );
    assert_eq!(suggestions(&one).len(), 1, "{one:#}");
    assert_eq!(one["more"], 1, "{one:#}");
}

#[test]
fn a_term_addressed_by_declaration_takes_by_and_the_tactic() {
    let root = fixture();
    let mut mcp = spawn();
    let v = sync(&mut mcp, &root);
    let r = mcp.call(
        "lean_suggest",
        json!({"workspace": ws(&root), "path": FILE, "version": v,
               "declaration": "suggest_term", "tactics": ["exact?", "omega"]}),
    );
    assert_eq!(r["mode"], "term", "{r:#}");
    assert_eq!(r["declaration"]["name"], "Fix.suggest_term", "{r:#}");
    assert_eq!(r["declaration"]["line"], 53, "{r:#}");
    let s = suggestions(&r);
    assert_eq!(s[0]["text"], "by exact N.add_zero n", "{r:#}");
    assert_eq!(s[0]["outcome"], "closed", "{r:#}");
    assert_eq!(s[0]["edit"]["newText"], "(by exact N.add_zero n)", "{r:#}");
    assert_eq!(s[0]["replaces"], "sorry", "{r:#}");
    let start = &s[0]["edit"]["range"]["start"];
    assert_eq!(
        (start["line"].clone(), start["character"].clone()),
        (json!(53), r["declaration"]["character"].clone())
    );
    assert_eq!(
        statuses(&r)[1],
        ("omega".into(), "unavailable".into()),
        "{r:#}"
    );
}

#[test]
fn from_a_handle_the_edit_writes_the_chain_and_the_suggestion() {
    let root = fixture();
    let mut mcp = spawn();
    let v = sync(&mut mcp, &root);
    let step = mcp.call(
        "lean_run_batch",
        json!({"workspace": ws(&root), "path": FILE, "version": v,
               "line": INTRO.0, "character": INTRO.1, "texts": ["intro n"]}),
    );
    let handle = step["candidates"][0]["handle"].as_str().expect("handle");
    let r = mcp.call(
        "lean_suggest",
        json!({"workspace": ws(&root), "path": FILE, "handle": handle,
               "tactics": ["exact?", "frobnicate"]}),
    );
    assert_eq!(r["start_goals"][0]["pretty"], "n : N\n⊢ S n → Q n", "{r:#}");
    let s = suggestions(&r);
    assert_eq!(s[0]["text"], "exact fun a => Q_of_S n a", "{r:#}");
    assert_eq!(s[0]["outcome"], "closed", "{r:#}");
    assert_eq!(
        s[0]["edit"]["newText"], "intro n\n  exact fun a => Q_of_S n a",
        "{r:#}"
    );
    assert_eq!(s[0]["replaces"], "sorry", "{r:#}");
    assert_eq!(
        statuses(&r)[1],
        ("frobnicate".into(), "unavailable".into()),
        "{r:#}"
    );
}

#[test]
fn bad_arguments_are_clear_errors() {
    let root = fixture();
    let mut mcp = spawn();
    let v = sync(&mut mcp, &root);
    let cases = [
        (
            at(&root, v, ZERO_ADD, json!({"tactics": ["exact?", " "]})),
            "tactics[1] is empty",
        ),
        (
            at(&root, v, ZERO_ADD, json!({"tactics": ["decide", "decide"]})),
            "tactics[1] repeats tactics[0]",
        ),
        (
            at(&root, v, ZERO_ADD, json!({"limit": 99})),
            "limit 99 is above 32",
        ),
        (at(&root, v, BETWEEN, json!({})), "between commands"),
        (
            at(
                &root,
                v,
                ZERO_ADD,
                json!({"handle": "h", "tactics": ["decide"]}),
            ),
            "not both",
        ),
        (
            at(
                &root,
                v,
                ZERO_ADD,
                json!({"tactics": ["set_option maxHeartbeats 0 in exact?"], "max_heartbeats": 10}),
            ),
            "tactics[0]",
        ),
        (
            json!({"workspace": ws(&root), "path": FILE, "version": v, "declaration": "no_such_thing"}),
            "no_such_thing",
        ),
    ];
    for (args, says) in cases {
        let e = mcp.call_err("lean_suggest", args.clone());
        let message = e["message"].as_str().unwrap_or_default();
        assert!(message.contains(says), "{args}: {e:#}");
    }
}

#[test]
fn a_cancelled_suggestion_call_stops_and_the_next_one_works() {
    let root = fixture();
    let mut mcp = spawn();
    let v = sync(&mut mcp, &root);
    let token = json!("cancelled-suggest");
    // One tactic that sleeps for ten minutes, one that is done at once.
    let id = mcp.start_call(
        "lean_suggest",
        at(
            &root,
            v,
            ZERO_ADD,
            json!({"tactics": ["sleep 600000", "exact?"]}),
        ),
        &CallOpts::token(token.clone()),
    );
    assert!(
        eventually(Duration::from_secs(120), || {
            mcp.read_within(Duration::from_millis(200));
            mcp.progress_of(&token)
                .iter()
                .any(|p| p["message"] == "1 of 2 tactics done")
        }),
        "exact? never finished"
    );
    mcp.cancel(&id);
    let r = mcp.call(
        "lean_suggest",
        at(&root, v, ZERO_ADD, json!({"tactics": ["exact?"]})),
    );
    assert_eq!(suggestions(&r)[0]["outcome"], "closed", "{r:#}");
    mcp.assert_cancelled_answers(&id);
}
