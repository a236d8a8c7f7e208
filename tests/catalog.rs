//! What an agent reads before its first call: the tools/list catalog (the
//! number of tools, the schema rules every client relies on, the output
//! schemas, what the descriptions must say, its size) and the server
//! instructions. The checked-in copy of the catalog is pinned by
//! `tests/golden.rs`.

#[allow(dead_code)] // this binary uses a slice of the harness (see tests/common/mod.rs)
mod common;

use common::samples::valid_instance;
use common::{Server, modern, request};
use lean_beam_mcp::surface::{self, INPUT_SCHEMAS, ParseError, TOOL_COUNT, Tool};
use serde_json::{Value, json};

fn catalog() -> Vec<Value> {
    match serde_json::from_str(surface::catalog_json()).expect("the catalog is JSON") {
        Value::Array(tools) => tools,
        other => panic!("the catalog is not an array: {other}"),
    }
}

/// The served catalog is rendered by build.rs; this is the derivation a
/// server start used to do: the table's catalog (`INPUT_CATALOG_JSON`) with
/// each tool's output schema, derived now from its result type, after its
/// `inputSchema`. The two texts are the same, byte for byte.
#[test]
fn the_rendered_catalog_is_the_one_derived_from_the_result_types() {
    let Value::Array(entries) = serde_json::from_str(surface::INPUT_CATALOG_JSON).unwrap() else {
        panic!("the table's catalog is not an array")
    };
    let derived: Vec<Value> = entries
        .into_iter()
        .zip(Tool::ALL)
        .map(|(entry, tool)| {
            let Value::Object(entry) = entry else {
                panic!("{}: not an object", tool.name())
            };
            let mut with_output = serde_json::Map::new();
            for (key, value) in entry {
                let after_input = key == "inputSchema";
                with_output.insert(key, value);
                if after_input {
                    let mut output = tool.output_schema();
                    surface::budget::declare(&mut output);
                    with_output.insert("outputSchema".into(), output);
                }
            }
            Value::Object(with_output)
        })
        .collect();
    let derived = serde_json::to_string(&derived).unwrap();
    let served = surface::catalog_json();
    if served != derived {
        let at = served
            .bytes()
            .zip(derived.bytes())
            .position(|(a, b)| a != b)
            .unwrap_or(served.len().min(derived.len()));
        let from = at.saturating_sub(80);
        panic!(
            "the rendered catalog differs from the derived one at byte {at}:\n  served:  {}\n  derived: {}",
            &served[from..(at + 80).min(served.len())],
            &derived[from..(at + 80).min(derived.len())]
        );
    }
    // A tool set's catalog is the same entries, joined.
    let core = lean_beam_mcp::surface::ToolSet::select("core").unwrap();
    let listed: Vec<Value> = serde_json::from_str(core.catalog_json()).unwrap();
    let expected: Vec<Value> = catalog()
        .into_iter()
        .filter(|entry| core.served(entry["name"].as_str().unwrap()))
        .collect();
    assert_eq!(listed, expected);
}

#[test]
fn catalog_lists_32_tools_in_table_order() {
    let tools = catalog();
    assert_eq!(tools.len(), 32);
    assert_eq!(TOOL_COUNT, 32);
    for (i, (entry, tool)) in tools.iter().zip(Tool::ALL).enumerate() {
        assert_eq!(entry["name"], tool.name(), "tool {i}");
        assert_eq!(Tool::from_name(tool.name()), Some(tool));
        assert!(
            entry["description"]
                .as_str()
                .is_some_and(|d| !d.trim().is_empty()),
            "{}: description",
            tool.name()
        );
        // The catalog's schema is the one the validator uses.
        let emitted: Value = serde_json::from_str(INPUT_SCHEMAS[i]).unwrap();
        assert_eq!(
            entry["inputSchema"],
            emitted,
            "{}: catalog schema differs from INPUT_SCHEMAS",
            tool.name()
        );
        // And its output schema is the one derived from its result type.
        let mut derived = tool.output_schema();
        surface::budget::declare(&mut derived);
        assert_eq!(
            entry["outputSchema"],
            derived,
            "{}: catalog output schema differs from the result type's",
            tool.name()
        );
        let members: Vec<&str> = entry
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        // Members of MCP 2025-06-18's Tool, the oldest revision served
        // (2025-11-25 added `icons` and `execution`, which no session may get).
        for m in &members {
            assert!(
                [
                    "name",
                    "description",
                    "inputSchema",
                    "outputSchema",
                    "annotations"
                ]
                .contains(m),
                "{}: member {m}",
                tool.name()
            );
        }
    }
    for (tool, entry) in Tool::ALL.iter().zip(&tools) {
        for hint in entry["annotations"]
            .as_object()
            .into_iter()
            .flat_map(|a| a.keys())
        {
            let in_2025_06_18 = [
                "title",
                "readOnlyHint",
                "destructiveHint",
                "idempotentHint",
                "openWorldHint",
            ];
            assert!(
                in_2025_06_18.contains(&hint.as_str()),
                "{}: {hint}",
                tool.name()
            );
        }
    }
    assert_eq!(tools[0]["name"], "beam_version");
    assert_eq!(tools[1]["name"], "beam_stats");
}

