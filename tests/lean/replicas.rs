//! Several server processes on one workspace, as replicas behind a load
//! balancer run (`deploy/`, `scripts/replicas-lane.py`): the replica's name,
//! draining on SIGTERM, and checkpoints shared through the file system.

use crate::common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use common::child::{HttpChild, Spawn};
use common::lean::{TempWorkspace, lean};
use common::mcp::{Era, Mcp, ws};
use common::{MODERN, TIMEOUT, meta};

fn spawn(extra: &[(&str, &str)]) -> Mcp {
    let mut spawn = Spawn::default().envs(lean().server_env());
    for (key, value) in extra {
        spawn = spawn.env(key, *value);
    }
    Mcp::start(Era::Modern, spawn)
}

fn doc(root: &str, path: &str) -> Value {
    json!({"workspace": ws(root), "path": path})
}

fn errors(synced: &Value) -> u64 {
    synced["diagnostics"]["counts"]["error"].as_u64().unwrap()
}

const USE_NEW_THM: &str = "prelude\nimport Fix.Goals\n\nnamespace Fix\n\ntheorem uses (n : N) : Eq (N.add N.zero n) n := new_thm n\n\nend Fix\n";
const NEW_THM: &str = "\nnamespace Fix\n\n/-- Added after the first checkpoint. -/\ntheorem new_thm (n : N) : Eq (N.add N.zero n) n := zero_add' n\n\nend Fix\n";

/// Replica A saves a checkpoint of `Fix.Goals`; replica B, which has a file
/// importing it open and settled, sees the new declarations at its next sync
/// of that (unchanged) file. Without noticing the rebuilt `.olean`, B would
/// answer its final report of the old imports.
#[test]
fn a_checkpoint_saved_by_one_replica_reaches_the_importers_of_another_at_their_next_sync() {
    let w = TempWorkspace::copy("basic");
    let root = w.root_str();
    w.write("Fix/UseGoals.lean", USE_NEW_THM);
    let mut a = spawn(&[]);
    let mut b = spawn(&[]);
    a.call("lean_save", doc(&root, "Fix/Goals.lean"));
    let before = b.call("lean_sync", doc(&root, "Fix/UseGoals.lean"));
    assert!(errors(&before) >= 1, "new_thm does not exist yet: {before}");
    let settled = b.call("lean_sync", doc(&root, "Fix/UseGoals.lean"));
    assert_eq!(settled["version"], before["version"]);
    assert_eq!(errors(&settled), errors(&before), "nothing changed yet");

    let edited = format!("{}{NEW_THM}", w.read("Fix/Goals.lean"));
    w.write("Fix/Goals.lean", &edited);
    let saved = a.call("lean_save", doc(&root, "Fix/Goals.lean"));
    assert_eq!(saved["module"], "Fix.Goals", "{saved}");

    let after = b.call("lean_sync", doc(&root, "Fix/UseGoals.lean"));
    assert_eq!(errors(&after), 0, "B sees A's checkpoint: {after}");
    assert_eq!(
        after["version"], before["version"],
        "the file did not change, so neither does its version"
    );
    // Once reloaded, an unchanged file is settled again.
    let again = b.call("lean_sync", doc(&root, "Fix/UseGoals.lean"));
    assert_eq!(again, after);
}

#[test]
fn beam_version_and_beam_stats_name_the_replica() {
    let mut named = spawn(&[("LEAN_BEAM_REPLICA_ID", "replica-7")]);
    assert_eq!(
        named.call("beam_version", json!({}))["replica"],
        "replica-7"
    );
    assert_eq!(named.call("beam_stats", json!({}))["replica"], "replica-7");
    let mut unnamed = spawn(&[]);
    let replica = unnamed.call("beam_version", json!({}))["replica"].clone();
    assert!(
        replica.as_str().is_some_and(|r| r.ends_with(":stdio")),
        "{replica}"
    );
}

// ---------------------------------------------------------------------------
// Over HTTP: a spawned `lean-beam-mcp --http` and a small blocking client.

