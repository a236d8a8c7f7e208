//! The declarations of one Lean source file, read from its text by the
//! lexer: each one's full name (the enclosing namespaces prepended, `_root_`
//! honoured), keyword, statement as written (binders and type, white space
//! collapsed), docstring's first paragraph and byte range. Constructors of an
//! `inductive` are declarations too (`Ind.ctor`).
//!
//! What this reading does not see: names Lean generates (instances without a
//! name, `.rec`, structure projections, `deriving`), declarations made by
//! macros, and commands that do not start a line. It is a search index, not
//! an elaborator: a declaration it misses is not found, nothing else.

use super::source::{CONTINUATION, Lexeme, LexemeKind, MODIFIERS, lex};

/// The keyword of a declaration, as written (`lemma` is kept apart from
/// `theorem`; `class inductive` reads as `class`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    Theorem,
    Lemma,
    Def,
    Abbrev,
    Instance,
    Structure,
    Class,
    Inductive,
    Constructor,
    Axiom,
    Opaque,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Theorem => "theorem",
            Kind::Lemma => "lemma",
            Kind::Def => "def",
            Kind::Abbrev => "abbrev",
            Kind::Instance => "instance",
            Kind::Structure => "structure",
            Kind::Class => "class",
            Kind::Inductive => "inductive",
            Kind::Constructor => "constructor",
            Kind::Axiom => "axiom",
            Kind::Opaque => "opaque",
        }
    }

    fn of(word: &str) -> Option<Kind> {
        Some(match word {
            "theorem" => Kind::Theorem,
            "lemma" => Kind::Lemma,
            "def" => Kind::Def,
            "abbrev" => Kind::Abbrev,
            "instance" => Kind::Instance,
            "structure" => Kind::Structure,
            "class" => Kind::Class,
            "inductive" | "coinductive" => Kind::Inductive,
            "axiom" => Kind::Axiom,
            "opaque" => Kind::Opaque,
            _ => return None,
        })
    }
}

/// One declaration found in a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decl {
    pub name: String,
    pub kind: Kind,
    /// Binders and type after the name, as written, white space collapsed.
    pub statement: String,
    /// The docstring's first paragraph, white space collapsed.
    pub doc: Option<String>,
    /// Byte range: from the docstring or attributes to the command's end
    /// (trailing white space left out).
    pub start: usize,
    pub end: usize,
}

/// Docstrings longer than this are cut (at a character boundary, `…` added).
const DOC_CHARS: usize = 400;

struct Reader<'a> {
    text: &'a str,
    lx: Vec<Lexeme>,
}

impl<'a> Reader<'a> {
    fn s(&self, i: usize) -> &'a str {
        let l = self.lx[i];
        &self.text[l.start..l.end]
    }

    fn is_word(&self, i: usize) -> bool {
        i < self.lx.len() && self.lx[i].kind == LexemeKind::Word
    }

    fn is(&self, i: usize, s: &str) -> bool {
        i < self.lx.len()
            && self.s(i) == s
            && !matches!(
                self.lx[i].kind,
                LexemeKind::Comment { .. } | LexemeKind::Str | LexemeKind::Char
            )
    }

    fn line_start(&self, i: usize) -> bool {
        let start = self.lx[i].start;
        self.text[..start]
            .rfind('\n')
            .map_or(0, |k| k + 1)
            .eq(&start)
            || start == 0
    }

    fn first_on_line(&self, i: usize) -> bool {
        let start = self.lx[i].start;
        let line = self.text[..start].rfind('\n').map_or(0, |k| k + 1);
        self.text[line..start].trim().is_empty()
    }

    /// Lexemes `i..` joined into a dotted name (`A`, `.`, `b` with nothing
    /// between them); the index after it.
    fn name_at(&self, mut i: usize) -> Option<(String, usize)> {
        if !self.is_word(i) {
            return None;
        }
        let mut name = self.s(i).to_string();
        let mut end = self.lx[i].end;
        i += 1;
        while i + 1 < self.lx.len()
            && self.lx[i].start == end
            && self.s(i) == "."
            && self.is_word(i + 1)
            && self.lx[i + 1].start == self.lx[i].end
        {
            name.push('.');
            name.push_str(self.s(i + 1));
            end = self.lx[i + 1].end;
            i += 2;
        }
        Some((name, i))
    }

    /// The index after the bracketed group opened at `i`.
    fn skip_group(&self, i: usize) -> usize {
        let mut depth = 0i32;
        let mut j = i;
        while j < self.lx.len() {
            if self.lx[j].kind == LexemeKind::Symbol {
                match self.s(j) {
                    "(" | "[" | "{" | "⟨" | "⦃" => depth += 1,
                    ")" | "]" | "}" | "⟩" | "⦄" => depth -= 1,
                    _ => {}
                }
            }
            j += 1;
            if depth <= 0 {
                break;
            }
        }
        j
    }
}