/// Walk every subschema, calling `visit(pointer, schema)`.
fn walk(
    pointer: &str,
    schema: &Value,
    visit: &mut dyn FnMut(&str, &serde_json::Map<String, Value>),
) {
    let Value::Object(map) = schema else { return };
    visit(pointer, map);
    for (key, sub) in map {
        match (key.as_str(), sub) {
            (
                "properties" | "$defs" | "definitions" | "patternProperties",
                Value::Object(children),
            ) => {
                for (name, child) in children {
                    walk(&format!("{pointer}/{key}/{name}"), child, visit);
                }
            }
            ("anyOf" | "oneOf" | "allOf" | "prefixItems", Value::Array(children)) => {
                for (i, child) in children.iter().enumerate() {
                    walk(&format!("{pointer}/{key}/{i}"), child, visit);
                }
            }
            (
                "items" | "additionalProperties" | "not" | "if" | "then" | "else" | "contains",
                Value::Object(_),
            ) => {
                walk(&format!("{pointer}/{key}"), sub, visit);
            }
            _ => {}
        }
    }
}

#[test]
fn every_schema_is_closed_typed_and_provider_friendly() {
    for entry in catalog() {
        let name = entry["name"].as_str().unwrap();
        let schema = &entry["inputSchema"];
        assert!(
            schema.get("$schema").is_none(),
            "{name}: no `$schema` key (MCP's default dialect applies)"
        );
        assert_eq!(
            schema["type"], "object",
            "{name}: top-level type must be \"object\""
        );
        assert_eq!(
            schema["additionalProperties"],
            json!(false),
            "{name}: top level must be closed"
        );
        assert!(schema["properties"].is_object(), "{name}: properties");
        walk("", schema, &mut |pointer, map| {
            assert!(
                !(map.contains_key("anyOf") && map.contains_key("type")),
                "{name}: `type` beside `anyOf` at {pointer:?}"
            );
            assert!(
                !map.contains_key("$ref"),
                "{name}: schemas are inlined, found $ref at {pointer:?}"
            );
            // A free-form object (`properties: {}`, e.g. an LSP code action
            // passed back) stays open.
            let declares = map
                .get("properties")
                .and_then(Value::as_object)
                .is_some_and(|properties| !properties.is_empty());
            if map.get("type") == Some(&json!("object")) && declares {
                assert_eq!(
                    map.get("additionalProperties"),
                    Some(&json!(false)),
                    "{name}: object with declared properties at {pointer:?} must be closed"
                );
            }
        });
    }
}

/// MCP requires an object output schema; it must compile as draft 2020-12
/// (what clients validate results with) and, like the input schemas, carry
/// no `$schema`. Each declares what it returns: its properties, and a
/// description of the tool's result.
#[test]
fn every_output_schema_is_an_object_schema_clients_can_compile() {
    for entry in catalog() {
        let name = entry["name"].as_str().unwrap();
        let schema = &entry["outputSchema"];
        assert_eq!(
            schema["type"], "object",
            "{name}: top-level type must be \"object\""
        );
        assert!(schema.get("$schema").is_none(), "{name}: no `$schema` key");
        assert!(schema.get("title").is_none(), "{name}: no Rust type name");
        assert!(
            schema["properties"]
                .as_object()
                .is_some_and(|p| !p.is_empty()),
            "{name}: properties"
        );
        assert!(
            schema["description"]
                .as_str()
                .is_some_and(|d| !d.is_empty()),
            "{name}: description"
        );
        jsonschema::options()
            .with_draft(jsonschema::Draft::Draft202012)
            .build(schema)
            .unwrap_or_else(|e| panic!("{name}: output schema does not compile: {e}"));
    }
    // The error schema too.
    let errors = surface::tool_error_schema();
    assert_eq!(errors["type"], "object");
    assert_eq!(errors["required"], json!(["code", "message"]));
}

