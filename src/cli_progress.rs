//! The command line's view of a call's progress on stderr (stdout carries only
//! results). On a terminal, progress is one status line redrawn in place, and
//! every log (a Lean diagnostic, a status notice) gets a line of its own above
//! it, so the status line never overwrites one. Elsewhere every update is a
//! line.

use std::io::{IsTerminal, Write};

use serde_json::Value;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use lean_beam_mcp::context::Outbound;

/// Cells of the progress bar.
const BAR_CELLS: usize = 10;

/// A channel for the call's notifications and the task that renders them; the
/// task ends when every sender is dropped.
pub fn stderr_renderer(tool: &str) -> (Outbound, JoinHandle<()>) {
    let (tx, mut rx) = mpsc::channel::<String>(256);
    let mut renderer = Renderer::new(tool, std::io::stderr().is_terminal(), terminal_width());
    let task = tokio::spawn(async move {
        while let Some(line) = rx.recv().await {
            let Ok(message) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            let mut err = std::io::stderr().lock();
            renderer.render(&message, &mut err);
            let _ = err.flush();
        }
        let mut err = std::io::stderr().lock();
        renderer.finish(&mut err);
        let _ = err.flush();
    });
    (tx, task)
}

/// `COLUMNS` when the shell exports it, else the classic 80.
fn terminal_width() -> usize {
    std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.parse().ok())
        .filter(|&c: &usize| c >= 20)
        .unwrap_or(80)
}

/// Turns a call's notifications into stderr text.
pub struct Renderer {
    tool: String,
    terminal: bool,
    width: usize,
    /// The status line currently drawn (terminal only), to redraw after a log.
    status: Option<String>,
}

impl Renderer {
    pub fn new(tool: &str, terminal: bool, width: usize) -> Self {
        Renderer {
            tool: tool.to_string(),
            terminal,
            width,
            status: None,
        }
    }

    pub fn render(&mut self, message: &Value, out: &mut impl Write) {
        let params = &message["params"];
        match message["method"].as_str() {
            Some("notifications/progress") => {
                let text = format!("{}: {}", self.tool, progress_text(params));
                if self.terminal {
                    let shown = clip(&text, self.width.saturating_sub(1));
                    let _ = write!(out, "\r\x1b[2K{shown}");
                    self.status = Some(shown);
                } else {
                    let _ = writeln!(out, "{text}");
                }
            }
            Some("notifications/message") => {
                let text = format!("{}: {}", self.tool, render_log(params));
                if self.terminal {
                    // Replace the status line by the log, then redraw it below.
                    let _ = writeln!(out, "\r\x1b[2K{text}");
                    if let Some(status) = &self.status {
                        let _ = write!(out, "{status}");
                    }
                } else {
                    let _ = writeln!(out, "{text}");
                }
            }
            _ => {}
        }
    }

    /// End the status line so that what follows starts on a fresh line.
    pub fn finish(&mut self, out: &mut impl Write) {
        if self.status.take().is_some() {
            let _ = writeln!(out);
        }
    }
}

/// `[####......]  40% Demo.lean: elaborating, line 8 of 20` when the update
/// says how far Lean got (`_meta.beam.line` of `lines`, or done); the message
/// alone for phases without a measure (preparation, Lake setup).
fn progress_text(params: &Value) -> String {
    let message = params["message"].as_str().unwrap_or("");
    let beam = params.pointer("/_meta/beam");
    let done = beam.and_then(|b| b["done"].as_bool()) == Some(true);
    let fraction = if done {
        Some(1.0)
    } else {
        beam.and_then(|b| {
            let line = b["line"].as_u64()?;
            let lines = b["lines"].as_u64().filter(|&n| n > 0)?;
            Some((line as f64 / lines as f64).clamp(0.0, 1.0))
        })
    };
    match fraction {
        Some(f) => {
            let filled = (f * BAR_CELLS as f64).round() as usize;
            format!(
                "[{}{}] {:>3}% {message}",
                "#".repeat(filled),
                ".".repeat(BAR_CELLS - filled),
                (f * 100.0).round() as u32
            )
        }
        None => message.to_string(),
    }
}

