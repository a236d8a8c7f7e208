//! The one reading of a declaration's header: its attributes (`@[…]`), its
//! modifiers (`private`, `noncomputable`, …), its keyword and its name. One
//! word table for every command word the crate knows, asked by the outline
//! (which commands change the scope), the escape-hatch scan (where an
//! attribute's reach ends), the outline with signatures (a symbol's kind) and
//! a probe's block column (whether a line starts a declaration).

use super::lexer::{Lexeme, LexemeKind, lex};

/// A word that starts a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keyword {
    // Declarations.
    Def,
    Theorem,
    Lemma,
    Abbrev,
    Instance,
    Structure,
    Class,
    /// `class inductive`, one kind.
    ClassInductive,
    Inductive,
    Coinductive,
    Axiom,
    Opaque,
    Example,
    // Scopes: they open a scope a later `end` closes.
    Namespace,
    Section,
    // Commands that change the elaboration scope without opening one.
    Open,
    Variable,
    Universe,
    SetOption,
    Include,
    Omit,
    // Notations, syntax and macros.
    Notation,
    Infix,
    Infixl,
    Infixr,
    Prefix,
    Postfix,
    Macro,
    MacroRules,
    Syntax,
    Elab,
    ElabRules,
    DeclareSyntaxCat,
    // Other commands.
    Attribute,
    Export,
    AddDeclDoc,
    Initialize,
    BuiltinInitialize,
}

/// Every command word, once (`class inductive` is read from `class`).
const WORDS: &[(&str, Keyword)] = &[
    ("def", Keyword::Def),
    ("theorem", Keyword::Theorem),
    ("lemma", Keyword::Lemma),
    ("abbrev", Keyword::Abbrev),
    ("instance", Keyword::Instance),
    ("structure", Keyword::Structure),
    ("class", Keyword::Class),
    ("inductive", Keyword::Inductive),
    ("coinductive", Keyword::Coinductive),
    ("axiom", Keyword::Axiom),
    ("opaque", Keyword::Opaque),
    ("example", Keyword::Example),
    ("namespace", Keyword::Namespace),
    ("section", Keyword::Section),
    ("open", Keyword::Open),
    ("variable", Keyword::Variable),
    ("universe", Keyword::Universe),
    ("set_option", Keyword::SetOption),
    ("include", Keyword::Include),
    ("omit", Keyword::Omit),
    ("notation", Keyword::Notation),
    ("infix", Keyword::Infix),
    ("infixl", Keyword::Infixl),
    ("infixr", Keyword::Infixr),
    ("prefix", Keyword::Prefix),
    ("postfix", Keyword::Postfix),
    ("macro", Keyword::Macro),
    ("macro_rules", Keyword::MacroRules),
    ("syntax", Keyword::Syntax),
    ("elab", Keyword::Elab),
    ("elab_rules", Keyword::ElabRules),
    ("declare_syntax_cat", Keyword::DeclareSyntaxCat),
    ("attribute", Keyword::Attribute),
    ("export", Keyword::Export),
    ("add_decl_doc", Keyword::AddDeclDoc),
    ("initialize", Keyword::Initialize),
    ("builtin_initialize", Keyword::BuiltinInitialize),
];

/// Words that may stand before a declaration's keyword.
pub const MODIFIERS: &[&str] = &[
    "private",
    "protected",
    "public",
    "noncomputable",
    "partial",
    "unsafe",
    "nonrec",
    "scoped",
    "local",
    "meta",
];

/// Words that may begin a continuation line at column 0: the command above
/// goes on (the outline, declaration addressing and search read lines so).
pub const CONTINUATION: &[&str] = &[
    "by",
    "where",
    "deriving",
    "termination_by",
    "decreasing_by",
    "with",
    "at",
    "in",
    "then",
    "else",
    "do",
    "fun",
    "from",
    "using",
    "calc",
];

impl Keyword {
    /// The keyword a word spells, if it starts a command.
    pub fn of(word: &str) -> Option<Keyword> {
        WORDS.iter().find(|(w, _)| *w == word).map(|(_, k)| *k)
    }

