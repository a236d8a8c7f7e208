//! Process-wide request statistics (owned by the server, shared by reference).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use serde_json::{Map, Value, json};

use crate::context::Era;
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
    pub fn snapshot(&self) -> Value {
        let mut by_tool = Map::new();
        let mut by_era = Map::new();
        let mut total = 0u64;
        for tool in Tool::ALL {
            let mut eras = Map::new();
            for era in ERAS {
                let n = self.calls[tool.index()][era_index(era)].load(Ordering::Relaxed);
                if n > 0 {
                    eras.insert(era.as_str().into(), json!(n));
                    total += n;
                    let entry = by_era.entry(era.as_str()).or_insert(json!(0));
                    *entry = json!(entry.as_u64().unwrap_or(0) + n);
                }
            }
            if !eras.is_empty() {
                by_tool.insert(tool.name().into(), Value::Object(eras));
            }
        }
        json!({
            "total": total,
            "byEra": by_era,
            "byTool": by_tool,
            "toolErrors": self.tool_errors.load(Ordering::Relaxed),
            "cancelled": self.cancelled.load(Ordering::Relaxed),
            "protocolErrors": self.protocol_errors.load(Ordering::Relaxed),
        })
    }
}
