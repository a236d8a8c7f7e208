//! Declarations of Lean source addressed by name: the proof-loop tools take
//! `declaration: "Ns.name"` instead of a position. The names are read from
//! the text as written (the namespaces and sections around a declaration,
//! `_root_`, `«…»` components), so a declaration of the synced version is
//! found whether or not Lean has elaborated it.
//!
//! Commands start at column 0 (as in the outline); a docstring or
//! attribute line before a declaration belongs to it. Inside a command the
//! proof is what follows its first `:=` outside brackets.

use super::header::{CONTINUATION, MODIFIERS};
use super::lexer::{self, LexemeKind};

/// Where in a declaration a call goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Spot {
    /// Its first `sorry` or synthetic hole (`?_`, `?x`): the first character of it.
    Gap,
    /// The first character of its proof: the first token after `:=`, or after
    /// `:= by` the first tactic.
    Start,
    /// Just after the last token of its proof (its command's last token).
    End,
}

/// One declaration of the text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Declaration {
    /// Its full name in Lean's spelling (`«x y»` quoted).
    pub name: String,
    /// Byte range of its command, attached docstring and attributes
    /// included, up to the end of its last token.
    pub start: usize,
    pub end: usize,
    /// Byte offset of the first token of its proof, if it has `:=`.
    pub proof: Option<usize>,
    /// Byte offset of its first `sorry` or hole, if any.
    pub gap: Option<usize>,
    components: Vec<String>,
}

/// Why a name names no single place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unresolved {
    /// No declaration has that name; `close` are the nearest names, best first.
    Unknown { close: Vec<String> },
    /// Several declarations end with that name: their full names.
    Ambiguous { matches: Vec<String> },
    /// The declaration has no `sorry` or hole (ask for `at` instead).
    NoGap { name: String },
    /// The declaration has no `:=` proof (a structure, an axiom, equations).
    NoProof { name: String },
}

/// At most this many close matches are listed.
const CLOSE: usize = 5;

/// Keywords that start a declaration with a name.
const KEYWORDS: &[&str] = &[
    "theorem",
    "lemma",
    "def",
    "abbrev",
    "instance",
    "structure",
    "class",
    "inductive",
    "coinductive",
    "opaque",
    "axiom",
];

/// A scope the declarations sit in.
enum Scope {
    Namespace(usize),
    Section,
}

/// The named declarations of `text`, in order.
pub fn declarations(text: &str) -> Vec<Declaration> {
    let lexemes: Vec<_> = lexer::lex(text)
        .into_iter()
        .filter(|l| l.kind != (LexemeKind::Comment { doc: false }))
        .collect();
    let str_of = |i: usize| &text[lexemes[i].start..lexemes[i].end];
    let at_column_0 = |i: usize| {
        let s = lexemes[i].start;
        s == 0 || text.as_bytes()[s - 1] == b'\n'
    };
    let adjacent = |i: usize| i + 1 < lexemes.len() && lexemes[i].end == lexemes[i + 1].start;
    // Command starts: column-0 lexemes that are no continuation.
    let starts: Vec<usize> = (0..lexemes.len())
        .filter(|&i| at_column_0(i) && !(CONTINUATION.contains(&str_of(i)) || str_of(i) == "|"))
        .collect();
    let gaps: Vec<usize> = lexer::scan(text).into_iter().map(|t| t.start).collect();
    // A dotted name starting at lexeme `i`: its components and the lexeme after it.
    let name_at = |mut i: usize| {
        let mut parts = Vec::new();
        while i < lexemes.len() && lexemes[i].kind == LexemeKind::Word {
            parts.push(lexer::unescape(str_of(i)));
            if adjacent(i) && str_of(i + 1) == "." && adjacent(i + 1) {
                i += 2;
            } else {
                i += 1;
                break;
            }
        }
        (parts, i)
    };
    let mut scopes: Vec<Scope> = Vec::new();
    let mut namespace: Vec<String> = Vec::new();
    let mut out = Vec::new();
    let mut attached: Option<usize> = None;
    for (k, &first) in starts.iter().enumerate() {
        let last = starts.get(k + 1).copied().unwrap_or(lexemes.len());
        let start = attached.take().unwrap_or(lexemes[first].start);
        let mut i = first;
        // Docstrings and attributes, then modifiers.
        loop {
            match (lexemes[i].kind, str_of(i)) {
                (LexemeKind::Comment { doc: true }, _) => i += 1,
                (LexemeKind::Symbol, "@") if i + 1 < last && str_of(i + 1) == "[" => {
                    let mut depth = 0;
                    while i < last {
                        match str_of(i) {
                            "[" => depth += 1,
                            "]" => depth -= 1,
                            _ => {}
                        }
                        i += 1;
                        if depth == 0 && str_of(i - 1) == "]" {
                            break;
                        }
                    }
                }
                (LexemeKind::Word, w) if MODIFIERS.contains(&w) => i += 1,
                _ => break,
            }
            if i >= last {
                break;
            }
        }
        if i >= last {
            // A docstring or attribute alone: it belongs to the next command.
            attached = Some(start);
            continue;
        }
        match str_of(i) {
            "namespace" => {
                let (parts, _) = name_at(i + 1);
                scopes.push(Scope::Namespace(parts.len()));
                namespace.extend(parts);
            }
            "section" | "mutual" => scopes.push(Scope::Section),
            "end" => match scopes.pop() {
                Some(Scope::Namespace(n)) => namespace.truncate(namespace.len().saturating_sub(n)),
                Some(Scope::Section) | None => {}
            },
            keyword if KEYWORDS.contains(&keyword) => {
                let (mut parts, after) = name_at(i + 1);
                if parts.is_empty() {
                    continue; // `instance : C α`
                }
                let mut components = if parts[0] == "_root_" {
                    parts.remove(0);
                    Vec::new()
                } else {
                    namespace.clone()
                };
                components.extend(parts);
                let end = lexemes[last - 1].end;
                out.push(Declaration {
                    name: components
                        .iter()
                        .map(|c| lexer::escape_component(c))
                        .collect::<Vec<_>>()
                        .join("."),
                    start,
                    end,
                    proof: proof_start(&lexemes, text, after, last),
                    gap: gaps
                        .iter()
                        .copied()
                        .find(|&g| g >= lexemes[first].start && g < end),
                    components,
                });
            }
            _ => {}
        }
    }
    out
}