    /// How the source spells it.
    pub fn word(self) -> &'static str {
        match self {
            Keyword::ClassInductive => "class inductive",
            k => WORDS
                .iter()
                .find(|(_, w)| *w == k)
                .map_or("", |(word, _)| word),
        }
    }

    /// It declares a constant: an attribute before it reaches no further.
    pub fn declares(self) -> bool {
        use Keyword::*;
        matches!(
            self,
            Def | Theorem
                | Lemma
                | Abbrev
                | Instance
                | Structure
                | Class
                | ClassInductive
                | Inductive
                | Coinductive
                | Axiom
                | Opaque
                | Example
        )
    }

    /// It opens a scope (`namespace`, `section`).
    pub fn opens_scope(self) -> bool {
        matches!(self, Keyword::Namespace | Keyword::Section)
    }

    /// It changes the elaboration scope of what follows: what a module
    /// boundary does not carry (`open`, `variable`, `universe`, …).
    pub fn changes_scope(self) -> bool {
        use Keyword::*;
        self.opens_scope()
            || matches!(
                self,
                Open | Variable | Universe | SetOption | Include | Omit
            )
    }

    /// It makes an entry of Lean's document outline: a declaration, a
    /// scope, a notation, syntax or macro, an initializer; not a command
    /// that only shapes what follows (`open … in`, `variable`, `attribute`).
    pub fn names_a_symbol(self) -> bool {
        use Keyword::*;
        self.opens_scope()
            || !self.changes_scope() && !matches!(self, Attribute | Export | AddDeclDoc)
    }
}

/// The index of the `]` that closes the attribute list opened by the `@` at
/// `lexemes[at]` (`@[simp, foo [x]]`: brackets nest), or `None` when
/// `lexemes[at]` does not open one or it is not closed.
pub fn attribute_end(text: &str, lexemes: &[Lexeme], at: usize) -> Option<usize> {
    let symbol = |i: usize, s: &str| {
        lexemes
            .get(i)
            .is_some_and(|l| l.kind == LexemeKind::Symbol && &text[l.start..l.end] == s)
    };
    if !symbol(at, "@") || !symbol(at + 1, "[") {
        return None;
    }
    let mut depth = 0usize;
    for i in at + 1..lexemes.len() {
        if symbol(i, "[") {
            depth += 1;
        } else if symbol(i, "]") {
            depth -= 1;
            if depth == 0 {
                return Some(i);
            }
        }
    }
    None
}

/// A declaration's header as the source spells it; byte ranges into the
/// text read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header<'a> {
    /// Each `@[…]`, its `@` to its `]`.
    pub attributes: Vec<(usize, usize)>,
    pub modifiers: Vec<&'a str>,
    pub keyword: Keyword,
    /// Where the keyword's first word starts.
    pub keyword_at: usize,
    /// The word after the keyword (the declared name, when it has one).
    pub name: Option<(usize, usize)>,
}

