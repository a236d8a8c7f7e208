//! Child processes that must not outlive this server: a Lean server's whole
//! tree, and the batch compiler's runs.
//!
//! * [`spawn_supervised`]: starting a child in its own process group with the
//!   parent-death signal.
//! * [`tree`]: finding every process of a server tree through an environment mark.
//! * `sys`: signalling a process or a process group, and the parent-death signal.

mod spawn;
pub(crate) mod sys;
pub mod tree;

pub use spawn::spawn_supervised;
