//! Statement patterns: a term with holes (`_`, `?a`), parsed once and
//! compiled against an index's interner, matched against a statement's
//! tokens with a bounded backtracking search (see `terms` for what matches
//! what).

use super::terms::{BRACKETS, Interner, Token, is_close, is_name, is_open, is_operator, tokens};

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
