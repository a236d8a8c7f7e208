//! Client for the Lean 4 language server (`lake serve` / `lean --server`).
//!
//! This module owns one server process per [`LspClient`]: it spawns it in its own
//! process group, speaks JSON-RPC over `Content-Length` framed stdio, answers the
//! server's own requests, streams server notifications to an event channel and
//! tears the whole process tree down on shutdown, kill or drop (the group, plus
//! Lean's file workers, which run in sessions of their own: see
//! [`crate::process::tree`]). It knows nothing about documents or versions:
//! that is the broker's job.
//!
//! * [`client`]: the public [`LspClient`]; `connection` (the state the client
//!   and its tasks share: sending, acting on what arrives, killing),
//!   `lifecycle` (start, and the drain/reader/stderr/waiter tasks), `outgoing`
//!   (frames, the non-blocking writer, the frame trace), `incoming` (what a
//!   server frame is), `pending` (requests awaiting their answer,
//!   cancel-on-drop), `capabilities` (`initialize`), `framing`; `server`
//!   ([`ServerCommand`], [`ServerEvent`], [`ExitInfo`]) and `error`
//!   ([`LspError`]).
//! * [`protocol`]: Lean's extensions as `lsp_types` requests and notifications
//!   (`waitForDiagnostics`, plain goals, RPC, `fileProgress`), its error codes
//!   ([`LeanErrorCode`]), a borrowed view of its diagnostics, and a
//!   `TaggedText` flattener.
//! * [`uri`]: file path ↔ `file://` URI, encoded exactly as Lean encodes them.
//!
//! Requests are typed ([`LspClient::request_typed`]) or, while the broker
//! still sends them that way, method strings with `serde_json::Value` params.

mod capabilities;
pub mod client;
mod connection;
mod error;
mod framing;
mod incoming;
mod lifecycle;
mod outgoing;
mod pending;
mod process;
pub mod protocol;
mod server;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
pub mod uri;

pub use client::{ClientStats, LspClient};
pub use error::LspError;
pub use process::Process;
pub use protocol::LeanErrorCode;
pub use server::{ExitInfo, ServerCommand, ServerEvent};
