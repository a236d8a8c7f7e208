//! The checked-in copies of what `operations.toml` generates, so that a review
//! sees every change of the tool surface, and of the generator, as a diff:
//!
//! * `tests/golden/tools.json`: the tools/list catalog with the output
//!   schemas, exactly as `lean-beam-mcp tools` prints it;
//! * `tests/golden/operations.rs`: the Rust that `build.rs` generates through
//!   `lean-beam-codegen` into `$OUT_DIR` (argument types, schemas and
//!   validators, `enum ToolCall`, `trait Operations`, `Handler`).
//!
//! A stale copy fails its test, naming the first line that differs. After an
//! intended change, refresh both with
//!
//! ```sh
//! UPDATE_EXPECT=1 cargo test golden
//! ```
//!
//! which rewrites each stale copy (whole, through a temporary file) and passes;
//! review the diff and commit it. Without `UPDATE_EXPECT` nothing is written,
//! so a plain `cargo test` never changes the tree.

use std::path::Path;

use lean_beam_mcp::surface::catalog_json;
use serde_json::Value;

const REFRESH: &str = "UPDATE_EXPECT=1 cargo test golden";

#[test]
fn golden_catalog_matches_the_table() {
    // Exactly what `lean-beam-mcp tools` prints, output schemas included.
    let catalog: Value = serde_json::from_str(catalog_json()).expect("the catalog is JSON");
    let pretty = serde_json::to_string_pretty(&catalog).unwrap() + "\n";
    ensure_file_contents("tests/golden/tools.json", &pretty);
}

#[test]
fn golden_generated_rust_matches_the_table() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let table =
        std::fs::read_to_string(root.join("operations.toml")).expect("read operations.toml");
    let code = lean_beam_codegen::generate(&table).unwrap_or_else(|e| panic!("{e}"));
    ensure_file_contents("tests/golden/operations.rs", &code);
}

/// Check that the file at `rel` (from the repository root) holds `contents`;
/// with `UPDATE_EXPECT` set (and not `0`), rewrite it when it does not.
fn ensure_file_contents(rel: &str, contents: &str) {
    let update = std::env::var_os("UPDATE_EXPECT").is_some_and(|v| !v.is_empty() && v != "0");
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(rel);
    match check_file(&path, contents, update) {
        Ok(Checked::Current) => {}
        Ok(Checked::Rewritten) => eprintln!("{rel} was out of date: rewritten (review the diff)"),
        Err(stale) => panic!("{rel} {stale}"),
    }
}

#[derive(Debug, PartialEq)]
enum Checked {
    Current,
    Rewritten,
}

/// The work of [`ensure_file_contents`], with the decision to rewrite passed in.
fn check_file(path: &Path, contents: &str, update: bool) -> Result<Checked, String> {
    let old = std::fs::read_to_string(path).unwrap_or_default();
    if old == contents {
        return Ok(Checked::Current);
    }
    if update {
        let tmp = path.with_extension("golden-tmp");
        std::fs::write(&tmp, contents)
            .and_then(|()| std::fs::rename(&tmp, path))
            .map_err(|e| format!("cannot be rewritten: {e}"))?;
        return Ok(Checked::Rewritten);
    }
    let line = old
        .lines()
        .zip(contents.lines())
        .position(|(a, b)| a != b)
        .unwrap_or_else(|| old.lines().count().min(contents.lines().count()));
    Err(format!(
        "is out of date with operations.toml (first difference at line {}):\n  checked in: {}\n  generated:  {}\nIf the change is intended, refresh it with:\n    {REFRESH}",
        line + 1,
        old.lines().nth(line).unwrap_or("<end of file>"),
        contents.lines().nth(line).unwrap_or("<end of file>"),
    ))
}

#[test]
fn a_stale_copy_fails_and_is_rewritten_only_when_asked() {
    let dir = std::env::temp_dir().join(format!("lean-beam-golden-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("copy.rs");
    std::fs::write(&path, "fn a() {}\nfn b() {}\n").unwrap();

    assert_eq!(
        check_file(&path, "fn a() {}\nfn b() {}\n", false),
        Ok(Checked::Current)
    );
    let stale = check_file(&path, "fn a() {}\nfn c() {}\n", false).unwrap_err();
    assert!(stale.contains("first difference at line 2"), "{stale}");
    assert!(
        stale.contains("fn b() {}") && stale.contains("fn c() {}"),
        "{stale}"
    );
    assert!(stale.contains(REFRESH), "{stale}");
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "fn a() {}\nfn b() {}\n",
        "left as it is"
    );

    assert_eq!(
        check_file(&path, "fn a() {}\n", true),
        Ok(Checked::Rewritten)
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "fn a() {}\n");
    assert_eq!(
        check_file(&path, "fn a() {}\n", false),
        Ok(Checked::Current)
    );
    let missing = check_file(&dir.join("absent.rs"), "x\n", false).unwrap_err();
    assert!(missing.contains("line 1"), "{missing}");
    std::fs::remove_dir_all(&dir).unwrap();
}
