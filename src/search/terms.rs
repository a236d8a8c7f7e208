//! Statements as token streams, and the statement patterns matched against
//! them.
//!
//! A statement is read by the lexer into tokens: dotted names, literals,
//! brackets, and runs of other symbols (`→`, `≤`, `+`, `:=`), with `->`,
//! `<->`, `forall` and `λ` read as `→`, `↔`, `∀` and `fun`. Tokens are
//! interned per index, so a statement is a `Vec<u32>`.
//!
//! A pattern is a term with holes, matched against the statement's tokens as
//! written, not against elaborated terms:
//!
//! - `_` matches any non-empty, bracket-balanced run of tokens at one level
//!   (operator precedence is not parsed: `_ * _ = _` also matches
//!   `a + b * c = d`);
//! - `?a` does too, and every `?a` of the pattern the same tokens;
//! - a name matches the same name, or one that agrees up to a namespace
//!   prefix (`succ` and `Nat.succ` match each other), since statements are
//!   written under `open` and `namespace`;
//! - anything else matches itself.
//!
//! Implicit arguments, notation unfolding, coercions and definitional
//! unfolding are not seen: `a + b` does not match `HAdd.hAdd a b`.

use std::collections::HashMap;

use super::source::{LexemeKind, lex};

/// The brackets, interned first so their ids are fixed.
pub(super) const BRACKETS: &[(&str, &str)] =
    &[("(", ")"), ("[", "]"), ("{", "}"), ("⟨", "⟩"), ("⦃", "⦄")];

/// Opening bracket ids are even, closing ones odd, below this.
const BRACKET_IDS: u32 = 2 * BRACKETS.len() as u32;

/// A token as read, before interning.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Token {
    /// A name, literal or symbol run.
    Atom(String),
    /// `_`.
    Wild,
    /// `?name`.
    Meta(String),
}

