//! `GET /status`: one self-contained HTML page for a person — uptime,
//! version and replica, the workspaces with their documents and Lean
//! processes, every bound and its use, the last errors. No script and no
//! asset from anywhere (a `Content-Security-Policy` of `default-src 'none'`
//! says so to the browser); it reloads itself every few seconds with a
//! `<meta http-equiv="refresh">`. It shows workspace paths and error
//! messages, so it needs the bearer token whenever one is set, as `/mcp` does.

use std::fmt::Write as _;

use super::observe::{Bound, Observation};
use crate::identity;
use crate::results::RuntimeStats;

/// Seconds between reloads.
pub(super) const REFRESH_SECS: u32 = 5;

/// The page loads nothing but itself: inline styles, and a `data:` icon so
/// that the browser does not ask for `/favicon.ico`.
pub(super) const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// Text for HTML: `&`, `<`, `>`, `"` and `'` escaped.
fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// `3 d 04:05:06` or `04:05:06`.
fn duration(ms: u64) -> String {
    let secs = ms / 1000;
    let (d, h, m, s) = (secs / 86400, secs / 3600 % 24, secs / 60 % 60, secs % 60);
    if d > 0 {
        format!("{d} d {h:02}:{m:02}:{s:02}")
    } else {
        format!("{h:02}:{m:02}:{s:02}")
    }
}

/// `2026-12-01 21:15:33 UTC` from milliseconds since the epoch (the civil
/// calendar from days, after Howard Hinnant's algorithm).
fn utc(unix_ms: u64) -> String {
    let secs = unix_ms / 1000;
    let days = (secs / 86400) as i64;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let t = secs % 86400;
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02} UTC",
        t / 3600,
        t / 60 % 60,
        t % 60
    )
}

fn optional(value: Option<u64>) -> String {
    value.map_or("–".to_string(), |v| v.to_string())
}

/// A bound's row: its use as a bar when both are known.
fn bound_row(out: &mut String, name: &str, bound: &Bound) {
    let meter = match (bound.limit, bound.used) {
        (Some(limit), Some(used)) if limit > 0 => {
            let percent = (used.min(limit) * 100 / limit).min(100);
            let class = if used >= limit { " class=\"full\"" } else { "" };
            format!("<span class=\"bar\"><span{class} style=\"width:{percent}%\"></span></span>")
        }
        _ => String::new(),
    };
    let _ = write!(
        out,
        "<tr><td><code>{}</code></td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td>{meter}</td></tr>",
        esc(name),
        esc(&bound.per),
        bound
            .limit
            .map_or("unbounded".to_string(), |l| l.to_string()),
        optional(bound.used),
        optional(bound.busy),
    );
}

fn workspace(out: &mut String, root: &str, rt: &RuntimeStats) {
    let server = match (rt.alive, rt.pid) {
        (true, Some(pid)) => format!("running, pid {pid}"),
        (true, None) => "running".to_string(),
        (false, _) => "not running (the next call starts one)".to_string(),
    };
    let _ = write!(
        out,
        "<section class=\"ws\"><h3><code>{}</code></h3><p>Lean server: {} · <code>{}</code><br>up {} · idle {} · calls in flight {} · starts {}, restarts {}, failed starts {} · largest RSS {} · killed for memory {}<br>handles {} of {} ({} of {} bytes, {} evicted) · probe slots {} ({} open in Lean) · prefix bases {} ready, {} used</p>",
        esc(root),
        esc(&server),
        esc(&rt.server_command),
        duration(rt.uptime_ms),
        duration(rt.idle_ms),
        rt.calls_in_flight,
        rt.starts,
        rt.restarts,
        rt.failed_starts,
        rt.memory
            .largest_mib
            .map_or("–".to_string(), |m| format!("{m} MiB")),
        rt.memory.killed,
        rt.handles.live,
        rt.handles.capacity,
        rt.handles.bytes,
        rt.handles.byte_capacity,
        rt.handles.evicted,
        rt.shadow_slots,
        rt.shadow_slots_open,
        rt.prefix_bases.ready,
        rt.prefix_bases.uses,
    );
    if rt.documents.is_empty() {
        out.push_str("<p class=\"none\">No documents.</p>");
    } else {
        out.push_str("<table><thead><tr><th>document</th><th>version</th><th>in Lean</th><th>report</th><th>worker pid</th></tr></thead><tbody>");
        for doc in &rt.documents {
            let _ = write!(
                out,
                "<tr><td><code>{}</code></td><td class=\"n\">{}</td><td>{}</td><td>{}</td><td class=\"n\">{}</td></tr>",
                esc(&doc.path),
                doc.version,
                if doc.open { "open" } else { "closed" },
                if doc.settled { "final" } else { "elaborating" },
                optional(doc.worker_pid.map(u64::from)),
            );
        }
        out.push_str("</tbody></table>");
    }
    out.push_str("</section>");
}