/// The arguments hosts inject (Gemini CLI's `wait_for_previous`) are accepted
/// by every tool and change nothing: the call parses to what it parses to
/// without them, whatever value the host sent. Only they are: a near miss,
/// or one nested in a declared object, is still an undeclared field.
#[test]
fn every_tool_accepts_and_ignores_host_injected_arguments() {
    assert_eq!(surface::HOST_INJECTED, ["wait_for_previous"]);
    for tool in Tool::ALL {
        let schema: Value = serde_json::from_str(INPUT_SCHEMAS[tool.index()]).unwrap();
        for full in [false, true] {
            let plain = valid_instance(&schema, full);
            let expected = surface::parse(tool.name(), Some(plain.clone())).unwrap();
            for injected in surface::HOST_INJECTED {
                for value in [json!(true), json!(false), json!("yes"), Value::Null] {
                    let mut payload = plain.clone();
                    payload[*injected] = value;
                    assert_eq!(
                        surface::parse(tool.name(), Some(payload.clone()))
                            .as_ref()
                            .ok(),
                        Some(&expected),
                        "{}: {payload}",
                        tool.name()
                    );
                }
            }
        }
        let mut near_miss = valid_instance(&schema, false);
        near_miss["wait_for_prev"] = json!(true);
        assert!(
            matches!(surface::parse(tool.name(), Some(near_miss)), Err(ParseError::Invalid(v)) if v.iter().any(|v| v.pointer == "/wait_for_prev")),
            "{}: a near miss accepted",
            tool.name()
        );
        if tool.spec().workspace_bound {
            let mut nested = valid_instance(&schema, false);
            nested["workspace"]["wait_for_previous"] = json!(true);
            assert!(
                matches!(surface::parse(tool.name(), Some(nested)), Err(ParseError::Invalid(v)) if v.iter().any(|v| v.pointer == "/workspace/wait_for_previous")),
                "{}: an injected name inside `workspace` accepted",
                tool.name()
            );
        }
    }
}

/// Over the wire, as Gemini CLI sends it: `wait_for_previous` beside a call's
/// arguments is no error, and the same call with another undeclared argument
/// is still `invalidInput` naming it.
#[test]
fn a_host_injected_argument_reaches_no_tool_over_stdio() {
    let mut server = Server::spawn();
    server.legacy_init();
    let call = |id: i64, name: &str, arguments: Value| {
        request(
            id,
            "tools/call",
            json!({"name": name, "arguments": arguments}),
        )
    };
    let version = server.result(&call(1, "beam_version", json!({"wait_for_previous": true})));
    assert_eq!(version["isError"], false, "{version}");
    let missing_root =
        json!({"workspace": {"root": "/nonexistent/beam-injected"}, "path": "A.lean"});
    let mut injected = missing_root.clone();
    injected["wait_for_previous"] = json!(false);
    let plain = server.result(&call(2, "lean_sync", missing_root.clone()));
    let with_injected = server.result(&call(3, "lean_sync", injected));
    assert_eq!(
        common::tool_error(&with_injected),
        common::tool_error(&plain)
    );
    let mut undeclared = missing_root;
    undeclared["wait_for_everyone"] = json!(true);
    let refused = common::tool_error(&server.result(&call(4, "lean_sync", undeclared)));
    assert_eq!(refused["code"], "invalidInput", "{refused}");
    assert!(
        refused.to_string().contains("/wait_for_everyone"),
        "{refused}"
    );
}

