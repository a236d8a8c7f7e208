//! Just enough of Lean's lexical structure to find `sorry` and synthetic holes
//! in code, never in comments, docstrings, strings or inside identifiers.

/// A token of interest: its kind and byte range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    pub kind: TokenKind,
    pub start: usize,
    pub end: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenKind {
    /// The `sorry` term or tactic.
    Sorry,
    /// A synthetic hole `?_` or `?name`.
    Hole,
}

fn is_ident_start(c: char) -> bool {
    c.is_alphabetic() || c == '_'
}

fn is_ident_char(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '_' | '\'' | '!' | '?')
}

/// Scan `text` for `sorry` tokens and synthetic holes.
pub fn scan(text: &str) -> Vec<Token> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut chars = text.char_indices().peekable();
    let mut prev: Option<char> = None;
    while let Some((i, c)) = chars.next() {
        match c {
            '-' if bytes.get(i + 1) == Some(&b'-') => {
                // Line comment.
                while let Some(&(_, c)) = chars.peek() {
                    if c == '\n' {
                        break;
                    }
                    chars.next();
                }
                prev = None;
                continue;
            }
            '/' if bytes.get(i + 1) == Some(&b'-') => {
                // Block comment or docstring, nested.
                chars.next();
                let mut depth = 1;
                while depth > 0 {
                    match chars.next() {
                        Some((j, '/')) if bytes.get(j + 1) == Some(&b'-') => {
                            chars.next();
                            depth += 1;
                        }
                        Some((j, '-')) if bytes.get(j + 1) == Some(&b'/') => {
                            chars.next();
                            depth -= 1;
                        }
                        Some(_) => {}
                        None => break,
                    }
                }
                prev = None;
                continue;
            }
            '"' => {
                while let Some((_, c)) = chars.next() {
                    match c {
                        '\\' => {
                            chars.next();
                        }
                        '"' => break,
                        _ => {}
                    }
                }
                prev = Some('"');
                continue;
            }
            '\'' if !prev.is_some_and(is_ident_char) => {
                // A character literal such as 'a' or '\n' (a prime after an
                // identifier is part of the identifier instead).
                let rest = &text[i + 1..];
                let lit_len = match rest.strip_prefix('\\') {
                    Some(escaped) => escaped.chars().next().map(|c| 1 + c.len_utf8()),
                    None => rest.chars().next().map(char::len_utf8),
                };
                if let Some(len) = lit_len {
                    if rest[len..].starts_with('\'') {
                        let end = i + 1 + len + 1;
                        while chars.peek().is_some_and(|&(j, _)| j < end) {
                            chars.next();
                        }
                        prev = Some('\'');
                        continue;
                    }
                }
            }
            '?' if !prev.is_some_and(is_ident_char) => {
                if let Some(&(_, next)) = chars.peek() {
                    if is_ident_start(next) {
                        let mut end = i + 1;
                        while let Some(&(j, c)) = chars.peek() {
                            if !is_ident_char(c) || (c == '?' && j > i + 1) {
                                break;
                            }
                            end = j + c.len_utf8();
                            chars.next();
                        }
                        out.push(Token {
                            kind: TokenKind::Hole,
                            start: i,
                            end,
                        });
                        prev = Some('_');
                        continue;
                    }
                }
            }
            c if is_ident_start(c) && !prev.is_some_and(is_ident_char) => {
                let mut end = i + c.len_utf8();
                while let Some(&(j, c)) = chars.peek() {
                    if !is_ident_char(c) {
                        break;
                    }
                    end = j + c.len_utf8();
                    chars.next();
                }
                // `Foo.sorry` names a constant; only a free-standing word is the term.
                let qualified = prev == Some('.');
                if &text[i..end] == "sorry" && !qualified {
                    out.push(Token {
                        kind: TokenKind::Sorry,
                        start: i,
                        end,
                    });
                }
                prev = text[i..end].chars().last();
                continue;
            }
            _ => {}
        }
        prev = Some(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sorries(text: &str) -> Vec<&str> {
        scan(text)
            .into_iter()
            .map(|t| &text[t.start..t.end])
            .collect()
    }

    #[test]
    fn finds_code_sorry_only() {
        let text = "/-! module sorry doc /- nested sorry -/ -/\n-- a sorry comment\n/-- doc sorry -/\ndef s := \"sorry in \\\" string\"\ntheorem tactic_sorry : T := by\n  exact sorry\ndef t := sorry\ndef x' := 'a'\ndef y := Foo.sorry";
        assert_eq!(sorries(text), vec!["sorry", "sorry"]);
    }

    #[test]
    fn finds_synthetic_holes() {
        let text = "refine And.intro ?_ ?left\n-- ?_ in a comment\nexact h?";
        assert_eq!(sorries(text), vec!["?_", "?left"]);
    }
}