impl<'a> Header<'a> {
    /// Read `text` up to its first command word that [`Keyword::names_a_symbol`]:
    /// comments, docstrings and attributes skipped, modifiers collected,
    /// other words passed over (`open … in` before a declaration). `None`
    /// without such a word.
    pub fn parse(text: &'a str) -> Option<Header<'a>> {
        let lexemes = lex(text);
        let mut attributes = Vec::new();
        let mut modifiers = Vec::new();
        let mut i = 0;
        while i < lexemes.len() {
            let l = lexemes[i];
            let word = &text[l.start..l.end];
            if let Some(end) = attribute_end(text, &lexemes, i) {
                attributes.push((l.start, lexemes[end].end));
                i = end + 1;
                continue;
            }
            if l.kind == LexemeKind::Word {
                if MODIFIERS.contains(&word) {
                    modifiers.push(word);
                } else if let Some(keyword) = Keyword::of(word).filter(|k| k.names_a_symbol()) {
                    // The next lexeme past comments, from `from`.
                    let next = |from: usize| {
                        (from..lexemes.len())
                            .find(|&j| !matches!(lexemes[j].kind, LexemeKind::Comment { .. }))
                    };
                    let is_word = |j: usize| lexemes[j].kind == LexemeKind::Word;
                    let mut keyword = keyword;
                    let mut after = i + 1;
                    if let Some(j) = next(after).filter(|&j| {
                        keyword == Keyword::Class
                            && is_word(j)
                            && &text[lexemes[j].start..lexemes[j].end] == "inductive"
                    }) {
                        keyword = Keyword::ClassInductive;
                        after = j + 1;
                    }
                    let name = next(after)
                        .filter(|&j| is_word(j))
                        .map(|j| (lexemes[j].start, lexemes[j].end));
                    return Some(Header {
                        attributes,
                        modifiers,
                        keyword,
                        keyword_at: l.start,
                        name,
                    });
                }
            }
            i += 1;
        }
        None
    }
}

/// Whether `line` (its indentation cut) starts a declaration: an attribute
/// (`@[`), a modifier or a declaring keyword first.
pub fn starts_declaration(line: &str) -> bool {
    let lexemes = lex(line);
    let spelled = |i: usize| lexemes.get(i).map(|l| (l.kind, &line[l.start..l.end]));
    match spelled(0) {
        Some((LexemeKind::Symbol, "@")) => spelled(1) == Some((LexemeKind::Symbol, "[")),
        Some((LexemeKind::Word, word)) => {
            MODIFIERS.contains(&word) || Keyword::of(word).is_some_and(Keyword::declares)
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_word_reads_back_as_its_keyword() {
        for (word, keyword) in WORDS {
            assert_eq!(Keyword::of(word), Some(*keyword));
            assert_eq!(keyword.word(), *word);
        }
        assert_eq!(Keyword::ClassInductive.word(), "class inductive");
        assert_eq!(Keyword::of("private"), None, "a modifier, not a keyword");
    }

    #[test]
    fn headers_are_read_past_comments_attributes_and_modifiers() {
        /// The keyword's spelling, the modifiers, how many attributes, the name.
        type Read<'a> = (&'a str, &'a [&'a str], usize, Option<&'a str>);
        let cases: &[(&str, Option<Read>)] = &[
            ("def f := 1", Some(("def", &[], 0, Some("f")))),
            (
                "@[simp] private theorem t : True",
                Some(("theorem", &["private"], 1, Some("t"))),
            ),
            (
                "/-- doc -/\n@[simp, foo [x]]\n@[bar] noncomputable def g",
                Some(("def", &["noncomputable"], 2, Some("g"))),
            ),
            (
                "class inductive C",
                Some(("class inductive", &[], 0, Some("C"))),
            ),
            (
                "class /- c -/ inductive D",
                Some(("class inductive", &[], 0, Some("D"))),
            ),
            ("class E", Some(("class", &[], 0, Some("E")))),
            ("example : True := trivial", Some(("example", &[], 0, None))),
            (
                "open Nat in\ntheorem u : True",
                Some(("theorem", &[], 0, Some("u"))),
            ),
            ("namespace N", Some(("namespace", &[], 0, Some("N")))),
            (
                "macro_rules | `(x) => `(y)",
                Some(("macro_rules", &[], 0, None)),
            ),
            ("set_option pp.all true", None),
            ("-- def in a comment\n", None),
            ("", None),
        ];
        for (text, want) in cases {
            let got = Header::parse(text).map(|h| {
                (
                    h.keyword.word(),
                    h.modifiers.clone(),
                    h.attributes.len(),
                    h.name.map(|(a, b)| &text[a..b]),
                )
            });
            let want = want.map(|(k, m, a, n)| (k, m.to_vec(), a, n));
            assert_eq!(got, want, "{text:?}");
        }
    }

    #[test]
    fn attributes_close_at_their_own_bracket() {
        let text = "@[simp, foo [x]] def f";
        let lexemes = lex(text);
        let end = attribute_end(text, &lexemes, 0).unwrap();
        assert_eq!(&text[..lexemes[end].end], "@[simp, foo [x]]");
        assert_eq!(
            attribute_end("@ [x]", &lex("@ [x]"), 0),
            Some(3),
            "spacing aside"
        );
        assert_eq!(attribute_end("@[x", &lex("@[x"), 0), None, "unclosed");
        assert_eq!(attribute_end("[x]", &lex("[x]"), 0), None, "no `@`");
    }

    #[test]
    fn categories() {
        use Keyword::*;
        // (keyword, declares, opens a scope, changes the scope, names a symbol)
        let cases = [
            (Def, true, false, false, true),
            (Opaque, true, false, false, true),
            (Coinductive, true, false, false, true),
            (Namespace, false, true, true, true),
            (Open, false, false, true, false),
            (SetOption, false, false, true, false),
            (Notation, false, false, false, true),
            (Initialize, false, false, false, true),
            (Attribute, false, false, false, false),
        ];
        for (k, declares, opens, changes, names) in cases {
            assert_eq!(
                (
                    k.declares(),
                    k.opens_scope(),
                    k.changes_scope(),
                    k.names_a_symbol()
                ),
                (declares, opens, changes, names),
                "{k:?}"
            );
        }
    }

    #[test]
    fn lines_that_start_declarations() {
        for (line, want) in [
            ("theorem t : True := by", true),
            ("private lemma l := by", true),
            ("@[simp] def f := by", true),
            ("partial def g := by", true),
            ("exact h", false),
            ("", false),
            ("have h : True := by", false),
        ] {
            assert_eq!(starts_declaration(line), want, "{line:?}");
        }
    }
}