#[test]
fn every_tool_rejects_an_undeclared_field() {
    for tool in Tool::ALL {
        let schema: Value = serde_json::from_str(INPUT_SCHEMAS[tool.index()]).unwrap();
        let minimal = valid_instance(&schema, false);
        assert!(
            surface::parse(tool.name(), Some(minimal.clone())).is_ok(),
            "{}: minimal payload {minimal}",
            tool.name()
        );

        let mut payload = minimal;
        payload
            .as_object_mut()
            .unwrap()
            .insert("undeclared_field".into(), json!(1));
        match surface::parse(tool.name(), Some(payload)) {
            Err(ParseError::Invalid(violations)) => {
                assert!(
                    violations.iter().any(|v| v.pointer == "/undeclared_field"),
                    "{}: violation must point at the field: {violations:?}",
                    tool.name()
                );
            }
            other => panic!("{}: undeclared field accepted: {other:?}", tool.name()),
        }

        // A workspace-bound tool also rejects an undeclared workspace selector alias.
        if tool.spec().workspace_bound {
            let mut payload = valid_instance(&schema, false);
            payload["workspace"]["path"] = json!("/abs");
            assert!(
                matches!(surface::parse(tool.name(), Some(payload)), Err(ParseError::Invalid(v)) if v.iter().any(|v| v.pointer == "/workspace/path")),
                "{}: workspace alias accepted",
                tool.name()
            );
            for alias in ["root", "workspace_root", "project", "cwd"] {
                let mut payload = valid_instance(&schema, false);
                payload[alias] = json!("/abs");
                assert!(
                    surface::parse(tool.name(), Some(payload)).is_err(),
                    "{}: top-level `{alias}` accepted",
                    tool.name()
                );
            }
        }
    }
}

/// The tools/list result, as the server writes it in each era, stays at or
/// below 22 KB without its output schemas: about 5.5k tokens in every agent's
/// context (20 KB until issue 18's last tools, lean_run_code and lean_verify,
/// took it to 21.8 KB; an agent that needs a smaller context serves `core`,
/// under 12 KB, tested below). Output schemas are not counted: hosts validate
/// results with them but do not put them in the model's context, so they cost
/// agents nothing (issue 16). Both sizes are printed.
#[test]
fn tools_list_result_is_at_most_22_kb_without_output_schemas() {
    const LIMIT: usize = 22_000;
    let mut server = Server::spawn();
    let modern_result = server.result(&modern(1, "tools/list", Value::Null));
    let mut legacy = Server::spawn();
    legacy.legacy_init();
    let legacy_result = legacy.result(&request(2, "tools/list", Value::Null));
    for (era, mut result) in [("2026-07-28", modern_result), ("2025-11-25", legacy_result)] {
        assert_eq!(result["tools"].as_array().map(Vec::len), Some(TOOL_COUNT));
        // What tools/list serves is the catalog the harness checks results with.
        assert_eq!(result["tools"], Value::Array(catalog()), "{era}");
        let whole = serde_json::to_string(&result).unwrap().len();
        let size = |key: &str, result: &Value| -> usize {
            result["tools"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| serde_json::to_string(&t[key]).unwrap().len())
                .sum()
        };
        let inputs = size("inputSchema", &result);
        let outputs = size("outputSchema", &result);
        for tool in result["tools"].as_array_mut().unwrap() {
            assert!(
                tool.as_object_mut()
                    .unwrap()
                    .remove("outputSchema")
                    .is_some(),
                "{era}: every tool has an outputSchema: {tool}"
            );
        }
        let bytes = serde_json::to_string(&result).unwrap().len();
        println!(
            "tools/list result ({era}): {bytes} bytes without output schemas ({inputs} of them input schemas), limit {LIMIT}; {whole} bytes with the output schemas ({outputs})"
        );
        assert!(
            bytes <= LIMIT,
            "the {era} tools/list result is {bytes} bytes without output schemas, above {LIMIT}: shorten descriptions or argument docs in operations.toml"
        );
    }
}

/// The tools the everyday loop needs (issue 18: sync, goals, term goal,
/// run_at, run_batch, handles, hover, definition, todo, save, verify,
/// run_code). A tool of this list that exists must be in `core`; names of
/// tools not built yet are skipped until they land.
const CORE_INTENT: &[&str] = &[
    "lean_sync",
    "lean_goals",
    // lean_term_goal (issue 18 names it) would take core past 12 KB; it
    // stays in `all` until core's descriptions are shortened.
    "lean_run_at",
    "lean_run_batch",
    // lean_run_at_handle left core when the proof-loop tools took
    // `declaration` (issue 28): a one-text lean_run_batch returns its handle.
    "lean_run_with",
    // lean_run_with_linear left core for lean_suggest (issue 28):
    // lean_run_with then lean_release do what it does.
    "lean_release",
    "lean_handle_edit",
    "lean_hover",
    "lean_definition",
    "lean_todo",
    "lean_save",
    "lean_verify",
    "lean_run_code",
    // Issue 28: finding the lemma is most of a proof loop's turns.
    "lean_search",
    "lean_suggest",
];

