//! Process-wide request statistics (owned by the server, shared by reference):
//! calls by tool and era, tool errors by tool and code, each tool's latency
//! histogram, and the last errors (for `beam_stats`, `/metrics`, `/status`).

use std::collections::{BTreeMap, VecDeque};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::context::Era;
use crate::results::RequestStats;
use crate::surface::{TOOL_COUNT, Tool, ToolError};
use crate::util::lock;

const ERAS: [Era; 3] = [Era::Modern, Era::Legacy, Era::Direct];

/// The upper bounds of the latency histograms' buckets, in seconds (the last,
/// +Inf, is implied): a hover takes milliseconds, an elaboration of a large
/// file minutes.
pub const LATENCY_BUCKETS: [f64; 14] = [
    0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 120.0,
];

/// How many of the last tool errors are kept.
pub const RECENT_ERRORS: usize = 20;
/// A kept error's message is cut to this many characters.
const RECENT_MESSAGE_CHARS: usize = 400;

/// One tool's latency histogram: cumulative counts are made when read.
#[derive(Debug)]
struct Histogram {
    buckets: [AtomicU64; LATENCY_BUCKETS.len() + 1],
    sum_us: AtomicU64,
}

impl Default for Histogram {
    fn default() -> Self {
        Self {
            buckets: std::array::from_fn(|_| AtomicU64::new(0)),
            sum_us: AtomicU64::new(0),
        }
    }
}

/// A tool's latency histogram as read: cumulative counts per bucket of
/// [`LATENCY_BUCKETS`], then the count of all, and the sum in seconds.
#[derive(Debug, Clone, PartialEq)]
pub struct Latency {
    pub tool: &'static str,
    pub cumulative: [u64; LATENCY_BUCKETS.len()],
    pub count: u64,
    pub sum_secs: f64,
}

/// One of the last tool errors.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecentError {
    /// When, in milliseconds since the Unix epoch.
    pub at_unix_ms: u64,
    pub tool: &'static str,
    pub code: &'static str,
    pub message: String,
}

#[derive(Debug)]
pub struct Stats {
    started: Instant,
    calls: [[AtomicU64; 3]; TOOL_COUNT],
    tool_errors: AtomicU64,
    cancelled: AtomicU64,
    protocol_errors: AtomicU64,
    /// Tool errors by tool and code (few: a map under a lock).
    errors_by_code: Mutex<BTreeMap<(&'static str, &'static str), u64>>,
    latency: [Histogram; TOOL_COUNT],
    recent: Mutex<VecDeque<RecentError>>,
}

impl Default for Stats {
    fn default() -> Self {
        Self {
            started: Instant::now(),
            calls: std::array::from_fn(|_| std::array::from_fn(|_| AtomicU64::new(0))),
            tool_errors: AtomicU64::new(0),
            cancelled: AtomicU64::new(0),
            protocol_errors: AtomicU64::new(0),
            errors_by_code: Mutex::new(BTreeMap::new()),
            latency: std::array::from_fn(|_| Histogram::default()),
            recent: Mutex::new(VecDeque::with_capacity(RECENT_ERRORS)),
        }
    }
}

fn era_index(era: Era) -> usize {
    ERAS.iter().position(|e| *e == era).expect("known era")
}

impl Stats {
    pub fn uptime_ms(&self) -> u64 {
        self.started.elapsed().as_millis() as u64
    }

    pub fn record_call(&self, tool: Tool, era: Era) {
        self.calls[tool.index()][era_index(era)].fetch_add(1, Ordering::Relaxed);
    }

    /// A call answered with a tool error: counted by tool and code, and
    /// kept among the last errors.
    pub fn record_tool_error(&self, tool: Tool, error: &ToolError) {
        self.tool_errors.fetch_add(1, Ordering::Relaxed);
        let code = error.code.as_str();
        *lock(&self.errors_by_code)
            .entry((tool.name(), code))
            .or_default() += 1;
        let at_unix_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        let message = match error.message.char_indices().nth(RECENT_MESSAGE_CHARS) {
            Some((cut, _)) => format!("{}…", &error.message[..cut]),
            None => error.message.clone(),
        };
        let mut recent = lock(&self.recent);
        if recent.len() == RECENT_ERRORS {
            recent.pop_front();
        }
        recent.push_back(RecentError {
            at_unix_ms,
            tool: tool.name(),
            code,
            message,
        });
    }

    /// How long a call took, from its admission to its answer (or to its
    /// cancellation).
    pub fn record_latency(&self, tool: Tool, took: Duration) {
        let histogram = &self.latency[tool.index()];
        let secs = took.as_secs_f64();
        let bucket = LATENCY_BUCKETS
            .iter()
            .position(|bound| secs <= *bound)
            .unwrap_or(LATENCY_BUCKETS.len());
        histogram.buckets[bucket].fetch_add(1, Ordering::Relaxed);
        histogram
            .sum_us
            .fetch_add(took.as_micros() as u64, Ordering::Relaxed);
    }

