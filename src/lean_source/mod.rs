//! Pure analysis of Lean source text: the lexer, the command outline, the
//! escape hatches, lakefiles, positions and text placement. A leaf: nothing
//! here imports from the rest of the crate (tests/import_cycles.rs).

pub(crate) mod declarations;
pub(crate) mod hatches;
pub(crate) mod header;
pub(crate) mod lakefile;
pub(crate) mod lexer;
pub(crate) mod outline;
pub(crate) mod placement;
pub(crate) mod text;
