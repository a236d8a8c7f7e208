//! The deployment files (`deploy/haproxy/haproxy.cfg`, `deploy/k8s/`) agree
//! with the server: the routes HAProxy lets through and health-checks, the
//! session header it sticks on, the body field it hashes on, the Host it sends
//! (which the replicas must allow), and the Kubernetes manifests with the
//! HAProxy configuration. A renamed route, header or argument fails here, not
//! in production. (The multi-replica lane, `scripts/replicas-lane.py`, runs
//! the same file under a real HAProxy; `scripts/validate-k8s.sh` checks the
//! manifests against the Kubernetes schemas.)

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use serde_json::Value;

#[allow(dead_code)] // this binary uses a slice of the harness (see tests/common/mod.rs)
mod common;

use common::child::HttpChild;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(repo().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// The configuration's lines without comments, trimmed.
fn directives(cfg: &str) -> Vec<String> {
    cfg.lines()
        .map(|l| l.trim())
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_owned)
        .collect()
}

/// The one directive starting with `prefix`.
fn directive<'a>(lines: &'a [String], prefix: &str) -> &'a str {
    let found: Vec<&String> = lines.iter().filter(|l| l.starts_with(prefix)).collect();
    assert_eq!(found.len(), 1, "one `{prefix}` directive: {found:?}");
    found[0]
}

/// `"${NAME-default}"` → `default`.
fn env_default<'a>(text: &'a str, name: &str) -> &'a str {
    let start = text
        .find(&format!("${{{name}-"))
        .unwrap_or_else(|| panic!("{name} with a default in {text}"))
        + name.len()
        + 3;
    let end = start + text[start..].find('}').unwrap();
    &text[start..end]
}

fn start_replica(allowed_host: &str) -> HttpChild {
    let mut command = Command::new(env!("CARGO_BIN_EXE_lean-beam-mcp"));
    command
        .args(["--http", "127.0.0.1:0", "--allowed-host", allowed_host])
        .env("LEAN_BEAM_LOG", "warn");
    HttpChild::spawn(command, Duration::from_secs(30))
}

/// One request with `Connection: close`: (status, lowercase headers, body).
fn exchange(
    port: u16,
    method: &str,
    path: &str,
    host: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, Vec<(String, String)>, String) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    stream
        .write_all(format!("{head}\r\n{body}").as_bytes())
        .unwrap();
    let mut raw = String::new();
    stream.read_to_string(&mut raw).unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap();
    let mut lines = head.lines();
    let status = lines.next().unwrap().split_whitespace().nth(1).unwrap();
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    (status.parse().unwrap(), headers, body.to_owned())
}

#[test]
fn haproxy_routes_checks_and_sticks_on_what_the_server_serves() {
    let cfg = read("deploy/haproxy/haproxy.cfg");
    let lines = directives(&cfg);

    // The Host HAProxy sends, health checks included, is one the replicas allow.
    let set_host = directive(&lines, "http-request set-header Host");
    let host = env_default(set_host, "LEAN_BEAM_REPLICA_HOST");
    let check = directive(&lines, "http-check send");
    assert_eq!(env_default(check, "LEAN_BEAM_REPLICA_HOST"), host);
    let health = check.split_whitespace().skip_while(|w| *w != "uri").nth(1);
    let health = health.expect("http-check send ... uri PATH");
    assert_eq!(
        directive(&lines, "http-check expect"),
        "http-check expect status 200"
    );

    // The frontend lets through exactly the routes it names.
    let routes: Vec<&str> = directive(&lines, "http-request deny deny_status 404 unless")
        .split("{ path ")
        .skip(1)
        .map(|r| r.split_whitespace().next().unwrap())
        .collect();
    assert!(routes.contains(&health), "{routes:?} and {health}");
    let mcp = routes
        .iter()
        .find(|r| **r != health)
        .expect("the MCP route");

    let replica = start_replica(host);
    let port = replica.port;
    let (status, _, body) = exchange(port, "GET", health, host, &[], "");
    assert_eq!(status, 200, "{health} with Host {host}: {body}");
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap()["status"],
        "ok"
    );
    for other in ["/", "/mcp/", "/healthz"] {
        let (status, _, _) = exchange(port, "GET", other, host, &[], "");
        assert_eq!(
            status, 404,
            "{other}: HAProxy refuses it, so the server must not serve it"
        );
    }
    // The operator's routes are served by each replica, scraped there, and
    // never passed through to the load balancer's clients.
    for operator in ["/metrics", "/status"] {
        assert!(!routes.contains(&operator), "{routes:?}");
        let (status, _, body) = exchange(port, "GET", operator, host, &[], "");
        assert_ne!(status, 404, "{operator} on a replica: {body}");
    }

    // Sessions: the header HAProxy stores from the initialize response and matches on.
    let store = directive(&lines, "stick store-response");
    let matched = directive(&lines, "stick match");
    let header = store
        .split("res.hdr(")
        .nth(1)
        .and_then(|r| r.split(')').next())
        .expect("stick store-response res.hdr(NAME)");
    assert_eq!(matched, format!("stick match req.hdr({header})"));
    let initialize = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"deploy-test","version":"1"}}}"#;
    let (status, headers, body) = exchange(
        port,
        "POST",
        mcp,
        host,
        &[
            ("content-type", "application/json"),
            ("accept", "application/json, text/event-stream"),
        ],
        initialize,
    );
    assert_eq!(status, 200, "{body}");
    let session = headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(header));
    assert!(
        session.is_some_and(|(_, v)| v.len() <= 64),
        "the initialize response carries {header} (at most the stick table's 64 bytes): {headers:?}"
    );

    // Workspace hashing: every tool that takes a workspace takes it as
    // `workspace.root`, a required string, at the path HAProxy reads.
    let balance = directive(&lines, "balance hash");
    assert!(
        balance.contains("json_query('$.params.arguments.workspace.root')"),
        "{balance}"
    );
    let catalog: Value = serde_json::from_str(lean_beam_mcp::surface::catalog_json()).unwrap();
    let mut bound = 0;
    for tool in catalog.as_array().unwrap() {
        let schema = &tool["inputSchema"];
        if let Some(workspace) = schema["properties"].get("workspace") {
            bound += 1;
            assert_eq!(
                workspace["properties"]["root"]["type"], "string",
                "{}",
                tool["name"]
            );
            let required = |v: &Value, key: &str| {
                v["required"]
                    .as_array()
                    .is_some_and(|r| r.iter().any(|k| k == key))
            };
            assert!(
                required(schema, "workspace") && required(workspace, "root"),
                "{}",
                tool["name"]
            );
        }
    }
    assert!(bound >= 20, "{bound} workspace-bound tools");
}

