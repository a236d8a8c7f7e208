//! The tool features: what each intent asks of the engine and how its answer
//! is read. Each one is reached through a `Broker` method.

pub(super) mod certify;
pub(super) mod completions;
pub(super) mod documents;
pub(super) mod goals;
pub(super) mod handle_edit;
pub(super) mod heartbeats;
pub(super) mod inspect;
pub(super) mod lake_trace;
pub(super) mod probe;
pub(super) mod report;
pub(super) mod run_code;
pub(super) mod search;
pub(super) mod signatures;
pub(super) mod suggest;
pub(super) mod term_goal;
pub(super) mod todo;
pub(super) mod verify;
