//! Escape hatches in Lean source: the places where a proof may lean on
//! something other than the kernel's check of its own terms. `lean_verify`
//! scans the file and every workspace module of its import closure, with
//! exact positions.
//!
//! The scan reads code only (the lexer's words and symbols): a hatch named in
//! a comment, a docstring or a string literal never counts, and neither does a
//! constant that merely ends in the word (`Foo.sorry`, `my_axiom`).
//!
//! Which hits fail a verdict is said per kind ([`Kind::fails`]). The rule:
//! a hatch fails only when nothing else in the verdict can see its effect.
//! `#print axioms` sees every axiom a declaration depends on, `sorryAx`
//! (behind `sorry` and `admit`), and the axiom `native_decide` adds for each
//! use; the kernel refuses a safe declaration that refers to an `unsafe` one;
//! `implemented_by`/`extern` and an `opaque` with either replace only compiled
//! code, which only `native_decide` trusts. So these are reported, and the
//! axiom check decides. `set_option debug.skipKernelTC true` lets declarations
//! into the environment unchecked, which no axiom list shows: it fails.
//! `set_option maxHeartbeats 0` only lifts a resource bound: reported.

use super::header::Keyword;
use super::lexer::{Lexeme, LexemeKind, lex, unescape};
use super::text::LineIndex;

/// What a hit is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    Sorry,
    Admit,
    /// `native_decide`, or `decide +native`.
    NativeDecide,
    /// An `implemented_by` attribute.
    ImplementedBy,
    /// An `extern` attribute.
    Extern,
    Unsafe,
    /// An `axiom` declaration.
    Axiom,
    /// An `opaque` declaration under an `implemented_by`/`extern` attribute.
    OpaqueImplemented,
    /// `set_option debug.skipKernelTC true`.
    SkipKernelTc,
    /// `set_option maxHeartbeats 0`.
    MaxHeartbeatsZero,
}

impl Kind {
    /// The kind's name in results.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Sorry => "sorry",
            Kind::Admit => "admit",
            Kind::NativeDecide => "native_decide",
            Kind::ImplementedBy => "implemented_by",
            Kind::Extern => "extern",
            Kind::Unsafe => "unsafe",
            Kind::Axiom => "axiom",
            Kind::OpaqueImplemented => "opaque_implemented",
            Kind::SkipKernelTc => "skip_kernel_tc",
            Kind::MaxHeartbeatsZero => "max_heartbeats_0",
        }
    }

    /// Whether a hit of this kind, anywhere in the file or its workspace
    /// imports, makes the verdict false (see the module documentation).
    pub fn fails(self) -> bool {
        matches!(self, Kind::SkipKernelTc)
    }
}

/// A hit: its kind and where it is (byte offsets and 0-based LSP positions,
/// characters in UTF-16 code units).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hit {
    pub kind: Kind,
    pub start: usize,
    pub end: usize,
    pub range: ((u32, u32), (u32, u32)),
}

/// The options that let declarations into the environment without the
/// kernel's check (Lean 4.35's `register_builtin_option`s: only
/// `debug.skipKernelTC` in `Lean.AddDecl`; the `…AsSorry` debug options leave
/// `sorryAx`, which the axiom check sees).
const KERNEL_BYPASS: &[&str] = &["debug.skipKernelTC"];

/// Whether setting option `name` to `value` (as a lakefile or a `-D`
/// argument gives it) lets declarations past the kernel: anything but
/// `false` counts, as in the source scan.
pub fn option_bypasses_kernel(name: &str, value: &str) -> bool {
    let name = super::lexer::canonical_name(name);
    KERNEL_BYPASS.contains(&name.as_str()) && value.trim() != "false"
}

/// Words that name the kernel bypass in any spelling or the unchecked path
/// itself (`Environment.addDeclWithoutChecking`): named anywhere in code or
/// a string literal, they fail a verdict.
const BYPASS_WORDS: &[&str] = &["skipKernelTC", "addDeclWithoutChecking"];

/// Code lexemes and the text, with the few questions the scan asks.
struct Code<'a> {
    text: &'a str,
    lexemes: Vec<Lexeme>,
}