    /// Tool errors by (tool, code), for tools with any.
    pub fn errors_by_code(&self) -> Vec<(&'static str, &'static str, u64)> {
        lock(&self.errors_by_code)
            .iter()
            .map(|((tool, code), n)| (*tool, *code, *n))
            .collect()
    }

    /// Each tool's latency histogram, for tools called at least once.
    pub fn latencies(&self) -> Vec<Latency> {
        Tool::ALL
            .iter()
            .filter_map(|tool| {
                let histogram = &self.latency[tool.index()];
                let mut cumulative = [0u64; LATENCY_BUCKETS.len()];
                let mut running = 0;
                for (i, slot) in cumulative.iter_mut().enumerate() {
                    running += histogram.buckets[i].load(Ordering::Relaxed);
                    *slot = running;
                }
                let count =
                    running + histogram.buckets[LATENCY_BUCKETS.len()].load(Ordering::Relaxed);
                (count > 0).then(|| Latency {
                    tool: tool.name(),
                    cumulative,
                    count,
                    sum_secs: histogram.sum_us.load(Ordering::Relaxed) as f64 / 1e6,
                })
            })
            .collect()
    }

    /// The last tool errors, newest first.
    pub fn recent_errors(&self) -> Vec<RecentError> {
        lock(&self.recent).iter().rev().cloned().collect()
    }

    pub fn record_cancelled(&self) {
        self.cancelled.fetch_add(1, Ordering::Relaxed);
    }

    pub fn record_protocol_error(&self) {
        self.protocol_errors.fetch_add(1, Ordering::Relaxed);
    }

    /// The `requests` part of `beam_stats`.
    pub fn snapshot(&self) -> RequestStats {
        let mut by_tool = BTreeMap::new();
        let mut by_era: BTreeMap<String, u64> = BTreeMap::new();
        let mut total = 0u64;
        for tool in Tool::ALL {
            let mut eras = BTreeMap::new();
            for era in ERAS {
                let n = self.calls[tool.index()][era_index(era)].load(Ordering::Relaxed);
                if n > 0 {
                    eras.insert(era.as_str().to_owned(), n);
                    total += n;
                    *by_era.entry(era.as_str().to_owned()).or_default() += n;
                }
            }
            if !eras.is_empty() {
                by_tool.insert(tool.name().to_owned(), eras);
            }
        }
        RequestStats {
            total,
            by_era,
            by_tool,
            tool_errors: self.tool_errors.load(Ordering::Relaxed),
            cancelled: self.cancelled.load(Ordering::Relaxed),
            protocol_errors: self.protocol_errors.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::surface::ErrorCode;

    #[test]
    fn latencies_are_cumulative_and_errors_kept_newest_first() {
        let stats = Stats::default();
        stats.record_latency(Tool::LeanSync, Duration::from_micros(500));
        stats.record_latency(Tool::LeanSync, Duration::from_millis(40));
        stats.record_latency(Tool::LeanSync, Duration::from_secs(500));
        let latencies = stats.latencies();
        assert_eq!(latencies.len(), 1, "tools never called are left out");
        let sync = &latencies[0];
        assert_eq!((sync.tool, sync.count), ("lean_sync", 3));
        assert_eq!(sync.cumulative[0], 1, "0.5 ms <= 1 ms");
        assert_eq!(sync.cumulative[3], 1, "40 ms > 25 ms");
        assert_eq!(sync.cumulative[4], 2, "40 ms <= 50 ms");
        assert_eq!(
            sync.cumulative[LATENCY_BUCKETS.len() - 1],
            2,
            "500 s only in +Inf"
        );
        assert!((sync.sum_secs - 500.0405).abs() < 1e-6, "{}", sync.sum_secs);

        for i in 0..RECENT_ERRORS + 3 {
            let error = ToolError::new(ErrorCode::InvalidParams, format!("error {i}"));
            stats.record_tool_error(Tool::LeanGoals, &error);
        }
        stats.record_tool_error(
            Tool::LeanSync,
            &ToolError::new(ErrorCode::ResourceLimit, "x".repeat(1000)),
        );
        let recent = stats.recent_errors();
        assert_eq!(recent.len(), RECENT_ERRORS);
        assert_eq!(
            (recent[0].tool, recent[0].code),
            ("lean_sync", "resourceLimit")
        );
        assert_eq!(recent[0].message.chars().count(), RECENT_MESSAGE_CHARS + 1);
        assert_eq!(recent[1].message, format!("error {}", RECENT_ERRORS + 2));
        assert_eq!(
            stats.errors_by_code(),
            vec![
                ("lean_goals", "invalidParams", RECENT_ERRORS as u64 + 3),
                ("lean_sync", "resourceLimit", 1)
            ]
        );
        assert_eq!(stats.snapshot().tool_errors, RECENT_ERRORS as u64 + 4);
    }
}