/// Scope changes a command makes.
enum Scope {
    Namespace(Vec<String>),
    Section,
    End,
}

/// The declarations of `text`, in source order.
pub fn declarations(text: &str) -> Vec<Decl> {
    let r = Reader {
        text,
        lx: lex(text),
    };
    let n = r.lx.len();
    // Command starts: lexemes at column 0 that do not continue the command
    // before them (and, inside `mutual`, the first lexeme of a line).
    let mut starts = Vec::new();
    let mut in_mutual = false;
    for i in 0..n {
        let column_0 = r.line_start(i);
        let word = r.is_word(i).then(|| r.s(i));
        if column_0 {
            if word.is_some_and(|w| CONTINUATION.contains(&w)) {
                continue;
            }
            if matches!(r.lx[i].kind, LexemeKind::Comment { doc: false }) {
                continue;
            }
            match word {
                Some("mutual") => in_mutual = true,
                Some("end") => in_mutual = false,
                _ => {}
            }
            starts.push(i);
        } else if in_mutual
            && r.first_on_line(i)
            && word.is_some_and(|w| Kind::of(w).is_some() || MODIFIERS.contains(&w))
        {
            starts.push(i);
        }
    }
    let mut namespace: Vec<(Vec<String>, bool)> = Vec::new();
    let mut out = Vec::new();
    let mut k = 0;
    while k < starts.len() {
        let first = starts[k];
        let mut last = starts.get(k + 1).copied().unwrap_or(n);
        k += 1;
        // A docstring or attribute line attaches to the command below it.
        let mut doc = None;
        let mut i = first;
        loop {
            if i >= last {
                // The attached part ran into the next start: merge them.
                if k < starts.len() && (i >= n || starts[k] == i) {
                    last = starts.get(k + 1).copied().unwrap_or(n);
                    k += 1;
                    continue;
                }
                break;
            }
            match r.lx[i].kind {
                LexemeKind::Comment { doc: true } if r.s(i).starts_with("/--") => {
                    doc = Some(first_paragraph(r.s(i)));
                    i += 1;
                }
                LexemeKind::Comment { .. } => i += 1,
                LexemeKind::Symbol if r.s(i) == "@" && r.is(i + 1, "[") => {
                    i = r.skip_group(i + 1);
                }
                _ => break,
            }
        }
        if i >= last {
            continue;
        }
        if let Some(scope) = scope_command(&r, i, last) {
            match scope {
                Scope::Namespace(parts) => namespace.push((parts, true)),
                Scope::Section => namespace.push((Vec::new(), false)),
                Scope::End => {
                    namespace.pop();
                }
            }
            continue;
        }
        while r.is_word(i) && MODIFIERS.contains(&r.s(i)) && i < last {
            i += 1;
        }
        if r.is(i, "class") && r.is(i + 1, "inductive") {
            i += 1;
        }
        let Some(kind) = r.is_word(i).then(|| Kind::of(r.s(i))).flatten() else {
            continue;
        };
        let kind = if r.s(i) == "inductive" && i > 0 && r.is(i - 1, "class") {
            Kind::Class
        } else {
            kind
        };
        i += 1;
        if kind == Kind::Instance && r.is(i, "(") {
            // `instance (priority := low) name : …`
            i = r.skip_group(i);
        }
        let Some((written, after_name)) = r.name_at(i).filter(|_| i < last) else {
            continue;
        };
        let prefix: Vec<&str> = namespace
            .iter()
            .flat_map(|(parts, _)| parts.iter().map(String::as_str))
            .collect();
        let full = qualify(&prefix, &written);
        let (stmt_end, body) = statement_end(&r, after_name, last);
        let statement = collapse(
            &text[r
                .lx
                .get(after_name)
                .map_or(text.len(), |l| l.start)
                .min(stmt_end)..stmt_end],
        );
        let start = r.lx[first].start;
        let end = r.lx[last - 1].end;
        out.push(Decl {
            name: full.clone(),
            kind,
            statement,
            doc,
            start,
            end,
        });
        if kind == Kind::Inductive || kind == Kind::Class && r.s(i - 1) == "inductive" {
            // Constructors: `| name …` at depth 0 after the header.
            constructors(&r, &full, body, last, &mut out);
        }
    }
    out
}

/// A name as declared inside `prefix`: `_root_.x` escapes the namespaces.
fn qualify(prefix: &[&str], written: &str) -> String {
    if let Some(rest) = written.strip_prefix("_root_.") {
        return rest.to_string();
    }
    if prefix.is_empty() {
        written.to_string()
    } else {
        format!("{}.{written}", prefix.join("."))
    }
}

