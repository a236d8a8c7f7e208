//! The memory budget of the Lean processes (`LEAN_BEAM_MAX_LEAN_MEMORY`,
//! issue 29 item 3) against the real Lean server: measured as PSS, a batch
//! whose second candidate would pass the budget waits for the first one's
//! slot and says so, `beam_stats` shows the budget and its use by kind, and
//! a budget no worker fits in refuses the probe naming the variable.

use crate::common;

use serde_json::{Value, json};

use common::lean::lean;
use common::mcp::{Era, Mcp, Spawn, ws};

const ENV: &str = "LEAN_BEAM_MAX_LEAN_MEMORY";
const BATCH: &str = "Fix/Batch.lean";

fn spawn(budget: Option<&str>) -> Mcp {
    // Bases compile outside the server's tree; these probes carry their
    // prefix, so every worker is measured.
    let mut spawn = Spawn::default()
        .envs(lean().server_env())
        .env("LEAN_BEAM_PREFIX_BASES", "0");
    if let Some(budget) = budget {
        spawn = spawn.env(ENV, budget);
    }
    Mcp::start(Era::Modern, spawn)
}

fn fixture() -> String {
    lean().fixture("basic").to_string_lossy().into_owned()
}

fn sync(mcp: &mut Mcp, root: &str) -> u64 {
    let r = mcp.call("lean_sync", json!({"workspace": ws(root), "path": BATCH}));
    r["version"].as_u64().expect("version")
}

fn budget_stats(mcp: &mut Mcp) -> Value {
    mcp.stats()["limits"][ENV].clone()
}

fn mib(stats: &Value, field: &str) -> u64 {
    stats[field]
        .as_u64()
        .unwrap_or_else(|| panic!("{field} in {stats}"))
}

#[test]
fn a_candidate_that_would_pass_the_budget_waits_for_a_slot_and_says_so() {
    let root = fixture();
    // What the server and the document's worker hold, and what one more
    // worker is estimated to add, under the default budget.
    let (base, worker) = {
        let mut m = spawn(None);
        sync(&mut m, &root);
        let stats = budget_stats(&mut m);
        assert!(
            mib(&stats, "limitMib") > 0
                && stats["source"]
                    .as_str()
                    .is_some_and(|s| s.starts_with("default: half of ")),
            "{stats}"
        );
        assert!(mib(&stats, "documentsMib") > 0, "{stats}");
        assert!(mib(&stats, "serverMib") > 0, "{stats}");
        assert_eq!(mib(&stats, "shadowsMib"), 0, "{stats}");
        (mib(&stats, "usedMib"), mib(&stats, "workerEstimateMib"))
    };
    assert!(worker > 0);
    // Room for one probe worker, not two.
    let budget = base + worker * 3 / 2;
    let mut m = spawn(Some(&format!("{budget}M")));
    let v = sync(&mut m, &root);
    let texts = ["sleep 600", "sleep 601", "sleep 602"];
    let r = m.call(
        "lean_run_batch",
        json!({
            "workspace": ws(&root), "path": BATCH, "version": v,
            "line": 7, "character": 2, "texts": texts,
        }),
    );
    let note = r["memory"]
        .as_str()
        .unwrap_or_else(|| panic!("no memory note: {r}"));
    // PSS divides shared pages among every process that maps them, other
    // tests' Lean processes included: this server's own figures can differ
    // from the first one's by a worker or two. When they came out higher,
    // the first candidate opened its slot over the budget (nothing a probe
    // holds could make room) and said so; the others then waited for it.
    assert!(
        note.contains(" of 3 candidates: ")
            && (note.contains(": waited ") && note.contains("reused it")
                || note.contains("opened a probe slot over the budget"))
            && note.contains(&format!(" MiB in use; {ENV})"))
            && note.contains(&format!(" of {budget} MiB in use")),
        "{note}"
    );
    assert!(
        r["candidates"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["outcome"] != "crashed" && c["outcome"] != "skipped"),
        "every candidate ran: {r}"
    );
    let rt = m.workspace_stats(&root).expect("runtime");
    assert_eq!(rt["shadowSlots"], 1, "one worker for the three: {rt}");
    let stats = budget_stats(&mut m);
    assert_eq!(mib(&stats, "limitMib"), budget, "{stats}");
    assert_eq!(stats["source"], ENV, "{stats}");
    assert!(mib(&stats, "waited") >= 1, "{stats}");
    assert!(mib(&stats, "overBudget") <= 1, "at most the first: {stats}");
    assert!(mib(&stats, "shadowsMib") > 0, "{stats}");
    assert!(
        mib(&stats, "processes") >= 3,
        "server, document, slot: {stats}"
    );
    // Each figure is rounded up on its own.
    let kinds = mib(&stats, "serverMib")
        + mib(&stats, "documentsMib")
        + mib(&stats, "shadowsMib")
        + mib(&stats, "snippetsMib");
    let used = mib(&stats, "usedMib");
    assert!(
        used <= kinds && kinds < used + 4,
        "every worker measured, none reserved any more: {stats}"
    );
}

#[test]
fn a_budget_no_worker_fits_in_refuses_the_probe_naming_it() {
    let root = fixture();
    let mut m = spawn(Some("1M"));
    let v = sync(&mut m, &root);
    let e = m.call_err(
        "lean_run_at",
        json!({
            "workspace": ws(&root), "path": BATCH, "version": v,
            "line": 7, "character": 2, "text": "exact N.zero_add n",
        }),
    );
    assert_eq!(e["code"], "resourceLimit", "{e}");
    assert_eq!(e["data"]["kind"], "leanMemory", "{e}");
    assert_eq!(e["data"]["env"], ENV, "{e}");
    assert_eq!(e["data"]["limit"], 1 << 20, "{e}");
    let message = e["message"].as_str().unwrap();
    assert!(
        message.contains("1 MiB") && message.contains(&format!("{ENV}=")),
        "{message}"
    );
    assert_eq!(budget_stats(&mut m)["refused"], 1);
}
