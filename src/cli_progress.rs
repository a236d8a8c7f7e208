//! The command line's view of a call's progress: notifications rendered as one
//! updating status line on stderr (stdout carries only results).

use std::io::{IsTerminal, Write};

use serde_json::Value;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use lean_beam_mcp::context::Outbound;

/// A channel for the call's notifications and the task that renders them; the
/// task ends when every sender is dropped.
pub fn stderr_renderer(tool: &str) -> (Outbound, JoinHandle<()>) {
    let (tx, mut rx) = mpsc::channel::<String>(256);
    let tool = tool.to_string();
    let task = tokio::spawn(async move {
        let terminal = std::io::stderr().is_terminal();
        let mut drew = false;
        while let Some(line) = rx.recv().await {
            let Ok(message) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            let params = &message["params"];
            let text = match message["method"].as_str() {
                Some("notifications/progress") => {
                    let done =
                        params.pointer("/_meta/beam/done").and_then(Value::as_bool) == Some(true);
                    let bar = if done { "[##########]" } else { "[#####.....]" };
                    format!("{bar} {}", params["message"].as_str().unwrap_or(""))
                }
                Some("notifications/message") => render_log(params),
                _ => continue,
            };
            let mut err = std::io::stderr().lock();
            if terminal {
                let _ = write!(err, "\r\x1b[2K{tool}: {text}");
                drew = true;
            } else {
                let _ = writeln!(err, "{tool}: {text}");
            }
        }
        if drew {
            let _ = writeln!(std::io::stderr());
        }
    });
    (tx, task)
}

/// `Demo.lean:18:29: error: first line of the message` for Lean diagnostics,
/// the message itself for status notices.
fn render_log(params: &Value) -> String {
    let data = &params["data"];
    if let Some(d) = data.get("diagnostic") {
        let line = d
            .pointer("/range/start/line")
            .and_then(Value::as_u64)
            .unwrap_or(0)
            + 1;
        let col = d
            .pointer("/range/start/character")
            .and_then(Value::as_u64)
            .unwrap_or(0);
        let first = d["message"]
            .as_str()
            .unwrap_or("")
            .lines()
            .next()
            .unwrap_or("");
        return format!(
            "{}:{line}:{col}: {}: {first}",
            data["path"].as_str().unwrap_or("?"),
            d["severity"].as_str().unwrap_or("?")
        );
    }
    data["message"]
        .as_str()
        .map(str::to_string)
        .unwrap_or_else(|| data.to_string())
}
