//! The check module sent to Lean for `lean_verify`: the declaration names
//! and references checked before they are sent (one Lean name; one term),
//! the questions it asks (`#print axioms`, the reference's type), and
//! Lean's answers read back into the declarations' entries.

use crate::broker::ask::Declaration;
use crate::broker::error::{Error, Result};
use crate::lean_source::lexer::{self, LexemeKind};
use crate::results::{CheckedDeclaration, FailureReason, ReferenceCheck};

use super::certify;

/// Characters of one reference statement.
const MAX_REFERENCE_CHARS: usize = 8_192;

/// Characters of one declaration name.
const MAX_NAME_CHARS: usize = 1_024;

/// What `#print axioms` said: `'N' depends on axioms: [a, b]` or `'N'
/// does not depend on any axioms`.
pub(super) fn parse_axioms(message: &str) -> Option<Vec<String>> {
    if message.ends_with("does not depend on any axioms") {
        return Some(Vec::new());
    }
    let list = message.split_once("depends on axioms: [")?.1;
    let list = list.trim_end().strip_suffix(']')?;
    Some(
        list.split(',')
            .map(|a| a.trim().to_string())
            .filter(|a| !a.is_empty())
            .collect(),
    )
}

/// A declaration name is one Lean name as the lexer reads it: words (plain
/// or `«…»`) joined by dots with nothing between them, and nothing else.
/// Returned without a leading `_root_.` (every check adds its own).
pub(super) fn check_name(name: &str) -> Result<&str> {
    let bad = || Error::Argument {
        what: format!("declaration name {name:?}"),
        rule: "is not one Lean name: give it as `Namespace.name` (parts in «» where they need quoting), without spaces, comments or other text",
    };
    if name.is_empty() || name.chars().count() > MAX_NAME_CHARS {
        return Err(bad());
    }
    let lexemes = lexer::lex(name);
    let mut at = 0;
    for (i, l) in lexemes.iter().enumerate() {
        let want_word = i % 2 == 0;
        let ok = l.start == at
            && if want_word {
                l.kind == LexemeKind::Word
                    && (!name[l.start..l.end].starts_with('«')
                        || name[l.start..l.end].ends_with('»'))
            } else {
                l.kind == LexemeKind::Symbol && &name[l.start..l.end] == "."
            };
        if !ok {
            return Err(bad());
        }
        at = l.end;
    }
    if at != name.len() || lexemes.len() % 2 == 0 {
        return Err(bad());
    }
    Ok(name.strip_prefix("_root_.").unwrap_or(name))
}

/// A reference is one term: its brackets balance (never closing one it did
/// not open), and every comment and string in it ends inside it. It goes
/// between parentheses on lines of their own, so text that tried to close
/// the term early, or to add a command, cannot parse as one.
pub(super) fn check_reference(reference: &str) -> Result<()> {
    let bad = |rule: &'static str| Error::Argument {
        what: format!("reference {reference:?}"),
        rule,
    };
    if reference.trim().is_empty() || reference.chars().count() > MAX_REFERENCE_CHARS {
        return Err(bad(
            "must be one statement (a Lean term), not empty and at most 8192 characters",
        ));
    }
    let mut open: Vec<char> = Vec::new();
    for l in lexer::lex(reference) {
        let s = &reference[l.start..l.end];
        match l.kind {
            LexemeKind::Comment { .. }
                if s.starts_with("/-") && !(s.len() >= 4 && s.ends_with("-/")) =>
            {
                return Err(bad("has a comment that does not end: give one term"));
            }
            LexemeKind::Str if s.len() < 2 || !s.ends_with('"') && !s.ends_with('#') => {
                return Err(bad("has a string that does not end: give one term"));
            }
            LexemeKind::Word if s.starts_with('«') && !s.contains('»') => {
                return Err(bad("has a «name» that does not end: give one term"));
            }
            LexemeKind::Symbol => {
                let c = s.chars().next().unwrap_or(' ');
                let closes = match c {
                    ')' => Some('('),
                    ']' => Some('['),
                    '}' => Some('{'),
                    '⟩' => Some('⟨'),
                    '⦄' => Some('⦃'),
                    '⟧' => Some('⟦'),
                    _ => None,
                };
                if matches!(c, '(' | '[' | '{' | '⟨' | '⦃' | '⟦') {
                    open.push(c);
                } else if let Some(opener) = closes {
                    if open.pop() != Some(opener) {
                        return Err(bad(
                            "closes a bracket it did not open: give one term (a statement), not commands",
                        ));
                    }
                }
            }
            _ => {}
        }
    }
    if !open.is_empty() {
        return Err(bad("leaves a bracket open: give one term"));
    }
    Ok(())
}

/// One question of the check module: the line it starts on (1-based), the
/// declaration, and whether it is the reference check.
pub(super) struct Question {
    line: u32,
    index: usize,
    reference: bool,
}