pub(super) fn render(observed: &Observation) -> String {
    let mut out = String::with_capacity(16 * 1024);
    let (replica, pid) = observed
        .broker
        .as_ref()
        .map_or(("–".to_string(), "–".to_string()), |b| {
            (b.replica.clone(), b.pid.to_string())
        });
    let state = if observed.draining {
        "<span class=\"bad\">draining</span>"
    } else {
        "<span class=\"good\">serving</span>"
    };
    let _ = write!(
        out,
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta http-equiv=\"refresh\" content=\"{REFRESH_SECS}\"><meta name=\"viewport\" content=\"width=device-width\"><link rel=\"icon\" href=\"data:,\"><title>{} {} · {}</title><style>{STYLE}</style></head><body>",
        identity::NAME,
        esc(observed.version),
        esc(&replica)
    );
    let total: u64 = observed.calls.iter().map(|c| c.2).sum();
    let errors: u64 = observed.errors.iter().map(|e| e.2).sum();
    let _ = write!(
        out,
        "<header><h1>{} <small>{}</small></h1><p id=\"summary\">replica <b>{}</b> · pid {} · up <b>{}</b> · {state} · calls {total} ({errors} tool errors, {} cancelled, {} protocol errors) · admitted {} · running {} of {} · connections {} of {} · sessions {} of {} · refreshes every {REFRESH_SECS} s</p></header>",
        identity::NAME,
        esc(observed.version),
        esc(&replica),
        pid,
        duration(observed.uptime_ms),
        observed.cancelled,
        observed.protocol_errors,
        observed.admitted,
        observed.running,
        observed.max_in_flight,
        observed.http.connections,
        observed.http.max_connections,
        observed.http.sessions,
        observed.http.max_sessions,
    );

    out.push_str("<h2>Workspaces</h2>");
    match &observed.broker {
        None => out.push_str("<p class=\"none\">The broker's statistics are not available.</p>"),
        Some(broker) if broker.workspaces.is_empty() => out.push_str(
            "<p class=\"none\" id=\"no-workspaces\">No workspace yet: the first call that names one starts its Lean.</p>",
        ),
        Some(broker) => {
            for (root, rt) in &broker.workspaces {
                workspace(&mut out, root, rt);
            }
        }
    }

    out.push_str("<h2>Bounds</h2><table><thead><tr><th>variable</th><th>per</th><th>bound</th><th>used</th><th>busy</th><th></th></tr></thead><tbody>");
    for (name, bound) in super::metrics::bounds(observed) {
        bound_row(&mut out, &name, &bound);
    }
    out.push_str("</tbody></table>");

    out.push_str("<h2>Calls by tool</h2>");
    let mut by_tool: std::collections::BTreeMap<&str, u64> = std::collections::BTreeMap::new();
    for (tool, _, n) in &observed.calls {
        *by_tool.entry(tool.as_str()).or_default() += n;
    }
    if by_tool.is_empty() {
        out.push_str("<p class=\"none\">No calls yet.</p>");
    } else {
        out.push_str("<table><thead><tr><th>tool</th><th>calls</th><th>errors</th><th>mean time</th></tr></thead><tbody>");
        for (tool, calls) in by_tool {
            let errors: u64 = observed
                .errors
                .iter()
                .filter(|e| e.0 == tool)
                .map(|e| e.2)
                .sum();
            // Calls refused by their schema never ran: no time.
            let mean = observed
                .latencies
                .iter()
                .find(|l| l.tool == tool)
                .map_or("–".to_string(), |l| {
                    format!("{:.1} ms", l.sum_secs * 1000.0 / l.count as f64)
                });
            let _ = write!(
                out,
                "<tr><td><code>{tool}</code></td><td class=\"n\">{calls}</td><td class=\"n\">{errors}</td><td class=\"n\">{mean}</td></tr>"
            );
        }
        out.push_str("</tbody></table>");
    }

    out.push_str("<h2>Last errors</h2>");
    if observed.recent_errors.is_empty() {
        out.push_str("<p class=\"none\">None.</p>");
    } else {
        out.push_str("<table><thead><tr><th>when</th><th>tool</th><th>code</th><th>message</th></tr></thead><tbody>");
        for error in &observed.recent_errors {
            let _ = write!(
                out,
                "<tr><td>{}</td><td><code>{}</code></td><td><code>{}</code></td><td>{}</td></tr>",
                utc(error.at_unix_ms),
                error.tool,
                error.code,
                esc(&error.message)
            );
        }
        out.push_str("</tbody></table>");
    }
    out.push_str("</body></html>\n");
    out
}

const STYLE: &str = "body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#1b1f24;background:#fafafa}\
h1{font-size:1.4em;margin:0}h1 small{color:#666;font-weight:normal}h2{font-size:1.1em;margin-top:1.5em;border-bottom:1px solid #ddd}\
h3{font-size:1em;margin:.2em 0}table{border-collapse:collapse;margin:.4em 0}th,td{padding:2px 10px;text-align:left;border-bottom:1px solid #eee}\
td.n{text-align:right;font-variant-numeric:tabular-nums}code{font:12px ui-monospace,monospace}\
.ws{background:#fff;border:1px solid #ddd;border-radius:6px;padding:.5em 1em;margin:.6em 0}.none{color:#777}\
.good{color:#137333;font-weight:bold}.bad{color:#b3261e;font-weight:bold}\
.bar{display:inline-block;width:120px;height:8px;background:#e6e6e6;border-radius:4px;overflow:hidden}\
.bar span{display:block;height:8px;background:#4a7bd0}.bar span.full{background:#b3261e}";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped_and_times_are_civil() {
        assert_eq!(
            esc(r#"<a href="x">&'"#),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
        assert_eq!(duration(3_723_000), "01:02:03");
        assert_eq!(duration(90_061_000), "1 d 01:01:01");
        assert_eq!(utc(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc(951_782_400_000), "2000-02-29 00:00:00 UTC");
        assert_eq!(utc(1_795_987_533_000), "2026-11-29 21:25:33 UTC");
    }

    #[test]
    fn the_page_loads_nothing_from_elsewhere() {
        let observed = Observation {
            recent_errors: vec![crate::stats::RecentError {
                at_unix_ms: 0,
                tool: "lean_sync",
                code: "invalidInput",
                message: "<script>alert(1)</script>".into(),
            }],
            ..Observation::default()
        };
        let page = render(&observed);
        assert!(!page.contains("<script"), "{page}");
        assert!(page.contains("&lt;script&gt;"), "{page}");
        assert!(!page.contains("http://") && !page.contains("https://"));
        assert!(page.contains("http-equiv=\"refresh\""));
    }
}
