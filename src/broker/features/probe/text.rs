//! The text of a step: indentation, block columns, commands counted,
//! positions and ranges read from Lean.

use super::*;
use crate::lean_source::header;

/// Lay out a multi-line step at column `indent`: its first line there, and
/// every later line at `indent` plus its indentation relative to the first
/// line's own (the first line's leading white space, if the text has any,
/// is its column: text copied with its indentation keeps its shape). So a
/// bullet's body, a `case … =>` block or a term's continuation stays inside
/// the block it was written in. Blank lines stay blank.
///
/// Refused: a tab in a line's indentation (Lean refuses tabs there: "tabs
/// are not allowed"), and a later line indented less than the first line
/// (it would leave the step's block, so the step could not be run as one).
pub(super) fn indent_lines(text: &str, indent: usize) -> Result<String> {
    let text = text.trim_end();
    let lead = |line: &str| line.len() - line.trim_start_matches([' ', '\t']).len();
    let lines: Vec<&str> = text.split('\n').map(|l| l.trim_end_matches('\r')).collect();
    let first = lines.first().map_or(0, |l| lead(l));
    let pad = " ".repeat(indent);
    let mut out = String::with_capacity(text.len() + indent * lines.len());
    for (i, line) in lines.iter().enumerate() {
        let own = lead(line);
        if line[..own].contains('\t') {
            return Err(Error::Argument {
                what: format!("line {i} (0-based) of the text"),
                rule: "has a tab in its indentation, which Lean refuses (\"tabs are not allowed\"): indent with spaces",
            });
        }
        if i == 0 {
            out.push_str(&line[own..]);
            continue;
        }
        out.push('\n');
        if line.trim().is_empty() {
            continue;
        }
        if own < first {
            return Err(Error::Argument {
                what: format!("line {i} (0-based) of the text"),
                rule: "is indented less than the text's first line: later lines are laid out relative to the first line's column (a line 2 spaces deeper than the first goes 2 spaces deeper than the step), so none may start left of it",
            });
        }
        out.push_str(&pad);
        out.push_str(&line[first..]);
    }
    Ok(out)
}

/// The column (in characters) of the tactic block a tactic line belongs to:
/// where its first tactic starts, after an alternative's `=>`, a bullet, or a
/// declaration header's `by`. A step after the line goes there: deeper, it
/// would continue the line's last term; shallower, it would leave the block.
pub(super) fn block_column(line: &str) -> usize {
    let indent = line.len() - line.trim_start().len();
    let rest = line.trim_start();
    let first_word = rest.split_whitespace().next().unwrap_or("");
    let header = indent == 0 || header::starts_declaration(rest);
    let opener = if rest.starts_with('|') || ["case", "next"].contains(&first_word) {
        line.find("=>").map(|i| i + "=>".len())
    } else if rest.starts_with('·') {
        Some(indent + '·'.len_utf8())
    } else if header {
        line.find(":= by").map(|i| i + ":= by".len())
    } else {
        None
    };
    let skip_blank = |i: usize| i + (line[i..].len() - line[i..].trim_start().len());
    let start = opener.map_or(indent, skip_blank);
    line[..start].chars().count()
}

/// The column of a tactic that continues the proof ending in `above`: the
/// block column of its last code line, or one level deeper (two columns) when
/// that line opens a block (`by`, `=>`).
pub(super) fn continuation_column(above: &str) -> usize {
    let Some(line) = above
        .lines()
        .rev()
        .map(|l| l.find("--").map_or(l, |i| &l[..i]).trim_end())
        .find(|l| !l.trim().is_empty())
    else {
        return 0;
    };
    if line.ends_with("by") || line.ends_with("=>") {
        line.len() - line.trim_start().len() + 2
    } else {
        block_column(line)
    }
}

/// Commands in a command-mode step: code lines at column 0, not counting
/// attribute and doc-comment lines, which belong to the command after them
/// (an attribute followed by its command on the same line counts).
pub(super) fn command_count(text: &str) -> usize {
    text.lines()
        .filter(|line| line.chars().next().is_some_and(|c| !c.is_whitespace()))
        .map(|line| match line.strip_prefix("@[") {
            Some(rest) => rest.split_once(']').map_or("", |(_, after)| after.trim()),
            None => line,
        })
        .filter(|line| {
            !line.is_empty()
                && !["--", "@[", "/--", "/-!", "/-"]
                    .iter()
                    .any(|p| line.starts_with(p))
        })
        .count()
}

