//! The MCP protocol layer: framing, eras, sessions, the dispatcher and the stdio
//! transport.

mod catch_panic;
pub mod config;
pub mod dispatcher;
pub mod era;
pub mod fence;
pub mod jsonrpc;
mod params;
pub mod session;
pub mod share;
pub mod stdio;