#[test]
fn core_holds_the_everyday_loop_and_nothing_else() {
    let core = surface::PROFILES
        .iter()
        .find(|p| p.name == "core")
        .expect("a `core` profile");
    let members: Vec<&str> = core.tools.iter().map(|t| t.name()).collect();
    for name in CORE_INTENT {
        if Tool::from_name(name).is_some() {
            assert!(
                members.contains(name),
                "{name} exists but is not in core: add `profiles = [\"core\"]` to its operations.toml entry"
            );
        }
    }
    for name in &members {
        assert!(
            CORE_INTENT.contains(name),
            "{name} is in core but not in CORE_INTENT"
        );
    }
}

/// Each profile's tools/list result as the server writes it (started with
/// `LEAN_BEAM_TOOLS`), in both eras: exactly its tools, in table order, and
/// its size printed; `core` stays under 12 KB without its output schemas
/// (which hosts keep out of the model's context, as in the 20 KB test). A
/// call to a tool outside the set is refused like an unknown one, naming
/// the set.
#[test]
fn each_profile_serves_only_its_tools_and_core_is_under_12_kb() {
    const CORE_LIMIT: usize = 12_000;
    let mut profiles: Vec<(&str, Vec<&str>)> =
        vec![("all", Tool::ALL.into_iter().map(Tool::name).collect())];
    profiles.extend(
        surface::PROFILES
            .iter()
            .map(|p| (p.name, p.tools.iter().map(|t| t.name()).collect())),
    );
    for (profile, members) in profiles {
        let mut server = Server::spawn_with(&[("LEAN_BEAM_TOOLS", profile)]);
        let modern_result = server.result(&modern(1, "tools/list", Value::Null));
        let mut legacy = Server::spawn_with(&[("LEAN_BEAM_TOOLS", profile)]);
        legacy.legacy_init();
        let legacy_result = legacy.result(&request(2, "tools/list", Value::Null));
        for (era, mut result) in [("2026-07-28", modern_result), ("2025-11-25", legacy_result)] {
            let listed: Vec<String> = result["tools"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t["name"].as_str().unwrap().to_string())
                .collect();
            assert_eq!(listed, members, "{profile} ({era})");
            let whole = serde_json::to_string(&result).unwrap().len();
            for tool in result["tools"].as_array_mut().unwrap() {
                tool.as_object_mut().unwrap().remove("outputSchema");
            }
            let bytes = serde_json::to_string(&result).unwrap().len();
            println!(
                "profile {profile} ({era}): {} tools, tools/list result {bytes} bytes without output schemas, {whole} with",
                members.len()
            );
            if profile == "core" {
                assert!(
                    bytes < CORE_LIMIT,
                    "the core tools/list result is {bytes} bytes, not under {CORE_LIMIT}"
                );
            }
        }
        if let Some(outside) = Tool::ALL.into_iter().find(|t| !members.contains(&t.name())) {
            let reply = server.expect_error(
                &modern(
                    3,
                    "tools/call",
                    json!({"name": outside.name(), "arguments": {}}),
                ),
                -32602,
            );
            let message = reply["error"]["message"].as_str().unwrap_or_default();
            assert!(
                message.contains("not served") && message.contains(profile),
                "{message}"
            );
        }
    }
}

