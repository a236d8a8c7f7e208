//! Output budgets (issue 26, item 5): no tool result is unbounded. Every
//! string field longer than the field cap (a message, a goal, a hypothesis,
//! a hover) is cut in the middle, its head and tail kept around a marker
//! that says how much was cut of how much; a result still longer than the
//! result cap has its fields cut harder, then its longest lists shortened
//! from the end. Whatever was cut is said in the result's `truncated`, never
//! silently.
//!
//! The result cap: `--max-result-bytes` / `LEAN_BEAM_MAX_RESULT_BYTES`
//! (default 64 KiB), and per call `max_result_bytes` on every tool whose
//! result carries Lean text (the others are bounded by construction; the
//! two lists are kept by `tests/catalog.rs`).

use std::sync::OnceLock;

use serde_json::Value;

/// The longest a string field stays, in characters (peers cut at 6,000).
pub const FIELD_CHARS: usize = 6_000;
/// The default result cap, in bytes of its JSON text.
pub const DEFAULT_RESULT_BYTES: usize = 64 * 1024;
/// No cap goes below this: a result always has room for its head.
pub const MIN_RESULT_BYTES: usize = 1_024;
/// A field is never cut shorter than this many characters.
const MIN_FIELD_CHARS: usize = 80;

static RESULT_BYTES: OnceLock<usize> = OnceLock::new();

/// Set the server's result cap (the `--max-result-bytes` flag), once, at
/// start-up; without it the environment's, else the default.
pub fn set_result_bytes(bytes: usize) -> Result<(), String> {
    RESULT_BYTES
        .set(bytes.max(MIN_RESULT_BYTES))
        .map_err(|_| "the result cap is already set".to_owned())
}

/// The server's result cap.
pub fn result_bytes() -> usize {
    *RESULT_BYTES.get_or_init(|| {
        std::env::var("LEAN_BEAM_MAX_RESULT_BYTES")
            .ok()
            .and_then(|v| v.trim().parse::<usize>().ok())
            .map_or(DEFAULT_RESULT_BYTES, |b| b.max(MIN_RESULT_BYTES))
    })
}

pub use crate::results::Truncated;

/// `s` cut to `cap` characters (plus the marker), its middle elided.
fn elide(s: &str, cap: usize) -> Option<String> {
    let total = s.chars().count();
    if total <= cap {
        return None;
    }
    let head = cap / 2;
    let tail = cap - head;
    let start: String = s.chars().take(head).collect();
    let end: String = s.chars().skip(total - tail).collect();
    let cut = total - head - tail;
    Some(format!(
        "{start}\n… [{cut} of {total} characters elided] …\n{end}"
    ))
}

/// The key of edit text (LSP `TextEdit.newText`, in handle edits, code
/// actions and completions): an agent writes it into its file, so it is
/// never cut; a marker there would land in the source.
const EDIT_TEXT: &str = "newText";

/// Whether `value` holds edit text anywhere.
fn holds_edit(value: &Value) -> bool {
    match value {
        Value::Array(items) => items.iter().any(holds_edit),
        Value::Object(map) => map.contains_key(EDIT_TEXT) || map.values().any(holds_edit),
        _ => false,
    }
}

/// Whether `items` are the edits of one change (`TextEdit`s, or a code
/// action's per-document `edits`): dropping some would leave a partial edit.
fn is_one_change(items: &[Value]) -> bool {
    items.iter().any(|item| {
        item.as_object()
            .is_some_and(|m| m.contains_key(EDIT_TEXT) || m.contains_key("edits"))
    })
}

/// A result whose edit text alone passes its byte cap: never returned cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EditTooLarge {
    /// The result's size with its other fields cut.
    pub bytes: usize,
    pub limit: usize,
}

/// Cut every string of `value` longer than `cap` characters, edit text
/// aside; the count.
fn elide_all(value: &mut Value, cap: usize) -> usize {
    match value {
        Value::String(s) => match elide(s, cap) {
            Some(cut) => {
                *s = cut;
                1
            }
            None => 0,
        },
        Value::Array(items) => items.iter_mut().map(|v| elide_all(v, cap)).sum(),
        Value::Object(map) => map
            .iter_mut()
            .filter(|(k, _)| k.as_str() != EDIT_TEXT)
            .map(|(_, v)| elide_all(v, cap))
            .sum(),
        _ => 0,
    }
}

