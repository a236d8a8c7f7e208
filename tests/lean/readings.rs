//! One reading of a step (issue 26 items 1, 2, 6; issue 24 item 5) against
//! the real Lean 4.35.0 test toolchain: multi-line candidates keep their
//! relative indentation (bullets, `case` blocks, two-line bullet bodies) in
//! every probe tool and in `lean_handle_edit`; the same text at the same
//! place gets the same outcome, goals and messages from `lean_run_at`,
//! `lean_run_with`, `lean_run_with_linear` and `lean_run_batch`; a step that
//! closes with `sorry` (directly or through `first`) says `sorry`;
//! `maxHeartbeats` cannot be lifted from inside a text under a budget;
//! `stop_on_first_close` returns the lowest-index close whatever finished
//! first. (`calc` and `have` are macros this toolchain does not implement,
//! and `next` too: not testable here.)

use crate::common;

use serde_json::{Value, json};

use common::lean::{TempWorkspace, lean};
use common::mcp::{Era, Mcp, Spawn, ws};

const FILE: &str = "Fix/Readings.lean";
const SOURCE: &str = "prelude
import Fix.Basic

namespace Fix

theorem r_and (p q : Prop) (hp : p) (hq : q) : And p q := by
  exact sorry

theorem r_bullet (p q : Prop) (hp : p) (hq : q) : And p q := by
  constructor
  · skip
    exact sorry
  · exact hq

theorem r_zero (n : N) : Eq (N.add N.zero n) n := by
  exact sorry

end Fix
";
/// `exact sorry` of `r_and`, at its column.
const AND: (u64, u64) = (6, 2);
/// `exact sorry` inside the first bullet of `r_bullet`, on its own line.
const BULLET: (u64, u64) = (11, 4);
const ZERO: (u64, u64) = (15, 2);

/// The shapes, each with the outcome Lean gives it at [`AND`].
const SHAPES: [(&str, &str); 9] = [
    ("constructor\n· exact hp\n· exact hq", "closed"),
    ("constructor\n· exact hp\n· exact hp", "failed"),
    // A two-line bullet body: its second line stays in the bullet.
    ("constructor\n· skip\n  exact hp\n· exact hq", "closed"),
    ("constructor\n· skip\n  exact hq\n· exact hq", "failed"),
    // `case` blocks on their own lines.
    (
        "constructor\ncase left =>\n  exact hp\ncase right =>\n  exact hq",
        "closed",
    ),
    (
        "constructor\ncase left =>\n  exact hq\ncase right =>\n  exact hq",
        "failed",
    ),
    // Ends inside a nested block with a goal left at the step's level.
    ("constructor\ncase left =>\n  exact hp", "progressed"),
    ("exact sorry", "sorry"),
    ("first | exact sorry | skip", "sorry"),
];

fn start(copy: &TempWorkspace, slots: &str) -> (Mcp, String, u64) {
    copy.write(FILE, SOURCE);
    let root = copy.root_str();
    let spawn = Spawn::default()
        .envs(lean().server_env())
        .env("LEAN_BEAM_SHADOW_SLOTS", slots);
    let mut mcp = Mcp::start(Era::Modern, spawn);
    let sync = mcp.call("lean_sync", json!({"workspace": ws(&root), "path": FILE}));
    let v = sync["version"].as_u64().expect("version");
    (mcp, root, v)
}

fn at(root: &str, v: u64, (line, character): (u64, u64)) -> Value {
    json!({"workspace": ws(root), "path": FILE, "version": v, "line": line, "character": character})
}

fn with(mut args: Value, more: Value) -> Value {
    for (k, v) in more.as_object().expect("object") {
        args[k] = v.clone();
    }
    args
}

/// What a reading is: outcome, goals as Lean prints them, messages. A batch
/// candidate carries its goals itself (or `goals_at_start`, then they are
/// the batch's `start_goals`) and leaves empty messages out; a probe's goals
/// are its `proof_state`'s.
fn reading(r: &Value, start_goals: &Value) -> Value {
    let goals = if r["goals_at_start"] == true {
        start_goals
    } else if r.get("goals").is_some() {
        &r["goals"]
    } else {
        &r["proof_state"]["goals"]
    };
    let goals: Vec<&Value> = goals
        .as_array()
        .map(|g| g.iter().map(|g| &g["pretty"]).collect())
        .unwrap_or_default();
    let messages = match &r["messages"] {
        Value::Null => json!([]),
        m => m.clone(),
    };
    json!({ "outcome": r["outcome"], "goals": goals, "messages": messages })
}

