//! Who this server is: name, version and build identity.

use serde_json::{Value, json};

pub const NAME: &str = "lean-beam-mcp";
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Server instructions sent with discovery and initialize.
pub const INSTRUCTIONS: &str = "lean-beam-mcp gives you a Lean 4 prover. Every Lean tool takes \
an explicit workspace descriptor {\"root\": \"/absolute/project/path\"}. Call lean_sync on a file \
after you edit it to get its diagnostics and version; pass that version to goals, hover, \
navigation, todo and lean_run_at. lean_run_at tries tactic or command text without touching the \
file; keep what works by editing the file yourself, then sync again. The server never writes \
.lean files.";

/// Build identity recorded by build.rs.
pub fn build() -> Value {
    json!({
        "commit": option_env!("LEAN_BEAM_GIT_COMMIT").unwrap_or("unknown"),
        "profile": env!("LEAN_BEAM_PROFILE"),
        "target": env!("LEAN_BEAM_TARGET"),
        "rustc": env!("LEAN_BEAM_RUSTC"),
    })
}

pub fn server_info() -> Value {
    json!({ "name": NAME, "version": VERSION })
}