/// The generated check module for `module` and `targets`.
pub(super) fn check_module(module: &str, targets: &[Declaration]) -> (String, Vec<Question>) {
    let mut text = format!("prelude\nimport {module}\n");
    let mut line = 3;
    let mut questions = Vec::new();
    for (index, t) in targets.iter().enumerate() {
        questions.push(Question {
            line,
            index,
            reference: false,
        });
        text.push_str(&format!("#print axioms _root_.{}\n", t.name));
        line += 1;
        if let Some(reference) = &t.reference {
            questions.push(Question {
                line,
                index,
                reference: true,
            });
            let command = format!(
                "def «_beam_reference_{index}» : Prop := (\n{reference}\n)\nexample : _root_.«_beam_reference_{index}» := @_root_.{}\n",
                t.name
            );
            line += command.matches('\n').count() as u32;
            text.push_str(&command);
        }
    }
    (text, questions)
}

/// Read Lean's answers to the check module into the declarations' entries.
pub(super) fn answers(
    targets: &[Declaration],
    questions: &[Question],
    messages: &[certify::Message],
    fail: &mut impl FnMut(FailureReason, String),
) -> Vec<CheckedDeclaration> {
    let mut checked: Vec<CheckedDeclaration> = targets
        .iter()
        .map(|t| CheckedDeclaration {
            name: t.name.clone(),
            reference: t.reference.as_ref().map(|r| ReferenceCheck {
                statement: r.clone(),
                matches: true,
                message: None,
            }),
            ..CheckedDeclaration::default()
        })
        .collect();
    for m in messages {
        let Some(q) = questions.iter().rev().find(|q| q.line <= m.line) else {
            if m.error {
                fail(FailureReason::CheckFailed, m.text.clone());
            }
            continue;
        };
        let entry = &mut checked[q.index];
        if q.reference {
            if m.error || m.text.contains("sorry") {
                if let Some(r) = entry.reference.as_mut() {
                    r.matches = false;
                    r.message.get_or_insert_with(|| m.text.clone());
                }
            }
        } else if m.error {
            entry.error.get_or_insert_with(|| m.text.clone());
        } else if let Some(axioms) = parse_axioms(&m.text) {
            if entry.axioms.is_some() {
                // One `#print axioms` answers once: a second answer came
                // from text that is not ours.
                entry
                    .error
                    .get_or_insert_with(|| "Lean answered twice for it".to_string());
            }
            entry.axioms = Some(axioms);
        }
    }
    for c in &mut checked {
        if let Some(why) = &c.error {
            if c.axioms.is_some() {
                fail(
                    FailureReason::UnknownDeclaration,
                    format!("{}: {why}", c.name),
                );
                c.axioms = None;
                continue;
            }
        }
        if c.axioms.is_none() {
            let why = c
                .error
                .get_or_insert_with(|| "Lean reported no axioms for it".to_string());
            fail(
                FailureReason::UnknownDeclaration,
                format!("{}: {why}", c.name),
            );
        }
        if let Some(r) = &c.reference {
            if !r.matches {
                fail(
                    FailureReason::ReferenceMismatch,
                    format!("{} does not have the type {}", c.name, r.statement),
                );
            }
        }
    }
    checked
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_single_identifiers() {
        assert!(check_name("Ver.«odd name»").is_ok());
        assert!(check_name("Ver.odd name").is_err());
        assert!(check_name("").is_err());
        assert!(check_name("a\n#eval 1").is_err());
        assert!(check_name("Ver.no_axioms").is_ok());
    }

    #[test]
    fn print_axioms_answers_are_read() {
        assert_eq!(
            parse_axioms("'Fix.t' depends on axioms: [propext, sorryAx]"),
            Some(vec!["propext".to_string(), "sorryAx".to_string()])
        );
        assert_eq!(
            parse_axioms("'Fix.t' does not depend on any axioms"),
            Some(vec![])
        );
        assert_eq!(parse_axioms("unknown constant 'x'"), None);
    }

    #[test]
    fn a_second_answer_to_one_question_is_no_answer() {
        let targets = [Declaration {
            name: "a".into(),
            reference: None,
        }];
        let (_, questions) = check_module("M", &targets);
        let info = |text: &str| certify::Message {
            line: 3,
            error: false,
            text: text.into(),
        };
        let mut failed = Vec::new();
        let one = answers(
            &targets,
            &questions,
            &[info("'a' does not depend on any axioms")],
            &mut |r, _| failed.push(r),
        );
        assert_eq!(one[0].axioms, Some(vec![]));
        assert!(failed.is_empty());
        let two = answers(
            &targets,
            &questions,
            &[
                info("'a' depends on axioms: [sorryAx]"),
                info("'ok' does not depend on any axioms"),
            ],
            &mut |r, _| failed.push(r),
        );
        assert_eq!(two[0].axioms, None);
        assert_eq!(failed, [FailureReason::UnknownDeclaration]);
    }

    #[test]
    fn references_are_one_term() {
        assert!(check_reference("∀ (n : N), Eq (f n) n").is_ok());
        assert!(check_reference("(a, b) = ⟨c, d⟩ -- note").is_ok());
        for bad in [
            "True) := x\nexample : (True",
            "(True",
            "True /-",
            "\"open",
            "",
            "«x",
        ] {
            assert!(check_reference(bad).is_err(), "{bad:?}");
        }
        assert_eq!(check_name("_root_.Ver.x").unwrap(), "Ver.x");
        assert!(check_name("Ver.x--c").is_err());
        assert!(check_name("Ver.«x y»").is_ok());
        assert!(check_name("a».b").is_err());
    }
}
