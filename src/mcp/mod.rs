//! The MCP protocol layer: framing, eras, sessions, the dispatcher and the stdio
//! transport.

pub mod dispatcher;
pub mod era;
pub mod fence;
pub mod jsonrpc;
pub mod session;
pub mod stdio;
