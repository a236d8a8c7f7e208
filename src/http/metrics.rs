//! `GET /metrics`: the Prometheus text exposition format (version 0.0.4).
//!
//! Requests and errors per tool, latency histograms per tool, calls in
//! flight, every bound with its use, the Lean processes and their memory,
//! starts, restarts and cancellations. Workspace paths are never labels (they
//! are the status page's): the runtime figures are summed over the cached
//! runtimes, so the series stay few whatever the workspaces are called.
//! Counters summed over runtimes drop when a runtime is evicted, which
//! Prometheus reads as a counter reset.

use std::fmt::Write as _;

use super::observe::{Bound, Observation};
use crate::stats::LATENCY_BUCKETS;

/// `Content-Type` of the text format.
pub(super) const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// A label value as the format spells it: `\`, `"` and newlines escaped.
fn label(value: &str) -> String {
    value
        .replace('\\', r"\\")
        .replace('"', "\\\"")
        .replace('\n', r"\n")
}

/// A sample value: integers as integers, others in Go's float spelling.
fn number(value: f64) -> String {
    if value.is_infinite() {
        if value > 0.0 { "+Inf" } else { "-Inf" }.to_string()
    } else if value.fract() == 0.0 && value.abs() < 1e15 {
        format!("{}", value as i64)
    } else {
        format!("{value}")
    }
}

/// The text of one scrape, family by family.
struct Exposition(String);

impl Exposition {
    fn family(&mut self, name: &str, kind: &str, help: &str) {
        let _ = writeln!(self.0, "# HELP {name} {help}");
        let _ = writeln!(self.0, "# TYPE {name} {kind}");
    }

    fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: f64) {
        self.0.push_str(name);
        if !labels.is_empty() {
            self.0.push('{');
            for (i, (key, value)) in labels.iter().enumerate() {
                if i > 0 {
                    self.0.push(',');
                }
                let _ = write!(self.0, "{key}=\"{}\"", label(value));
            }
            self.0.push('}');
        }
        let _ = writeln!(self.0, " {}", number(value));
    }

    /// A family with one unlabelled sample.
    fn single(&mut self, name: &str, kind: &str, help: &str, value: f64) {
        self.family(name, kind, help);
        self.sample(name, &[], value);
    }
}

/// Every bound the server has, named by its variable: the broker's from
/// `beam_stats`, and the protocol core's and the transport's.
pub(super) fn bounds(observed: &Observation) -> Vec<(String, Bound)> {
    let mut bounds: Vec<(String, Bound)> = observed
        .broker
        .iter()
        .flat_map(|b| b.limits.iter().map(|(k, v)| (k.clone(), v.clone())))
        .collect();
    let server = |limit: usize, used: usize| Bound {
        limit: Some(limit as u64),
        used: Some(used as u64),
        busy: None,
        per: "server".into(),
    };
    bounds.push((
        "LEAN_BEAM_MAX_IN_FLIGHT".into(),
        server(observed.max_in_flight, observed.running),
    ));
    bounds.push((
        "LEAN_BEAM_HTTP_MAX_CONNECTIONS".into(),
        server(observed.http.max_connections, observed.http.connections),
    ));
    bounds.push((
        "LEAN_BEAM_HTTP_MAX_SESSIONS".into(),
        server(observed.http.max_sessions, observed.http.sessions),
    ));
    bounds.sort_by(|a, b| a.0.cmp(&b.0));
    bounds
}

