//! Outlines with signatures (issue 18 item 5): `lean_document_symbols` with
//! `signatures: true` against the real Lean 4.35.0 test toolchain, for every
//! kind of declaration in `Fix/Kinds.lean` (see `tests/fixtures/EXPECTED.md`).

use crate::common;

use serde_json::{Value, json};

use common::lean::lean;
use common::mcp::{Era, Mcp, ws};

const KINDS: &str = "Fix/Kinds.lean";

fn synced() -> (Mcp, String) {
    let root = lean().fixture("basic").to_string_lossy().into_owned();
    let mut mcp = Mcp::on_lean(Era::Modern, &[]);
    let sync = mcp.call("lean_sync", json!({"workspace": ws(&root), "path": KINDS}));
    assert_eq!(sync["version"], 1, "{sync}");
    assert_eq!(sync["diagnostics"]["counts"]["total"], 0, "{sync}");
    (mcp, root)
}

/// Every symbol, depth first: (name, declaration_kind, signature, object).
fn flatten(symbols: &Value, out: &mut Vec<(String, Option<String>, Option<String>, Value)>) {
    for symbol in symbols.as_array().expect("symbols are an array") {
        let text = |key: &str| symbol[key].as_str().map(str::to_string);
        out.push((
            text("name").unwrap(),
            text("declaration_kind"),
            text("signature"),
            symbol.clone(),
        ));
        if let Some(children) = symbol.get("children") {
            flatten(children, out);
        }
    }
}

#[test]
fn signatures_name_each_declarations_kind_and_type() {
    let (mut mcp, root) = synced();
    let args = |signatures: Option<bool>| {
        let mut args = json!({"workspace": ws(&root), "path": KINDS, "version": 1});
        if let Some(on) = signatures {
            args["signatures"] = json!(on);
        }
        args
    };
    let result = mcp.call("lean_document_symbols", args(Some(true)));
    let mut symbols = Vec::new();
    flatten(&result["symbols"], &mut symbols);
    let expected: &[(&str, &str, Option<&str>)] = &[
        ("Fix.Kinds", "namespace", None),
        ("double", "def", Some("Fix.Kinds.double (n : N) : N")),
        (
            "double_zero",
            "theorem",
            Some("Fix.Kinds.double_zero : Eq (double N.zero) N.zero"),
        ),
        ("Pair", "abbrev", Some("Fix.Kinds.Pair : Type")),
        ("hidden", "def", Some("Fix.Kinds.hidden (a : N) : N")),
        ("tagged", "def", Some("Fix.Kinds.tagged (a b : N) : N")),
        ("chosen", "def", Some("Fix.Kinds.chosen : N")),
        (
            "postulate",
            "axiom",
            Some("Fix.Kinds.postulate (n : N) : Eq n n"),
        ),
        ("secret", "opaque", Some("Fix.Kinds.secret : N")),
        ("Colour", "inductive", Some("Fix.Kinds.Colour : Type")),
        ("Point", "structure", Some("Fix.Kinds.Point : Type")),
        ("Sized", "class", Some("Fix.Kinds.Sized (α : Type) : Type")),
        (
            "instSizedPoint",
            "instance",
            Some("Fix.Kinds.instSizedPoint : Sized Point"),
        ),
        (
            "instance : Sized Colour ",
            "instance",
            Some("Fix.Kinds.instSizedColour : Sized Colour"),
        ),
        ("Choice", "class inductive", Some("Fix.Kinds.Choice : Type")),
        (
            "flipped",
            "theorem",
            Some("Fix.Kinds.flipped (a b : N) (h : Eq a b) : Eq b a"),
        ),
        (
            "example",
            "example",
            Some("Fix.Kinds._example : Eq one one"),
        ),
        ("Inner", "section", None),
        ("inSection", "def", Some("Fix.Kinds.inSection (n : N) : N")),
    ];
    let got: Vec<(&str, Option<&str>, Option<&str>)> = symbols
        .iter()
        .map(|(name, kind, signature, _)| (name.as_str(), kind.as_deref(), signature.as_deref()))
        .collect();
    let want: Vec<(&str, Option<&str>, Option<&str>)> = expected
        .iter()
        .map(|(name, kind, signature)| (*name, Some(*kind), *signature))
        .collect();
    assert_eq!(got, want, "{result}");
    // Lean's own fields stay as they were: the LSP kind, the ranges.
    let (_, _, _, double) = &symbols[1];
    assert_eq!(double["kind"], "method");
    assert_eq!(
        double["selectionRange"]["start"],
        json!({"line": 13, "character": 4})
    );

    // Without the option (or with it off) the outline is Lean's alone.
    for off in [None, Some(false)] {
        let plain = mcp.call("lean_document_symbols", args(off));
        let mut listed = Vec::new();
        flatten(&plain["symbols"], &mut listed);
        assert_eq!(listed.len(), symbols.len(), "{plain}");
        for (name, kind, signature, _) in &listed {
            assert_eq!((kind, signature), (&None, &None), "{name}");
        }
    }
}

#[test]
fn signatures_refuse_a_stale_version_and_a_non_boolean() {
    let (mut mcp, root) = synced();
    let stale = mcp.call_err(
        "lean_document_symbols",
        json!({"workspace": ws(&root), "path": KINDS, "version": 2, "signatures": true}),
    );
    assert_eq!(stale["code"], "contentModified", "{stale}");
    let invalid = mcp.call_err(
        "lean_document_symbols",
        json!({"workspace": ws(&root), "path": KINDS, "version": 1, "signatures": "yes"}),
    );
    assert_eq!(invalid["code"], "invalidInput", "{invalid}");
    assert!(
        invalid["message"].as_str().unwrap().contains("/signatures"),
        "{invalid}"
    );
}