fn scope_command(r: &Reader, i: usize, last: usize) -> Option<Scope> {
    if !r.is_word(i) {
        return None;
    }
    match r.s(i) {
        "namespace" => {
            let (name, _) = r.name_at(i + 1).filter(|_| i + 1 < last)?;
            Some(Scope::Namespace(
                name.split('.').map(str::to_string).collect(),
            ))
        }
        "section" => Some(Scope::Section),
        "noncomputable" if r.is(i + 1, "section") => Some(Scope::Section),
        "mutual" => Some(Scope::Section),
        "end" => Some(Scope::End),
        _ => None,
    }
}

/// Where the statement after a declaration's name ends (byte offset): the
/// first `:=`, `where`, `|` or `deriving` outside brackets, else the
/// command's end. Also the lexeme index where the body starts.
fn statement_end(r: &Reader, from: usize, last: usize) -> (usize, usize) {
    let mut depth = 0i32;
    let mut j = from;
    while j < last {
        let l = r.lx[j];
        match l.kind {
            LexemeKind::Symbol => match r.s(j) {
                "(" | "[" | "{" | "⟨" | "⦃" => depth += 1,
                ")" | "]" | "}" | "⟩" | "⦄" => depth -= 1,
                ":" if depth == 0 && r.is(j + 1, "=") && r.lx[j + 1].start == l.end => {
                    return (l.start, j);
                }
                "|" if depth == 0 => return (l.start, j),
                _ => {}
            },
            LexemeKind::Word if depth == 0 && matches!(r.s(j), "where" | "deriving") => {
                return (l.start, j);
            }
            _ => {}
        }
        j += 1;
    }
    (
        r.lx[last - 1]
            .end
            .max(r.lx.get(from).map_or(0, |l| l.start)),
        last,
    )
}

/// The constructors `| name binders : type` of an inductive whose body
/// starts at lexeme `from`.
fn constructors(r: &Reader, ind: &str, from: usize, last: usize, out: &mut Vec<Decl>) {
    let mut depth = 0i32;
    let mut bars = Vec::new();
    let mut j = from;
    while j < last {
        if r.lx[j].kind == LexemeKind::Symbol {
            match r.s(j) {
                "(" | "[" | "{" | "⟨" | "⦃" => depth += 1,
                ")" | "]" | "}" | "⟩" | "⦄" => depth -= 1,
                "|" if depth == 0 => bars.push(j),
                _ => {}
            }
        } else if r.is_word(j) && depth == 0 && r.s(j) == "deriving" {
            break;
        }
        j += 1;
    }
    let stop = j;
    for (b, &bar) in bars.iter().enumerate() {
        let next = bars.get(b + 1).copied().unwrap_or(stop);
        let mut i = bar + 1;
        let mut doc = (bar > from)
            .then(|| r.lx[bar - 1])
            .filter(|l| {
                l.kind == (LexemeKind::Comment { doc: true }) && r.s(bar - 1).starts_with("/--")
            })
            .map(|_| first_paragraph(r.s(bar - 1)));
        while i < next && matches!(r.lx[i].kind, LexemeKind::Comment { .. }) {
            if r.s(i).starts_with("/--") {
                doc = Some(first_paragraph(r.s(i)));
            }
            i += 1;
        }
        let Some((name, after)) = r.name_at(i).filter(|_| i < next) else {
            continue;
        };
        let end = r.lx[next - 1].end;
        let statement = if after < next {
            collapse(&r.text[r.lx[after].start..end])
        } else {
            String::new()
        };
        out.push(Decl {
            name: format!("{ind}.{name}"),
            kind: Kind::Constructor,
            statement,
            doc,
            start: r.lx[bar].start,
            end,
        });
    }
}