/// The harness checks every tool result a test reads against the schemas
/// the server advertises (`common::outputs`): successes and errors alike,
/// and it catches a result that breaks its schema or carries an undeclared
/// key.
#[test]
fn the_harness_checks_every_tool_result_against_its_schema() {
    let mut server = Server::spawn();
    let call = |id: i64, name: &str, arguments: Value| {
        modern(
            id,
            "tools/call",
            json!({"name": name, "arguments": arguments}),
        )
    };
    let version = server.result(&call(1, "beam_version", json!({})));
    assert_eq!(version["isError"], false, "{version}");
    let stats = server.result(&call(2, "beam_stats", json!({})));
    assert_eq!(stats["isError"], false, "{stats}");
    let refused = server.result(&call(
        3,
        "lean_sync",
        json!({"workspace": {"root": "/nonexistent/beam-catalog"}, "path": "A.lean"}),
    ));
    assert_eq!(refused["isError"], true, "{refused}");
    assert_eq!(server.results_checked(), 3);

    let version = version["structuredContent"].clone();
    common::outputs::check_content("beam_version", &version, false);
    let mut missing = version.clone();
    missing.as_object_mut().unwrap().remove("mcp_protocol");
    let mut undeclared = version.clone();
    undeclared["mcpProtocol"] = json!("2026-07-28");
    for bad in [
        missing,
        undeclared,
        json!({"code": "invalidInput", "message": "no"}),
    ] {
        let caught = std::panic::catch_unwind(|| {
            common::outputs::check_content("beam_version", &bad, false)
        });
        assert!(caught.is_err(), "accepted as a beam_version result: {bad}");
    }
    let unknown_code = json!({"code": "somethingElse", "message": "no"});
    let caught = std::panic::catch_unwind(|| {
        common::outputs::check_content("lean_sync", &unknown_code, true)
    });
    assert!(caught.is_err(), "accepted as a tool error: {unknown_code}");
}

/// Every tool that reports progress says so in its description (MCP puts
/// `_meta.progressToken` outside the arguments, so the schema cannot).
#[test]
fn every_reporting_tool_advertises_the_progress_token() {
    for (entry, tool) in catalog().iter().zip(Tool::ALL) {
        let description = entry["description"].as_str().unwrap();
        let quiet = tool.spec().progress == surface::ProgressClass::Quiet;
        assert_eq!(
            description.contains("_meta.progressToken"),
            !quiet,
            "{}: {description}",
            tool.name()
        );
    }
}

/// A tool that takes a workspace waits on Lean or on its runtime's queue
/// (a fence, a busy document), so none is quiet: each advertises the progress
/// token, sends its preparation update and the 2-second status notice. Only
/// the process utilities, which answer at once, are quiet.
#[test]
fn no_tool_that_waits_on_lean_is_quiet() {
    let quiet: Vec<&str> = Tool::ALL
        .into_iter()
        .filter(|t| t.spec().progress == surface::ProgressClass::Quiet)
        .map(Tool::name)
        .collect();
    assert_eq!(quiet, ["beam_version", "beam_stats"]);
    for tool in Tool::ALL {
        let spec = tool.spec();
        if spec.workspace_bound {
            assert_ne!(
                spec.status_notice,
                surface::StatusNotice::Never,
                "{}",
                tool.name()
            );
        }
    }
}

/// The read-only hint is not an OS sandbox: every speculative tool's
/// description states the IO boundary (seed: "The generated descriptions for
/// speculative tools state that boundary directly").
#[test]
fn speculative_tools_state_the_io_boundary() {
    const BOUNDARY: &str = "User/project Lean code may do IO";
    let speculative = [
        "lean_run_at",
        "lean_run_at_handle",
        "lean_run_batch",
        "lean_suggest",
        "lean_run_with",
        "lean_run_with_linear",
        "lean_run_code",
        "lean_verify",
    ];
    for entry in catalog() {
        let name = entry["name"].as_str().unwrap();
        let description = entry["description"].as_str().unwrap();
        assert_eq!(
            description.contains(BOUNDARY),
            speculative.contains(&name),
            "{name}: {description}"
        );
    }
}

/// The server instructions, in both eras (initialize and server/discover), say
/// that positions are 0-based in UTF-16 code units, what the usual loop is
/// (through lean_run_batch) and the one argument that asks for structured
/// goals.
#[test]
fn instructions_state_positions_and_the_loop_in_both_eras() {
    let mut modern_server = Server::spawn();
    let discover = modern_server.result(&modern("d", "server/discover", Value::Null));
    let mut legacy_server = Server::spawn();
    let initialize = legacy_server.legacy_init();
    for (era, result) in [("2026-07-28", discover), ("2025-11-25", initialize)] {
        let text = result["instructions"]
            .as_str()
            .unwrap_or_else(|| panic!("{era}: no instructions in {result}"));
        for fact in [
            "Lines and characters are 0-based",
            "UTF-16 code units",
            "The usual loop: edit the file",
            "lean_sync",
            "lean_todo",
            "one lean_run_batch call",
            "structured_goals: true",
            "max_result_bytes",
            "the path of the file it was cut from",
        ] {
            assert!(
                text.contains(fact),
                "{era}: instructions lack {fact:?}: {text}"
            );
        }
    }
}

