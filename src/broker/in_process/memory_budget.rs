//! The memory budget on the scripted Lean, with scripted measurements (the
//! engine's `Meter` seam): a probe that would pass the budget waits for its
//! pool's slot and says so, takes other files' idle slots, or, when one
//! worker is larger than the whole budget, is refused naming the budget.

use super::*;
use crate::broker::engine::memory::{self, ENV, Kind, Measured, Meter};
use crate::broker::error::Limit;

const MIB: u64 = 1 << 20;

/// The server at 100 MiB and each of `docs` at 300 MiB PSS, 200 private:
/// whatever the probes open, the figures stay (a reservation stands for each
/// slot opened).
fn broker_with(lean: &ScriptedLean, ws: &Workspace, docs: &[&str], budget_mib: u64) -> Broker {
    let uris: Vec<String> = docs
        .iter()
        .map(|d| crate::lsp::uri::path_to_uri(&ws.root.join(d)))
        .collect();
    let meter = Meter::new(move |_| {
        let mut all = vec![Measured {
            kind: Kind::Server,
            uri: None,
            pss: 100 * MIB,
            private: 100 * MIB,
        }];
        all.extend(uris.iter().map(|uri| Measured {
            kind: Kind::Document,
            uri: Some(uri.clone()),
            pss: 300 * MIB,
            private: 200 * MIB,
        }));
        all
    });
    let limits = Limits {
        lean_memory: memory::Budget {
            bytes: budget_mib * MIB,
            source: ENV.to_string(),
        },
        meter,
        ..test_limits()
    };
    broker_with_limits(lean, limits)
}

fn shadow_opens(lean: &ScriptedLean) -> usize {
    shadow_count(lean, "textDocument/didOpen", SHADOW)
}

/// 400 MiB in use and 200 per worker under 700: the first probe opens a
/// slot (600), the second would pass the budget (800), so it waits for the
/// first's slot, reuses it, and its result says so.
#[tokio::test]
async fn a_probe_that_would_pass_the_budget_waits_for_a_slot_and_says_so() {
    let gate = Arc::new(Semaphore::new(0));
    let lean = gated(&gate);
    let ws = Workspace::new();
    ws.write("A.lean", PROOF);
    let broker = broker_with(&lean, &ws, &["A.lean"], 700);
    let d = ws.descriptor();
    let v = synced(&broker, &d, "A.lean").await;
    let place = at(&d, v, 1, 2);
    let first = run(&broker, &place, "slow");
    tokio::pin!(first);
    tokio::select! {
        _ = &mut first => panic!("the gated step answered"),
        _ = a_probe_waits(&lean) => {}
    }
    let second = run(&broker, &place, "trivial");
    tokio::pin!(second);
    // Until the second probe has decided to wait (the budget's count of
    // waits says so), neither may answer.
    while broker.limits().await.max_lean_memory.waited == 0 {
        tokio::select! {
            biased;
            _ = &mut first => panic!("the gated step answered"),
            _ = &mut second => panic!("the second probe did not wait"),
            _ = tokio::task::yield_now() => {}
        }
    }
    gate.add_permits(1);
    let (first, second) = tokio::join!(first, second);
    let (first, second) = (first.unwrap(), second.unwrap());
    assert_eq!(first.memory, None, "the first fit: {first:?}");
    let note = second.memory.as_deref().expect("the wait is said");
    assert!(
        note.starts_with("waited ")
            && note.contains("reused it")
            && note.contains("(600 of 700 MiB in use; LEAN_BEAM_MAX_LEAN_MEMORY)")
            && note.contains("~200 MiB"),
        "{note}"
    );
    assert!(second.success, "{second:?}");
    assert_eq!(shadow_opens(&lean), 1, "one worker for both probes");
    let stats = broker.limits().await.max_lean_memory;
    assert_eq!(
        (stats.limit_mib, stats.server_mib, stats.documents_mib),
        (700, 100, 300)
    );
    assert_eq!((stats.waited, stats.refused, stats.over_budget), (1, 0, 0));
    assert_eq!(stats.used_mib, 600, "the slot's worker is reserved");
}

/// With documents A and B open (700 MiB) and 200 per worker under 1000, a
/// probe of B after a probe of A closes A's idle slot rather than pass the
/// budget, and says so.
#[tokio::test]
async fn a_probe_takes_an_idle_slot_of_another_file_before_passing_the_budget() {
    let lean = ScriptedLean::new(rules());
    let ws = Workspace::new();
    ws.write("A.lean", PROOF);
    ws.write("B.lean", PROOF);
    let broker = broker_with(&lean, &ws, &["A.lean", "B.lean"], 1000);
    let d = ws.descriptor();
    let mut versions = Vec::new();
    for file in ["A.lean", "B.lean"] {
        versions.push(
            broker
                .sync(&Quiet, &d, file, sync_options())
                .await
                .unwrap()
                .version,
        );
    }
    let probe = |file: &'static str, version: u64| {
        let place = At {
            path: file,
            ..at(&d, version, 1, 2)
        };
        let broker = &broker;
        async move { run(broker, &place, "trivial").await.unwrap() }
    };
    let a = probe("A.lean", versions[0]).await;
    assert_eq!(a.memory, None, "{a:?}");
    let b = probe("B.lean", versions[1]).await;
    let note = b.memory.as_deref().expect("the reclaim is said");
    assert!(
        note.starts_with("closed 1 idle probe slot(s) of other files: ")
            && note.contains("(900 of 1000 MiB in use"),
        "{note}"
    );
    assert!(b.success, "{b:?}");
    let closed = shadow_count(&lean, "textDocument/didClose", ".A.beam-shadow");
    assert_eq!(closed, 1, "A's slot gave its worker back");
    assert_eq!(broker.limits().await.max_lean_memory.reclaimed, 1);
}

/// One worker (200 MiB) larger than the whole budget (150): no probe can
/// ever fit, and the call is refused with the budget and its variable.
#[tokio::test]
async fn a_worker_larger_than_the_whole_budget_is_refused_naming_it() {
    let lean = ScriptedLean::new(rules());
    let ws = Workspace::new();
    ws.write("A.lean", PROOF);
    let broker = broker_with(&lean, &ws, &["A.lean"], 150);
    let d = ws.descriptor();
    let v = synced(&broker, &d, "A.lean").await;
    let error = run(&broker, &at(&d, v, 1, 2), "trivial").await.unwrap_err();
    match &error {
        Error::ResourceLimit(Limit::LeanMemory {
            limit,
            worker,
            source,
        }) => {
            assert_eq!((*limit, *worker), (150 * MIB, 200 * MIB));
            assert_eq!(source, ENV);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(shadow_opens(&lean), 0);
    assert_eq!(broker.limits().await.max_lean_memory.refused, 1);
}