/// Halve the longest list of `value` (by its items' count); the items left
/// out, 0 when no list has more than one item.
fn shorten_longest_list(value: &mut Value) -> usize {
    /// The JSON pointer and length of the longest list under `value`.
    fn longest(value: &Value, at: String, best: &mut Option<(String, usize)>) {
        let children: Box<dyn Iterator<Item = (String, &Value)>> = match value {
            // The edits of one change are kept whole, or not returned.
            Value::Array(items) if is_one_change(items) => return,
            Value::Array(items) => {
                if best.as_ref().is_none_or(|(_, n)| items.len() > *n) {
                    *best = Some((at.clone(), items.len()));
                }
                Box::new(items.iter().enumerate().map(|(i, v)| (i.to_string(), v)))
            }
            Value::Object(map) => Box::new(
                map.iter()
                    .map(|(k, v)| (k.replace('~', "~0").replace('/', "~1"), v)),
            ),
            _ => return,
        };
        for (key, child) in children {
            longest(child, format!("{at}/{key}"), best);
        }
    }
    let mut best = None;
    longest(value, String::new(), &mut best);
    match best {
        Some((at, n)) if n > 1 => match value.pointer_mut(&at) {
            Some(Value::Array(list)) => {
                let keep = n / 2;
                list.truncate(keep);
                n - keep
            }
            _ => 0,
        },
        _ => 0,
    }
}

fn size(value: &Value) -> usize {
    serde_json::to_string(value).map_or(0, |s| s.len())
}

/// Bound a tool's structured result: fields to [`FIELD_CHARS`], the whole
/// to `limit` bytes (the server's cap when `None`), and `truncated` added
/// when anything was cut. Edit text is never cut: a result that holds edit
/// text and cannot fit without cutting it is [`EditTooLarge`].
pub fn bound(value: &mut Value, limit: Option<u64>) -> Result<(), EditTooLarge> {
    let limit = limit.map_or_else(result_bytes, |l| {
        usize::try_from(l)
            .unwrap_or(usize::MAX)
            .max(MIN_RESULT_BYTES)
    });
    let original = size(value);
    let mut fields = elide_all(value, FIELD_CHARS);
    let mut items = 0;
    if size(value) > limit {
        let whole = value.clone();
        let mut cap = FIELD_CHARS;
        while size(value) > limit && cap > MIN_FIELD_CHARS {
            cap = (cap / 2).max(MIN_FIELD_CHARS);
            *value = whole.clone();
            fields = elide_all(value, cap);
        }
        // Room for the `truncated` note itself.
        while size(value) + 96 > limit {
            let dropped = shorten_longest_list(value);
            if dropped == 0 {
                break;
            }
            items += dropped;
        }
        if size(value) + 96 > limit && holds_edit(value) {
            return Err(EditTooLarge {
                bytes: size(value),
                limit,
            });
        }
    }
    if fields + items > 0 {
        if let Value::Object(map) = value {
            let note = Truncated {
                fields,
                items,
                bytes: original,
                limit,
            };
            map.insert(
                "truncated".into(),
                serde_json::to_value(note).expect("a note serializes"),
            );
        }
    }
    Ok(())
}