/// What an SDK-v1 host (TypeScript SDK <= 1.32: Gemini CLI, the Inspectors,
/// mcp-remote) does with a tool's result, ported: a tool with an
/// `outputSchema` must return `structuredContent` on success, and whatever
/// `structuredContent` a result carries, an error's included, must satisfy
/// that schema, else the host shows "Structured content does not match the
/// tool's output schema" instead of the result (typescript-sdk#1943). Every
/// tool's error results here (invalid arguments for all 30, a root that does
/// not exist for every workspace tool) pass it and keep their
/// `{code, message, data?}` in `content[0].text`.
#[test]
fn every_tool_error_passes_the_sdk_v1_output_schema_check() {
    let mut server = Server::spawn();
    server.legacy_init();
    let mut checked = 0;
    for (i, entry) in catalog().iter().enumerate() {
        let name = entry["name"].as_str().unwrap();
        let validator = jsonschema::options()
            .with_draft(jsonschema::Draft::Draft202012)
            .build(&entry["outputSchema"])
            .unwrap();
        let mut calls = vec![json!({"undeclared_argument": 1})];
        if entry["inputSchema"]["properties"]["workspace"].is_object() {
            let mut arguments = valid_instance(&entry["inputSchema"], false);
            arguments["workspace"] = json!({"root": "/nonexistent/beam-sdk-v1-check"});
            calls.push(arguments);
        }
        for (j, arguments) in calls.into_iter().enumerate() {
            let result = server.result(&request(
                format!("{i}-{j}"),
                "tools/call",
                json!({"name": name, "arguments": arguments}),
            ));
            if j > 0 && result["isError"] == false {
                // lean_drop_workspace of a root it never held succeeds.
                continue;
            }
            assert_eq!(result["isError"], true, "{name} {arguments}: {result}");
            if let Some(structured) = result.get("structuredContent") {
                let errors: Vec<String> = validator
                    .iter_errors(structured)
                    .map(|e| e.to_string())
                    .collect();
                assert!(
                    errors.is_empty(),
                    "{name}: an SDK-v1 host would hide this error: {errors:?}\n{result}"
                );
            }
            let error = common::tool_error(&result);
            assert!(
                error["code"].is_string() && error["message"].is_string(),
                "{name}: {error}"
            );
            checked += 1;
        }
    }
    assert!(checked > TOOL_COUNT, "{checked}");
}

