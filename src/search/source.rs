//! The Lean-source reading the index leans on (the lexer, positions).
pub use crate::lean_source::header::{CONTINUATION, MODIFIERS};
pub use crate::lean_source::lexer::{Lexeme, LexemeKind, lex};
pub use crate::lean_source::text::LineIndex;