/// Declare `truncated` in a tool's output schema.
pub fn declare(schema: &mut Value) {
    if let Some(properties) = schema.get_mut("properties").and_then(Value::as_object_mut) {
        let note = crate::results::field_schema::<Truncated>(
            "Present when the output budget cut this result: what was cut \
             (`fields` cut in the middle, `items` left out, `bytes` before the cut, \
             the `limit`).",
        );
        // A result that keeps its own bounds declares its own (the
        // feedback report's evidence caps).
        properties.entry("truncated").or_insert(note);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_long_field_keeps_its_head_and_tail_around_its_length() {
        let long = format!("{}{}", "a".repeat(5_000), "b".repeat(5_000));
        let mut value = json!({ "message": long, "short": "kept" });
        bound(&mut value, None).unwrap();
        let cut = value["message"].as_str().unwrap();
        assert!(cut.starts_with(&"a".repeat(3_000)), "{}", &cut[..40]);
        assert!(cut.ends_with(&"b".repeat(3_000)));
        assert!(
            cut.contains("[4000 of 10000 characters elided]"),
            "{cut:.40}"
        );
        assert_eq!(value["short"], "kept");
        assert_eq!(value["truncated"]["fields"], 1);
        assert_eq!(value["truncated"]["items"], 0);
        assert_eq!(value["truncated"]["limit"], DEFAULT_RESULT_BYTES);
    }

    #[test]
    fn a_result_within_its_budget_is_untouched_and_unflagged() {
        let mut value = json!({ "goals": [{ "pretty": "⊢ True" }], "n": 3 });
        let before = value.clone();
        bound(&mut value, Some(2_000)).unwrap();
        assert_eq!(value, before);
    }

    #[test]
    fn a_long_result_is_cut_to_its_limit_fields_first_then_lists() {
        let items: Vec<Value> = (0..400)
            .map(|i| json!({ "message": format!("{i}: {}", "x".repeat(900)) }))
            .collect();
        let mut value = json!({ "path": "A.lean", "items": items });
        let original = size(&value);
        bound(&mut value, Some(20_000)).unwrap();
        assert!(size(&value) <= 20_000, "{}", size(&value));
        let note = &value["truncated"];
        assert_eq!(note["bytes"], original);
        assert_eq!(note["limit"], 20_000);
        assert!(note["fields"].as_u64().unwrap() > 0, "{note}");
        let kept = value["items"].as_array().unwrap();
        assert_eq!(note["items"].as_u64().unwrap() as usize, 400 - kept.len());
        // What is kept is the start, in order; each cut field says so.
        assert!(kept[0]["message"].as_str().unwrap().starts_with("0: "));
        assert!(
            kept[0]["message"]
                .as_str()
                .unwrap()
                .contains("characters elided")
        );
        assert_eq!(value["path"], "A.lean");
    }

    #[test]
    fn no_cap_goes_below_the_minimum() {
        let mut value = json!({ "text": "y".repeat(3_000) });
        bound(&mut value, Some(1)).unwrap();
        assert_eq!(value["truncated"]["limit"], MIN_RESULT_BYTES);
        assert!(size(&value) <= MIN_RESULT_BYTES, "{}", size(&value));
    }

    /// A text edit with `text` as its new text, beside a long message.
    fn edit_result(text: &str) -> Value {
        json!({
            "message": "m".repeat(20_000),
            "edit": {"range": {}, "newText": text},
            "code_action": {"edit": {"changes": {"file:///A.lean": [
                {"range": {}, "newText": "a"}, {"range": {}, "newText": "b"},
                {"range": {}, "newText": "c"}
            ]}}},
        })
    }

    #[test]
    fn edit_text_is_never_cut_by_the_field_cap() {
        let long = "x".repeat(FIELD_CHARS * 2);
        let mut value = edit_result(&long);
        bound(&mut value, None).unwrap();
        assert_eq!(value["edit"]["newText"], long.as_str());
        assert!(value["message"].as_str().unwrap().contains("elided"));
        assert_eq!(value["truncated"]["fields"], 1);
    }

    #[test]
    fn the_edits_of_one_change_are_kept_whole_or_refused() {
        // Room for the edits once the message is cut: all three stay.
        let mut value = edit_result("e");
        bound(&mut value, Some(2_000)).unwrap();
        let edits = &value["code_action"]["edit"]["changes"]["file:///A.lean"];
        assert_eq!(edits.as_array().unwrap().len(), 3, "{value}");
        // An edit past the cap: refused, never cut.
        let mut value = edit_result(&"y".repeat(30_000));
        let refused = bound(&mut value, Some(20_000)).unwrap_err();
        assert_eq!(refused.limit, 20_000);
        assert!(refused.bytes > 30_000, "{refused:?}");
    }
}
