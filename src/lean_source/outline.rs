//! The command outline of Lean source: where commands start, and whether the
//! text before a point can stand as an imported module plus a replay of the
//! commands that shape the elaboration scope (`namespace`, `section`, `end`,
//! `open`, `variable`, `universe`, `set_option`, `include`, `omit`).
//!
//! What an import does not carry is exactly that scope: everything else a
//! prefix defines (declarations, global attributes, notations, scoped entries)
//! lives in the compiled module. Prefixes with content whose meaning would
//! change across a module boundary (`private` and `local` declarations, the
//! module system, `#exit`, initializers) are refused, as are layouts this
//! reading cannot be sure of (unrecognized words at column 0, scope commands
//! that are indented). A refusal only means the slower, always-exact path.
//!
//! Commands start at column 0, as Lean's own style requires; lines of a
//! command that start further right are its continuation.

use super::header::{self, CONTINUATION, Keyword, MODIFIERS};
use super::lexer::{self, Lexeme, LexemeKind};

/// A word that starts a command changing the scope.
fn changes_scope(word: &str) -> bool {
    Keyword::of(word).is_some_and(Keyword::changes_scope)
}

/// A word that starts any other command (declarations with their
/// modifiers, notations, attributes).
fn other_command(word: &str) -> bool {
    MODIFIERS.contains(&word) || Keyword::of(word).is_some_and(|k| !k.changes_scope())
}

/// Words whose meaning changes across a module boundary, or that stop or
/// escape elaboration.
const REFUSED: &[&str] = &[
    "private",
    "local",
    "initialize",
    "builtin_initialize",
    "module",
    "public",
    "meta",
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Header,
    /// A scope command (`word` is its first word).
    Scope,
    Mutual,
    End,
    /// A docstring or attribute line that belongs to the command after it.
    Attached,
    Other,
}

#[derive(Debug, Clone)]
struct Command {
    /// Byte offset of its first character (at column 0).
    start: usize,
    line: usize,
    kind: Kind,
    word: String,
}

/// Lexemes with their lines.
struct Lines<'a> {
    text: &'a str,
    lexemes: Vec<Lexeme>,
    line_of: Vec<usize>,
}

impl<'a> Lines<'a> {
    fn new(text: &'a str) -> Self {
        let lexemes = lexer::lex(text);
        let mut line_of = Vec::with_capacity(lexemes.len());
        let mut line = 0;
        let mut at = 0;
        for l in &lexemes {
            line += text[at..l.start].matches('\n').count();
            at = l.start;
            line_of.push(line);
        }
        Lines {
            text,
            lexemes,
            line_of,
        }
    }

    fn str(&self, i: usize) -> &'a str {
        let l = &self.lexemes[i];
        &self.text[l.start..l.end]
    }

    fn at_column_0(&self, i: usize) -> bool {
        let start = self.lexemes[i].start;
        start == 0 || self.text.as_bytes()[start - 1] == b'\n'
    }

    fn first_on_line(&self, i: usize) -> bool {
        i == 0 || self.line_of[i - 1] != self.line_of[i]
    }

    /// Whether lexeme `i` is the last on its line.
    fn last_on_line(&self, i: usize) -> bool {
        i + 1 >= self.lexemes.len() || self.line_of[i + 1] != self.line_of[i]
    }

    fn is_word(&self, i: usize, word: &str) -> bool {
        i < self.lexemes.len() && self.lexemes[i].kind == LexemeKind::Word && self.str(i) == word
    }
}