#[test]
fn the_kubernetes_manifests_run_the_same_haproxy_configuration_against_the_replicas() {
    let cfg = read("deploy/haproxy/haproxy.cfg");
    let lines = directives(&cfg);
    let host = env_default(
        directive(&lines, "http-request set-header Host"),
        "LEAN_BEAM_REPLICA_HOST",
    );

    // The ConfigMap holds the file verbatim (scripts/deploy-sync.py writes it).
    let configmap = read("deploy/k8s/20-haproxy-config.yaml");
    let embedded: String = configmap
        .lines()
        .skip_while(|l| l.trim() != "haproxy.cfg: |")
        .skip(1)
        .map(|l| format!("{}\n", l.strip_prefix("    ").unwrap_or(l)))
        .collect();
    assert!(
        embedded == cfg,
        "deploy/k8s/20-haproxy-config.yaml is not deploy/haproxy/haproxy.cfg: run scripts/deploy-sync.py"
    );

    // The replicas allow the Host HAProxy sends, their probes send it too and
    // use the health route, and they listen where HAProxy looks for them.
    let replicas = read("deploy/k8s/30-replicas.yaml");
    assert!(replicas.contains(&format!("- --allowed-host\n            - {host}\n")));
    assert_eq!(
        replicas.matches(&format!("value: {host}\n")).count(),
        2,
        "both probes send Host {host}"
    );
    assert_eq!(replicas.matches("path: /health\n").count(), 2);
    assert!(replicas.contains("- 0.0.0.0:8765\n") && replicas.contains("containerPort: 8765"));
    assert!(
        replicas.contains("--http-token-file") && replicas.contains("secretName: lean-beam-token")
    );
    let haproxy = read("deploy/k8s/40-haproxy.yaml");
    assert!(haproxy.contains("value: lean-beam-replicas.lean-beam.svc.cluster.local:8765\n"));
    assert!(haproxy.contains(&format!(
        "name: LEAN_BEAM_REPLICA_HOST\n              value: {host}\n"
    )));
    assert!(cfg.contains("monitor-uri /lb-health") && haproxy.contains("path: /lb-health"));

    // The drain fits in the grace period, and the liveness probe outlasts it.
    let drain: u64 = replicas
        .split("- --drain-secs\n            - \"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .and_then(|n| n.parse().ok())
        .expect("--drain-secs in the replicas' args");
    let grace: u64 = replicas
        .split("terminationGracePeriodSeconds: ")
        .nth(1)
        .and_then(|r| r.lines().next())
        .and_then(|n| n.trim().parse().ok())
        .expect("terminationGracePeriodSeconds");
    assert!(drain + 5 <= grace, "drain {drain} s, grace {grace} s");
}
