//! The table is checked when it is read: each mistake stops the build with a
//! message naming the table entry.

use lean_beam_codegen::generate;

const PRELUDE: &str = r#"
[progress.quiet]
status_notice = "never"
text = ""

[shape.Workspace]
doc = "A workspace."
fields = [
  { name = "root", type = "string", required = true, doc = "Absolute root." },
]
"#;

const GOOD_TOOL: &str = r#"
[[tool]]
name = "good_tool"
description = "A tool that is fine."
result = "SomeResult"
progress = "quiet"
read_only = true
args = [
  { name = "mode", type = "string", enum = ["fast", "slow"], default = "fast", doc = "How." },
]
"#;

fn table(tools: &str) -> String {
    format!("{PRELUDE}{GOOD_TOOL}{tools}")
}

fn error_of(source: &str) -> String {
    match generate(source) {
        Ok(_) => panic!("the table was accepted:\n{source}"),
        Err(err) => err.to_string(),
    }
}

fn assert_mentions(message: &str, parts: &[&str]) {
    for part in parts {
        assert!(
            message.contains(part),
            "message {message:?} does not mention {part:?}"
        );
    }
}

#[test]
fn a_good_table_generates_code() {
    let code = generate(&table("")).expect("the small table is valid");
    assert!(code.contains("pub struct GoodToolArgs"));
    assert!(code.contains("trait Operations"));
    // The method returns the result type the table names, whose schema is
    // the tool's outputSchema.
    assert!(code.contains("Result<results::SomeResult, ToolError>"));
    assert!(code.contains("results::output_schema::<results::SomeResult>()"));
}

#[test]
fn a_tool_names_its_result_type() {
    let missing = error_of(&table(
        r#"
[[tool]]
name = "resultless"
description = "Says nothing of what it answers."
progress = "quiet"
args = []
"#,
    ));
    assert_mentions(&missing, &["operations.toml", "resultless", "result"]);
    let misspelt = error_of(&table(
        r#"
[[tool]]
name = "oddly_typed"
description = "Names no Rust type."
result = "some_result"
progress = "quiet"
args = []
"#,
    ));
    assert_mentions(
        &misspelt,
        &["operations.toml", "tool `oddly_typed`", "`some_result`"],
    );
}

#[test]
fn unknown_key_names_the_entry() {
    let message = error_of(&table(
        r#"
[[tool]]
name = "colourful"
description = "Has a key the table does not know."
result = "SomeResult"
progress = "quiet"
colour = "blue"
args = []
"#,
    ));
    assert_mentions(&message, &["operations.toml", "colour", "colourful"]);
}

#[test]
fn unknown_argument_key_names_the_entry() {
    let message = error_of(&table(
        r#"
[[tool]]
name = "argful"
description = "An argument with an unknown key."
result = "SomeResult"
progress = "quiet"
args = [
  { name = "count", type = "natural", maximum = 3, doc = "How many." },
]
"#,
    ));
    assert_mentions(&message, &["operations.toml", "maximum", "argful"]);
}

#[test]
fn duplicate_tool_names_the_entry() {
    let message = error_of(&table(GOOD_TOOL));
    assert_mentions(
        &message,
        &["operations.toml", "tool `good_tool`", "duplicate tool"],
    );
}

#[test]
fn duplicate_argument_names_the_entry() {
    let message = error_of(&table(
        r#"
[[tool]]
name = "twice"
description = "Declares an argument twice."
result = "SomeResult"
progress = "quiet"
args = [
  { name = "path", type = "string", doc = "A path." },
  { name = "path", type = "string", doc = "The same path." },
]
"#,
    ));
    assert_mentions(
        &message,
        &["tool `twice`", "argument `path`", "duplicate argument"],
    );
}

#[test]
fn duplicate_shape_field_names_the_shape() {
    let source = PRELUDE.replace(
        r#"  { name = "root", type = "string", required = true, doc = "Absolute root." },"#,
        r#"  { name = "root", type = "string", required = true, doc = "Absolute root." },
  { name = "root", type = "string", doc = "Again." },"#,
    ) + GOOD_TOOL;
    assert_mentions(
        &error_of(&source),
        &["shape `Workspace`", "argument `root`", "duplicate argument"],
    );
}

#[test]
fn unknown_type_names_the_entry() {
    let message = error_of(&table(
        r#"
[[tool]]
name = "typo"
description = "Uses a type that does not exist."
result = "SomeResult"
progress = "quiet"
args = [
  { name = "line", type = "nat", doc = "A line." },
]
"#,
    ));
    assert_mentions(
        &message,
        &["tool `typo`", "argument `line`", "unknown type `nat`"],
    );
}

#[test]
fn unknown_array_item_type_names_the_entry() {
    let message = error_of(&table(
        r#"
[[tool]]
name = "listy"
description = "An array of an unknown type."
result = "SomeResult"
progress = "quiet"
args = [
  { name = "things", type = "array", items = "Thing", doc = "Things." },
]
"#,
    ));
    assert_mentions(
        &message,
        &["tool `listy`", "argument `things`", "unknown type `Thing`"],
    );
}

#[test]
fn enum_default_outside_the_enum_names_the_entry() {
    let message = error_of(&table(
        r#"
[[tool]]
name = "scoped"
description = "A default that is not one of the values."
result = "SomeResult"
progress = "quiet"
args = [
  { name = "scope", type = "string", enum = ["errors", "all"], default = "warnings", doc = "Which." },
]
"#,
    ));
    assert_mentions(
        &message,
        &[
            "tool `scoped`",
            "argument `scope`",
            "default `warnings`",
            "errors, all",
        ],
    );
}

#[test]
fn default_of_the_wrong_type_names_the_entry() {
    let message = error_of(&table(
        r#"
[[tool]]
name = "flag"
description = "A boolean with a string default."
result = "SomeResult"
progress = "quiet"
args = [
  { name = "on", type = "boolean", default = "yes", doc = "On?" },
]
"#,
    ));
    assert_mentions(
        &message,
        &[
            "tool `flag`",
            "argument `on`",
            "does not fit type `boolean`",
        ],
    );
}

#[test]
fn unknown_progress_class_names_the_entry() {
    let message = error_of(&table(
        r#"
[[tool]]
name = "chatty"
description = "Uses a progress class that does not exist."
result = "SomeResult"
progress = "loud"
args = []
"#,
    ));
    assert_mentions(
        &message,
        &["tool `chatty`", "unknown progress class `loud`"],
    );
}

#[test]
fn a_doc_is_omitted_or_says_something() {
    let message = error_of(&table(
        r#"
[[tool]]
name = "blank"
description = "Has an argument with a blank doc."
result = "SomeResult"
progress = "quiet"
args = [
  { name = "path", type = "string", doc = "  " },
]
"#,
    ));
    assert_mentions(&message, &["tool `blank`", "argument `path`", "empty doc"]);
    // An omitted doc is fine: the name says it, or a shape's fields do.
    generate(&table(
        r#"
[[tool]]
name = "terse"
description = "Takes a workspace and a title."
result = "SomeResult"
progress = "quiet"
workspace_bound = true
args = [
  { name = "workspace", type = "Workspace", required = true },
  { name = "title", type = "string" },
]
"#,
    ))
    .expect("arguments may omit their doc");
}

#[test]
fn a_speculative_tool_needs_the_note() {
    let message = error_of(&table(
        r#"
[[tool]]
name = "probe"
description = "Runs caller text."
result = "SomeResult"
progress = "quiet"
speculative = true
args = []
"#,
    ));
    assert_mentions(&message, &["tool `probe`", "speculative_note"]);
}
