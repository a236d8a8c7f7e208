//! Lean's lexical structure as far as telling code from comments, docstrings,
//! strings and character literals needs it: identifiers with `«…»` quoting,
//! ordinary strings, raw strings (`r"…"`, `r#"…"#`), character literals,
//! nested `/- -/` comments and `--` lines. It finds `sorry` and synthetic
//! holes in code, the words that start commands, and the tokens the
//! escape-hatch scan and the import reader look at.

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

/// What a stretch of source text is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LexemeKind {
    /// An identifier or keyword (one component: `Foo.bar` is `Foo`, `.`, `bar`;
    /// `«x y»` is one word, its guillemets included).
    Word,
    /// A line or block comment; `doc` for `/--` docstrings and `/-!` module docs.
    Comment { doc: bool },
    /// A string literal, ordinary or raw.
    Str,
    /// A character literal.
    Char,
    /// A synthetic hole `?_` or `?name`.
    Hole,
    /// Any other character that is not white space.
    Symbol,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lexeme {
    pub kind: LexemeKind,
    pub start: usize,
    pub end: usize,
}

fn is_ident_start(c: char) -> bool {
    c.is_alphabetic() || c == '_'
}

fn is_ident_char(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '_' | '\'' | '!' | '?')
}

/// Scan `text` for `sorry` tokens and synthetic holes.
pub fn scan(text: &str) -> Vec<Token> {
    lex(text)
        .into_iter()
        .filter_map(|l| {
            let kind = match l.kind {
                LexemeKind::Hole => TokenKind::Hole,
                // `Foo.sorry` names a constant; only a free-standing word is the term.
                LexemeKind::Word
                    if &text[l.start..l.end] == "sorry" && !text[..l.start].ends_with('.') =>
                {
                    TokenKind::Sorry
                }
                _ => return None,
            };
            Some(Token {
                kind,
                start: l.start,
                end: l.end,
            })
        })
        .collect()
}

/// Where the raw string literal starting at `i` (an `r`, then `#`s, then a
/// quote) ends: after the quote followed by as many `#`s. `None` when no raw
/// string starts there; an unterminated one runs to the end of the text.
fn raw_string_at(text: &str, i: usize) -> Option<usize> {
    let rest = text[i..].strip_prefix('r')?;
    let hashes = rest.bytes().take_while(|&b| b == b'#').count();
    let body = rest[hashes..].strip_prefix('"')?;
    let close = format!("\"{}", "#".repeat(hashes));
    let start = i + 1 + hashes + 1;
    Some(
        body.find(&close)
            .map_or(text.len(), |k| start + k + close.len()),
    )
}

/// The identifier `word` (one component) as Lean reads it: without its
/// guillemets.
pub fn unescape(word: &str) -> String {
    word.replace(['«', '»'], "")
}

/// The components of a dotted Lean name as Lean reads them: split at the
/// dots outside `«…»`, guillemets removed (`«A.B».c` is `A.B` and `c`).
pub fn name_components(name: &str) -> Vec<String> {
    let mut parts = vec![String::new()];
    let mut escaped = false;
    for c in name.chars() {
        match c {
            '«' => escaped = true,
            '»' => escaped = false,
            '.' if !escaped => parts.push(String::new()),
            c => parts.last_mut().expect("one part").push(c),
        }
    }
    parts
}

/// A component as Lean prints it: quoted in `«…»` unless it is a plain
/// identifier.
pub fn escape_component(part: &str) -> String {
    let mut chars = part.chars();
    let plain = chars.next().is_some_and(is_ident_start) && chars.all(is_ident_char);
    if plain {
        part.to_string()
    } else {
        format!("«{part}»")
    }
}

/// A dotted name in Lean's own spelling: `«Atk».Lib` is `Atk.Lib`.
pub fn canonical_name(name: &str) -> String {
    name_components(name)
        .iter()
        .map(|p| escape_component(p))
        .collect::<Vec<_>>()
        .join(".")
}

