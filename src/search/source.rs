//! The Lean-source reading the index leans on: the lexer, and nothing else.
pub use crate::broker::{Lexeme, LexemeKind, lex};
