//! Every suite that runs against the real Lean 4.35.0 test toolchain, in one
//! test binary: the toolchain install, the fixture builds and the compile of
//! the shared harness (`tests/common`) happen once for all of them.
//!
//! One module per suite; select one with `cargo test --test lean broker::`
//! (or a single test, `cargo test --test lean broker::some_test`).

#[path = "../common/mod.rs"]
mod common;

mod batch;
mod bounds;
mod broker;
mod categories;
mod completions;
mod contract;
mod declarations;
mod faults;
mod handle_edit;
mod inspect;
mod lake_setup;
mod lsp_client;
mod memory_budget;
mod outline;
mod prefix_bases;
mod readings;
mod replicas;
mod safe_fs;
mod save_feedback;
mod search;
mod snippets;
mod speculate;
mod suggest;
mod verify;