/// Split `text` into lexemes (white space is dropped).
pub fn lex(text: &str) -> Vec<Lexeme> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut push = |kind, start, end| out.push(Lexeme { kind, start, end });
    let mut chars = text.char_indices().peekable();
    let mut prev: Option<char> = None;
    while let Some((i, c)) = chars.next() {
        let end_at = |chars: &mut std::iter::Peekable<std::str::CharIndices>| {
            chars.peek().map_or(text.len(), |&(j, _)| j)
        };
        match c {
            '-' if bytes.get(i + 1) == Some(&b'-') => {
                // Line comment.
                while let Some(&(_, c)) = chars.peek() {
                    if c == '\n' {
                        break;
                    }
                    chars.next();
                }
                push(LexemeKind::Comment { doc: false }, i, end_at(&mut chars));
                prev = None;
                continue;
            }
            '/' if bytes.get(i + 1) == Some(&b'-') => {
                // Block comment or docstring, nested.
                let doc = matches!(bytes.get(i + 2), Some(b'-' | b'!'))
                    && bytes.get(i + 3) != Some(&b'/');
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
                push(LexemeKind::Comment { doc }, i, end_at(&mut chars));
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
                push(LexemeKind::Str, i, end_at(&mut chars));
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
                        push(LexemeKind::Char, i, end);
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
                        push(LexemeKind::Hole, i, end);
                        prev = Some('_');
                        continue;
                    }
                }
            }
            'r' if !prev.is_some_and(is_ident_char) && raw_string_at(text, i).is_some() => {
                let end = raw_string_at(text, i).unwrap_or(text.len());
                while chars.peek().is_some_and(|&(j, _)| j < end) {
                    chars.next();
                }
                push(LexemeKind::Str, i, end);
                prev = Some('"');
                continue;
            }
            '«' => {
                // An escaped identifier part runs to the next `»` (Lean
                // allows anything but `»` and tabs or line breaks inside);
                // one left open runs to the end, as Lean's error says.
                let close = text[i..]
                    .find('»')
                    .map_or(text.len(), |k| i + k + '»'.len_utf8());
                let mut end = close;
                while chars.peek().is_some_and(|&(j, _)| j < close) {
                    chars.next();
                }
                while let Some(&(j, c)) = chars.peek() {
                    if !is_ident_char(c) {
                        break;
                    }
                    end = j + c.len_utf8();
                    chars.next();
                }
                push(LexemeKind::Word, i, end);
                prev = Some('_');
                continue;
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
                push(LexemeKind::Word, i, end);
                prev = text[i..end].chars().last();
                continue;
            }
            _ => {}
        }
        if !c.is_whitespace() {
            push(LexemeKind::Symbol, i, i + c.len_utf8());
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

    fn kinds(text: &str) -> Vec<(LexemeKind, &str)> {
        lex(text)
            .into_iter()
            .map(|l| (l.kind, &text[l.start..l.end]))
            .collect()
    }

    #[test]
    fn finds_code_sorry_only() {
        let text = "/-! module sorry doc /- nested sorry -/ -/\n-- a sorry comment\n/-- doc sorry -/\ndef s := \"sorry in \\\" string\"\ntheorem tactic_sorry : T := by\n  exact sorry\ndef t := sorry\ndef x' := 'a'\ndef y := Foo.sorry";
        assert_eq!(sorries(text), vec!["sorry", "sorry"]);
    }

    #[test]
    fn lexemes_tell_code_from_comments_and_literals() {
        let text = "/-- doc -/\ndef x' := 'a' -- c\n/-! m -/ /- p -/ \"s\" ?h";
        let kinds = kinds(text);
        use LexemeKind::*;
        assert_eq!(
            kinds,
            vec![
                (Comment { doc: true }, "/-- doc -/"),
                (Word, "def"),
                (Word, "x'"),
                (Symbol, ":"),
                (Symbol, "="),
                (Char, "'a'"),
                (Comment { doc: false }, "-- c"),
                (Comment { doc: true }, "/-! m -/"),
                (Comment { doc: false }, "/- p -/"),
                (Str, "\"s\""),
                (Hole, "?h"),
            ]
        );
    }

    #[test]
    fn finds_synthetic_holes() {
        let text = "refine And.intro ?_ ?left\n-- ?_ in a comment\nexact h?";
        assert_eq!(sorries(text), vec!["?_", "?left"]);
    }

    #[test]
    fn guillemets_and_raw_strings_are_lexed_as_lean_does() {
        let text = "set_option «debug».skipKernelTC true\ndef s := r\"\\\" x\ndef t := r#\"a \" b\"# «--x» y\n«open";
        let kinds = kinds(text);
        use LexemeKind::*;
        assert_eq!(
            kinds,
            vec![
                (Word, "set_option"),
                (Word, "«debug»"),
                (Symbol, "."),
                (Word, "skipKernelTC"),
                (Word, "true"),
                (Word, "def"),
                (Word, "s"),
                (Symbol, ":"),
                (Symbol, "="),
                (Str, "r\"\\\""),
                (Word, "x"),
                (Word, "def"),
                (Word, "t"),
                (Symbol, ":"),
                (Symbol, "="),
                (Str, "r#\"a \" b\"#"),
                (Word, "«--x»"),
                (Word, "y"),
                (Word, "«open"),
            ]
        );
        assert_eq!(unescape("«debug»"), "debug");
        // A word that merely starts with `r` is a word.
        assert_eq!(lex("rfl r x").len(), 3);
    }
}
