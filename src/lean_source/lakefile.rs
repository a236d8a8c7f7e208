//! What a lakefile sets, read as the language it is written in rather than
//! grepped: a word in a comment or a string is not a setting.
//!
//! Only one question is asked here: does the package pass batch-only
//! `moreLeanArgs`? The language server does not apply them, so a checkpoint
//! compiled without them would not match a build. An empty list passes
//! nothing and does not count.

use super::lexer::{LexemeKind, lex};

/// The setting this module looks for.
pub const MORE_LEAN_ARGS: &str = "moreLeanArgs";

/// Whether `lakefile.lean` text sets a non-empty `moreLeanArgs` in code
/// (`moreLeanArgs := …`; comments, docstrings and string literals do not
/// count).
pub fn lean_sets_more_lean_args(text: &str) -> bool {
    let code: Vec<&str> = lex(text)
        .into_iter()
        .filter(|l| !matches!(l.kind, LexemeKind::Comment { .. }))
        .map(|l| match l.kind {
            // A literal is one opaque item: its content never matches a word.
            LexemeKind::Str | LexemeKind::Char => "\"",
            _ => &text[l.start..l.end],
        })
        .collect();
    (0..code.len()).any(|i| {
        let at = |k: usize| code.get(i + k).copied();
        code[i] == MORE_LEAN_ARGS
            && at(1) == Some(":")
            && at(2) == Some("=")
            && !(at(3) == Some("#")
                && at(4) == Some("[")
                && at(5) == Some("]")
                && at(6) != Some("+"))
    })
}

/// A TOML token, as far as keys are concerned.
#[derive(Debug, PartialEq, Eq)]
enum Tok<'a> {
    /// A bare key or any other bare word (numbers, booleans, dates).
    Bare(&'a str),
    /// A quoted string (its raw content, escapes left as written).
    Quoted(&'a str),
    Punct(char),
}

/// The tokens of TOML text, comments dropped. Enough of the grammar to tell
/// keys from comments and string values: basic and literal strings, their
/// multi-line forms, and escapes in basic strings.
fn toml_tokens(text: &str) -> Vec<Tok<'_>> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let rest = &text[i..];
        let c = bytes[i];
        if c == b'#' {
            i += rest.find('\n').unwrap_or(rest.len());
        } else if rest.starts_with("\"\"\"") || rest.starts_with("'''") {
            let fence = &rest[..3];
            let basic = c == b'"';
            let body = &rest[3..];
            let mut j = 0;
            let end = loop {
                match body[j..].find(fence) {
                    None => break body.len(),
                    Some(k) => {
                        let at = j + k;
                        let escaped = basic
                            && body[..at].bytes().rev().take_while(|&b| b == b'\\').count() % 2
                                == 1;
                        if escaped {
                            j = at + 1;
                        } else {
                            // A closing fence may be followed by up to two
                            // more quotes that belong to the content.
                            let mut close = at;
                            while body[close + 3..].starts_with(&fence[..1]) && close < at + 2 {
                                close += 1;
                            }
                            break close;
                        }
                    }
                }
            };
            out.push(Tok::Quoted(&body[..end]));
            i += 3 + (end + 3).min(body.len());
        } else if c == b'"' || c == b'\'' {
            let mut j = i + 1;
            while j < bytes.len() && bytes[j] != c && bytes[j] != b'\n' {
                if c == b'"' && bytes[j] == b'\\' {
                    j += 1;
                }
                j += 1;
            }
            let end = j.min(bytes.len());
            out.push(Tok::Quoted(&text[i + 1..end]));
            i = (end + 1).min(bytes.len());
        } else if c.is_ascii_alphanumeric() || c == b'_' || c == b'-' {
            let len = rest
                .bytes()
                .take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'+' | b':'))
                .count();
            out.push(Tok::Bare(&rest[..len]));
            i += len;
        } else if c.is_ascii_whitespace() {
            i += 1;
        } else {
            let ch = rest.chars().next().unwrap_or(' ');
            out.push(Tok::Punct(ch));
            i += ch.len_utf8();
        }
    }
    out
}

/// Whether `lakefile.toml` text sets a non-empty `moreLeanArgs` key, in any
/// table or inline table (bare or quoted key; comments and string values do
/// not count).
pub fn toml_sets_more_lean_args(text: &str) -> bool {
    let tokens = toml_tokens(text);
    (0..tokens.len()).any(|i| {
        let key = matches!(tokens[i], Tok::Bare(k) | Tok::Quoted(k) if k == MORE_LEAN_ARGS);
        key && tokens.get(i + 1) == Some(&Tok::Punct('='))
            && !(tokens.get(i + 2) == Some(&Tok::Punct('['))
                && tokens.get(i + 3) == Some(&Tok::Punct(']')))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lean_lakefiles_are_read_as_lean() {
        let set = "import Lake\nopen Lake DSL\npackage fix where\n  moreLeanArgs := #[\"-DmaxHeartbeats=0\"]\n";
        assert!(lean_sets_more_lean_args(set));
        assert!(lean_sets_more_lean_args(
            "package p where\n  moreLeanArgs := args\n"
        ));
        for quiet in [
            "-- moreLeanArgs := #[\"-Dx=1\"] was removed\npackage p where\n",
            "/- moreLeanArgs := #[\"-Dx\"] -/\n/-- doc: moreLeanArgs := -/\npackage p\n",
            "package p where\n  leanOptions := #[⟨`x, \"moreLeanArgs := #[]\"⟩]\n",
            "package p where\n  moreLeanArgs := #[]\n",
            "def n := pkg.moreLeanArgs.size\n",
        ] {
            assert!(!lean_sets_more_lean_args(quiet), "{quiet}");
        }
    }

    #[test]
    fn toml_lakefiles_are_read_as_toml() {
        for set in [
            "name = \"p\"\nmoreLeanArgs = [\"-DmaxHeartbeats=0\"]\n",
            "[[lean_lib]]\nname = \"P\"\n  moreLeanArgs=['-Dx']\n",
            "\"moreLeanArgs\" = [\"-Dx\"]\n",
            "lean_lib = [{ name = \"P\", moreLeanArgs = [\"-Dx\"] }]\n",
            "desc = \"\"\"a \\\"\"\" quote\"\"\"\nmoreLeanArgs = [\"-Dx\"]\n",
        ] {
            assert!(toml_sets_more_lean_args(set), "{set}");
        }
        for quiet in [
            "# moreLeanArgs = [\"-Dx\"]\nname = \"p\"\n",
            "name = \"p\" # moreLeanArgs = [\"-Dx\"]\n",
            "description = \"moreLeanArgs = ['-Dx']\"\n",
            "description = '''\nmoreLeanArgs = [\"-Dx\"]\n'''\n",
            "description = \"\"\"\nmoreLeanArgs = [\"-Dx\"]\n\"\"\"\n",
            "moreLeanArgs = []\n",
            "[moreLeanArgs]\n",
        ] {
            assert!(!toml_sets_more_lean_args(quiet), "{quiet}");
        }
    }
}
