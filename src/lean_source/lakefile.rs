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

/// What the workspace package's lakefile sets for a module's elaboration
/// (Lake's `leanOptions` and `moreLeanArgs`, of the package and of each
/// `lean_lib`), read so `lean_verify`'s fresh build elaborates as Lake's does.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct LeanSettings {
    /// The package's own settings, then each library's.
    pub tables: Vec<Settings>,
    /// Settings found but not read (a computed value in `lakefile.lean`):
    /// where, and why. A build without them would not be Lake's.
    pub unread: Vec<String>,
    /// The lakefile read (`lakefile.lean` or `lakefile.toml`).
    pub file: &'static str,
}

/// One table's settings.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Settings {
    /// `None` for the package; a library's roots (its name by default).
    pub roots: Option<Vec<String>>,
    /// `leanOptions`: name and value as Lake passes it (`-Dname=value`).
    pub options: Vec<(String, String)>,
    /// `moreLeanArgs` as written.
    pub more_args: Vec<String>,
}

/// The setting that holds options.
pub const LEAN_OPTIONS: &str = "leanOptions";

impl LeanSettings {
    /// The arguments Lake gives `lean` for `module` (the package's, then its
    /// library's: Lake's `leanOptions` as `-D`, then `moreLeanArgs`), or why
    /// one cannot be passed to a fresh build: only `-Dname=value` options
    /// are (an argument that loads code or changes outputs is Lake's
    /// business, not a verdict's).
    pub fn args_for(&self, module: &str) -> Result<Vec<String>, String> {
        let mut args = Vec::new();
        let applies = |s: &Settings| match &s.roots {
            None => true,
            Some(roots) => roots.iter().any(|r| {
                module == r
                    || module
                        .strip_prefix(r.as_str())
                        .is_some_and(|rest| rest.starts_with('.'))
            }),
        };
        let mut more = Vec::new();
        for s in self.tables.iter().filter(|s| applies(s)) {
            for (name, value) in &s.options {
                args.push(format!("-D{name}={value}"));
            }
            more.extend(s.more_args.iter().cloned());
        }
        for a in more {
            let ok = a
                .strip_prefix("-D")
                .and_then(|o| o.split_once('='))
                .is_some_and(|(n, _)| {
                    !n.is_empty()
                        && n.bytes()
                            .all(|b| b.is_ascii_alphanumeric() || b"._".contains(&b))
                });
            if !ok {
                return Err(format!(
                    "{} passes {a:?} in moreLeanArgs: a fresh build passes only `-Dname=value` options",
                    self.file
                ));
            }
            args.push(a);
        }
        Ok(args)
    }

    /// Every option set anywhere, with the value Lean reads (`-D` arguments
    /// included), for the checks that refuse some of them.
    pub fn all_options(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for s in &self.tables {
            out.extend(s.options.iter().cloned());
            for a in &s.more_args {
                if let Some((n, v)) = a.strip_prefix("-D").and_then(|o| o.split_once('=')) {
                    out.push((n.to_string(), v.to_string()));
                }
            }
        }
        out
    }
}

/// A TOML value as Lake's `-D` flag writes it.
fn toml_flag_value(v: &toml::Value) -> Option<String> {
    match v {
        toml::Value::Boolean(b) => Some(b.to_string()),
        toml::Value::Integer(i) => Some(i.to_string()),
        toml::Value::String(s) => Some(s.clone()),
        _ => None,
    }
}

/// `leanOptions` entries as Lake reads them: a dotted key
/// (`pp.unicode.fun = true`) is a nested table in TOML, one option name.
fn flatten(
    table: &toml::Table,
    prefix: &str,
    options: &mut Vec<(String, String)>,
    unread: &mut Vec<String>,
) {
    for (key, value) in table {
        let name = format!("{prefix}{key}");
        match (value.as_table(), toml_flag_value(value)) {
            (Some(inner), _) => flatten(inner, &format!("{name}."), options, unread),
            (None, Some(v)) => options.push((name, v)),
            (None, None) => unread.push(format!(
                "lakefile.toml: leanOptions.{name} is not a boolean, number or string"
            )),
        }
    }
}