/// Read `text` into tokens (comments dropped).
pub fn tokens(text: &str) -> Vec<Token> {
    let lx = lex(text);
    let mut out: Vec<Token> = Vec::new();
    // Where the last token ended, and whether it may take a joined part.
    let mut last_end = usize::MAX;
    let mut last_joins = Joins::No;
    for (k, l) in lx.iter().enumerate() {
        let s = &text[l.start..l.end];
        let adjacent = l.start == last_end;
        match l.kind {
            LexemeKind::Comment { .. } => {
                last_joins = Joins::No;
                continue;
            }
            LexemeKind::Word => {
                // `A` `.` `b`: a dotted name.
                if adjacent && last_joins == Joins::Dot {
                    if let Some(Token::Atom(prev)) = out.last_mut() {
                        prev.push_str(s);
                        last_end = l.end;
                        last_joins = Joins::Name;
                        continue;
                    }
                }
                out.push(match s {
                    "_" => Token::Wild,
                    "forall" => Token::Atom("∀".into()),
                    "λ" => Token::Atom("fun".into()),
                    _ => Token::Atom(s.to_string()),
                });
                last_joins = Joins::Name;
            }
            LexemeKind::Hole => {
                out.push(Token::Meta(s[1..].to_string()));
                last_joins = Joins::No;
            }
            LexemeKind::Str | LexemeKind::Char => {
                out.push(Token::Atom(s.to_string()));
                last_joins = Joins::No;
            }
            LexemeKind::Symbol => {
                let bracket = BRACKETS.iter().any(|(o, c)| *o == s || *c == s);
                let next_is_word = lx
                    .get(k + 1)
                    .is_some_and(|n| n.kind == LexemeKind::Word && n.start == l.end);
                if s == "." && adjacent && last_joins == Joins::Name && next_is_word {
                    if let Some(Token::Atom(prev)) = out.last_mut() {
                        prev.push('.');
                        last_end = l.end;
                        last_joins = Joins::Dot;
                        continue;
                    }
                }
                // Digits join digits (`10`), other symbols other symbols
                // (`:=`, `+`), never each other (`+1`).
                let class = if s.starts_with(|c: char| c.is_ascii_digit()) {
                    Joins::Digit
                } else {
                    Joins::Symbol
                };
                if !bracket && s != "," && adjacent && last_joins == class {
                    if let Some(Token::Atom(prev)) = out.last_mut() {
                        prev.push_str(s);
                        last_end = l.end;
                        continue;
                    }
                }
                out.push(Token::Atom(s.to_string()));
                last_joins = if bracket || s == "," {
                    Joins::No
                } else {
                    class
                };
            }
        }
        last_end = l.end;
    }
    for t in &mut out {
        if let Token::Atom(s) = t {
            match s.as_str() {
                "->" => *s = "→".into(),
                "<->" => *s = "↔".into(),
                _ => {}
            }
        }
    }
    out
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Joins {
    No,
    Name,
    Dot,
    Symbol,
    Digit,
}

/// Interned token strings of one index, with the names by last component
/// (for namespace-tolerant matching).
#[derive(Debug)]
pub struct Interner {
    ids: HashMap<Box<str>, u32>,
    strs: Vec<Box<str>>,
    by_last: HashMap<Box<str>, Vec<u32>>,
    pub(super) operators: Vec<bool>,
}

impl Default for Interner {
    fn default() -> Self {
        let mut me = Interner {
            ids: HashMap::new(),
            strs: Vec::new(),
            by_last: HashMap::new(),
            operators: Vec::new(),
        };
        for (open, close) in BRACKETS {
            me.intern(open);
            me.intern(close);
        }
        me
    }
}

impl Interner {
    pub fn intern(&mut self, s: &str) -> u32 {
        if let Some(&id) = self.ids.get(s) {
            return id;
        }
        let id = self.strs.len() as u32;
        self.strs.push(s.into());
        self.operators.push(is_operator(s));
        self.ids.insert(s.into(), id);
        if is_name(s) {
            let last = s.rsplit('.').next().unwrap_or(s);
            self.by_last.entry(last.into()).or_default().push(id);
        }
        id
    }

    pub fn get(&self, s: &str) -> Option<u32> {
        self.ids.get(s).copied()
    }

    pub fn len(&self) -> usize {
        self.strs.len()
    }

    /// Bytes the interner holds (strings twice, tables estimated).
    pub fn bytes(&self) -> usize {
        self.strs.iter().map(|s| 2 * s.len() + 48).sum::<usize>() + self.by_last.len() * 48
    }

    /// The ids a pattern name matches: the same name, or one equal up to a
    /// namespace prefix on either side.
    pub(super) fn names_matching(&self, name: &str) -> Vec<u32> {
        let last = name.rsplit('.').next().unwrap_or(name);
        let Some(candidates) = self.by_last.get(last) else {
            return Vec::new();
        };
        candidates
            .iter()
            .copied()
            .filter(|&id| {
                let s = &*self.strs[id as usize];
                s == name || dot_suffix(s, name) || dot_suffix(name, s)
            })
            .collect()
    }

    /// A statement's tokens as ids (holes and `_` as written).
    pub fn statement(&mut self, text: &str) -> Vec<u32> {
        tokens(text)
            .into_iter()
            .map(|t| match t {
                Token::Atom(s) => self.intern(&s),
                Token::Wild => self.intern("_"),
                Token::Meta(m) => self.intern(&format!("?{m}")),
            })
            .collect()
    }
}

/// `long` is `short` with a namespace before it.
fn dot_suffix(long: &str, short: &str) -> bool {
    long.len() > short.len()
        && long.ends_with(short)
        && long.as_bytes()[long.len() - short.len() - 1] == b'.'
}

pub(super) fn is_name(s: &str) -> bool {
    s.chars()
        .next()
        .is_some_and(|c| c.is_alphabetic() || c == '_' || c == '«')
}

pub(super) fn is_open(id: u32) -> bool {
    id < BRACKET_IDS && id % 2 == 0
}

pub(super) fn is_close(id: u32) -> bool {
    id < BRACKET_IDS && id % 2 == 1
}

/// Where a statement's conclusion starts: after the type's `:` (outside the
/// binders), its leading `∀ …,` binders and its hypotheses (`→`).
pub fn conclusion_start(toks: &[u32], interner: &Interner) -> usize {
    let id = |s: &str| interner.get(s).unwrap_or(u32::MAX);
    let (colon, arrow, forall, pi, comma) = (id(":"), id("→"), id("∀"), id("Π"), id(","));
    let after = |i: usize| i + 1;
    let mut start = top_level(toks, 0, colon).next().map_or(0, after);
    loop {
        let before = start;
        if toks.get(start).is_some_and(|&t| t == forall || t == pi) {
            start = top_level(toks, start, comma).next().map_or(start, after);
        }
        start = top_level(toks, start, arrow).last().map_or(start, after);
        if start == before {
            return start.min(toks.len());
        }
    }
}

/// The places from `from` on where `target` stands outside brackets (at
/// bracket depth 0 counted from `from`).
fn top_level(toks: &[u32], from: usize, target: u32) -> impl Iterator<Item = usize> + '_ {
    let mut depth = 0i32;
    toks.iter()
        .enumerate()
        .skip(from)
        .filter_map(move |(i, &t)| {
            if is_open(t) {
                depth += 1;
            } else if is_close(t) {
                depth -= 1;
            } else if depth == 0 && t == target {
                return Some(i);
            }
            None
        })
}