/// The commands of `text` (column-0 starts), or why they cannot be read.
fn commands(lines: &Lines) -> Result<Vec<(Command, usize)>, String> {
    let mut out: Vec<(Command, usize)> = Vec::new();
    let mut header_done = false;
    for i in 0..lines.lexemes.len() {
        let kind = lines.lexemes[i].kind;
        let word = lines.str(i);
        let line = lines.line_of[i];
        if kind == LexemeKind::Word && REFUSED.contains(&word) {
            return Err(format!("`{word}` at line {}", line + 1));
        }
        if !lines.at_column_0(i) {
            continue;
        }
        let kind = match kind {
            LexemeKind::Word => match word {
                "prelude" | "import" if !header_done => Kind::Header,
                "end" => Kind::End,
                "mutual" => Kind::Mutual,
                "noncomputable" if lines.is_word(i + 1, "section") => Kind::Scope,
                w if changes_scope(w) => Kind::Scope,
                w if other_command(w) => Kind::Other,
                w if CONTINUATION.contains(&w) => continue,
                w => return Err(format!("unrecognized command `{w}` at line {}", line + 1)),
            },
            LexemeKind::Symbol if word == "#" => {
                if lines.is_word(i + 1, "exit") {
                    return Err(format!("`#exit` at line {}", line + 1));
                }
                Kind::Other
            }
            LexemeKind::Symbol if word == "@" => {
                // `@[attr]` alone on its line belongs to the declaration below.
                match header::attribute_end(lines.text, &lines.lexemes, i) {
                    Some(j) if lines.last_on_line(j) => Kind::Attached,
                    _ => Kind::Other,
                }
            }
            LexemeKind::Comment { doc: true } if word.starts_with("/--") => {
                if lines.last_on_line(i) {
                    Kind::Attached
                } else {
                    Kind::Other
                }
            }
            LexemeKind::Comment { doc: true } => Kind::Other,
            // Comments between commands, and continuations.
            _ => continue,
        };
        if kind != Kind::Header {
            header_done = true;
        }
        out.push((
            Command {
                start: lines.lexemes[i].start,
                line,
                kind,
                word: word.to_string(),
            },
            i,
        ));
    }
    // `open X in`, `set_option o v in`, `variable … in`: a modifier of the
    // next command, not a scope of its own.
    for k in 0..out.len() {
        let (command, first) = &out[k];
        let last = out.get(k + 1).map_or(lines.lexemes.len(), |(_, i)| *i);
        if command.kind == Kind::Scope
            && !matches!(
                command.word.as_str(),
                "namespace" | "section" | "noncomputable"
            )
            && (*first..last).any(|i| lines.is_word(i, "in"))
        {
            out[k].0.kind = Kind::Attached;
        }
    }
    Ok(out)
}

/// Where the module header of `text` (`prelude`, `import`s and the comments
/// among them) ends: the start of the first command after it.
pub fn header_end(text: &str) -> usize {
    // Headers are short: read a growing window, not the whole file. A window
    // that ends inside the header says nothing; the next one decides.
    let mut window = 4096;
    loop {
        if window >= text.len() {
            return header_end_in(text).unwrap_or(text.len());
        }
        let mut cut = window;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        if let Some(end) = header_end_in(&text[..cut]) {
            return end;
        }
        window *= 16;
    }
}

/// The start of the first command after the header, if `text` has one.
fn header_end_in(text: &str) -> Option<usize> {
    let lines = Lines::new(text);
    let mut in_import = false;
    for i in 0..lines.lexemes.len() {
        let lexeme = lines.lexemes[i];
        if lexeme.kind == (LexemeKind::Comment { doc: false }) {
            continue;
        }
        match lines.str(i) {
            "prelude" | "import" if lexeme.kind == LexemeKind::Word => in_import = true,
            // The module name of an import, on the line of its `import`.
            _ if in_import && !lines.at_column_0(i) => {}
            _ => return Some(lexeme.start),
        }
    }
    None
}

/// Headers longer than this are not read (none is anywhere near it).
const HEADER_WINDOW: usize = 64 * 1024;

/// The modules `text` imports, read from its header: `module`, `prelude`, and
/// `import` statements with their `public`/`meta` modifiers and `all`.
/// `None` when the header holds anything else this reading does not know
/// (escaped names, a header past the window, stray symbols): the caller then
/// has to assume the worst.
pub fn imports(text: &str) -> Option<Vec<String>> {
    imports_as_written(text).map(|names| names.iter().map(|m| lexer::canonical_name(m)).collect())
}

