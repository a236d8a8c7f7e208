//! The MCP Registry entry (`server.json`) and the Claude Code plugin
//! (`plugin/lean-beam`) against what they describe. `server.json` is read into
//! types that admit exactly the fields the registry documents for its
//! 2025-12-11 schema (`deny_unknown_fields`), with the documented constraints
//! (name pattern, description length, pinned versions, OCI identifiers,
//! transports) checked here; every environment variable it lists is one the
//! server reads; the versions agree with the crate's; the image label the
//! registry verifies ownership by is the Containerfile's; the plugin starts
//! this binary, and its skill names only tools that exist.

use std::collections::BTreeMap;
use std::path::Path;

use lean_beam_mcp::surface::Tool;
use serde::Deserialize;
use serde_json::Value;

const REPO: &str = env!("CARGO_MANIFEST_DIR");
const SCHEMA: &str = "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json";

fn read(rel: &str) -> String {
    std::fs::read_to_string(Path::new(REPO).join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ServerJson {
    #[serde(rename = "$schema")]
    schema: String,
    name: String,
    title: Option<String>,
    description: String,
    version: String,
    repository: Option<Repository>,
    #[serde(rename = "websiteUrl")]
    website_url: Option<String>,
    #[serde(default)]
    packages: Vec<Package>,
    #[serde(default)]
    remotes: Vec<Transport>,
    #[serde(rename = "_meta")]
    meta: Option<Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Repository {
    url: String,
    source: String,
    id: Option<String>,
    subfolder: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Package {
    #[serde(rename = "registryType")]
    registry_type: String,
    #[serde(rename = "registryBaseUrl")]
    registry_base_url: Option<String>,
    identifier: String,
    version: Option<String>,
    #[serde(rename = "fileSha256")]
    file_sha256: Option<String>,
    #[serde(rename = "runtimeHint")]
    runtime_hint: Option<String>,
    transport: Transport,
    #[serde(rename = "runtimeArguments", default)]
    runtime_arguments: Vec<Argument>,
    #[serde(rename = "packageArguments", default)]
    package_arguments: Vec<Argument>,
    #[serde(rename = "environmentVariables", default)]
    environment_variables: Vec<Input>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Transport {
    #[serde(rename = "type")]
    kind: String,
    url: Option<String>,
    #[serde(default)]
    headers: Vec<Input>,
}

/// An argument (`positional` or `named`) or a key-value input (`name`): the
/// documented fields of Input, InputWithVariables and their refinements.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Input {
    #[serde(rename = "type")]
    kind: Option<String>,
    name: Option<String>,
    description: Option<String>,
    #[serde(rename = "isRequired")]
    is_required: Option<bool>,
    format: Option<String>,
    value: Option<String>,
    #[serde(rename = "isSecret")]
    is_secret: Option<bool>,
    default: Option<String>,
    placeholder: Option<String>,
    #[serde(default)]
    choices: Vec<String>,
    #[serde(rename = "valueHint")]
    value_hint: Option<String>,
    #[serde(rename = "isRepeated")]
    is_repeated: Option<bool>,
    #[serde(default)]
    variables: BTreeMap<String, Input>,
}

type Argument = Input;

fn check_input(input: &Input, what: &str) {
    assert!(
        input.placeholder.as_deref().is_none_or(|p| !p.is_empty()),
        "{what}: an empty placeholder"
    );
    assert!(
        input.is_repeated != Some(true) || input.kind.is_some(),
        "{what}: only arguments repeat"
    );
    if let Some(format) = &input.format {
        assert!(
            ["string", "number", "boolean", "filepath"].contains(&format.as_str()),
            "{what}: format {format}"
        );
    }
    if let (Some(default), false) = (&input.default, input.choices.is_empty()) {
        assert!(
            input.choices.contains(default),
            "{what}: default not a choice"
        );
    }
    assert!(
        input.description.as_deref().is_some_and(|d| !d.is_empty())
            || input.kind.as_deref() == Some("positional"),
        "{what}: every input says what it is"
    );
    // Every {variable} a value uses is declared.
    if let Some(value) = &input.value {
        for part in value.split('{').skip(1) {
            let name = part.split('}').next().unwrap();
            assert!(
                input.variables.contains_key(name),
                "{what}: {{{name}}} undeclared"
            );
        }
    }
    for (name, variable) in &input.variables {
        check_input(variable, &format!("{what}.{name}"));
    }
}

fn check_argument(argument: &Argument, what: &str) {
    match argument.kind.as_deref() {
        Some("positional") => assert!(
            argument.value.is_some() || argument.value_hint.is_some(),
            "{what}: a positional argument needs value or valueHint"
        ),
        Some("named") => assert!(
            argument.name.as_deref().is_some_and(|n| n.starts_with('-')),
            "{what}: a named argument is a flag"
        ),
        other => panic!("{what}: argument type {other:?}"),
    }
    check_input(argument, what);
}

/// Every environment variable the server's sources name (`LEAN_BEAM_*`).
fn variables_the_server_reads() -> std::collections::BTreeSet<String> {
    fn walk(dir: &Path, out: &mut std::collections::BTreeSet<String>) {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                for part in text.split("LEAN_BEAM_").skip(1) {
                    let name: String = part
                        .chars()
                        .take_while(|c| c.is_ascii_uppercase() || *c == '_' || c.is_ascii_digit())
                        .collect();
                    out.insert(format!("LEAN_BEAM_{name}"));
                }
            }
        }
    }
    let mut out = std::collections::BTreeSet::new();
    walk(&Path::new(REPO).join("src"), &mut out);
    out
}

#[test]
fn server_json_has_only_documented_fields_and_says_true_things() {
    let entry: ServerJson = serde_json::from_str(&read("server.json")).expect("server.json");
    assert_eq!(entry.schema, SCHEMA);
    // name: reverse-DNS namespace, one slash (^[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+$, 3-200).
    let (namespace, server) = entry.name.split_once('/').expect("one slash");
    assert!(
        !namespace.is_empty()
            && namespace
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || ".-".contains(c)),
        "{}",
        entry.name
    );
    assert!(
        !server.is_empty()
            && server
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c)),
        "{}",
        entry.name
    );
    assert!((3..=200).contains(&entry.name.len()));
    let chars = entry.description.chars().count();
    assert!(
        (1..=100).contains(&chars),
        "description: {chars} characters"
    );
    assert_eq!(entry.version, env!("CARGO_PKG_VERSION"));
    assert!(entry.title.is_some_and(|t| !t.is_empty()));
    let repository = entry.repository.expect("a repository");
    assert_eq!(repository.source, "github");
    assert!(repository.url.starts_with("https://github.com/"));
    assert!(repository.id.is_none() && repository.subfolder.is_none());
    let cargo = read("Cargo.toml");
    assert!(
        cargo.contains(&format!("repository = \"{}\"", repository.url)),
        "Cargo.toml names the same repository"
    );
    // The namespace io.github.<owner> is the repository's owner.
    let owner = repository
        .url
        .trim_start_matches("https://github.com/")
        .split('/')
        .next()
        .unwrap();
    assert_eq!(namespace, format!("io.github.{owner}"));
    assert!(entry.website_url.is_none() && entry.meta.is_none() && entry.remotes.is_empty());

    let readable = variables_the_server_reads();
    let containerfile = read("deploy/Containerfile");
    let (mut oci, mut cargo_pkgs, mut transports) = (0, 0, Vec::new());
    for (i, package) in entry.packages.iter().enumerate() {
        let what = format!("packages[{i}]");
        assert!(package.registry_base_url.is_none() && package.file_sha256.is_none());
        match package.registry_type.as_str() {
            "oci" => {
                oci += 1;
                // registry/namespace/repository:tag, on a registry the MCP Registry supports.
                let (image, tag) = package.identifier.rsplit_once(':').expect("a tag");
                assert_eq!(tag, entry.version, "{what}: the image tag is the version");
                let host = image.split('/').next().unwrap();
                assert!(
                    ["docker.io", "ghcr.io", "quay.io", "mcr.microsoft.com"].contains(&host),
                    "{what}: {host}"
                );
                assert_eq!(image.split('/').count(), 3, "{what}: {image}");
                assert!(
                    package.version.is_none(),
                    "{what}: an OCI package's version is its tag"
                );
                assert_eq!(package.runtime_hint.as_deref(), Some("docker"));
                // The registry checks ownership by this label on the image.
                assert!(
                    containerfile.contains(&format!(
                        "io.modelcontextprotocol.server.name=\"{}\"",
                        entry.name
                    )),
                    "deploy/Containerfile labels the image with {}",
                    entry.name
                );
            }
            "cargo" => {
                cargo_pkgs += 1;
                assert_eq!(package.identifier, env!("CARGO_PKG_NAME"));
                assert_eq!(package.version.as_deref(), Some(env!("CARGO_PKG_VERSION")));
                assert!(package.runtime_hint.is_none() && package.runtime_arguments.is_empty());
                // crates.io ownership: the token in the README, as visible text.
                assert!(
                    read("README.md").contains(&format!("mcp-name: {}", entry.name)),
                    "README.md carries `mcp-name: {}`",
                    entry.name
                );
            }
            other => panic!("{what}: registryType {other}"),
        }
        if let Some(version) = &package.version {
            assert!(
                version != "latest" && !version.starts_with(['^', '~', '>', '<', '=']),
                "{what}: a pinned version"
            );
        }
        for (j, argument) in package.runtime_arguments.iter().enumerate() {
            check_argument(argument, &format!("{what}.runtimeArguments[{j}]"));
        }
        for (j, argument) in package.package_arguments.iter().enumerate() {
            check_argument(argument, &format!("{what}.packageArguments[{j}]"));
        }
        let transport = &package.transport;
        match transport.kind.as_str() {
            "stdio" => assert!(transport.url.is_none() && transport.headers.is_empty()),
            "streamable-http" => {
                let url = transport.url.as_deref().expect("a URL");
                assert!(url.starts_with("http://") && url.ends_with("/mcp"), "{url}");
                // The server's own endpoint and the address it is told to bind.
                let port = url.rsplit(':').next().unwrap().trim_end_matches("/mcp");
                let args: Vec<&str> = package
                    .package_arguments
                    .iter()
                    .filter_map(|a| a.value.as_deref())
                    .collect();
                assert_eq!(args.first(), Some(&"--http"), "{what}");
                assert!(
                    args.iter().any(|a| a.ends_with(&format!(":{port}"))),
                    "{what}"
                );
                for (j, header) in transport.headers.iter().enumerate() {
                    assert!(header.name.is_some(), "{what}: header {j} has a name");
                    check_input(header, &format!("{what}.transport.headers[{j}]"));
                }
                // Beyond loopback the server refuses to start without a token.
                assert!(
                    package.environment_variables.iter().any(|v| {
                        v.name.as_deref() == Some("LEAN_BEAM_HTTP_TOKEN")
                            && v.is_secret == Some(true)
                            && v.is_required == Some(true)
                    }),
                    "{what}: the token"
                );
            }
            other => panic!("{what}: transport {other}"),
        }
        transports.push(transport.kind.clone());
        for variable in &package.environment_variables {
            let name = variable.name.as_deref().expect("a variable's name");
            assert!(variable.kind.is_none() && variable.value.is_none());
            assert!(
                readable.contains(name),
                "{what}: {name} is not a variable the server reads"
            );
            check_input(variable, &format!("{what}.{name}"));
        }
    }
    assert!(oci >= 1 && cargo_pkgs == 1, "the OCI image and the crate");
    // The Kubernetes replicas run this image, as the user it declares.
    let replicas = read("deploy/k8s/30-replicas.yaml");
    assert!(replicas.contains(&format!("image: lean-beam-mcp:{}", entry.version)));
    assert!(replicas.contains("deploy/Containerfile") && replicas.contains("runAsUser: 10001"));
    assert!(containerfile.contains("USER 10001:10001"));
    assert!(transports.contains(&"stdio".into()));
    assert!(transports.contains(&"streamable-http".into()));
}