impl<'a> Code<'a> {
    fn str(&self, i: usize) -> &'a str {
        self.lexemes
            .get(i)
            .map_or("", |l| &self.text[l.start..l.end])
    }

    fn is(&self, i: usize, kind: LexemeKind, s: &str) -> bool {
        self.lexemes.get(i).is_some_and(|l| l.kind == kind) && self.str(i) == s
    }

    /// Lexemes `i` and `i + 1` touch (no space between them).
    fn touching(&self, i: usize) -> bool {
        match (self.lexemes.get(i), self.lexemes.get(i + 1)) {
            (Some(a), Some(b)) => a.end == b.start,
            _ => false,
        }
    }

    /// Word `i` stands alone: not a component of a dotted name.
    fn free_word(&self, i: usize) -> bool {
        let l = &self.lexemes[i];
        l.kind == LexemeKind::Word
            && !self.text[..l.start].ends_with('.')
            && !self.text[l.end..].starts_with('.')
    }

    /// The dotted name starting at `i` (`debug.skipKernelTC`) and the index
    /// after it.
    fn dotted(&self, i: usize) -> (String, usize) {
        let mut name = String::new();
        let mut j = i;
        while self
            .lexemes
            .get(j)
            .is_some_and(|l| l.kind == LexemeKind::Word)
        {
            name.push_str(&unescape(self.str(j)));
            if self.is(j + 1, LexemeKind::Symbol, ".") && self.touching(j) && self.touching(j + 1) {
                name.push('.');
                j += 2;
            } else {
                j += 1;
                break;
            }
        }
        (name, j)
    }

    /// The numeral starting at `i` (digits are single symbols to the
    /// lexer) and the index after it.
    fn numeral(&self, i: usize) -> (String, usize) {
        let mut digits = String::new();
        let mut j = i;
        while self.lexemes.get(j).is_some_and(|l| {
            l.kind == LexemeKind::Symbol
                && self.text[l.start..l.end]
                    .bytes()
                    .all(|b| b.is_ascii_digit())
        }) {
            digits.push_str(self.str(j));
            if !self.touching(j) {
                j += 1;
                break;
            }
            j += 1;
        }
        (digits, j)
    }
}

