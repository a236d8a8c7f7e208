//! Every resource has a bound that answers clearly, and handles are
//! capabilities (issue 14, items 4 and 7), against the real Lean server.
//!
//! Per bound: set it low, check the eviction or the clear `resourceLimit`
//! error (naming the variable that raises it).
//!
//! Every test works on private copies of the fixtures.

mod common;
#[path = "common/procfs.rs"]
mod procfs;

use serde_json::{Value, json};

use common::lean::{TempWorkspace, lean};
use common::mcp::{Era, Mcp, Spawn, ws};

const GOALS: &str = "Fix/Goals.lean";

fn spawn(extra: &[(&str, &str)]) -> Mcp {
    // Bases compile with a batch `lean` outside the server's trees; probes
    // here carry their whole prefix.
    let mut spawn = Spawn::default()
        .envs(lean().server_env())
        .env("LEAN_BEAM_PREFIX_BASES", "0");
    for (k, v) in extra {
        spawn = spawn.env(k, *v);
    }
    Mcp::start(Era::Modern, spawn)
}

fn doc(root: &TempWorkspace, path: &str) -> Value {
    json!({"workspace": ws(&root.root_str()), "path": path})
}

fn sync(m: &mut Mcp, root: &TempWorkspace, path: &str) -> u64 {
    let r = m.call("lean_sync", doc(root, path));
    r["version"].as_u64().expect("version")
}

fn at(
    root: &TempWorkspace,
    path: &str,
    version: u64,
    line: u64,
    character: u64,
    text: &str,
) -> Value {
    json!({
        "workspace": ws(&root.root_str()), "path": path, "version": version,
        "line": line, "character": character, "text": text,
    })
}

fn handle_of(result: &Value) -> String {
    result["next_handle"]
        .as_str()
        .unwrap_or_else(|| panic!("no next_handle in {result}"))
        .to_string()
}

/// A `resourceLimit` error of `kind` that names `env` and the bound.
fn assert_limit(error: &Value, kind: &str, env: &str, limit: u64) {
    assert_eq!(error["code"], "resourceLimit", "{error}");
    assert_eq!(error["data"]["kind"], kind, "{error}");
    assert_eq!(error["data"]["env"], env, "{error}");
    assert_eq!(error["data"]["limit"], limit, "{error}");
    let message = error["message"].as_str().expect("message");
    assert!(
        message.contains(&format!("{env}={limit}")) && message.contains("raise"),
        "the message names the bound and how to raise it: {message}"
    );
}

// ---------------------------------------------------------------------------
// Proof handles: bytes and capabilities.

#[test]
fn handles_share_the_document_text_and_are_bounded_by_bytes() {
    let a = TempWorkspace::copy("basic");
    let big = "Fix/Big.lean";
    // 4 MiB of comment before a small proof: cheap for Lean, large to copy.
    let text = format!(
        "prelude\nimport Fix.Basic\n\nnamespace Fix\n\n/-\n{}-/\n\ntheorem t : Eq one one := by\n  exact Eq.refl one\n\nend Fix\n",
        format!("{}\n", "x".repeat(127)).repeat(32 * 1024)
    );
    a.write(big, &text);
    let line = text[..text.find("  exact").unwrap()].matches('\n').count() as u64;
    let mut m = spawn(&[]);
    let v = sync(&mut m, &a, big);
    let probe = at(&a, big, v, line, 2, "exact Eq.refl one");
    m.call("lean_run_at_handle", probe.clone());
    let rss_before = procfs::rss(m.pid());
    let mut handles = Vec::new();
    for _ in 0..12 {
        handles.push(handle_of(&m.call("lean_run_at_handle", probe.clone())));
    }
    let grown = procfs::rss(m.pid()).saturating_sub(rss_before);
    let stats = m.workspace_stats(&a.root_str()).unwrap()["handles"].clone();
    assert_eq!(stats["live"], 13, "{stats}");
    assert_eq!(
        stats["sharedTexts"], 1,
        "one document text for every handle: {stats}"
    );
    let bytes = stats["bytes"].as_u64().expect("bytes");
    assert!(
        bytes < text.len() as u64 + 13 * 4096,
        "13 handles on a {} byte file hold {bytes} bytes",
        text.len()
    );
    assert!(
        grown < 6 * text.len() as u64,
        "12 handles on a {} byte file grew the server by {grown} bytes",
        text.len()
    );
    eprintln!(
        "12 handles on a {} MiB file: server RSS +{} KiB; handles hold {bytes} bytes",
        text.len() >> 20,
        grown >> 10
    );

    // With less room than the file, a handle is refused clearly; a probe
    // without one still runs.
    let mut small = spawn(&[("LEAN_BEAM_MAX_HANDLE_BYTES", "1048576")]);
    let v = sync(&mut small, &a, big);
    let probe = at(&a, big, v, line, 2, "exact Eq.refl one");
    let e = small.call_err("lean_run_at_handle", probe.clone());
    assert_limit(&e, "handleBytes", "LEAN_BEAM_MAX_HANDLE_BYTES", 1_048_576);
    assert_eq!(small.call("lean_run_at", probe)["success"], true);
}

