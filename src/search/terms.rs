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
const BRACKETS: &[(&str, &str)] = &[("(", ")"), ("[", "]"), ("{", "}"), ("⟨", "⟩"), ("⦃", "⦄")];

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
    operators: Vec<bool>,
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
    fn names_matching(&self, name: &str) -> Vec<u32> {
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

fn is_name(s: &str) -> bool {
    s.chars()
        .next()
        .is_some_and(|c| c.is_alphabetic() || c == '_' || c == '«')
}

fn is_open(id: u32) -> bool {
    id < BRACKET_IDS && id % 2 == 0
}

fn is_close(id: u32) -> bool {
    id < BRACKET_IDS && id % 2 == 1
}

/// Where a statement's conclusion starts: after the type's `:` (outside the
/// binders), its leading `∀ …,` binders and its hypotheses (`→`).
pub fn conclusion_start(toks: &[u32], interner: &Interner) -> usize {
    let id = |s: &str| interner.get(s).unwrap_or(u32::MAX);
    let (colon, arrow, forall, pi, comma) = (id(":"), id("→"), id("∀"), id("Π"), id(","));
    let mut depth = 0i32;
    let mut start = 0;
    for (i, &t) in toks.iter().enumerate() {
        if is_open(t) {
            depth += 1;
        } else if is_close(t) {
            depth -= 1;
        } else if depth == 0 && t == colon {
            start = i + 1;
            break;
        }
    }
    loop {
        let before = start;
        if toks.get(start).is_some_and(|&t| t == forall || t == pi) {
            let mut depth = 0i32;
            for (i, &t) in toks.iter().enumerate().skip(start) {
                if is_open(t) {
                    depth += 1;
                } else if is_close(t) {
                    depth -= 1;
                } else if depth == 0 && t == comma {
                    start = i + 1;
                    break;
                }
            }
        }
        let mut depth = 0i32;
        for (i, &t) in toks.iter().enumerate().skip(start) {
            if is_open(t) {
                depth += 1;
            } else if is_close(t) {
                depth -= 1;
            } else if depth == 0 && t == arrow {
                start = i + 1;
            }
        }
        if start == before {
            return start.min(toks.len());
        }
    }
}

/// One element of a compiled pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
enum P {
    /// Any of these ids (empty: matches nothing in this index).
    Lit(Vec<u32>),
    /// `_`; `unit`: an argument of an application (next to a name, a
    /// literal, a bracket group or another hole, not an operator), which
    /// matches one token or one bracket group, as application binds
    /// tightest.
    Wild {
        unit: bool,
    },
    Meta {
        k: usize,
        unit: bool,
    },
}

/// A pattern compiled against one index's interner.
#[derive(Debug, Clone)]
pub struct Compiled {
    elems: Vec<P>,
    metas: usize,
    /// Which token ids are operators.
    operators: Vec<bool>,
}

/// Patterns longer than this are refused: matching backtracks.
pub const MAX_PATTERN_TOKENS: usize = 48;
/// Matching steps allowed per statement before it counts as no match.
const STEP_BUDGET: usize = 20_000;

/// A pattern as parsed, before it meets an index: its tokens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pattern {
    toks: Vec<Token>,
}

impl Pattern {
    /// Parse a pattern, or say what is wrong with it.
    pub fn parse(text: &str) -> Result<Pattern, String> {
        let toks = tokens(text);
        if toks.is_empty() {
            return Err("an empty pattern".into());
        }
        if toks.len() > MAX_PATTERN_TOKENS {
            return Err(format!(
                "a pattern of {} tokens (at most {MAX_PATTERN_TOKENS})",
                toks.len()
            ));
        }
        let mut stack = Vec::new();
        for t in &toks {
            if let Token::Atom(s) = t {
                if let Some(k) = BRACKETS.iter().position(|(o, _)| o == s) {
                    stack.push(k);
                } else if let Some(k) = BRACKETS.iter().position(|(_, c)| c == s) {
                    if stack.pop() != Some(k) {
                        return Err(format!("`{s}` closes no bracket in `{text}`"));
                    }
                }
            }
        }
        if let Some(&k) = stack.last() {
            return Err(format!("`{}` is not closed in `{text}`", BRACKETS[k].0));
        }
        Ok(Pattern { toks })
    }

