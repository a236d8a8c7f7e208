//! Outlines with signatures (`lean_document_symbols` with `signatures`): each
//! symbol's declaration kind as the source spells it (`def`, `theorem`,
//! `class inductive`, `section`, …) and each declaration's type signature as
//! Lean prints it on hover over its name (`Fix.double (n : N) : N`).
//!
//! Lean's `documentSymbol` calls every declaration a `method` and a section a
//! `namespace`; the keyword before the declared name is what tells them apart.

use lsp_types::HoverParams;
use lsp_types::request::HoverRequest;
use serde_json::{Value, json};

use crate::broker::engine::concurrent::join_all;
use crate::broker::engine::snapshot::Bound;
use crate::broker::error::{Error, Result};
use crate::lean_source::header::{Header, Keyword};
use crate::lean_source::lexer::{LexemeKind, lex};
use crate::lean_source::text::LineIndex;

/// Hover requests in flight at once, so that a long file does not queue
/// thousands of requests at Lean in one go.
const HOVERS_AT_ONCE: usize = 64;

/// The declaration keyword of `header`, the source from a symbol's range
/// start to its name: comments, docstrings, attributes (`@[simp]`) and
/// modifiers (`private`, `noncomputable`) are skipped; `class inductive` is
/// one kind. With it, the byte offset of its first word in `header`.
pub fn declaration_kind(header: &str) -> Option<(String, usize)> {
    Header::parse(header).map(|h| (h.keyword.word().to_string(), h.keyword_at))
}

/// An `example` has no name: Lean selects its keyword instead.
fn unnamed_kind(from_name: &str) -> Option<String> {
    let first = lex(from_name).into_iter().next()?;
    let word = &from_name[first.start..first.end];
    (first.kind == LexemeKind::Word && word == "example").then(|| word.to_string())
}

/// The signature in a Lean hover: the first ```` ```lean ```` block.
pub fn signature_of_hover(hover: &Value) -> Option<String> {
    let text = hover.pointer("/contents/value")?.as_str()?;
    let (_, rest) = text.split_once("```lean\n")?;
    let (code, _) = rest.split_once("```")?;
    let code = code.trim();
    (!code.is_empty()).then(|| code.to_string())
}

/// One symbol to annotate: where its object sits (a path of child indices),
/// its kind, and where to hover for its signature: on its name, else on its
/// keyword (where Lean puts an anonymous instance's name).
struct Site {
    path: Vec<usize>,
    kind: Option<String>,
    hover_at: Vec<(u64, u64)>,
}

/// Add `declaration_kind` to every symbol whose source names one, and
/// `signature` to every declaration Lean gives a type on hover. Symbols nest
/// through `children`.
pub async fn annotate(bound: &Bound<'_>, symbols: &mut Value) -> Result<()> {
    let text = &bound.state.text;
    let index = &bound.state.index;
    let mut sites = Vec::new();
    collect(symbols, text, index, &mut Vec::new(), &mut sites);

    let target = bound.target();
    let mut signatures: Vec<Option<String>> = Vec::with_capacity(sites.len());
    for chunk in sites.chunks(HOVERS_AT_ONCE) {
        let hovers = chunk.iter().map(|site| {
            let target = &target;
            async move {
                for &(line, character) in &site.hover_at {
                    let hover = target
                        .request_verbatim::<HoverRequest>(HoverParams {
                            text_document_position_params: target.position(line, character)?,
                            work_done_progress_params: Default::default(),
                        })
                        .await?;
                    if let Some(signature) = signature_of_hover(&hover) {
                        return Ok(Some(signature));
                    }
                }
                Ok::<_, Error>(None)
            }
        });
        for answer in join_all(hovers.collect()).await {
            signatures.push(answer?);
        }
    }

    for (site, signature) in sites.into_iter().zip(signatures) {
        let Some(Value::Object(symbol)) = at_path(symbols, &site.path) else {
            continue;
        };
        if let Some(kind) = site.kind {
            symbol.insert("declaration_kind".into(), json!(kind));
        }
        if let Some(signature) = signature {
            symbol.insert("signature".into(), json!(signature));
        }
    }
    Ok(())
}