/// The imported names of a header as spelled (`«Atk».Lib`).
fn imports_as_written(text: &str) -> Option<Vec<String>> {
    let mut cut = text.len().min(HEADER_WINDOW);
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    let lines = Lines::new(&text[..cut]);
    let mut modules: Vec<String> = Vec::new();
    // Inside an `import` statement; whether the last lexeme was a name part
    // (and where it ended), so that `A`, `.`, `B` join into `A.B`.
    let mut in_import = false;
    let mut name_end: Option<usize> = None;
    let mut after_modifier = false;
    let mut seen_command = false;
    for i in 0..lines.lexemes.len() {
        let lexeme = lines.lexemes[i];
        if matches!(lexeme.kind, LexemeKind::Comment { .. }) {
            continue;
        }
        let word = lexeme.kind == LexemeKind::Word;
        let s = lines.str(i);
        if lines.at_column_0(i) {
            in_import = false;
            name_end = None;
            if after_modifier {
                return None;
            }
            match s {
                "module" | "prelude" if word && !seen_command => {}
                "public" | "meta" if word => after_modifier = true,
                "import" if word => in_import = true,
                _ => return Some(modules),
            }
            seen_command = true;
            continue;
        }
        if after_modifier {
            match s {
                "meta" if word => {}
                "import" if word => {
                    after_modifier = false;
                    in_import = true;
                }
                // `public section`, `meta def`: the first command.
                _ => return Some(modules),
            }
            continue;
        }
        if !in_import {
            return None;
        }
        let joins = name_end == Some(lexeme.start);
        match (lexeme.kind, s) {
            (LexemeKind::Word, "all") if name_end.is_none() && lines.str(i - 1) == "import" => {}
            (LexemeKind::Word, _) if joins => modules.last_mut()?.push_str(s),
            (LexemeKind::Word, _) => modules.push(s.to_owned()),
            (LexemeKind::Symbol, ".") if joins => modules.last_mut()?.push('.'),
            _ => return None,
        }
        name_end = Some(lexeme.end);
    }
    // The window ended inside the header, or the file is all header.
    (cut == text.len()).then_some(modules)
}

/// Where the command holding byte `pos` of `text` starts, with the docstring
/// and attribute lines above it; `None` before the first command.
pub fn enclosing_command_start(text: &str, pos: usize) -> Option<usize> {
    let lines = Lines::new(&text[..pos]);
    let commands = commands(&lines).ok()?;
    let mut k = commands.iter().rposition(|(c, _)| c.kind != Kind::Header)?;
    while k > 0 && commands[k - 1].0.kind == Kind::Attached {
        k -= 1;
    }
    Some(commands[k].0.start)
}

/// Where the command holding byte `pos` of `text` (a place in code) ends: the
/// start of the next line that starts at column 0 with anything but a
/// continuation word (`where`, `deriving`, …), or the end of the text.
pub fn command_end(text: &str, pos: usize) -> usize {
    // Read from the start of `pos`'s line: the place is code, and so is
    // what comes after it up to the next command.
    let line_start = text[..pos].rfind('\n').map_or(0, |i| i + 1);
    let rest = &text[line_start..];
    let lines = Lines::new(rest);
    (0..lines.lexemes.len())
        .find(|&i| {
            line_start + lines.lexemes[i].start >= pos
                && lines.line_of[i] > 0
                && lines.at_column_0(i)
                && !(lines.lexemes[i].kind == LexemeKind::Word
                    && CONTINUATION.contains(&lines.str(i)))
        })
        .map_or(text.len(), |i| line_start + lines.lexemes[i].start)
}

/// A prefix that can be replaced by an import: which of its lines to replay.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skeleton {
    /// Per line: replayed verbatim (else left empty).
    kept: Vec<bool>,
    /// Commands in the prefix, header excluded: what an import saves.
    pub commands: usize,
}