/// Read `lakefile.toml`'s settings; why it cannot be read as TOML.
pub fn toml_settings(text: &str) -> Result<LeanSettings, String> {
    let table: toml::Table = text
        .parse()
        .map_err(|e| format!("lakefile.toml is not TOML: {e}"))?;
    let mut out = LeanSettings {
        file: "lakefile.toml",
        ..LeanSettings::default()
    };
    let read = |t: &toml::Table, roots: Option<Vec<String>>, out: &mut LeanSettings| {
        let mut s = Settings {
            roots,
            ..Settings::default()
        };
        if let Some(opts) = t.get(LEAN_OPTIONS) {
            match opts.as_table() {
                Some(opts) => flatten(opts, "", &mut s.options, &mut out.unread),
                None => out
                    .unread
                    .push("lakefile.toml: leanOptions is not a table".to_string()),
            }
        }
        if let Some(args) = t.get(MORE_LEAN_ARGS) {
            match args.as_array() {
                Some(args) => {
                    for a in args {
                        match a.as_str() {
                            Some(a) => s.more_args.push(a.to_string()),
                            None => out
                                .unread
                                .push("lakefile.toml: moreLeanArgs holds a non-string".to_string()),
                        }
                    }
                }
                None => out
                    .unread
                    .push("lakefile.toml: moreLeanArgs is not an array".to_string()),
            }
        }
        out.tables.push(s);
    };
    read(&table, None, &mut out);
    if let Some(libs) = table.get("lean_lib").and_then(toml::Value::as_array) {
        for lib in libs.iter().filter_map(toml::Value::as_table) {
            let name = lib.get("name").and_then(toml::Value::as_str).unwrap_or("");
            let roots = lib
                .get("roots")
                .and_then(toml::Value::as_array)
                .map(|r| {
                    r.iter()
                        .filter_map(|v| v.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_else(|| vec![name.to_string()]);
            read(lib, Some(roots), &mut out);
        }
    }
    Ok(out)
}

/// Read `lakefile.lean`'s literal settings by its tokens: `leanOptions :=
/// #[⟨`name, value⟩, …]` and `moreLeanArgs := #["…", …]` in the `package`
/// and `lean_lib` blocks. A setting written any other way (computed) is
/// `unread`.
pub fn lean_settings(text: &str) -> LeanSettings {
    let lexemes: Vec<_> = lex(text)
        .into_iter()
        .filter(|l| !matches!(l.kind, LexemeKind::Comment { .. }))
        .collect();
    let at = |i: usize| lexemes.get(i).map_or("", |l| &text[l.start..l.end]);
    let mut out = LeanSettings {
        file: "lakefile.lean",
        tables: vec![Settings::default()],
        ..LeanSettings::default()
    };
    let mut current = 0;
    let mut i = 0;
    while i < lexemes.len() {
        let word = at(i);
        if word == "package" && lexemes[i].kind == LexemeKind::Word {
            current = 0;
        } else if word == "lean_lib" && lexemes[i].kind == LexemeKind::Word {
            let name = super::lexer::canonical_name(at(i + 1));
            out.tables.push(Settings {
                roots: Some(vec![name]),
                ..Settings::default()
            });
            current = out.tables.len() - 1;
        } else if (word == LEAN_OPTIONS || word == MORE_LEAN_ARGS)
            && at(i + 1) == ":"
            && at(i + 2) == "="
        {
            let literal = at(i + 3) == "#" && at(i + 4) == "[";
            // The list's items, to its closing bracket.
            let mut j = i + 5;
            let mut depth = 0;
            let mut items: Vec<usize> = Vec::new();
            while literal && j < lexemes.len() {
                match at(j) {
                    "[" | "⟨" | "(" => depth += 1,
                    "]" | "⟩" | ")" if depth == 0 => break,
                    "]" | "⟩" | ")" => depth -= 1,
                    _ => {}
                }
                items.push(j);
                j += 1;
            }
            let read = if !literal {
                None
            } else if word == MORE_LEAN_ARGS {
                read_strings(text, &lexemes, &items)
            } else {
                read_options(text, &lexemes, &items)
            };
            match read {
                Some(Read::Args(args)) => out.tables[current].more_args.extend(args),
                Some(Read::Options(opts)) => out.tables[current].options.extend(opts),
                None => out.unread.push(format!(
                    "lakefile.lean sets {word} with a value that is not a literal list this server reads"
                )),
            }
            i = j;
        }
        i += 1;
    }
    out
}

enum Read {
    Args(Vec<String>),
    Options(Vec<(String, String)>),
}

/// A string literal's content (the escapes Lake's arguments use).
fn unquote(s: &str) -> Option<String> {
    let body = s.strip_prefix('"')?.strip_suffix('"')?;
    let mut out = String::new();
    let mut chars = body.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next()? {
                'n' => out.push('\n'),
                't' => out.push('\t'),
                c @ ('\\' | '"' | '\'') => out.push(c),
                _ => return None,
            }
        } else {
            out.push(c);
        }
    }
    Some(out)
}

fn read_strings(text: &str, lexemes: &[super::lexer::Lexeme], items: &[usize]) -> Option<Read> {
    let mut args = Vec::new();
    for (k, &j) in items.iter().enumerate() {
        let s = &text[lexemes[j].start..lexemes[j].end];
        if k % 2 == 0 {
            if lexemes[j].kind != LexemeKind::Str {
                return None;
            }
            args.push(unquote(s)?);
        } else if s != "," {
            return None;
        }
    }
    Some(Read::Args(args))
}

fn read_options(text: &str, lexemes: &[super::lexer::Lexeme], items: &[usize]) -> Option<Read> {
    let s = |j: usize| &text[lexemes[j].start..lexemes[j].end];
    let mut opts = Vec::new();
    let mut k = 0;
    while k < items.len() {
        // ⟨ `name , value ⟩ [,]
        if s(items[k]) != "⟨" || s(*items.get(k + 1)?) != "`" {
            return None;
        }
        let mut n = k + 2;
        let mut name = String::new();
        while n < items.len() && s(items[n]) != "," {
            name.push_str(s(items[n]));
            n += 1;
        }
        let value_at = *items.get(n + 1)?;
        let raw = s(value_at);
        let value = match lexemes[value_at].kind {
            LexemeKind::Str => unquote(raw)?,
            _ if raw == "true" || raw == "false" => raw.to_string(),
            _ if !raw.is_empty() && raw.bytes().all(|b| b.is_ascii_digit()) => raw.to_string(),
            _ => return None,
        };
        if s(*items.get(n + 2)?) != "⟩" || name.is_empty() {
            return None;
        }
        opts.push((super::lexer::canonical_name(&name), value));
        k = n + 3;
        if k < items.len() {
            if s(items[k]) != "," {
                return None;
            }
            k += 1;
        }
    }
    Some(Read::Options(opts))
}

#[cfg(test)]
mod settings_tests {
    use super::*;

    #[test]
    fn toml_settings_are_lakes_package_then_library() {
        let s = toml_settings(
            "name = \"p\"\nmoreLeanArgs = [\"-DmaxRecDepth=800\"]\n[leanOptions]\nautoImplicit = false\npp.all = true\n[[lean_lib]]\nname = \"Ver\"\nleanOptions = { maxHeartbeats = 1000 }\n[[lean_lib]]\nname = \"Fix\"\n",
        )
        .unwrap();
        assert_eq!(
            s.args_for("Ver.Good").unwrap(),
            [
                "-DautoImplicit=false",
                "-Dpp.all=true",
                "-DmaxHeartbeats=1000",
                "-DmaxRecDepth=800"
            ]
        );
        assert_eq!(
            s.args_for("Fix.Basic").unwrap(),
            ["-DautoImplicit=false", "-Dpp.all=true", "-DmaxRecDepth=800"]
        );
        assert!(
            s.args_for("Verx").unwrap().len() == 3,
            "not a module of Ver"
        );
        let bad = toml_settings("moreLeanArgs = [\"--load-dynlib=x.so\"]\n").unwrap();
        assert!(
            bad.args_for("A")
                .unwrap_err()
                .contains("only `-Dname=value`")
        );
        assert!(toml_settings("name = [\n").is_err());
    }

    #[test]
    fn lean_settings_are_read_from_literals_only() {
        let s = lean_settings(
            "import Lake\nopen Lake DSL\n-- leanOptions := #[⟨`no, true⟩]\npackage fix where\n  leanOptions := #[⟨`autoImplicit, false⟩, ⟨`debug.skipKernelTC, true⟩]\n  moreLeanArgs := #[\"-DmaxRecDepth=900\"]\nlean_lib «Ver» where\n  leanOptions := #[⟨`maxHeartbeats, 5⟩]\n",
        );
        assert!(s.unread.is_empty(), "{s:?}");
        assert_eq!(
            s.args_for("Ver.A").unwrap(),
            [
                "-DautoImplicit=false",
                "-Ddebug.skipKernelTC=true",
                "-DmaxHeartbeats=5",
                "-DmaxRecDepth=900"
            ]
        );
        assert!(
            s.all_options()
                .contains(&("debug.skipKernelTC".into(), "true".into()))
        );
        let computed = lean_settings("package p where\n  leanOptions := opts ++ #[]\n");
        assert_eq!(computed.unread.len(), 1);
    }
}