#[test]
fn every_probe_tool_reads_each_multi_line_shape_alike() {
    let copy = TempWorkspace::copy("basic");
    let (mut mcp, root, v) = start(&copy, "2");
    let texts: Vec<&str> = SHAPES.iter().map(|(t, _)| *t).collect();
    let batch = mcp.call(
        "lean_run_batch",
        with(at(&root, v, AND), json!({ "texts": texts })),
    );
    let candidates = batch["candidates"].as_array().expect("candidates");
    // From a handle at the same place (after `skip`, which changes nothing).
    let skip = mcp.call(
        "lean_run_at_handle",
        with(at(&root, v, AND), json!({ "text": "skip" })),
    );
    let handle = skip["next_handle"].as_str().expect("handle").to_owned();
    let from_handle = mcp.call(
        "lean_run_batch",
        json!({"workspace": ws(&root), "path": FILE, "handle": handle, "texts": texts}),
    );
    for (i, (text, outcome)) in SHAPES.iter().enumerate() {
        let one = mcp.call(
            "lean_run_at",
            with(at(&root, v, AND), json!({ "text": text })),
        );
        assert_eq!(one["outcome"], *outcome, "{text:?}: {one:#}");
        assert_eq!(
            reading(&candidates[i], &batch["start_goals"]),
            reading(&one, &Value::Null),
            "batch and lean_run_at on {text:?}"
        );
        let after = mcp.call(
            "lean_run_with",
            json!({"workspace": ws(&root), "path": FILE, "handle": handle, "text": text}),
        );
        let in_batch = &from_handle["candidates"][i];
        assert_eq!(
            after["outcome"], *outcome,
            "{text:?} after a handle: {after:#}"
        );
        assert_eq!(
            reading(in_batch, &from_handle["start_goals"]),
            reading(&after, &Value::Null),
            "from a handle: {text:?}"
        );
        // Messages of a step are placed in the step, never on a line of the
        // user's file that does not hold it.
        for m in after["messages"].as_array().unwrap() {
            assert!(
                m.get("range").is_none() && m["step_range"].is_object(),
                "{text:?}: {m}"
            );
        }
    }
    // The nested-block candidate: what is left is the other case, in every
    // tool; linear too.
    let nested = SHAPES[6].0;
    let linear_handle = mcp.call(
        "lean_run_at_handle",
        with(at(&root, v, AND), json!({ "text": "skip" })),
    )["next_handle"]
        .clone();
    let linear = mcp.call(
        "lean_run_with_linear",
        json!({"workspace": ws(&root), "path": FILE, "handle": linear_handle, "text": nested}),
    );
    assert_eq!(
        reading(&linear, &Value::Null),
        reading(&candidates[6], &batch["start_goals"]),
        "{linear:#}"
    );
    let left = reading(&linear, &Value::Null)["goals"].clone();
    assert_eq!(left.as_array().unwrap().len(), 1, "{linear:#}");
    assert!(
        left[0].as_str().unwrap().starts_with("case right\n"),
        "{left}"
    );
    assert_eq!(batch["first_closed"], 0, "{batch:#}");
}

#[test]
fn a_step_inside_a_bullet_is_judged_in_its_bullet() {
    let copy = TempWorkspace::copy("basic");
    let (mut mcp, root, v) = start(&copy, "1");
    let batch = mcp.call(
        "lean_run_batch",
        with(
            at(&root, v, BULLET),
            json!({ "texts": ["exact hp", "exact hq"] }),
        ),
    );
    let one = mcp.call(
        "lean_run_at",
        with(at(&root, v, BULLET), json!({ "text": "exact hp" })),
    );
    // The sibling bullet's goal is not this step's to close.
    assert_eq!(batch["candidates"][0]["outcome"], "closed", "{batch:#}");
    assert_eq!(batch["candidates"][1]["outcome"], "failed", "{batch:#}");
    assert_eq!(
        reading(&one, &Value::Null),
        reading(&batch["candidates"][0], &batch["start_goals"]),
        "{one:#}"
    );
}

#[test]
fn tabs_and_lines_left_of_the_first_are_refused_clearly() {
    let copy = TempWorkspace::copy("basic");
    let (mut mcp, root, v) = start(&copy, "1");
    let tab = mcp.call_err(
        "lean_run_at",
        with(
            at(&root, v, AND),
            json!({ "text": "constructor\n\t· exact hp" }),
        ),
    );
    assert_eq!(tab["code"], "invalidParams", "{tab}");
    assert!(tab["message"].as_str().unwrap().contains("tab"), "{tab}");
    let batch = mcp.call_err(
        "lean_run_batch",
        with(
            at(&root, v, AND),
            json!({ "texts": ["skip", "  constructor\nexact hp"] }),
        ),
    );
    let message = batch["message"].as_str().unwrap();
    assert!(
        message.starts_with("texts[1]:") && message.contains("first line"),
        "{batch}"
    );
}

