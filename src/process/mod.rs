//! Child processes that must not outlive this server: a Lean server's whole
//! tree, and the batch compiler's runs.
//!
//! * [`tree`]: finding every process of a server tree through an environment mark.
//! * [`sys`]: signalling a process or a process group, and the parent-death signal.

pub(crate) mod sys;
pub mod tree;
