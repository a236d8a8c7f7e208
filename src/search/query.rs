//! A `lean_search` query, parsed: comma-separated parts (commas inside
//! brackets do not separate), each one of
//!
//! - `"frag"`: the name contains `frag` (ranked as a name query);
//! - `⊢ pattern` (or `|- pattern`): the statement's conclusion is `pattern`;
//! - a lone name (`add_comm`, `Nat.add_comm`): alone in the query, a ranked
//!   name search; beside other parts, a name the statement must mention;
//! - any other term: a pattern that must occur in the statement.
//!
//! This is Loogle's syntax, less what needs elaboration; a lone name means a
//! name search here (Loogle: "mentions this constant"), the common case for
//! an agent who half-remembers a lemma.

use super::pattern::Pattern;
use super::terms::{Token, tokens};

/// Queries longer than this are refused.
pub const MAX_QUERY_CHARS: usize = 1000;

#[derive(Debug, Clone)]
pub struct Query {
    /// Ranked name parts (a lone name, or quoted fragments).
    pub names: Vec<String>,
    /// Patterns that must occur in the statement (names it must mention among
    /// them).
    pub occurs: Vec<Pattern>,
    /// Patterns the conclusion must be.
    pub conclusions: Vec<Pattern>,
}

impl Query {
    pub fn is_statement_query(&self) -> bool {
        !self.occurs.is_empty() || !self.conclusions.is_empty()
    }
}

/// Parse a query, or say what is wrong with it.
pub fn parse(text: &str) -> Result<Query, String> {
    let text = text.trim();
    if text.is_empty() {
        return Err("the query is empty: give a name fragment (`add_comm`), a pattern (`_ + _ = _ + _`) or `⊢ pattern`".into());
    }
    if text.chars().count() > MAX_QUERY_CHARS {
        return Err(format!(
            "the query is longer than {MAX_QUERY_CHARS} characters"
        ));
    }
    let parts = split_parts(text)?;
    let many = parts.len() > 1;
    let mut query = Query {
        names: Vec::new(),
        occurs: Vec::new(),
        conclusions: Vec::new(),
    };
    for part in parts {
        if let Some(inner) = part.strip_prefix('"') {
            let Some(frag) = inner
                .strip_suffix('"')
                .filter(|f| !f.is_empty() && !f.contains('"'))
            else {
                return Err(format!(
                    "`{part}`: a name fragment is one quoted string, such as \"comm\""
                ));
            };
            query.names.push(frag.to_string());
        } else if let Some(rest) = part.strip_prefix('⊢').or_else(|| part.strip_prefix("|-")) {
            let pattern = Pattern::parse(rest).map_err(|e| format!("after `⊢`: {e}"))?;
            query.conclusions.push(pattern);
        } else if let (false, Some(name)) = (many, lone_name(part)) {
            query.names.push(name);
        } else {
            query
                .occurs
                .push(Pattern::parse(part).map_err(|e| format!("`{part}`: {e}"))?);
        }
    }
    Ok(query)
}

/// `part` as one name, if it is one (a dotted identifier, nothing else).
fn lone_name(part: &str) -> Option<String> {
    match tokens(part).as_slice() {
        [Token::Atom(s)]
            if s.chars()
                .next()
                .is_some_and(|c| c.is_alphabetic() || c == '_' || c == '«') =>
        {
            Some(s.clone())
        }
        _ => None,
    }
}

/// Split at commas outside brackets and quotes; every part non-empty.
fn split_parts(text: &str) -> Result<Vec<&str>, String> {
    let mut parts = Vec::new();
    let mut depth = 0i32;
    let mut quoted = false;
    let mut start = 0;
    for (i, c) in text.char_indices() {
        match c {
            '"' => quoted = !quoted,
            '(' | '[' | '{' | '⟨' | '⦃' if !quoted => depth += 1,
            ')' | ']' | '}' | '⟩' | '⦄' if !quoted => depth -= 1,
            ',' if depth == 0 && !quoted => {
                parts.push(text[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(text[start..].trim());
    if parts.iter().any(|p| p.is_empty()) {
        return Err(format!("`{text}` has an empty part between commas"));
    }
    Ok(parts)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(text: &str) -> (Vec<String>, usize, usize) {
        let q = parse(text).unwrap();
        (q.names, q.occurs.len(), q.conclusions.len())
    }

    #[test]
    fn parts() {
        assert_eq!(shape("add_comm"), (vec!["add_comm".into()], 0, 0));
        assert_eq!(shape(" Nat.add_comm "), (vec!["Nat.add_comm".into()], 0, 0));
        assert_eq!(shape("\"comm\""), (vec!["comm".into()], 0, 0));
        assert_eq!(shape("_ + _ = _ + _"), (vec![], 1, 0));
        assert_eq!(shape("⊢ _ ≤ _"), (vec![], 0, 1));
        assert_eq!(shape("|- _ ≤ _"), (vec![], 0, 1));
        assert_eq!(
            shape("Nat.succ, \"le\", ⊢ _ < _"),
            (vec!["le".into()], 1, 1)
        );
        assert_eq!(shape("f (a, b)"), (vec![], 1, 0));
        assert!(!parse("add_comm").unwrap().is_statement_query());
        assert!(parse("Nat, _ = _").unwrap().is_statement_query());
    }

    #[test]
    fn errors_say_what_to_give() {
        assert!(parse("").unwrap_err().contains("the query is empty"));
        assert!(parse("   ").unwrap_err().contains("the query is empty"));
        assert!(parse("a,,b").unwrap_err().contains("empty part"));
        assert!(
            parse("⊢ f (x")
                .unwrap_err()
                .contains("after `⊢`: `(` is not closed")
        );
        assert!(parse("\"a\"b\"").unwrap_err().contains("one quoted string"));
        assert!(parse("⊢").unwrap_err().contains("empty pattern"));
        assert!(
            parse(&"x".repeat(1001))
                .unwrap_err()
                .contains("longer than 1000")
        );
    }
}
