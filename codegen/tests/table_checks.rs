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

/// One `[[tool]]` entry with these keys (besides its name and description;
/// `result = "SomeResult"` unless the keys name a result) and arguments.
fn tool(name: &str, keys: &[&str], args: &[&str]) -> String {
    let result = if keys.iter().any(|key| key.starts_with("result")) {
        ""
    } else {
        "result = \"SomeResult\"\n"
    };
    format!(
        "\n[[tool]]\nname = \"{name}\"\ndescription = \"A case of the table checks.\"\n{result}{}\nargs = [\n{}\n]\n",
        keys.join("\n"),
        args.join(",\n"),
    )
}

const QUIET: &str = r#"progress = "quiet""#;

const DAILY: &str = "\n[profile.daily]\ndoc = \"The daily tools.\"\n";

/// A table with one mistake, and what the build's message must name.
struct Case {
    mistake: &'static str,
    table: String,
    names: &'static [&'static str],
}

fn cases() -> Vec<Case> {
    let case = |mistake, source, names| Case {
        mistake,
        table: source,
        names,
    };
    vec![
        case(
            "a host-injected argument a tool declares",
            format!(
                "host_injected = [\"wait_for_previous\"]\n{}",
                table(&tool(
                    "waiter",
                    &[QUIET],
                    &[r#"{ name = "wait_for_previous", type = "boolean", doc = "Wait." }"#],
                ))
            ),
            &[
                "operations.toml",
                "host_injected",
                "waiter",
                "wait_for_previous",
            ],
        ),
        case(
            "a tool key the table does not know",
            table(&tool("colourful", &[QUIET, r#"colour = "blue""#], &[])),
            &["operations.toml", "colour", "colourful"],
        ),
        case(
            "an argument key the table does not know",
            table(&tool(
                "argful",
                &[QUIET],
                &[r#"{ name = "count", type = "natural", maximum = 3, doc = "How many." }"#],
            )),
            &["operations.toml", "maximum", "argful"],
        ),
        case(
            "a tool declared twice",
            table(GOOD_TOOL),
            &["operations.toml", "tool `good_tool`", "duplicate tool"],
        ),
        case(
            "an argument declared twice",
            table(&tool(
                "twice",
                &[QUIET],
                &[
                    r#"{ name = "path", type = "string", doc = "A path." }"#,
                    r#"{ name = "path", type = "string", doc = "The same path." }"#,
                ],
            )),
            &["tool `twice`", "argument `path`", "duplicate argument"],
        ),
        case(
            "a shape field declared twice",
            PRELUDE.replace(
                r#"  { name = "root", type = "string", required = true, doc = "Absolute root." },"#,
                r#"  { name = "root", type = "string", required = true, doc = "Absolute root." },
  { name = "root", type = "string", doc = "Again." },"#,
            ) + GOOD_TOOL,
            &["shape `Workspace`", "argument `root`", "duplicate argument"],
        ),
        case(
            "a type that does not exist",
            table(&tool(
                "typo",
                &[QUIET],
                &[r#"{ name = "line", type = "nat", doc = "A line." }"#],
            )),
            &["tool `typo`", "argument `line`", "unknown type `nat`"],
        ),
        case(
            "an array of a type that does not exist",
            table(&tool(
                "listy",
                &[QUIET],
                &[r#"{ name = "things", type = "array", items = "Thing", doc = "Things." }"#],
            )),
            &["tool `listy`", "argument `things`", "unknown type `Thing`"],
        ),
        case(
            "a default that is not one of the enum's values",
            table(&tool(
                "scoped",
                &[QUIET],
                &[
                    r#"{ name = "scope", type = "string", enum = ["errors", "all"], default = "warnings", doc = "Which." }"#,
                ],
            )),
            &[
                "tool `scoped`",
                "argument `scope`",
                "default `warnings`",
                "errors, all",
            ],
        ),
        case(
            "a default of the wrong type",
            table(&tool(
                "flag",
                &[QUIET],
                &[r#"{ name = "on", type = "boolean", default = "yes", doc = "On?" }"#],
            )),
            &[
                "tool `flag`",
                "argument `on`",
                "does not fit type `boolean`",
            ],
        ),
        case(
            "a progress class that does not exist",
            table(&tool("chatty", &[r#"progress = "loud""#], &[])),
            &["tool `chatty`", "unknown progress class `loud`"],
        ),
        case(
            "a blank doc",
            table(&tool(
                "blank",
                &[QUIET],
                &[r#"{ name = "path", type = "string", doc = "  " }"#],
            )),
            &["tool `blank`", "argument `path`", "empty doc"],
        ),
        case(
            "a tool joining a profile that is not declared",
            table(&tool("joiner", &[QUIET, r#"profiles = ["daily"]"#], &[])),
            &["tool `joiner`", "unknown profile `daily`"],
        ),
        case(
            "a tool joining a profile twice",
            table(&format!(
                "{}{DAILY}",
                tool("twice", &[QUIET, r#"profiles = ["daily", "daily"]"#], &[])
            )),
            &["tool `twice`", "`daily` twice"],
        ),
        case(
            "a profile no tool joins",
            table(&format!("{}{DAILY}", tool("loner", &[QUIET], &[]))),
            &["profile `daily`", "no tool names it"],
        ),
        case(
            "a profile called `all`",
            table(&format!(
                "{}\n[profile.all]\ndoc = \"Everything.\"\n",
                tool("member", &[QUIET, r#"profiles = ["all"]"#], &[])
            )),
            &["profile `all`", "every tool"],
        ),
        case(
            "a profile named like a tool",
            table(&format!(
                "{}\n[profile.good_tool]\ndoc = \"Clash.\"\n",
                tool("member", &[QUIET, r#"profiles = ["good_tool"]"#], &[])
            )),
            &["profile `good_tool`", "share its name with a tool"],
        ),
        case(
            "a tool that names no result type",
            table(
                r#"
[[tool]]
name = "resultless"
description = "Says nothing of what it answers."
progress = "quiet"
args = []
"#,
            ),
            &["operations.toml", "resultless", "result"],
        ),
        case(
            "a result that is not a Rust type name",
            table(&tool(
                "oddly_typed",
                &[QUIET, r#"result = "some_result""#],
                &[],
            )),
            &["operations.toml", "tool `oddly_typed`", "`some_result`"],
        ),
        case(
            "a speculative tool without its note",
            table(&tool("probe", &[QUIET, "speculative = true"], &[])),
            &["tool `probe`", "speculative_note"],
        ),
    ]
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
fn each_mistake_stops_the_build_with_a_message_naming_the_entry() {
    for Case {
        mistake,
        table,
        names,
    } in cases()
    {
        let message = match generate(&table) {
            Ok(_) => panic!("{mistake}: the table was accepted:\n{table}"),
            Err(err) => err.to_string(),
        };
        for name in names {
            assert!(
                message.contains(name),
                "{mistake}: the message {message:?} does not name {name:?}"
            );
        }
    }
}

#[test]
fn a_profile_lists_the_tools_that_join_it_in_table_order() {
    let source = table(&format!(
        "{}{}{DAILY}",
        tool("first", &[QUIET, r#"profiles = ["daily"]"#], &[]),
        tool("second", &[QUIET, r#"profiles = ["daily"]"#], &[])
    ));
    let code = generate(&source).expect("a profile with two members is valid");
    let flat: String = code.split_whitespace().collect();
    assert!(
        flat.contains(
            r#"ProfileSpec{name:"daily",doc:"Thedailytools.",tools:&[Tool::First,Tool::Second],}"#
        ),
        "{code}"
    );
}

#[test]
fn a_doc_may_be_omitted() {
    // The name says it, or a shape's fields do.
    generate(&table(&tool(
        "terse",
        &[QUIET, "workspace_bound = true"],
        &[
            r#"{ name = "workspace", type = "Workspace", required = true }"#,
            r#"{ name = "title", type = "string" }"#,
        ],
    )))
    .expect("arguments may omit their doc");
}