/// A position of an LSP range (`start` or `end`); missing parts count as 0.
/// A range relative to the step's first character (line 0 is the step's first
/// line), so that messages of continuation steps are easy to place.
pub(super) fn step_range(range: lsp_types::Range, start: (u32, u32)) -> Range {
    let rel = |(line, character): (u32, u32)| {
        if line == start.0 {
            (0, character.saturating_sub(start.1))
        } else {
            (line.saturating_sub(start.0), character)
        }
    };
    Range::new(
        rel((range.start.line, range.start.character)),
        rel((range.end.line, range.end.character)),
    )
}

/// Whether a `sorry` token starts at byte `offset` of `text` (in code).
pub(super) fn sorry_at(text: &str, line_start: usize, line_end: usize, offset: usize) -> bool {
    lexer::scan(&text[line_start..line_end])
        .iter()
        .any(|t| t.kind == TokenKind::Sorry && line_start + t.start == offset)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn continuation_lines_keep_their_indentation_relative_to_the_first() {
        let at = |text: &str, indent: usize| indent_lines(text, indent).expect("laid out");
        assert_eq!(at("intro x\nexact x", 4), "intro x\n    exact x");
        // A bullet's body and a `case` block stay inside their block.
        assert_eq!(
            at("constructor\n· exact a\n  exact b", 2),
            "constructor\n  · exact a\n    exact b"
        );
        assert_eq!(
            at("case left =>\n  exact hp", 2),
            "case left =>\n    exact hp"
        );
        // Copied with its indentation: the first line's column is the origin.
        assert_eq!(
            at("    constructor\n    · exact a\n      exact b", 2),
            "constructor\n  · exact a\n    exact b"
        );
        // Blank lines stay blank, CRLF line ends and trailing space go.
        assert_eq!(at("skip\r\n\r\n  exact a\n\n", 2), "skip\n\n    exact a");
        assert_eq!(at("exact a", 6), "exact a");
    }

    #[test]
    fn tabs_and_lines_left_of_the_first_are_refused() {
        let refused = |text: &str| match indent_lines(text, 2) {
            Err(Error::Argument { what, rule }) => format!("{what} {rule}"),
            other => panic!("{text:?} was laid out: {other:?}"),
        };
        assert!(refused("constructor\n\t· exact a").starts_with("line 1 (0-based)"));
        assert!(refused("constructor\n\t· exact a").contains("tab"));
        assert!(refused("\texact a").starts_with("line 0 (0-based)"));
        assert!(refused("  intro x\nexact x").contains("less than the text's first line"));
        // A tab inside a line is Lean's to judge (a string may hold one).
        assert!(indent_lines("exact \"a\tb\"", 2).is_ok());
    }

    #[test]
    fn block_columns() {
        assert_eq!(
            block_column("    show Eq (N.succ (N.add N.zero m)) (N.succ m)"),
            4
        );
        assert_eq!(
            block_column("  | succ m ih => exact congrArg N.succ ih"),
            17
        );
        assert_eq!(block_column("  case zero => exact Eq.refl _"), 15);
        assert_eq!(block_column("    · exact hq"), 6);
        assert_eq!(block_column("theorem t : Eq (f x) y := by decide"), 29);
        assert_eq!(block_column("  exact fun x => x"), 2);
    }

    #[test]
    fn continuation_columns() {
        assert_eq!(continuation_column("theorem t : T := by\n  intro x\n\n"), 2);
        assert_eq!(continuation_column("theorem t : T := by\n"), 2);
        assert_eq!(continuation_column("  | s m ih =>\n"), 4);
        assert_eq!(continuation_column("    · exact a -- done\n"), 6);
        assert_eq!(continuation_column(""), 0);
    }

    #[test]
    fn commands_are_counted() {
        assert_eq!(command_count("theorem t : T := by\n  exact x"), 1);
        assert_eq!(command_count("def a := 1\ndef b := 2"), 2);
        assert_eq!(command_count("@[simp]\ntheorem t : T := x"), 1);
        assert_eq!(command_count("/-- doc -/\ndef a := 1\n-- comment"), 1);
        assert_eq!(command_count("@[simp] theorem t : T := x"), 1);
        assert_eq!(command_count("@[simp]\n@[inline] def a := 1"), 1);
    }
}