impl Skeleton {
    /// Read `prefix` (text up to a line start). Refuses what an import could
    /// not stand in for exactly.
    pub fn of(prefix: &str) -> Result<Skeleton, String> {
        if !(prefix.is_empty() || prefix.ends_with('\n')) {
            return Err("the prefix does not end at a line start".into());
        }
        let lines = Lines::new(prefix);
        let commands = commands(&lines)?;
        let line_count = prefix.matches('\n').count();
        let mut kept = vec![false; line_count];
        let mut scopes: Vec<Kind> = Vec::new();
        for (k, (command, first)) in commands.iter().enumerate() {
            let next = commands.get(k + 1);
            let end_line = next.map_or(line_count, |(c, _)| c.line);
            let last = next.map_or(lines.lexemes.len(), |(_, i)| *i);
            let keep = match command.kind {
                Kind::Scope => {
                    if matches!(
                        command.word.as_str(),
                        "namespace" | "section" | "noncomputable"
                    ) {
                        scopes.push(Kind::Scope);
                    }
                    true
                }
                Kind::Mutual => {
                    scopes.push(Kind::Mutual);
                    false
                }
                Kind::End => match scopes.pop() {
                    Some(Kind::Scope) => true,
                    Some(_) => false,
                    None => {
                        return Err(format!(
                            "`end` without a scope at line {}",
                            command.line + 1
                        ));
                    }
                },
                Kind::Attached | Kind::Other | Kind::Header => false,
            };
            // A line inside this command that starts with a scope word is a
            // command this reading did not see (indented), unless it is a
            // term- or tactic-level `open … in` / `set_option … in`.
            for i in first + 1..last {
                if lines.first_on_line(i)
                    && lines.lexemes[i].kind == LexemeKind::Word
                    && (changes_scope(lines.str(i)) || lines.str(i) == "end")
                {
                    let line = lines.line_of[i];
                    let same_line_in = (i..last)
                        .take_while(|&j| lines.line_of[j] == line)
                        .any(|j| lines.is_word(j, "in"));
                    if !same_line_in {
                        return Err(format!("indented `{}` at line {}", lines.str(i), line + 1));
                    }
                }
                // A replayed command must hold nothing else.
                if keep
                    && lines.first_on_line(i)
                    && lines.lexemes[i].kind == LexemeKind::Word
                    && other_command(lines.str(i))
                {
                    return Err(format!(
                        "indented `{}` inside `{}` at line {}",
                        lines.str(i),
                        command.word,
                        lines.line_of[i] + 1
                    ));
                }
            }
            if keep {
                if command.line == 0 {
                    return Err(
                        "a scope command on the first line leaves no room for the import".into(),
                    );
                }
                for flag in &mut kept[command.line..end_line] {
                    *flag = true;
                }
            }
        }
        Ok(Skeleton {
            kept,
            commands: commands
                .iter()
                .filter(|(c, _)| c.kind != Kind::Header)
                .count(),
        })
    }