/// White space runs (line breaks too) as one space; comments left as written.
pub fn collapse(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A docstring's first paragraph: its text up to the first blank line, white
/// space collapsed, at most [`DOC_CHARS`] characters.
fn first_paragraph(doc: &str) -> String {
    let body = doc
        .strip_prefix("/--")
        .unwrap_or(doc)
        .strip_suffix("-/")
        .unwrap_or(doc);
    let mut para = Vec::new();
    for line in body.trim().lines() {
        if line.trim().is_empty() {
            break;
        }
        para.push(line.trim());
    }
    let text = collapse(&para.join(" "));
    match text.char_indices().nth(DOC_CHARS) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Vec<(String, &'static str, String, Option<String>)> {
        declarations(text)
            .into_iter()
            .map(|d| (d.name, d.kind.as_str(), d.statement, d.doc))
            .collect()
    }

    fn names(text: &str) -> Vec<String> {
        declarations(text).into_iter().map(|d| d.name).collect()
    }

    #[test]
    fn theorems_with_binders_types_and_docstrings() {
        let text = "prelude\nimport A.B\n\n/-- Addition commutes.\n\nLong proof. -/\n@[simp]\ntheorem add_comm (a b : Nat) :\n    a + b = b + a := by\n  sorry\n";
        assert_eq!(
            read(text),
            vec![(
                "add_comm".to_string(),
                "theorem",
                "(a b : Nat) : a + b = b + a".to_string(),
                Some("Addition commutes.".to_string())
            )]
        );
        let d = &declarations(text)[0];
        assert_eq!(&text[d.start..d.start + 3], "/--");
        assert!(text[..d.end].ends_with("sorry"));
    }

    #[test]
    fn namespaces_sections_and_root() {
        let text = "namespace Nat\ndef double (n : Nat) : Nat := n + n\nsection S\nprotected theorem le_refl (n : Nat) : n ≤ n := sorry\nend S\ntheorem _root_.top : True := trivial\nnamespace Inner.Deep\nabbrev x := 1\nend Inner.Deep\nend Nat\nlemma after : True := trivial\n";
        assert_eq!(
            names(text),
            [
                "Nat.double",
                "Nat.le_refl",
                "top",
                "Nat.Inner.Deep.x",
                "after"
            ]
        );
    }

    #[test]
    fn statements_stop_at_the_body() {
        let cases = [
            (
                "def f : Nat → Nat\n  | 0 => 1\n  | n => n\n",
                "f",
                ": Nat → Nat",
            ),
            ("structure P where\n  x : Nat\n", "P", ""),
            (
                "def g (h : a = b) : b = a := h.symm\n",
                "g",
                "(h : a = b) : b = a",
            ),
            (
                "instance (priority := low) instFoo : Foo Nat := ⟨⟩\n",
                "instFoo",
                ": Foo Nat",
            ),
            ("axiom ax {α : Sort u} : α\n", "ax", "{α : Sort u} : α"),
            ("noncomputable def n : Nat :=\n  0\n", "n", ": Nat"),
            (
                "def m (x : Nat := 3) : Nat := x\n",
                "m",
                "(x : Nat := 3) : Nat",
            ),
        ];
        for (text, name, statement) in cases {
            let d = declarations(text);
            assert_eq!(d.len(), 1, "{text}");
            assert_eq!(
                (d[0].name.as_str(), d[0].statement.as_str()),
                (name, statement),
                "{text}"
            );
        }
    }

    #[test]
    fn constructors_follow_their_inductive() {
        let text = "inductive Vec (α : Type) : Nat → Type where\n  /-- empty -/\n  | nil : Vec α 0\n  | cons (a : α) {n : Nat} (v : Vec α n) : Vec α (n + 1)\n  deriving Repr\n\ntheorem t : True := trivial\n";
        assert_eq!(
            read(text),
            vec![
                (
                    "Vec".into(),
                    "inductive",
                    "(α : Type) : Nat → Type".into(),
                    None
                ),
                (
                    "Vec.nil".into(),
                    "constructor",
                    ": Vec α 0".into(),
                    Some("empty".into())
                ),
                (
                    "Vec.cons".into(),
                    "constructor",
                    "(a : α) {n : Nat} (v : Vec α n) : Vec α (n + 1)".into(),
                    None
                ),
                ("t".into(), "theorem", ": True".into(), None),
            ]
        );
    }

    #[test]
    fn what_is_not_a_declaration() {
        let text = "-- theorem commented : True\n/- theorem block : True -/\nexample : True := trivial\ninstance : Foo := ⟨⟩\n#check foo\nset_option x true in\ntheorem kept : True := trivial\ndef s := \"theorem in_string : x\"\n  theorem indented : True := trivial\n";
        assert_eq!(names(text), ["kept", "s"]);
    }

    #[test]
    fn mutual_blocks_and_escaped_names() {
        let text = "mutual\n  def even : Nat → Bool\n    | _ => true\n  def odd : Nat → Bool\n    | _ => false\nend\ntheorem «my thm».x : True := trivial\nclass inductive C : Prop\n  | mk\n";
        assert_eq!(names(text), ["even", "odd", "«my thm».x", "C", "C.mk"]);
        assert_eq!(declarations(text)[3].kind, Kind::Class);
    }

    #[test]
    fn long_docstrings_are_cut() {
        let text = format!("/-- {} -/\ndef d := 1\n", "word ".repeat(200));
        let doc = declarations(&text)[0].doc.clone().unwrap();
        assert_eq!(doc.chars().count(), DOC_CHARS + 1);
        assert!(doc.ends_with('…'));
    }
}
