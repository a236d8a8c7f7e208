//! Generates `$OUT_DIR/operations.rs` from `operations.toml` (see codegen/),
//! and `$OUT_DIR/catalog.rs`: each tool's tools/list entry with its
//! `outputSchema`, rendered here once rather than by every server start.
//!
//! The output schemas are derived from the result types with schemars, so
//! the result types are compiled into this script too: `src/results` is a
//! leaf of plain data (serde, schemars, serde_json and nothing of the
//! crate), and `src/surface/budget.rs` adds the `truncated` note. Both are
//! the very files the server compiles, so what a tool returns and what it
//! advertises cannot drift apart (`surface::tests` also compares the
//! rendered catalog with one derived at run time).

use std::path::PathBuf;

use serde_json::Value;

#[allow(dead_code)]
#[path = "src/results/mod.rs"]
mod results;

#[allow(dead_code)]
#[path = "src/surface/budget.rs"]
mod budget;

fn main() {
    println!("cargo::rerun-if-changed=operations.toml");
    println!("cargo::rerun-if-changed=src/results");
    println!("cargo::rerun-if-changed=src/surface/budget.rs");
    let source = std::fs::read_to_string("operations.toml").expect("read operations.toml");
    let stop = |err: lean_beam_codegen::TableError| -> ! {
        // The build stops here with the table entry named.
        eprintln!("{err}");
        println!("cargo::error={err}");
        std::process::exit(1);
    };
    let code = lean_beam_codegen::generate(&source).unwrap_or_else(|err| stop(err));
    let table = lean_beam_codegen::table::read(&source).unwrap_or_else(|err| stop(err));
    record_build_identity();
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR"));
    std::fs::write(out.join("operations.rs"), code).expect("write operations.rs");
    std::fs::write(out.join("catalog.rs"), catalog_entries(&table)).expect("write catalog.rs");
}

/// `CATALOG`: the `tools` array of every tool's tools/list result as JSON
/// text, and `CATALOG_ENTRIES`: where each tool's entry lies in it, in table
/// order. An entry is the table's (name, description, input schema,
/// annotations) with the `outputSchema` of its result type after its
/// `inputSchema`. The whole array is one literal, so that serving every
/// tool copies nothing at start-up (a join of the entries was a 212 KB heap
/// copy, 52 page faults), and a subset's array is joined from its slices.
fn catalog_entries(table: &lean_beam_codegen::table::Table) -> String {
    let Value::Array(entries) = lean_beam_codegen::schema::catalog(table) else {
        unreachable!("the catalog is an array")
    };
    let count = entries.len();
    let mut catalog = String::from("[");
    let mut ranges = Vec::with_capacity(count);
    for (entry, tool) in entries.into_iter().zip(&table.tool) {
        let Value::Object(entry) = entry else {
            unreachable!("a catalog entry is an object")
        };
        let mut output = output_schema(&tool.result).unwrap_or_else(|| {
            let err = format!(
                "operations.toml: tool `{}`: result type `{}` is not one of build.rs's result types \
                 (add it to `output_schema` there)",
                tool.name, tool.result
            );
            println!("cargo::error={err}");
            std::process::exit(1);
        });
        budget::declare(&mut output);
        let mut with_output = serde_json::Map::new();
        for (key, value) in entry {
            let after_input = key == "inputSchema";
            with_output.insert(key, value);
            if after_input {
                with_output.insert("outputSchema".into(), output.clone());
            }
        }
        let text = serde_json::to_string(&Value::Object(with_output)).expect("an entry serializes");
        if !ranges.is_empty() {
            catalog.push(',');
        }
        ranges.push((catalog.len(), catalog.len() + text.len()));
        catalog.push_str(&text);
    }
    catalog.push(']');
    let mut code = format!(
        "/// The `tools` array of every tool's tools/list result (each entry with its\n\
         /// `outputSchema`) as JSON text; rendered by build.rs.\n\
         /// A `static`, not a `const`: one copy in the binary, where a `const`\n\
         /// is a copy in each codegen unit that names it.\n\
         pub static CATALOG: &str = {catalog:?};\n\n\
         /// Where each tool's entry lies in [`CATALOG`] (byte offsets), in table order.\n\
         pub const CATALOG_ENTRIES: [(usize, usize); {count}] = [\n"
    );
    for (start, end) in ranges {
        code.push_str(&format!("    ({start}, {end}),\n"));
    }
    code.push_str("];\n");
    code
}

/// The output schema of the result type the table names `name`.
fn output_schema(name: &str) -> Option<Value> {
    macro_rules! by_name {
        ($($ty:ident),* $(,)?) => {
            match name {
                $(stringify!($ty) => Some(results::output_schema::<results::$ty>()),)*
                _ => None,
            }
        };
    }
    by_name!(
        BatchResult,
        CloseResult,
        CloseSaveResult,
        CodeActionResult,
        CompletionsResult,
        DocumentSymbolsResult,
        DropResult,
        FeedbackResult,
        GoalsResult,
        HandleEditResult,
        HoverResult,
        LocationsResult,
        ReleaseResult,
        RunCodeResult,
        RunResult,
        SaveResult,
        SearchResult,
        SignatureHelpResult,
        StatsResult,
        SuggestResult,
        SyncResult,
        TermGoalResult,
        TodoResult,
        UpdateResult,
        VerifyResult,
        VersionResult,
        WorkspaceSymbolsResult,
    )
}

/// Facts for `beam_version`'s build identity.
fn record_build_identity() {
    let env = |k: &str| std::env::var(k).unwrap_or_else(|_| "unknown".into());
    println!("cargo::rustc-env=LEAN_BEAM_PROFILE={}", env("PROFILE"));
    println!("cargo::rustc-env=LEAN_BEAM_TARGET={}", env("TARGET"));
    let rustc = std::process::Command::new(env("RUSTC"))
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|| "unknown".into());
    println!("cargo::rustc-env=LEAN_BEAM_RUSTC={rustc}");
    let commit = std::process::Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string());
    if let Some(commit) = commit {
        println!("cargo::rustc-env=LEAN_BEAM_GIT_COMMIT={commit}");
    }
    // A new commit on the current branch moves the branch's ref, not HEAD.
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .and_then(|o| String::from_utf8(o.stdout).ok())
            .map(|s| s.trim().to_string())
    };
    let mut watched = vec!["HEAD".to_string(), "packed-refs".to_string()];
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
        watched.push(branch);
    }
    for name in watched {
        if let Some(path) = git(&["rev-parse", "--git-path", &name]) {
            // A missing path would make Cargo rerun this script on every build.
            if std::path::Path::new(&path).exists() {
                println!("cargo::rerun-if-changed={path}");
            }
        }
    }
}