#[test]
fn the_plugin_starts_this_server_and_its_skill_names_real_tools() {
    let manifest: Value =
        serde_json::from_str(&read("plugin/lean-beam/.claude-plugin/plugin.json")).unwrap();
    let name = manifest["name"].as_str().unwrap();
    assert!(
        name.chars().all(|c| c.is_ascii_lowercase() || c == '-'),
        "kebab-case: {name}"
    );
    assert_eq!(manifest["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(manifest["license"], "Apache-2.0");
    assert_eq!(manifest["mcpServers"], "./.mcp.json");
    assert_eq!(manifest["skills"], "./skills/");
    let servers: Value = serde_json::from_str(&read("plugin/lean-beam/.mcp.json")).unwrap();
    let server = &servers["mcpServers"]["lean-beam"];
    assert_eq!(
        server["command"],
        env!("CARGO_PKG_NAME"),
        "the binary cargo install puts on PATH"
    );
    let readable = variables_the_server_reads();
    for (variable, _) in server["env"].as_object().unwrap() {
        assert!(readable.contains(variable), "{variable}");
    }

    let skill = read("plugin/lean-beam/skills/lean-proof-loop/SKILL.md");
    let lines = skill.lines().count();
    assert!(lines < 150, "SKILL.md has {lines} lines");
    let front = skill
        .strip_prefix("---\n")
        .and_then(|s| s.split_once("\n---\n"))
        .map(|(f, _)| f)
        .expect("front matter");
    assert!(front.contains("name: lean-proof-loop\n"), "{front}");
    assert!(
        front
            .lines()
            .any(|l| l.starts_with("description: ") && l.len() > 40)
    );
    // Every tool it names exists; the loop's tools are all there, in order.
    let mut named = Vec::new();
    for part in skill.split(['`', ' ', '(', ',', '/']) {
        let word: String = part
            .chars()
            .take_while(|c| c.is_ascii_lowercase() || *c == '_')
            .collect();
        if word.starts_with("lean_") && word.len() > 5 {
            assert!(
                Tool::from_name(&word).is_some(),
                "SKILL.md names `{word}`, no such tool"
            );
            named.push(word);
        }
    }
    let first = |tool: &str| {
        named
            .iter()
            .position(|n| n == tool)
            .unwrap_or_else(|| panic!("{tool}"))
    };
    let order = [
        "lean_sync",
        "lean_todo",
        "lean_run_batch",
        "lean_handle_edit",
        "lean_verify",
    ];
    for pair in order.windows(2) {
        assert!(
            first(pair[0]) < first(pair[1]),
            "{} before {}",
            pair[0],
            pair[1]
        );
    }
    assert!(
        read("README.md").contains("plugin/lean-beam/skills/lean-proof-loop/SKILL.md"),
        "the README points other hosts at the skill"
    );
}
