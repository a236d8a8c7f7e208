//! The tool features: what each intent asks of the engine and how its answer
//! is read. Each one is reached through a `Broker` method.

pub(crate) mod certify;
pub(crate) mod completions;
pub(crate) mod documents;
pub(crate) mod goals;
pub(crate) mod handle_edit;
pub(crate) mod heartbeats;
pub(crate) mod inspect;
pub(crate) mod probe;
pub(crate) mod report;
pub(crate) mod run_code;
pub(crate) mod search;
pub(crate) mod signatures;
pub(crate) mod term_goal;
pub(crate) mod todo;
pub(crate) mod verify;