#[test]
fn a_handle_edit_writes_a_nested_chain_with_its_indentation() {
    let copy = TempWorkspace::copy("basic");
    let (mut mcp, root, v) = start(&copy, "1");
    let step = "constructor\ncase left =>\n  exact hp\ncase right =>\n  exact hq";
    let r = mcp.call(
        "lean_run_at_handle",
        with(at(&root, v, AND), json!({ "text": step })),
    );
    assert_eq!(r["outcome"], "closed", "{r:#}");
    let edit = mcp.call(
        "lean_handle_edit",
        json!({"workspace": ws(&root), "path": FILE, "handle": r["next_handle"]}),
    );
    assert_eq!(
        edit["edit"]["newText"],
        "constructor\n  case left =>\n    exact hp\n  case right =>\n    exact hq",
        "{edit:#}"
    );
    // Written into the file, it proves the theorem.
    let proved = SOURCE.replacen(
        "  exact sorry\n\ntheorem r_bullet",
        &format!(
            "  {}\n\ntheorem r_bullet",
            edit["edit"]["newText"].as_str().unwrap()
        ),
        1,
    );
    copy.write(FILE, &proved);
    let sync = mcp.call("lean_sync", json!({"workspace": ws(&root), "path": FILE}));
    let errors = sync["diagnostics"]["counts"]["error"].as_u64().unwrap_or(0);
    assert_eq!(errors, 0, "{proved}\n{sync:#}");
}

#[test]
fn heartbeats_cannot_be_lifted_from_inside_a_text() {
    let copy = TempWorkspace::copy("basic");
    let (mut mcp, root, v) = start(&copy, "1");
    let lift = "set_option maxHeartbeats 0 in\nexact N.zero_add n";
    let refused = mcp.call_err(
        "lean_run_batch",
        with(
            at(&root, v, ZERO),
            json!({ "texts": ["exact N.zero_add n", lift], "max_heartbeats": 20 }),
        ),
    );
    let message = refused["message"].as_str().unwrap();
    assert!(
        message.starts_with("texts[1]:") && message.contains("maxHeartbeats"),
        "{refused}"
    );
    let refused = mcp.call_err(
        "lean_run_at",
        with(
            at(&root, v, ZERO),
            json!({ "text": "set_option «maxHeartbeats» 0 in\nexact N.zero_add n", "max_heartbeats": 20 }),
        ),
    );
    assert!(
        refused["message"]
            .as_str()
            .unwrap()
            .contains("maxHeartbeats")
    );
    // Without a budget there is nothing to lift: the text runs.
    let free = mcp.call(
        "lean_run_at",
        with(at(&root, v, ZERO), json!({ "text": lift })),
    );
    assert_eq!(free["outcome"], "closed", "{free:#}");
    // A snippet under a budget likewise.
    let snippet = "prelude\nimport Fix.Basic\nset_option maxHeartbeats 0 in\ntheorem s : Eq Fix.one Fix.one := Eq.refl _\n";
    let refused = mcp.call_err(
        "lean_run_code",
        json!({"workspace": ws(&root), "code": snippet, "max_heartbeats": 20}),
    );
    assert!(
        refused["message"]
            .as_str()
            .unwrap()
            .contains("maxHeartbeats"),
        "{refused}"
    );
    let ran = mcp.call(
        "lean_run_code",
        json!({"workspace": ws(&root), "code": snippet}),
    );
    assert_eq!(ran["success"], true, "{ran:#}");
}

#[test]
fn stop_on_first_close_returns_the_lowest_index_close() {
    let copy = TempWorkspace::copy("basic");
    let (mut mcp, root, v) = start(&copy, "4");
    // The first closes after a while, the second at once: the first is the
    // answer, the second skipped, whichever finished first.
    let texts = [
        "sleep 3000\nexact N.zero_add n",
        "exact N.zero_add n",
        "exact N.zero_add n",
    ];
    let r = mcp.call(
        "lean_run_batch",
        with(
            at(&root, v, ZERO),
            json!({ "texts": texts, "stop_on_first_close": true }),
        ),
    );
    let outcomes: Vec<&str> = r["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(outcomes, ["closed", "skipped", "skipped"], "{r:#}");
    assert_eq!(r["first_closed"], 0);
}