    /// The names the pattern mentions (each must occur in a match).
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.toks.iter().filter_map(|t| match t {
            Token::Atom(s) if is_name(s) => Some(s.as_str()),
            _ => None,
        })
    }

    pub fn compile(&self, interner: &Interner) -> Compiled {
        let mut metas: Vec<&str> = Vec::new();
        let operand = |t: Option<&Token>, left: bool| match t {
            Some(Token::Atom(s)) => {
                let bracket_ok = if left {
                    BRACKETS.iter().any(|(_, c)| c == s)
                } else {
                    BRACKETS.iter().any(|(o, _)| o == s)
                };
                bracket_ok || !is_operator(s)
            }
            Some(Token::Wild | Token::Meta(_)) => true,
            None => false,
        };
        let elems = self
            .toks
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let unit = || {
                    operand(i.checked_sub(1).and_then(|j| self.toks.get(j)), true)
                        || operand(self.toks.get(i + 1), false)
                };
                match t {
                    Token::Wild => P::Wild { unit: unit() },
                    Token::Meta(m) => P::Meta {
                        k: match metas.iter().position(|x| x == m) {
                            Some(k) => k,
                            None => {
                                metas.push(m);
                                metas.len() - 1
                            }
                        },
                        unit: unit(),
                    },
                    Token::Atom(s) if is_name(s) => P::Lit(interner.names_matching(s)),
                    Token::Atom(s) => P::Lit(interner.get(s).into_iter().collect()),
                }
            })
            .collect();
        Compiled {
            elems,
            metas: metas.len(),
            operators: interner.operators.clone(),
        }
    }
}

/// A symbol run that is not a bracket, literal or name: an operator, which
/// a unit hole does not take.
fn is_operator(s: &str) -> bool {
    !BRACKETS.iter().any(|(o, c)| *o == s || *c == s)
        && s.chars()
            .next()
            .is_some_and(|c| !(c.is_alphanumeric() || matches!(c, '_' | '«' | '"' | '\'')))
}

impl Compiled {
    /// A name or symbol of the pattern occurs nowhere in the index.
    pub fn impossible(&self) -> bool {
        self.elems
            .iter()
            .any(|e| matches!(e, P::Lit(ids) if ids.is_empty()))
    }

    /// The pattern matches a contiguous run of `toks` somewhere.
    pub fn occurs_in(&self, toks: &[u32]) -> bool {
        let mut steps = 0;
        (0..toks.len()).any(|a| {
            let mut binds = vec![None; self.metas];
            self.at(0, toks, a, None, &mut binds, &mut steps)
        })
    }

    /// The pattern matches all of `toks`.
    pub fn matches_whole(&self, toks: &[u32]) -> bool {
        let mut steps = 0;
        let mut binds = vec![None; self.metas];
        !toks.is_empty() && self.at(0, toks, 0, Some(toks.len()), &mut binds, &mut steps)
    }

    fn at(
        &self,
        p: usize,
        toks: &[u32],
        i: usize,
        end: Option<usize>,
        binds: &mut Vec<Option<(usize, usize)>>,
        steps: &mut usize,
    ) -> bool {
        *steps += 1;
        if *steps > STEP_BUDGET {
            return false;
        }
        let Some(elem) = self.elems.get(p) else {
            return end.is_none_or(|e| e == i);
        };
        match elem {
            P::Lit(ids) => {
                toks.get(i).is_some_and(|t| ids.contains(t))
                    && self.at(p + 1, toks, i + 1, end, binds, steps)
            }
            P::Meta { k, .. } if binds[*k].is_some() => {
                let (a, b) = binds[*k].expect("bound");
                let len = b - a;
                i + len <= toks.len()
                    && toks[a..b] == toks[i..i + len]
                    && self.at(p + 1, toks, i + len, end, binds, steps)
            }
            P::Wild { unit } | P::Meta { unit, .. } => {
                let unit = *unit;
                let meta = match elem {
                    P::Meta { k, .. } => Some(*k),
                    _ => None,
                };
                let mut depth = 0i32;
                let mut j = i;
                while j < toks.len() {
                    let t = toks[j];
                    if is_open(t) {
                        depth += 1;
                    } else if is_close(t) {
                        depth -= 1;
                        if depth < 0 {
                            return false;
                        }
                    } else if unit
                        && depth == 0
                        && self.operators.get(t as usize).copied().unwrap_or(false)
                    {
                        return false;
                    }
                    j += 1;
                    if depth == 0 {
                        if let Some(k) = meta {
                            binds[k] = Some((i, j));
                        }
                        if self.at(p + 1, toks, j, end, binds, steps) {
                            return true;
                        }
                        if let Some(k) = meta {
                            binds[k] = None;
                        }
                        if unit || *steps > STEP_BUDGET {
                            return false;
                        }
                    }
                }
                false
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