    /// The replacement of `prefix`: the import of `module` on the first line,
    /// the scope commands on their own lines, every other line empty. Lines
    /// (and so every position after the prefix) stay where they were.
    pub fn render(&self, prefix: &str, module: &str) -> String {
        let mut out = String::with_capacity(prefix.len() / 8 + 64);
        for (i, line) in prefix.split_inclusive('\n').enumerate() {
            if i == 0 {
                out.push_str("prelude import ");
                out.push_str(module);
                out.push('\n');
            } else if self.kept.get(i).copied().unwrap_or(false) {
                out.push_str(line);
            } else {
                out.push('\n');
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn imports_are_read_from_the_header_or_not_at_all() {
        let names = |v: &[&str]| Some(v.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(imports(SAMPLE), names(&["A.B"]));
        assert_eq!(
            imports("/- c -/\nimport A.B C\n  D.E.F -- note\nimport G\n\ndef x := A.B\n"),
            names(&["A.B", "C", "D.E.F", "G"])
        );
        assert_eq!(
            imports(
                "module\n\npublic import A\nimport all B.C\npublic meta import D\nmeta import E\n\npublic section\n"
            ),
            names(&["A", "B.C", "D", "E"])
        );
        assert_eq!(imports("prelude\n"), names(&[]));
        assert_eq!(
            imports("def x := 1\nimport A\n"),
            names(&[]),
            "imports come first"
        );
        // Readings this does not know: the caller assumes the worst.
        assert_eq!(
            imports("import «A B».C «Atk».Lib\n"),
            names(&["«A B».C", "Atk.Lib"])
        );
        assert_eq!(imports("import «..».«..».x\n"), names(&["«..».«..».x"]));
        assert_eq!(imports("public def x := 1\n"), names(&[]));
        assert_eq!(imports("  import A\n"), None);
        let long = format!("import A\n{}", "-- filler\n".repeat(HEADER_WINDOW / 10));
        assert_eq!(imports(&long), None, "a header past the window");
    }

    const SAMPLE: &str = "prelude\nimport A.B\n\n/-! Module doc. -/\n\nnamespace Foo\n\nopen Bar\n\nvariable (x : U)\n  (y : U)\n\n/-- Doc. -/\n@[simp]\ntheorem t : P := by\n  open Baz in exact h\n\nset_option pp.all true in\ndef d := 1\n\nsection S\nuniverse u\ndef e := 2\nend S\n\nmutual\n  def m := n\n  def n := m\nend\n\n";

    #[test]
    fn the_skeleton_keeps_scope_commands_on_their_lines() {
        let sk = Skeleton::of(SAMPLE).unwrap();
        let rendered = sk.render(SAMPLE, "Base.P1");
        assert_eq!(rendered.matches('\n').count(), SAMPLE.matches('\n').count());
        let kept: Vec<&str> = rendered.lines().filter(|l| !l.is_empty()).collect();
        assert_eq!(
            kept,
            vec![
                "prelude import Base.P1",
                "namespace Foo",
                "open Bar",
                "variable (x : U)",
                "  (y : U)",
                "section S",
                "universe u",
                "end S",
            ]
        );
        assert_eq!(sk.commands, 15);
    }

    #[test]
    fn the_enclosing_command_takes_its_docstring_and_attributes() {
        let pos = SAMPLE.find("exact h").unwrap();
        let start = enclosing_command_start(SAMPLE, pos).unwrap();
        assert!(SAMPLE[start..].starts_with("/-- Doc. -/\n@[simp]\ntheorem t"));
        let pos = SAMPLE.find("def d").unwrap() + 4;
        let start = enclosing_command_start(SAMPLE, pos).unwrap();
        assert!(SAMPLE[start..].starts_with("set_option pp.all true in\ndef d"));
    }

    #[test]
    fn what_an_import_cannot_stand_for_is_refused() {
        for text in [
            "import A\nprivate def p := 1\n",
            "import A\nattribute [local simp] foo\n",
            "module\nimport A\n",
            "import A\n#exit\n",
            "import A\nnamespace N\n  open M\ndef x := 1\n",
            "import A\nnamespace N\n  def y := 1\n",
            "import A\nend\n",
            "import A\nfoo_command\n",
            "namespace N\n",
            "import A\ndef x := 1",
        ] {
            assert!(Skeleton::of(text).is_err(), "accepted: {text:?}");
        }
    }

    #[test]
    fn the_header_ends_at_the_first_command() {
        assert_eq!(&SAMPLE[header_end(SAMPLE)..][..3], "/-!");
        let text = "-- c\nprelude import A.B\nimport C\n\ndef x := 1\n";
        assert_eq!(&text[header_end(text)..], "def x := 1\n");
        assert_eq!(header_end("import A\n"), "import A\n".len());
        let long = format!("import A\n/-{}-/\ndef x := 1\n", "c".repeat(10_000));
        assert_eq!(&long[header_end(&long)..], "def x := 1\n");
    }

    #[test]
    fn a_command_ends_where_the_next_one_starts() {
        let text =
            "def y : N := N.add one sorry\n  |>.succ\nwhere\n  z := 1\n-- note\ndef z := 2\n";
        let hole = text.find("sorry").unwrap();
        assert_eq!(&text[command_end(text, hole)..], "-- note\ndef z := 2\n");
        let last = text.find(":= 2").unwrap();
        assert_eq!(command_end(text, last), text.len());
    }

    #[test]
    fn comments_and_strings_hide_command_words() {
        let text = "import A\n/- namespace X\nprivate -/\ndef s := \"\nend\n\"\n-- local\n";
        let sk = Skeleton::of(text).unwrap();
        assert_eq!(sk.render(text, "M"), "prelude import M\n\n\n\n\n\n\n");
    }
}