/// The first token of the proof in lexemes `from..last`: after the first
/// `:=` outside brackets, past a `by`.
fn proof_start(lexemes: &[lexer::Lexeme], text: &str, from: usize, last: usize) -> Option<usize> {
    let s = |i: usize| &text[lexemes[i].start..lexemes[i].end];
    let mut depth = 0i32;
    let mut i = from;
    while i + 1 < last {
        match s(i) {
            "(" | "[" | "{" | "⟨" => depth += 1,
            ")" | "]" | "}" | "⟩" => depth -= 1,
            ":" if depth == 0 && s(i + 1) == "=" && lexemes[i].end == lexemes[i + 1].start => {
                let mut body = i + 2;
                if body < last && s(body) == "by" && body + 1 < last {
                    body += 1;
                }
                return (body < last).then(|| lexemes[body].start);
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// The declaration `query` names in `text` and the byte offset of `spot` in
/// it. A query matches a full name exactly, or its last components (`b`
/// and `A.b` both name `Ns.A.b`) when only one declaration ends so.
pub fn resolve(text: &str, query: &str, spot: Spot) -> Result<(Declaration, usize), Unresolved> {
    let found = find(&declarations(text), query)?;
    let offset = match spot {
        Spot::Gap => found.gap.ok_or_else(|| Unresolved::NoGap {
            name: found.name.clone(),
        })?,
        Spot::Start => found.proof.ok_or_else(|| Unresolved::NoProof {
            name: found.name.clone(),
        })?,
        Spot::End => {
            found.proof.ok_or_else(|| Unresolved::NoProof {
                name: found.name.clone(),
            })?;
            found.end
        }
    };
    Ok((found, offset))
}

/// The one declaration of `all` that `query` names.
pub fn find(all: &[Declaration], query: &str) -> Result<Declaration, Unresolved> {
    let wanted = lexer::name_components(query.trim());
    let exact: Vec<&Declaration> = all.iter().filter(|d| d.components == wanted).collect();
    let suffix: Vec<&Declaration> = all
        .iter()
        .filter(|d| d.components.ends_with(&wanted))
        .collect();
    let matches = if exact.is_empty() { suffix } else { exact };
    match matches.as_slice() {
        [one] => Ok((*one).clone()),
        [] => Err(Unresolved::Unknown {
            close: close_matches(all, &wanted),
        }),
        many => {
            let mut names: Vec<String> = many.iter().map(|d| d.name.clone()).collect();
            names.dedup();
            Err(Unresolved::Ambiguous { matches: names })
        }
    }
}

/// The names nearest to `wanted`, best first: those whose last component
/// contains the wanted one's (or is contained in it), then by edit distance
/// of the last components, then by name.
fn close_matches(all: &[Declaration], wanted: &[String]) -> Vec<String> {
    let want = wanted.last().map(|w| w.to_lowercase()).unwrap_or_default();
    let mut scored: Vec<(bool, usize, &str)> = all
        .iter()
        .map(|d| {
            let last = d
                .components
                .last()
                .map(|c| c.to_lowercase())
                .unwrap_or_default();
            let contains = !want.is_empty() && (last.contains(&want) || want.contains(&last));
            (!contains, distance(&last, &want), d.name.as_str())
        })
        .filter(|(far, dist, _)| !*far || *dist <= want.chars().count().max(3) / 2)
        .collect();
    scored.sort();
    let mut names: Vec<String> = Vec::new();
    for (_, _, name) in scored {
        if !names.iter().any(|n| n == name) {
            names.push(name.to_owned());
        }
        if names.len() == CLOSE {
            break;
        }
    }
    names
}

/// Levenshtein distance in characters.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let here = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != *cb))
                .min(row[j] + 1)
                .min(here + 1);
            prev = here;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    const SOURCE: &str = "import Foo
namespace Alg
/-- doc -/
theorem one : 1 = 1 := by
  skip
  sorry

namespace Deep.Er
@[simp] private lemma two (h : (a := 1) = 1) : True := ?_
end Deep.Er

def «weird name» : Nat := 3
section
theorem one' : True := trivial
end
end Alg
theorem Alg.three : True := by
  exact sorry
theorem _root_.top : True := sorry
instance : Inhabited Nat := ⟨0⟩
structure S where
  x : Nat
theorem Other.one : 2 = 2 := by
  rfl
";

    fn names(text: &str) -> Vec<String> {
        declarations(text).into_iter().map(|d| d.name).collect()
    }

    /// The name found and the text from the place on.
    fn place(query: &str, spot: Spot) -> Result<(String, &'static str), Unresolved> {
        resolve(SOURCE, query, spot).map(|(d, at)| (d.name, &SOURCE[at..]))
    }

    #[test]
    fn names_follow_namespaces_sections_root_and_guillemets() {
        assert_eq!(
            names(SOURCE),
            [
                "Alg.one",
                "Alg.Deep.Er.two",
                "Alg.«weird name»",
                "Alg.one'",
                "Alg.three",
                "top",
                "S",
                "Other.one"
            ]
        );
    }

    #[test]
    fn each_spot_is_the_documented_place() {
        let ok = |q: &str, spot, name: &str, rest: &str| {
            let (found, text) = place(q, spot).unwrap();
            assert_eq!(found, name, "{q} {spot:?}");
            assert!(text.starts_with(rest), "{q} {spot:?}: {text:?}");
        };
        ok("Alg.one", Spot::Gap, "Alg.one", "sorry\n\n");
        ok("Alg.one", Spot::Start, "Alg.one", "skip\n  ");
        ok("Deep.Er.two", Spot::Gap, "Alg.Deep.Er.two", "?_\n");
        ok("two", Spot::Start, "Alg.Deep.Er.two", "?_\n");
        ok("Alg.«weird name»", Spot::Start, "Alg.«weird name»", "3\n");
        ok("weird name", Spot::Start, "Alg.«weird name»", "3\n");
        ok("three", Spot::Gap, "Alg.three", "sorry\nt");
        ok("top", Spot::Gap, "top", "sorry\ni");
        ok("Other.one", Spot::Start, "Other.one", "rfl\n");
        // `end`: just after the proof's last token.
        let (d, at) = resolve(SOURCE, "Other.one", Spot::End).unwrap();
        assert_eq!((&SOURCE[at - 3..at], d.name.as_str()), ("rfl", "Other.one"));
        let (_, at) = resolve(SOURCE, "Alg.one", Spot::End).unwrap();
        assert_eq!(&SOURCE[at - 5..at + 1], "sorry\n");
    }

    #[test]
    fn unknown_ambiguous_and_missing_places_say_so() {
        assert_eq!(
            place("one", Spot::Gap),
            Err(Unresolved::Ambiguous {
                matches: vec!["Alg.one".into(), "Other.one".into()]
            })
        );
        assert_eq!(
            place("Alg.on", Spot::Gap),
            Err(Unresolved::Unknown {
                close: vec!["Alg.one".into(), "Other.one".into(), "Alg.one'".into()]
            })
        );
        assert_eq!(
            place("Alg.thre", Spot::Gap),
            Err(Unresolved::Unknown {
                close: vec!["Alg.three".into()]
            })
        );
        assert_eq!(
            place("Other.one", Spot::Gap),
            Err(Unresolved::NoGap {
                name: "Other.one".into()
            })
        );
        assert_eq!(
            place("S", Spot::Start),
            Err(Unresolved::NoProof { name: "S".into() })
        );
        assert_eq!(
            place("zzzzzz", Spot::Gap),
            Err(Unresolved::Unknown { close: vec![] })
        );
    }
}
