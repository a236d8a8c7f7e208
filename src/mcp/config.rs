//! The protocol core's tunables: limits on calls in flight, the status-notice
//! delay and the served tool set, with their environment variables.

use std::time::Duration;

use tokio::sync::Semaphore;

use crate::surface::ToolSet;

/// Tunables of the protocol core.
#[derive(Debug, Clone)]
pub struct Config {
    /// How long a call without a progress token may run before its one
    /// `beam.status` notice.
    pub status_delay: Duration,
    /// Calls running at once across every client (the global cap). A call
    /// admitted beyond it waits for a slot, still cancellable.
    pub max_in_flight: usize,
    /// Calls one HTTP client (a legacy session, or the root of sessionless
    /// calls) may run at once, so that one client's slow calls leave slots for
    /// the others; it holds twice that admitted (see `share`).
    pub max_in_flight_per_client: usize,
    /// Calls one stream may hold admitted (running or waiting for a slot).
    /// Past it a stdio reader waits, which pushes back on a client that floods
    /// requests; below it every line is read, cancellations included.
    pub max_admitted_per_stream: usize,
    /// The tools this server serves (`--tools`, `LEAN_BEAM_TOOLS`): the only
    /// ones in tools/list and the only ones a call may name.
    pub tools: ToolSet,
}

pub const DEFAULT_MAX_IN_FLIGHT: usize = 256;
pub const DEFAULT_MAX_IN_FLIGHT_PER_CLIENT: usize = 64;
pub const DEFAULT_MAX_ADMITTED_PER_STREAM: usize = 1024;

impl Default for Config {
    fn default() -> Self {
        Self {
            status_delay: Duration::from_secs(2),
            max_in_flight: DEFAULT_MAX_IN_FLIGHT,
            max_in_flight_per_client: DEFAULT_MAX_IN_FLIGHT_PER_CLIENT,
            max_admitted_per_stream: DEFAULT_MAX_ADMITTED_PER_STREAM,
            tools: ToolSet::all(),
        }
    }
}

impl Config {
    /// Defaults, with `LEAN_BEAM_STATUS_DELAY_MS` (tests shorten it),
    /// `LEAN_BEAM_MAX_IN_FLIGHT`, `LEAN_BEAM_MAX_ADMITTED` and
    /// `LEAN_BEAM_HTTP_MAX_IN_FLIGHT_PER_CLIENT` honoured.
    pub fn from_env() -> Result<Self, String> {
        let mut config = Self::default();
        if let Some(ms) = std::env::var("LEAN_BEAM_STATUS_DELAY_MS")
            .ok()
            .and_then(|v| v.parse().ok())
        {
            config.status_delay = Duration::from_millis(ms);
        }
        for (name, field) in [
            ("LEAN_BEAM_MAX_IN_FLIGHT", &mut config.max_in_flight),
            (
                "LEAN_BEAM_MAX_ADMITTED",
                &mut config.max_admitted_per_stream,
            ),
            (
                "LEAN_BEAM_HTTP_MAX_IN_FLIGHT_PER_CLIENT",
                &mut config.max_in_flight_per_client,
            ),
        ] {
            if let Some(value) = positive_env(name)? {
                *field = value;
            }
        }
        Ok(config)
    }
}

/// A positive integer from the environment; `Err` names the variable.
fn positive_env(name: &str) -> Result<Option<usize>, String> {
    match std::env::var(name) {
        Err(_) => Ok(None),
        Ok(text) => match text.trim().parse::<usize>() {
            Ok(n) if n > 0 && n <= Semaphore::MAX_PERMITS => Ok(Some(n)),
            _ => Err(format!("{name} takes a positive integer, not `{text}`")),
        },
    }
}
