//! Who this server is: name, version, build identity, and its replica's name
//! (`ReplicaId`, which `replica` reads from flags and the environment).

use serde_json::{Value, json};

use crate::results::BuildIdentity;

pub const NAME: &str = "lean-beam-mcp";
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The MCP revisions this server speaks, said once: the stateless one and
/// the initialize-based ones (`mcp::era` classifies requests by them).
pub const MODERN_VERSION: &str = "2026-07-28";
/// The latest initialize-based revision: what an `initialize` requesting one
/// this server does not speak is answered with.
pub const LEGACY_VERSION: &str = "2025-11-25";
pub const SUPPORTED_MODERN: &[&str] = &[MODERN_VERSION];

/// The initialize-based revisions this server speaks, newest first. Each
/// message it sends in this family is valid in every one of them: what
/// 2025-11-25 added over 2025-06-18 (icons, `Implementation.description`,
/// tool `execution` and tasks, URL elicitation, sampling with tools, SSE
/// priming events) is nothing this server sends, so a 2025-06-18 session gets
/// the same lines (`tests/catalog.rs` keeps the catalog and `serverInfo` to
/// 2025-06-18's keys). 2025-03-26 is not here: it lacks structured output and
/// requires receiving JSON-RPC batches, which this server refuses.
pub const SUPPORTED_LEGACY: &[&str] = &[LEGACY_VERSION, "2025-06-18"];

/// Server instructions sent with discovery and initialize: what an agent must
/// know before its first call, said once here rather than in every tool.
pub const INSTRUCTIONS: &str = "lean-beam-mcp gives you a Lean 4 prover. Lines and characters \
are 0-based everywhere, characters counted in UTF-16 code units. The usual loop: edit the file \
with your own tool, lean_sync it (diagnostics and a version), lean_todo that version (each item's \
probe and range), try several candidate texts in one lean_run_batch call at an item's probe, write \
the first closed one over the item's range, then lean_sync again. Every Lean tool takes a \
workspace {\"root\": \"/absolute/project/path\"}; pass the same one each time; a `path` is \
relative to that root, or absolute; a `version` is one lean_sync or lean_update returned; a \
handle's calls take the path of the file it was cut from. Instead of line and character, \
lean_goals, lean_term_goal, lean_run_at, lean_run_at_handle, lean_run_batch and lean_suggest take declaration: \
\"Ns.name\" (read from the synced text; a unique last part suffices): its first sorry or hole, \
or with at: \"start\" the first token of its proof (after := and by), \"end\" just after its \
last token; the result echoes the name and place in `declaration`. lean_todo's declaration \
limits it to that declaration. diagnostic_scope filters the items only: counts are always \
complete. Goals \
come as Lean prints them (`pretty`); pass structured_goals: true for their parts (hyps, target, \
goalPrefix, userName). Probe budgets are unset unless given: max_heartbeats is Lean's \
maxHeartbeats in thousands, timeout_ms a wall-clock limit from when a shadow slot is free. Results are \
bounded: a field past 6,000 characters is cut in the middle (a marker gives its length), a \
result past 64 KiB (or the max_result_bytes a tool with Lean text takes) is cut further, and \
`truncated` then says what was cut; edit text (newText) is never cut: an edit too large to return \
whole is an editTooLarge error. \
The server never \
writes .lean files. Without _meta.progressToken, a call still running after 2 s sends one \
`beam.status` log at level notice.";

/// Build identity recorded by build.rs.
pub fn build() -> BuildIdentity {
    BuildIdentity {
        commit: option_env!("LEAN_BEAM_GIT_COMMIT").unwrap_or("unknown"),
        profile: env!("LEAN_BEAM_PROFILE"),
        target: env!("LEAN_BEAM_TARGET"),
        rustc: env!("LEAN_BEAM_RUSTC"),
    }
}

pub fn server_info() -> Value {
    json!({ "name": NAME, "version": VERSION })
}

/// The environment variable of the replica's name.
pub const ID_ENV: &str = "LEAN_BEAM_REPLICA_ID";
/// The longest replica name: it travels in every `beam_version`.
const MAX_ID_LEN: usize = 128;

/// A replica's name: 1 to 128 visible ASCII characters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplicaId(String);

impl ReplicaId {
    pub fn new(text: &str, source: &str) -> Result<Self, String> {
        let ok = !text.is_empty()
            && text.len() <= MAX_ID_LEN
            && text.bytes().all(|b| b.is_ascii_graphic());
        if ok {
            Ok(ReplicaId(text.to_owned()))
        } else {
            Err(format!(
                "{source} must be 1 to {MAX_ID_LEN} visible ASCII characters (no spaces), not {text:?}"
            ))
        }
    }

    /// `<hostname>:<port>` when serving HTTP on `port`, `<hostname>:stdio`
    /// otherwise.
    pub fn default_for(port: Option<u16>) -> Self {
        let host = hostname();
        ReplicaId(match port {
            Some(port) => format!("{host}:{port}"),
            None => format!("{host}:stdio"),
        })
    }

    /// `LEAN_BEAM_REPLICA_ID` if set, else [`ReplicaId::default_for`].
    pub fn from_env_or_default(
        env: impl Fn(&str) -> Option<String>,
        port: Option<u16>,
    ) -> Result<Self, String> {
        match env(ID_ENV).filter(|v| !v.is_empty()) {
            Some(text) => ReplicaId::new(&text, ID_ENV),
            None => Ok(ReplicaId::default_for(port)),
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// This machine's name: the kernel's, else `$HOSTNAME`, else `localhost`.
fn hostname() -> String {
    let kernel = std::fs::read_to_string("/proc/sys/kernel/hostname").ok();
    kernel
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|name| name.trim().to_owned())
        .filter(|name| ReplicaId::new(name, "hostname").is_ok())
        .unwrap_or_else(|| "localhost".to_owned())
}