/// The first `width` characters of `text`.
fn clip(text: &str, width: usize) -> String {
    match text.char_indices().nth(width) {
        Some((end, _)) => text[..end].to_string(),
        None => text.to_string(),
    }
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

#[cfg(test)]
mod tests {
    use super::Renderer;
    use serde_json::{Value, json};

    fn progress(message: &str, beam: Value) -> Value {
        json!({"method": "notifications/progress",
               "params": {"progressToken": "cli", "progress": 1, "message": message, "_meta": {"beam": beam}}})
    }

    fn diagnostic() -> Value {
        json!({"method": "notifications/message",
               "params": {"level": "error", "logger": "lean.diagnostic",
                          "data": {"path": "Demo.lean", "version": 1, "diagnostic": {
                              "range": {"start": {"line": 17, "character": 29}, "end": {"line": 17, "character": 30}},
                              "severity": "error", "message": "unsolved goals\nfoo"}}}})
    }

    fn rendered(terminal: bool, messages: &[Value]) -> String {
        let mut renderer = Renderer::new("lean_sync", terminal, 200);
        let mut out = Vec::new();
        for m in messages {
            renderer.render(m, &mut out);
        }
        renderer.finish(&mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn the_bar_shows_how_far_lean_got() {
        let text = rendered(
            false,
            &[
                progress(
                    "Demo.lean: elaborating, line 5 of 20",
                    json!({"done": false, "line": 4, "lines": 20}),
                ),
                progress(
                    "Demo.lean: elaborating, line 16 of 20",
                    json!({"done": false, "line": 15, "lines": 20}),
                ),
                progress(
                    "Demo.lean: elaborated (20 lines)",
                    json!({"done": true, "line": 20}),
                ),
                progress(
                    "Demo.lean: Lake setup: x",
                    json!({"done": false, "phase": "lakeSetup"}),
                ),
            ],
        );
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines,
            [
                "lean_sync: [##........]  20% Demo.lean: elaborating, line 5 of 20",
                "lean_sync: [########..]  75% Demo.lean: elaborating, line 16 of 20",
                "lean_sync: [##########] 100% Demo.lean: elaborated (20 lines)",
                "lean_sync: Demo.lean: Lake setup: x",
            ]
        );
    }

    #[test]
    fn on_a_terminal_a_diagnostic_gets_its_own_line_and_the_status_is_redrawn() {
        let status = progress(
            "Demo.lean: elaborating, line 5 of 20",
            json!({"done": false, "line": 4, "lines": 20}),
        );
        let text = rendered(true, &[status.clone(), diagnostic(), status]);
        let bar = "lean_sync: [##........]  20% Demo.lean: elaborating, line 5 of 20";
        let diag = "lean_sync: Demo.lean:18:29: error: unsolved goals";
        assert_eq!(
            text,
            format!("\r\x1b[2K{bar}\r\x1b[2K{diag}\n{bar}\r\x1b[2K{bar}\n")
        );
        // Whatever the terminal does with `\r` and "clear line", the diagnostic
        // is followed by a newline before anything is drawn again.
        let after = &text[text.find(diag).unwrap() + diag.len()..];
        assert!(after.starts_with('\n'), "{after:?}");
    }

    #[test]
    fn a_long_status_line_is_clipped_to_the_terminal() {
        let mut renderer = Renderer::new("lean_sync", true, 30);
        let mut out = Vec::new();
        renderer.render(&progress(&"x".repeat(100), json!({})), &mut out);
        let text = String::from_utf8(out).unwrap();
        assert_eq!(text.trim_start_matches("\r\x1b[2K").chars().count(), 29);
    }
}