/// The server, with the signals and the wait the replica tests send it.
struct HttpServer {
    http: HttpChild,
}

impl HttpServer {
    fn start(args: &[&str], root: &str) -> HttpServer {
        let mut command = Command::new(env!("CARGO_BIN_EXE_lean-beam-mcp"));
        command.args(["--http", "127.0.0.1:0"]).args(args);
        for (key, _) in std::env::vars_os() {
            if key.to_string_lossy().starts_with("LEAN_BEAM_") {
                command.env_remove(key);
            }
        }
        command
            .envs(lean().server_env())
            .env("LEAN_BEAM_LOG", "info")
            .current_dir(root);
        HttpServer {
            http: HttpChild::spawn(command, TIMEOUT),
        }
    }

    fn log(&self) -> Vec<String> {
        self.http.log()
    }

    fn signal(&self, name: &str) {
        let status = Command::new("kill")
            .args([&format!("-{name}"), &self.http.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
    }

    /// Wait for the exit (a liveness guard, not a measurement).
    fn wait_exit(&mut self, limit: Duration) -> std::process::ExitStatus {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(status) = self.http.child.try_wait().unwrap() {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "the server did not exit: {:#?}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// An HTTP/1.1 exchange on its own connection: the status, the headers
/// (lowercase names) and a reader of the body.
struct Exchange {
    status: u16,
    headers: Vec<(String, String)>,
    body: BufReader<TcpStream>,
}

impl Exchange {
    fn send(
        port: u16,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Exchange {
        let mut stream = TcpStream::connect(("127.0.0.1", port))
            .unwrap_or_else(|e| panic!("connect to {port}: {e}"));
        stream.set_read_timeout(Some(TIMEOUT)).unwrap();
        let mut head = format!(
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\nContent-Length: {}\r\n",
            body.len()
        );
        for (name, value) in headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str("\r\n");
        stream.write_all(head.as_bytes()).unwrap();
        stream.write_all(body).unwrap();
        let mut reader = BufReader::new(stream);
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        let status = line
            .split_whitespace()
            .nth(1)
            .expect("a status line")
            .parse()
            .unwrap();
        let mut headers = Vec::new();
        loop {
            line.clear();
            reader.read_line(&mut line).unwrap();
            let trimmed = line.trim_end();
            if trimmed.is_empty() {
                break;
            }
            let (name, value) = trimmed.split_once(':').unwrap();
            headers.push((name.trim().to_ascii_lowercase(), value.trim().to_string()));
        }
        Exchange {
            status,
            headers,
            body: reader,
        }
    }

    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The next piece of a chunked body (`None` at its end), or the rest of a
    /// body without chunks.
    fn next_chunk(&mut self) -> Option<String> {
        if self.header("transfer-encoding") != Some("chunked") {
            let mut rest = String::new();
            self.body.read_to_string(&mut rest).unwrap();
            return (!rest.is_empty()).then_some(rest);
        }
        let mut size = String::new();
        self.body.read_line(&mut size).unwrap();
        let size = usize::from_str_radix(size.trim(), 16).ok()?;
        let mut chunk = vec![0u8; size + 2];
        self.body.read_exact(&mut chunk).unwrap();
        chunk.truncate(size);
        (size > 0).then(|| String::from_utf8(chunk).unwrap())
    }

    fn text(mut self) -> String {
        let mut all = String::new();
        while let Some(chunk) = self.next_chunk() {
            all.push_str(&chunk);
        }
        all
    }
}

fn post_modern(port: u16, tool: &str, arguments: Value, id: u64, token: Option<&str>) -> Exchange {
    let mut meta = meta();
    if let Some(token) = token {
        meta["progressToken"] = json!(token);
    }
    let body = json!({
        "jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": tool, "arguments": arguments, "_meta": meta},
    });
    Exchange::send(
        port,
        "POST",
        "/mcp",
        &[
            ("content-type", "application/json"),
            ("accept", "application/json, text/event-stream"),
            ("mcp-protocol-version", MODERN),
            ("mcp-method", "tools/call"),
            ("mcp-name", tool),
        ],
        body.to_string().as_bytes(),
    )
}

/// A theorem whose proof sleeps, so that a sync of it is surely in flight.
const SLEEPY: &str = "prelude\nimport Fix.Basic\n\nnamespace Fix\n\ntheorem sleepy : Eq one one := by\n  sleep 6000\n  exact Eq.refl one\n\nend Fix\n";

/// SIGTERM: `/health` turns 503, a new call gets 503 with `Retry-After`
/// (nothing of it done, so a load balancer may retry it elsewhere), the call
/// in flight still gets its answer, then the server exits cleanly.
#[test]
fn sigterm_drains_the_calls_in_flight_and_refuses_new_ones_retryably() {
    let w = TempWorkspace::copy("basic");
    let root = w.root_str();
    w.write("Fix/Sleepy.lean", SLEEPY);
    let mut server = HttpServer::start(&["--drain-secs", "120"], &root);
    let port = server.http.port;
    let health = Exchange::send(port, "GET", "/health", &[], b"");
    assert_eq!(health.status, 200);

    let mut slow = post_modern(
        port,
        "lean_sync",
        doc(&root, "Fix/Sleepy.lean"),
        1,
        Some("p1"),
    );
    assert_eq!(slow.status, 200);
    assert_eq!(slow.header("content-type"), Some("text/event-stream"));
    // The first progress event: the call is admitted and Lean works on it.
    let first = slow.next_chunk().expect("a first event");
    assert!(first.contains("notifications/progress"), "{first}");
    assert!(!first.contains("\"result\""), "still running: {first}");

    server.signal("TERM");
    let deadline = Instant::now() + TIMEOUT;
    let health = loop {
        assert!(
            !server.log().iter().any(|l| l.contains("stopped")),
            "the server stopped before the call in flight ended: {:#?}",
            server.log()
        );
        let health = Exchange::send(port, "GET", "/health", &[], b"");
        if health.status != 200 {
            break health;
        }
        assert!(
            Instant::now() < deadline,
            "/health stayed 200 after SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(health.status, 503);
    let body: Value = serde_json::from_str(&health.text()).unwrap();
    assert_eq!(body["status"], "draining");

    let refused = post_modern(port, "beam_version", json!({}), 2, None);
    assert_eq!(refused.status, 503);
    assert_eq!(refused.header("retry-after"), Some("1"));
    let error: Value = serde_json::from_str(&refused.text()).unwrap();
    let message = error["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("draining") && message.contains("retry"),
        "{message}"
    );

    let mut rest = first;
    while let Some(chunk) = slow.next_chunk() {
        rest.push_str(&chunk);
    }
    let answer = rest
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter_map(|d| serde_json::from_str::<Value>(d).ok())
        .find(|m| m["id"] == 1)
        .unwrap_or_else(|| panic!("the call in flight got no answer: {rest}"));
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    assert_eq!(
        answer["result"]["structuredContent"]["diagnostics"]["counts"]["error"],
        0
    );

    let status = server.wait_exit(TIMEOUT);
    assert!(status.success(), "{status:?}");
    assert!(
        server.log().iter().any(|l| l.contains("drained in")),
        "{:#?}",
        server.log()
    );
}

#[test]
fn the_replica_name_over_http_defaults_to_host_and_port() {
    let w = TempWorkspace::copy("basic");
    let server = HttpServer::start(&[], &w.root_str());
    let version = post_modern(server.http.port, "beam_version", json!({}), 1, None).text();
    let version: Value = serde_json::from_str(&version).unwrap();
    let replica = version["result"]["structuredContent"]["replica"]
        .as_str()
        .unwrap();
    assert!(
        replica.ends_with(&format!(":{}", server.http.port)),
        "{replica}"
    );
    let named = HttpServer::start(&["--replica-id", "edge-1"], &w.root_str());
    let stats = post_modern(named.http.port, "beam_stats", json!({}), 1, None).text();
    let stats: Value = serde_json::from_str(&stats).unwrap();
    assert_eq!(stats["result"]["structuredContent"]["replica"], "edge-1");
}
