//! Process-wide request statistics (owned by the server, shared by reference).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use crate::context::Era;
use crate::results::RequestStats;
use crate::surface::{TOOL_COUNT, Tool};

const ERAS: [Era; 3] = [Era::Modern, Era::Legacy, Era::Direct];

#[derive(Debug)]
pub struct Stats {
    started: Instant,
    calls: [[AtomicU64; 3]; TOOL_COUNT],
    tool_errors: AtomicU64,
    cancelled: AtomicU64,
    protocol_errors: AtomicU64,
}

impl Default for Stats {
    fn default() -> Self {
        Self {
            started: Instant::now(),
            calls: std::array::from_fn(|_| std::array::from_fn(|_| AtomicU64::new(0))),
            tool_errors: AtomicU64::new(0),
            cancelled: AtomicU64::new(0),
            protocol_errors: AtomicU64::new(0),
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

    pub fn record_tool_error(&self) {
        self.tool_errors.fetch_add(1, Ordering::Relaxed);
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
