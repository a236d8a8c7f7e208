//! The imports of a module header, as the lexer reads them (`«…»`
//! components), `Init` first unless the header says `prelude`.

use crate::lean_source::lexer::{self, LexemeKind};
use crate::lean_source::outline;

/// Whether a header begins with `prelude` (else Lean imports `Init`).
fn has_prelude(text: &str) -> bool {
    lexer::lex(text)
        .into_iter()
        .filter(|l| !matches!(l.kind, LexemeKind::Comment { .. }))
        .take(2)
        .any(|l| l.kind == LexemeKind::Word && &text[l.start..l.end] == "prelude")
}

/// The modules a source imports (`Init` when it has no `prelude`).
pub(super) fn header(text: &str) -> Option<Vec<String>> {
    let mut imports = outline::imports(text)?;
    if !has_prelude(text) {
        imports.insert(0, "Init".to_string());
    }
    Some(imports)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_header_without_prelude_imports_init() {
        assert_eq!(header("import A\n").unwrap(), ["Init", "A"]);
        assert_eq!(header("/- c -/\nprelude\nimport A\n").unwrap(), ["A"]);
        assert_eq!(header("module\nprelude\n").unwrap(), Vec::<String>::new());
    }
}