/// Neighbours of a handle's last part, read as a decimal or a hex number.
fn neighbours(handle: &str) -> Vec<String> {
    let (head, last) = handle.rsplit_once('.').expect("a dotted handle");
    let mut out = Vec::new();
    for k in 1..=4u128 {
        if let Ok(n) = last.parse::<u128>() {
            out.extend([n.wrapping_sub(k), n.wrapping_add(k)].map(|m| format!("{head}.{m}")));
        }
        if let Ok(n) = u128::from_str_radix(last, 16) {
            let width = last.len();
            out.extend(
                [n.wrapping_sub(k), n.wrapping_add(k)].map(|m| format!("{head}.{m:0width$x}")),
            );
        }
    }
    out
}

#[test]
fn a_handle_cannot_be_guessed_from_another_clients_handle() {
    let a = TempWorkspace::copy("basic");
    let root = a.root_str();
    let mut m = spawn(&[]);
    let v = sync(&mut m, &a, GOALS);
    // Client A's handle, then client B's.
    let h_a = handle_of(&m.call("lean_run_at_handle", at(&a, GOALS, v, 33, 2, "intro h")));
    let h_b = handle_of(&m.call("lean_run_at_handle", at(&a, GOALS, v, 33, 2, "intro hpq")));
    // B tries the handles next to its own: none is A's, none is accepted.
    for guess in neighbours(&h_b) {
        assert_ne!(guess, h_a, "A's handle is B's plus or minus a little");
        let e = m.call_err(
            "lean_release",
            json!({"workspace": ws(&root), "path": GOALS, "handle": guess}),
        );
        assert_eq!(e["code"], "invalidParams", "{guess}: {e}");
    }
    let secret = h_b.rsplit('.').next().unwrap();
    assert!(
        secret.len() >= 32 && secret.bytes().all(|b| b.is_ascii_hexdigit()),
        "at least 128 random bits: {h_b}"
    );
    // A's handle is still there.
    let r = m.call(
        "lean_run_with",
        json!({"workspace": ws(&root), "path": GOALS, "handle": h_a, "text": "cases h"}),
    );
    assert_eq!(r["success"], true, "{r}");
}

#[test]
fn a_handle_is_accepted_in_one_spelling_only() {
    let a = TempWorkspace::copy("basic");
    let root = a.root_str();
    let mut m = spawn(&[]);
    let v = sync(&mut m, &a, GOALS);
    let h = handle_of(&m.call("lean_run_at_handle", at(&a, GOALS, v, 33, 2, "intro h")));
    let parts: Vec<&str> = h.split('.').collect();
    // The same numbers, spelled otherwise: upper case, a leading zero or a
    // plus sign in any part after the prefix.
    let mut spellings = Vec::new();
    for i in 1..parts.len() {
        for respelled in [
            parts[i].to_uppercase(),
            format!("0{}", parts[i]),
            format!("+{}", parts[i]),
        ] {
            if respelled != parts[i] {
                let mut other = parts.clone();
                other[i] = &respelled;
                spellings.push(other.join("."));
            }
        }
    }
    for other in spellings {
        let e = m.call_err(
            "lean_release",
            json!({"workspace": ws(&root), "path": GOALS, "handle": other}),
        );
        assert_eq!(e["code"], "invalidParams", "{other}: {e}");
    }
    let r = m.call(
        "lean_run_with",
        json!({"workspace": ws(&root), "path": GOALS, "handle": h, "text": "cases h"}),
    );
    assert_eq!(r["success"], true, "the handle itself still works: {r}");
}
