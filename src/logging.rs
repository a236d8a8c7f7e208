//! Operational logs, on stderr only: stdout is the protocol stream.
//!
//! The threshold is read once from `LEAN_BEAM_LOG` (error, warn, info, debug;
//! default warn) and never changes afterwards.

use std::fmt::Arguments;
use std::io::Write;
use std::sync::OnceLock;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Error,
    Warn,
    Info,
    Debug,
}

impl Level {
    fn as_str(self) -> &'static str {
        match self {
            Level::Error => "ERROR",
            Level::Warn => "WARN",
            Level::Info => "INFO",
            Level::Debug => "DEBUG",
        }
    }
}

fn threshold() -> Level {
    static THRESHOLD: OnceLock<Level> = OnceLock::new();
    *THRESHOLD.get_or_init(|| match std::env::var("LEAN_BEAM_LOG").as_deref() {
        Ok("error") => Level::Error,
        Ok("info") => Level::Info,
        Ok("debug") => Level::Debug,
        _ => Level::Warn,
    })
}

pub fn enabled(level: Level) -> bool {
    level <= threshold()
}

pub fn write(level: Level, args: Arguments<'_>) {
    if enabled(level) {
        let mut err = std::io::stderr().lock();
        let _ = writeln!(err, "lean-beam-mcp {}: {args}", level.as_str());
    }
}

#[macro_export]
macro_rules! log_error { ($($t:tt)*) => { $crate::logging::write($crate::logging::Level::Error, format_args!($($t)*)) } }
#[macro_export]
macro_rules! log_warn { ($($t:tt)*) => { $crate::logging::write($crate::logging::Level::Warn, format_args!($($t)*)) } }
#[macro_export]
macro_rules! log_info { ($($t:tt)*) => { $crate::logging::write($crate::logging::Level::Info, format_args!($($t)*)) } }
#[macro_export]
macro_rules! log_debug { ($($t:tt)*) => { $crate::logging::write($crate::logging::Level::Debug, format_args!($($t)*)) } }