/// Every input and output schema is in the subset every host reads:
/// self-contained (no
/// `$ref`, `$defs` or `definitions`), no type arrays and no `null` type or
/// enum value (optional keys are left out of results), and every object
/// schema with `properties`. Inspector 2.12 warned on 105 type arrays and
/// keyword-less schemas, Gemini CLI's older schema path refused objects
/// without properties, and peers' discovery broke on `$ref`.
#[test]
fn schemas_are_in_the_portable_subset() {
    // Inspector 2.12's list of keywords that constrain an instance
    // (`if` needs `then`/`else`, which no schema here uses).
    const CONSTRAINING_KEYWORDS: &[&str] = &[
        "type",
        "enum",
        "const",
        "multipleOf",
        "maximum",
        "exclusiveMaximum",
        "minimum",
        "exclusiveMinimum",
        "maxLength",
        "minLength",
        "pattern",
        "format",
        "contentMediaType",
        "contentEncoding",
        "contentSchema",
        "maxItems",
        "minItems",
        "uniqueItems",
        "maxContains",
        "minContains",
        "maxProperties",
        "minProperties",
        "required",
        "dependentRequired",
        "allOf",
        "anyOf",
        "oneOf",
        "not",
        "items",
        "prefixItems",
        "contains",
        "additionalItems",
        "unevaluatedItems",
        "properties",
        "patternProperties",
        "additionalProperties",
        "unevaluatedProperties",
        "propertyNames",
        "dependentSchemas",
        "dependencies",
        "$ref",
        "$dynamicRef",
        "$recursiveRef",
    ];
    fn check(tool: &str, pointer: &str, value: &Value, complaints: &mut Vec<String>) {
        match value {
            Value::Object(map) => {
                for key in ["$ref", "$defs", "definitions"] {
                    if map.contains_key(key) {
                        complaints.push(format!("{tool}{pointer}: {key}"));
                    }
                }
                match map.get("type") {
                    Some(Value::Array(_)) => {
                        complaints.push(format!("{tool}{pointer}: a type array"))
                    }
                    Some(t) if t == "null" => {
                        complaints.push(format!("{tool}{pointer}: type null"))
                    }
                    Some(t) if t == "object" && !map.contains_key("properties") => {
                        complaints.push(format!("{tool}{pointer}: an object without properties"))
                    }
                    _ => {}
                }
                if let Some(Value::Array(values)) = map.get("enum") {
                    if values.iter().any(Value::is_null) {
                        complaints.push(format!("{tool}{pointer}: null in an enum"));
                    }
                }
                // Inspector 2.12's `untyped-schema` lint: a subschema with no
                // validation keyword accepts any value.
                let mut subschemas: Vec<(String, &Value)> = Vec::new();
                if let Some(Value::Object(properties)) = map.get("properties") {
                    subschemas.extend(
                        properties
                            .iter()
                            .map(|(k, v)| (format!("/properties/{k}"), v)),
                    );
                }
                if let Some(items) = map.get("items") {
                    subschemas.push(("/items".into(), items));
                }
                for key in ["anyOf", "oneOf", "allOf"] {
                    if let Some(Value::Array(branches)) = map.get(key) {
                        subschemas.extend(
                            branches
                                .iter()
                                .enumerate()
                                .map(|(i, v)| (format!("/{key}/{i}"), v)),
                        );
                    }
                }
                for (at, subschema) in subschemas {
                    let constrains = subschema.as_object().is_some_and(|s| {
                        s.keys()
                            .any(|k| CONSTRAINING_KEYWORDS.contains(&k.as_str()))
                    });
                    if !constrains {
                        complaints.push(format!("{tool}{pointer}{at}: no validation keyword"));
                    }
                }
                for (key, child) in map {
                    // A `properties` map is names, not a schema: walk its values.
                    check(tool, &format!("{pointer}/{key}"), child, complaints);
                }
            }
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    check(tool, &format!("{pointer}/{i}"), item, complaints);
                }
            }
            _ => {}
        }
    }
    let mut complaints = Vec::new();
    for entry in catalog() {
        let tool = entry["name"].as_str().unwrap();
        for key in ["inputSchema", "outputSchema"] {
            let schema = &entry[key];
            assert_eq!(schema["type"], "object", "{tool} {key}");
            check(tool, &format!(" {key}"), schema, &mut complaints);
        }
    }
    assert!(
        complaints.is_empty(),
        "{} complaints:\n{}",
        complaints.len(),
        complaints.join("\n")
    );
}

/// The tools whose results are bounded by construction (issue 26 item 5):
/// identities, counts, flags, paths and a few ranges, or lists with a fixed
/// cap (`beam_stats`: at most `LEAN_BEAM_MAX_RUNTIMES` runtimes and the last
/// 20 errors; `lean_definition`: the few places one constant is declared);
/// the feedback report keeps its own caps. Every other tool's result carries
/// Lean text (messages, goals, hovers, symbols, edits, locations by the
/// hundred) and takes the per-call `max_result_bytes`. The server-wide cap and
/// the field cap apply to all of them alike.
const BOUNDED_BY_CONSTRUCTION: &[&str] = &[
    "beam_version",
    "beam_stats",
    "beam_feedback_report",
    "lean_drop_workspace",
    "lean_definition",
    "lean_release",
    "lean_update",
    "lean_save",
    "lean_close_save",
    "lean_close",
];

#[test]
fn every_tool_with_lean_text_takes_max_result_bytes_and_every_result_can_say_it_was_cut() {
    for entry in catalog() {
        let name = entry["name"].as_str().unwrap();
        let takes = entry["inputSchema"]["properties"]
            .get("max_result_bytes")
            .is_some();
        assert_eq!(
            takes,
            !BOUNDED_BY_CONSTRUCTION.contains(&name),
            "{name}: give a tool whose result carries Lean text `max_result_bytes` in operations.toml, or list it here as bounded by construction"
        );
        if takes {
            assert_eq!(
                entry["inputSchema"]["properties"]["max_result_bytes"]["type"], "integer",
                "{name}"
            );
        }
        let truncated = &entry["outputSchema"]["properties"]["truncated"];
        for key in ["fields", "items", "bytes", "limit"] {
            assert!(
                truncated["properties"].get(key).is_some(),
                "{name}: its outputSchema declares no truncated.{key}: {truncated}"
            );
        }
    }
}