/// A symbol run that is not a bracket, literal or name: an operator, which
/// a unit hole does not take.
pub(super) fn is_operator(s: &str) -> bool {
    !BRACKETS.iter().any(|(o, c)| *o == s || *c == s)
        && s.chars()
            .next()
            .is_some_and(|c| !(c.is_alphanumeric() || matches!(c, '_' | '«' | '"' | '\'')))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::pattern::Pattern;

    fn atoms(text: &str) -> Vec<String> {
        tokens(text)
            .into_iter()
            .map(|t| match t {
                Token::Atom(s) => s,
                Token::Wild => "_".into(),
                Token::Meta(m) => format!("?{m}"),
            })
            .collect()
    }

    #[test]
    fn statements_read_as_tokens() {
        assert_eq!(
            atoms("(a b : Nat) : a + b = Nat.add b a -- note"),
            [
                "(", "a", "b", ":", "Nat", ")", ":", "a", "+", "b", "=", "Nat.add", "b", "a"
            ]
        );
        assert_eq!(atoms("x ≤ y -> y ≥ x"), ["x", "≤", "y", "→", "y", "≥", "x"]);
        assert_eq!(
            atoms("f (n+1) := 10"),
            ["f", "(", "n", "+", "1", ")", ":=", "10"]
        );
        assert_eq!(atoms("forall x, ?a = _"), ["∀", "x", ",", "?a", "=", "_"]);
        assert_eq!(atoms("h.symm ▸ «a b».c"), ["h.symm", "▸", "«a b».c"]);
    }

    struct Case {
        pattern: &'static str,
        statement: &'static str,
        occurs: bool,
        conclusion: bool,
    }

    #[test]
    fn patterns_against_statements() {
        let cases = [
            Case {
                pattern: "_ + _ = _ + _",
                statement: "(a b : Nat) : a + b = b + a",
                occurs: true,
                conclusion: true,
            },
            Case {
                pattern: "?a + ?b = ?b + ?a",
                statement: "(a b : Nat) : a + b = b + a",
                occurs: true,
                conclusion: true,
            },
            Case {
                pattern: "?a + ?b = ?a + ?b",
                statement: "(a b : Nat) : a + b = b + a",
                occurs: false,
                conclusion: false,
            },
            Case {
                pattern: "?a * ?a",
                statement: "(x : Nat) : 0 ≤ x * x",
                occurs: true,
                conclusion: false,
            },
            Case {
                pattern: "0 ≤ _",
                statement: "(x : Nat) : 0 ≤ x * x",
                occurs: true,
                conclusion: true,
            },
            Case {
                pattern: "succ _",
                statement: "(n : Nat) : Nat.succ n ≠ 0",
                occurs: true,
                conclusion: false,
            },
            Case {
                pattern: "Nat.succ _ ≠ _",
                statement: "(n : Nat) : succ n ≠ 0",
                occurs: true,
                conclusion: true,
            },
            Case {
                pattern: "Int.succ _",
                statement: "(n : Nat) : Nat.succ n ≠ 0",
                occurs: false,
                conclusion: false,
            },
            Case {
                pattern: "_ = _",
                statement: "(h : a = b) : b ≤ a",
                occurs: true,
                conclusion: false,
            },
            Case {
                pattern: "_ ≤ _",
                statement: "(h : a = b) : b ≤ a",
                occurs: true,
                conclusion: true,
            },
            Case {
                pattern: "_ ≤ _",
                statement: ": ∀ n : Nat, p n → 0 ≤ n",
                occurs: true,
                conclusion: true,
            },
            Case {
                pattern: "(_ + _)",
                statement: ": f (a) + (b) = c",
                occurs: false,
                conclusion: false,
            },
            Case {
                pattern: "f (_ + _)",
                statement: ": f (a + b) = c",
                occurs: true,
                conclusion: false,
            },
            Case {
                pattern: "_ ∣ _",
                statement: "{a b : Nat} (h : a ∣ b) : a ≤ b ∨ b = 0",
                occurs: true,
                conclusion: false,
            },
            Case {
                pattern: "_ ∨ _",
                statement: "{a b : Nat} (h : a ∣ b) : a ≤ b ∨ b = 0",
                occurs: true,
                conclusion: true,
            },
            Case {
                pattern: "List.length (_ ++ _)",
                statement: ": (xs ++ ys).length = xs.length + ys.length",
                occurs: false,
                conclusion: false,
            },
        ];
        for c in cases {
            let mut interner = Interner::default();
            let toks = interner.statement(c.statement);
            let pattern = Pattern::parse(c.pattern).unwrap().compile(&interner);
            let concl = conclusion_start(&toks, &interner);
            assert_eq!(
                pattern.occurs_in(&toks),
                c.occurs,
                "{} in {}",
                c.pattern,
                c.statement
            );
            assert_eq!(
                pattern.matches_whole(&toks[concl..]),
                c.conclusion,
                "⊢ {} for {}",
                c.pattern,
                c.statement
            );
        }
    }

    #[test]
    fn conclusions() {
        let cases = [
            ("(a b : Nat) : a + b = b + a", "a + b = b + a"),
            ("{p : Prop} (h : p) : p → q → r", "r"),
            (": ∀ x : Nat, ∀ y, x = y → y = x", "y = x"),
            ("(f : α → β) : Injective f", "Injective f"),
            ("(x : Nat := 1) : x = x", "x = x"),
            (": Nat", "Nat"),
        ];
        for (statement, concl) in cases {
            let mut interner = Interner::default();
            let toks = interner.statement(statement);
            let want = interner.statement(concl);
            assert_eq!(
                toks[conclusion_start(&toks, &interner)..],
                want[..],
                "{statement}"
            );
        }
    }

    #[test]
    fn bad_patterns_say_why() {
        assert_eq!(Pattern::parse("  ").unwrap_err(), "an empty pattern");
        assert!(
            Pattern::parse("f (a")
                .unwrap_err()
                .contains("`(` is not closed")
        );
        assert!(
            Pattern::parse("a ]")
                .unwrap_err()
                .contains("`]` closes no bracket")
        );
        assert!(
            Pattern::parse(&"_ + ".repeat(30))
                .unwrap_err()
                .contains("at most 48")
        );
    }

    #[test]
    fn backtracking_is_bounded() {
        let mut interner = Interner::default();
        let statement = format!(": {} = b", "a + ".repeat(400));
        let toks = interner.statement(&statement);
        let pattern = Pattern::parse("_ + _ + _ + _ + _ + _ + _ + _ = b + b").unwrap();
        assert!(!pattern.compile(&interner).occurs_in(&toks));
    }
}
