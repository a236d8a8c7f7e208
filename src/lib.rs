//! lean-beam-mcp: an MCP server that gives AI agents a Lean 4 theorem prover.
//!
//! Data flows one way: transport (`mcp::stdio`) → protocol (`mcp::dispatcher`)
//! → generated parse and dispatch (`surface`) → operations (`ops`) → broker →
//! Lean LSP. See ARCHITECTURE.md for the map.

pub mod logging;

pub mod broker;
pub mod context;
pub mod doctor;
pub mod feedback;
pub mod fifo_timer;
pub mod http;
pub mod identity;
pub(crate) mod lean_source;
pub mod lsp;
pub mod mcp;
pub mod ops;
pub mod process;
pub mod replica;
pub mod results;
pub mod safe_fs;
#[cfg(test)]
mod scratch;
pub mod search;
pub mod sha256;
pub mod stats;
pub mod surface;
pub mod util;
pub mod wire;