fn collect(
    symbols: &Value,
    text: &str,
    index: &LineIndex,
    path: &mut Vec<usize>,
    sites: &mut Vec<Site>,
) {
    let Some(items) = symbols.as_array() else {
        return;
    };
    for (i, symbol) in items.iter().enumerate() {
        path.push(i);
        let start = position(symbol, "/range/start");
        let name = position(symbol, "/selectionRange/start");
        let offset = |(line, character): (u64, u64)| index.offset(text, line, character).ok();
        let found = match (start.and_then(offset), name.and_then(offset)) {
            (Some(from), Some(to)) if from <= to => declaration_kind(&text[from..to])
                .map(|(kind, at)| (kind, Some(from + at)))
                .or_else(|| unnamed_kind(&text[to..]).map(|kind| (kind, None))),
            _ => None,
        };
        let (kind, keyword_at) = found.map_or((None, None), |(k, at)| (Some(k), at));
        let mut hover_at = Vec::new();
        // Scopes have no type, so no signature.
        if !kind
            .as_deref()
            .and_then(Keyword::of)
            .is_some_and(Keyword::opens_scope)
        {
            hover_at.extend(name);
            hover_at.extend(keyword_at.map(|at| {
                let (line, character) = index.position(text, at);
                (u64::from(line), u64::from(character))
            }));
        }
        sites.push(Site {
            path: path.clone(),
            kind,
            hover_at,
        });
        if let Some(children) = symbol.get("children") {
            collect_children(children, text, index, path, sites);
        }
        path.pop();
    }
}

/// Children live under `children`: the path marks the step with `usize::MAX`
/// before the child's index.
fn collect_children(
    children: &Value,
    text: &str,
    index: &LineIndex,
    path: &mut Vec<usize>,
    sites: &mut Vec<Site>,
) {
    path.push(usize::MAX);
    collect(children, text, index, path, sites);
    path.pop();
}

/// The symbol a path names: indices into arrays, `usize::MAX` for the step
/// into a symbol's `children`.
fn at_path<'v>(symbols: &'v mut Value, path: &[usize]) -> Option<&'v mut Value> {
    let mut at = symbols;
    for &step in path {
        at = if step == usize::MAX {
            at.get_mut("children")?
        } else {
            at.get_mut(step)?
        };
    }
    Some(at)
}

fn position(symbol: &Value, pointer: &str) -> Option<(u64, u64)> {
    let at = symbol.pointer(pointer)?;
    Some((at["line"].as_u64()?, at["character"].as_u64()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_keyword_before_the_name_is_the_kind() {
        for (header, kind) in [
            ("def ", Some("def")),
            (
                "/-- A doc with def and theorem. -/\ntheorem ",
                Some("theorem"),
            ),
            ("@[simp, inline] private noncomputable def ", Some("def")),
            ("@[instance high] instance ", Some("instance")),
            ("-- class\nclass inductive ", Some("class inductive")),
            ("class ", Some("class")),
            ("protected abbrev ", Some("abbrev")),
            ("section ", Some("section")),
            ("", None),
            ("@[simp] ", None),
        ] {
            let found = declaration_kind(header);
            assert_eq!(found.as_ref().map(|(k, _)| k.as_str()), kind, "{header:?}");
            if let Some((kind, at)) = found {
                assert!(header[at..].starts_with(&kind), "{header:?}");
            }
        }
        // `example` is its own name: the header is empty, the name says it.
        assert_eq!(unnamed_kind("example : T := t").as_deref(), Some("example"));
        assert_eq!(unnamed_kind("examples"), None);
    }

    #[test]
    fn the_signature_is_the_first_lean_block_of_the_hover() {
        let hover = json!({"contents": {"kind": "markdown",
            "value": "```lean\nFix.double (n : N) : N\n```\n***\nA doc with ```lean\nother\n```"}});
        assert_eq!(
            signature_of_hover(&hover).as_deref(),
            Some("Fix.double (n : N) : N")
        );
        assert_eq!(signature_of_hover(&json!(null)), None);
        assert_eq!(
            signature_of_hover(&json!({"contents": {"value": "plain"}})),
            None
        );
    }

    #[test]
    fn paths_reach_nested_children() {
        let mut symbols = json!([{"name": "A", "children": [{"name": "b"}, {"name": "c"}]}]);
        let at = at_path(&mut symbols, &[0, usize::MAX, 1]).unwrap();
        assert_eq!(at["name"], "c");
    }
}