/// The escape hatches of `text`, in order.
pub fn scan(text: &str) -> Vec<Hit> {
    let code = Code {
        text,
        lexemes: lex(text)
            .into_iter()
            .filter(|l| !matches!(l.kind, LexemeKind::Comment { .. }))
            .collect(),
    };
    let mut found: Vec<(Kind, usize, usize)> = Vec::new();
    // Inside `@[…]` (`Some(true)`) or `attribute […]` (`Some(false)`), and
    // how deep in brackets.
    let mut attribute: Option<bool> = None;
    let mut depth = 0usize;
    // An `@[…]` with an implementation attribute reaches the declaration
    // after it.
    let mut implemented = false;
    let mut i = 0;
    while i < code.lexemes.len() {
        let l = code.lexemes[i];
        let s = code.str(i);
        // A kernel bypass named anywhere in code or a literal (a `set_option`
        // of it is matched below, with its span): meta code can build the
        // option or call the unchecked path from a name or a string.
        if matches!(
            l.kind,
            LexemeKind::Word | LexemeKind::Str | LexemeKind::Char
        ) && BYPASS_WORDS.iter().any(|w| s.contains(w))
        {
            found.push((Kind::SkipKernelTc, l.start, l.end));
            i += 1;
            continue;
        }
        if let Some(at) = attribute {
            match s {
                "[" => depth += 1,
                "]" => {
                    depth -= 1;
                    if depth == 0 {
                        attribute = None;
                    }
                }
                "implemented_by" | "extern" if code.free_word(i) => {
                    let kind = if s == "extern" {
                        Kind::Extern
                    } else {
                        Kind::ImplementedBy
                    };
                    found.push((kind, l.start, l.end));
                    implemented |= at;
                }
                _ => {}
            }
            i += 1;
            continue;
        }
        match l.kind {
            LexemeKind::Symbol if s == "@" && code.is(i + 1, LexemeKind::Symbol, "[") => {
                attribute = Some(true);
                depth = 1;
                i += 2;
                continue;
            }
            LexemeKind::Word
                if s == "attribute"
                    && code.free_word(i)
                    && code.is(i + 1, LexemeKind::Symbol, "[") =>
            {
                attribute = Some(false);
                depth = 1;
                i += 2;
                continue;
            }
            LexemeKind::Word if code.free_word(i) => {}
            _ => {
                i += 1;
                continue;
            }
        }
        match s {
            "sorry" => found.push((Kind::Sorry, l.start, l.end)),
            "admit" => found.push((Kind::Admit, l.start, l.end)),
            "native_decide" => found.push((Kind::NativeDecide, l.start, l.end)),
            "decide"
                if code.is(i + 1, LexemeKind::Symbol, "+")
                    && code.touching(i + 1)
                    && code.is(i + 2, LexemeKind::Word, "native") =>
            {
                let end = code.lexemes[i + 2].end;
                found.push((Kind::NativeDecide, l.start, end));
                i += 3;
                continue;
            }
            "unsafe" => found.push((Kind::Unsafe, l.start, l.end)),
            "opaque" => {
                if implemented {
                    found.push((Kind::OpaqueImplemented, l.start, l.end));
                }
                implemented = false;
            }
            "set_option" => {
                let (option, after) = code.dotted(i + 1);
                let hit = match option.as_str() {
                    // Set to anything but `false` (a value this reading
                    // cannot judge counts as `true`).
                    o if KERNEL_BYPASS.contains(&o) => {
                        if code.is(after, LexemeKind::Word, "false") {
                            i = after + 1;
                            continue;
                        }
                        Some((Kind::SkipKernelTc, (after + 1).min(code.lexemes.len())))
                    }
                    "maxHeartbeats" => {
                        let (value, next) = code.numeral(after);
                        (!value.is_empty() && value.bytes().all(|b| b == b'0'))
                            .then_some((Kind::MaxHeartbeatsZero, next))
                    }
                    _ => None,
                };
                if let Some((kind, next)) = hit {
                    found.push((kind, l.start, code.lexemes[next - 1].end));
                    i = next;
                    continue;
                }
            }
            // A declaration ends the reach of the attributes before it.
            w if Keyword::of(w).is_some_and(Keyword::declares) => {
                if w == "axiom" {
                    found.push((Kind::Axiom, l.start, l.end));
                }
                implemented = false;
            }
            _ => {}
        }
        i += 1;
    }
    let index = LineIndex::new(text);
    found
        .into_iter()
        .map(|(kind, start, end)| Hit {
            kind,
            start,
            end,
            range: (index.position(text, start), index.position(text, end)),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hits(text: &str) -> Vec<(&'static str, &str)> {
        scan(text)
            .into_iter()
            .map(|h| (h.kind.name(), &text[h.start..h.end]))
            .collect()
    }

    #[test]
    fn every_kind_in_code_with_its_text() {
        let text = "\
theorem a : T := sorry
theorem b : T := by admit
theorem c : T := by native_decide
theorem d : T := by decide +native
@[implemented_by impl] def e := 1
@[extern \"lean_f\"] def f := 1
unsafe def g := 1
axiom h : T
@[implemented_by impl]
opaque i : N
@[simp, extern \"c\"] private opaque j : N
set_option debug.skipKernelTC true in
theorem k : T := t
set_option maxHeartbeats 0 in
theorem l : T := t
attribute [implemented_by impl] m
";
        assert_eq!(
            hits(text),
            vec![
                ("sorry", "sorry"),
                ("admit", "admit"),
                ("native_decide", "native_decide"),
                ("native_decide", "decide +native"),
                ("implemented_by", "implemented_by"),
                ("extern", "extern"),
                ("unsafe", "unsafe"),
                ("axiom", "axiom"),
                ("implemented_by", "implemented_by"),
                ("opaque_implemented", "opaque"),
                ("extern", "extern"),
                ("opaque_implemented", "opaque"),
                ("skip_kernel_tc", "set_option debug.skipKernelTC true"),
                ("max_heartbeats_0", "set_option maxHeartbeats 0"),
                ("implemented_by", "implemented_by"),
            ]
        );
    }

    #[test]
    fn every_spelling_of_the_kernel_bypass_fails() {
        let text = "\
def s := r\"\\\"
set_option «debug».skipKernelTC true in
theorem a : T := t
set_option debug.«skipKernelTC» (true) in
theorem b : T := t
def n := Lean.Name.mkStr `debug \"skipKernelTC\"
def m := r#\"addDeclWithoutChecking\"#
set_option debug.skipKernelTC false
";
        let got = hits(text);
        assert_eq!(
            got,
            vec![
                ("skip_kernel_tc", "set_option «debug».skipKernelTC true"),
                ("skip_kernel_tc", "set_option debug.«skipKernelTC» ("),
                ("skip_kernel_tc", "\"skipKernelTC\""),
                ("skip_kernel_tc", "r#\"addDeclWithoutChecking\"#"),
            ],
            "{text}"
        );
        assert!(scan(text).iter().all(|h| h.kind.fails()));
    }

    #[test]
    fn comments_strings_and_longer_names_never_count() {
        let text = "\
/-! sorry admit axiom unsafe native_decide -/
-- set_option debug.skipKernelTC true
/-- uses `sorry`, an axiom, @[extern] -/
def s := \"sorry axiom unsafe\"
def t := Foo.sorry
def my_axiom := unsafe_thing.axiom
def u := sorry_free
theorem v : T := by decide
set_option debug.skipKernelTC false
set_option maxHeartbeats 400000
set_option maxHeartbeats 10
opaque w : N
@[simp] opaque x : N
def y := 'a'
";
        assert_eq!(hits(text), Vec::<(&str, &str)>::new());
    }

    #[test]
    fn positions_are_zero_based_in_utf16_units() {
        // `𝔽` takes two UTF-16 units and four bytes.
        let text = "def 𝔽 := 1\n  theorem t : 𝔽 = 𝔽 := sorry\n";
        let hit = &scan(text)[0];
        assert_eq!(hit.kind, Kind::Sorry);
        assert_eq!(hit.range, ((1, 25), (1, 30)));
        assert_eq!(&text[hit.start..hit.end], "sorry");
    }

    #[test]
    fn only_the_kernel_bypass_fails() {
        let failing: Vec<Kind> = [
            Kind::Sorry,
            Kind::Admit,
            Kind::NativeDecide,
            Kind::ImplementedBy,
            Kind::Extern,
            Kind::Unsafe,
            Kind::Axiom,
            Kind::OpaqueImplemented,
            Kind::SkipKernelTc,
            Kind::MaxHeartbeatsZero,
        ]
        .into_iter()
        .filter(|k| k.fails())
        .collect();
        assert_eq!(failing, vec![Kind::SkipKernelTc]);
    }

    #[test]
    fn an_attribute_reaches_only_the_next_declaration() {
        let text = "@[implemented_by f] def a := 1\nopaque b : N\n";
        assert_eq!(hits(text), vec![("implemented_by", "implemented_by")]);
    }
}