pub(super) fn render(observed: &Observation) -> String {
    let mut out = Exposition(String::with_capacity(16 * 1024));
    let replica = observed.broker.as_ref().map_or("", |b| b.replica.as_str());
    out.family(
        "lean_beam_info",
        "gauge",
        "This server: its version and replica name (the value is always 1).",
    );
    out.sample(
        "lean_beam_info",
        &[("version", observed.version), ("replica", replica)],
        1.0,
    );
    out.single(
        "lean_beam_uptime_seconds",
        "gauge",
        "Seconds since the server started.",
        observed.uptime_ms as f64 / 1000.0,
    );
    out.single(
        "lean_beam_draining",
        "gauge",
        "1 while the server drains (SIGTERM): new calls are refused with 503.",
        f64::from(u8::from(observed.draining)),
    );

    out.family(
        "lean_beam_tool_calls_total",
        "counter",
        "Tool calls by tool and protocol era (2026-07-28, 2025-11-25, or direct for the command line).",
    );
    for (tool, era, n) in &observed.calls {
        out.sample(
            "lean_beam_tool_calls_total",
            &[("tool", tool), ("era", era)],
            *n as f64,
        );
    }
    out.family(
        "lean_beam_tool_errors_total",
        "counter",
        "Tool calls answered with a tool error, by tool and error code (invalidParams, resourceLimit, ...).",
    );
    for (tool, code, n) in &observed.errors {
        out.sample(
            "lean_beam_tool_errors_total",
            &[("tool", tool), ("code", code)],
            *n as f64,
        );
    }
    out.single(
        "lean_beam_calls_cancelled_total",
        "counter",
        "Tool calls cancelled before they answered (notifications/cancelled, a closed stream, shutdown).",
        observed.cancelled as f64,
    );
    out.single(
        "lean_beam_protocol_errors_total",
        "counter",
        "Messages answered with a JSON-RPC error (malformed, unknown method, invalid params).",
        observed.protocol_errors as f64,
    );
    out.family(
        "lean_beam_tool_call_duration_seconds",
        "histogram",
        "Time from a tool call's admission to its answer (or cancellation), by tool.",
    );
    for latency in &observed.latencies {
        for (bound, n) in LATENCY_BUCKETS.iter().zip(latency.cumulative) {
            out.sample(
                "lean_beam_tool_call_duration_seconds_bucket",
                &[("tool", latency.tool), ("le", &number(*bound))],
                n as f64,
            );
        }
        out.sample(
            "lean_beam_tool_call_duration_seconds_bucket",
            &[("tool", latency.tool), ("le", "+Inf")],
            latency.count as f64,
        );
        out.sample(
            "lean_beam_tool_call_duration_seconds_sum",
            &[("tool", latency.tool)],
            latency.sum_secs,
        );
        out.sample(
            "lean_beam_tool_call_duration_seconds_count",
            &[("tool", latency.tool)],
            latency.count as f64,
        );
    }
    out.single(
        "lean_beam_calls_admitted",
        "gauge",
        "Tool calls admitted and not yet answered (running or waiting for a slot).",
        observed.admitted as f64,
    );
    out.single(
        "lean_beam_calls_running",
        "gauge",
        "Lean calls holding one of the LEAN_BEAM_MAX_IN_FLIGHT slots.",
        observed.running as f64,
    );

    let bounds = bounds(observed);
    out.family(
        "lean_beam_bound_limit",
        "gauge",
        "Each resource bound, by the variable that sets it, and what it applies to (per); unset bounds are left out.",
    );
    for (name, bound) in &bounds {
        if let Some(limit) = bound.limit {
            out.sample(
                "lean_beam_bound_limit",
                &[("bound", name), ("per", &bound.per)],
                limit as f64,
            );
        }
    }
    out.family(
        "lean_beam_bound_used",
        "gauge",
        "What is used of each bound now (for bounds per runtime or per document, the most any one uses).",
    );
    for (name, bound) in &bounds {
        if let Some(used) = bound.used {
            out.sample(
                "lean_beam_bound_used",
                &[("bound", name), ("per", &bound.per)],
                used as f64,
            );
        }
    }
    out.family(
        "lean_beam_bound_busy",
        "gauge",
        "Of a bound's use, what cannot give way now (runtimes with a call in flight).",
    );
    for (name, bound) in &bounds {
        if let Some(busy) = bound.busy {
            out.sample(
                "lean_beam_bound_busy",
                &[("bound", name), ("per", &bound.per)],
                busy as f64,
            );
        }
    }

    out.single(
        "lean_beam_http_connections_refused_total",
        "counter",
        "Connections over LEAN_BEAM_HTTP_MAX_CONNECTIONS, answered 503.",
        observed.http.refused_connections as f64,
    );
    out.single(
        "lean_beam_http_streams",
        "gauge",
        "Open GET (SSE) streams of 2025-11-25 sessions.",
        observed.http.streams as f64,
    );
    out.family(
        "lean_beam_http_requests_total",
        "counter",
        "Requests to /mcp by protocol era.",
    );
    out.sample(
        "lean_beam_http_requests_total",
        &[("era", "legacy")],
        observed.http.legacy_requests as f64,
    );
    out.sample(
        "lean_beam_http_requests_total",
        &[("era", "modern")],
        observed.http.modern_requests as f64,
    );

    let runtimes: Vec<_> = observed
        .broker
        .iter()
        .flat_map(|b| b.workspaces.values())
        .collect();
    let sum = |f: &dyn Fn(&crate::results::RuntimeStats) -> u64| {
        runtimes.iter().map(|rt| f(rt)).sum::<u64>() as f64
    };
    out.single(
        "lean_beam_runtimes",
        "gauge",
        "Cached workspace runtimes (one per canonical root).",
        runtimes.len() as f64,
    );
    out.single(
        "lean_beam_lean_servers",
        "gauge",
        "Lean language servers running (one per runtime at most).",
        sum(&|rt| u64::from(rt.alive)),
    );
    out.single(
        "lean_beam_lean_documents_open",
        "gauge",
        "Documents open in Lean, probe slots included: each is a Lean worker process.",
        sum(&|rt| rt.documents_open_in_lean),
    );
    out.single(
        "lean_beam_lean_probe_slots_open",
        "gauge",
        "Probe (shadow) slots open in Lean, part of lean_beam_lean_documents_open.",
        sum(&|rt| rt.shadow_slots_open),
    );
    out.single(
        "lean_beam_lean_largest_rss_bytes",
        "gauge",
        "The largest resident set of a Lean server or worker, read at this scrape (MiB precision).",
        // Read now by beam_stats (LEAN_BEAM_MAX_LEAN_RSS_MIB's use), whether
        // or not that bound is set.
        observed
            .broker
            .as_ref()
            .and_then(|b| b.limits.get("LEAN_BEAM_MAX_LEAN_RSS_MIB"))
            .and_then(|bound| bound.used)
            .map_or(0.0, |mib| (mib << 20) as f64),
    );
    out.single(
        "lean_beam_lean_memory_kills_total",
        "counter",
        "Lean processes killed for exceeding LEAN_BEAM_MAX_LEAN_RSS_MIB (summed over cached runtimes).",
        sum(&|rt| rt.memory.killed),
    );
    out.single(
        "lean_beam_lean_starts_total",
        "counter",
        "Lean servers started (summed over cached runtimes).",
        sum(&|rt| rt.starts),
    );
    out.single(
        "lean_beam_lean_restarts_total",
        "counter",
        "Lean servers started again after one died or was stopped (summed over cached runtimes).",
        sum(&|rt| rt.restarts),
    );
    out.single(
        "lean_beam_lean_failed_starts_total",
        "counter",
        "Lean servers that failed to start (summed over cached runtimes).",
        sum(&|rt| rt.failed_starts),
    );
    out.single(
        "lean_beam_handles",
        "gauge",
        "Live proof handles (summed over cached runtimes).",
        sum(&|rt| rt.handles.live),
    );
    out.single(
        "lean_beam_handle_bytes",
        "gauge",
        "Bytes the live proof handles hold (summed over cached runtimes).",
        sum(&|rt| rt.handles.bytes),
    );
    out.single(
        "lean_beam_handles_evicted_total",
        "counter",
        "Proof handles evicted at LEAN_BEAM_MAX_HANDLES or LEAN_BEAM_MAX_HANDLE_BYTES (summed over cached runtimes).",
        sum(&|rt| rt.handles.evicted),
    );
    out.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_and_numbers_are_spelled_as_the_format_says() {
        assert_eq!(label(r#"a"b\c"#), r#"a\"b\\c"#);
        assert_eq!(label("x\ny"), r"x\ny");
        assert_eq!(number(3.0), "3");
        assert_eq!(number(0.025), "0.025");
        assert_eq!(number(f64::INFINITY), "+Inf");
    }

    #[test]
    fn every_family_is_declared_once_before_its_samples() {
        let mut observed = Observation {
            max_in_flight: 256,
            ..Observation::default()
        };
        observed.calls = vec![("lean_sync".into(), "2026-07-28".into(), 2)];
        observed.errors = vec![("lean_sync", "invalidParams", 1)];
        let text = render(&observed);
        let mut declared = std::collections::BTreeSet::new();
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("# TYPE ") {
                let name = rest.split(' ').next().unwrap();
                assert!(declared.insert(name.to_owned()), "{name} declared twice");
            } else if !line.starts_with('#') {
                let name = line.split(['{', ' ']).next().unwrap();
                let family = ["_bucket", "_sum", "_count"]
                    .iter()
                    .find_map(|s| name.strip_suffix(s).filter(|f| declared.contains(*f)))
                    .unwrap_or(name);
                assert!(declared.contains(family), "{line}: no # TYPE before it");
            }
        }
        assert!(
            text.contains(r#"lean_beam_tool_calls_total{tool="lean_sync",era="2026-07-28"} 2"#)
        );
        assert!(text.contains(
            r#"lean_beam_bound_limit{bound="LEAN_BEAM_MAX_IN_FLIGHT",per="server"} 256"#
        ));
    }
}
