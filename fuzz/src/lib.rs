//! Structure-aware input generation shared by the fuzz targets: JSON values
//! built from the fuzzer's bytes with `arbitrary`, biased towards the keys,
//! strings and numbers the protocol layer branches on, and argument objects
//! derived from a tool's own JSON Schema (mostly valid, sometimes broken in one
//! place), so that the fuzzer spends its time past the first `type` check.

use arbitrary::{Result, Unstructured};
use serde_json::{Map, Number, Value};

/// Strings the protocol layer compares against.
pub const WORDS: &[&str] = &[
    "2.0",
    "1.0",
    "jsonrpc",
    "id",
    "method",
    "params",
    "result",
    "error",
    "_meta",
    "name",
    "arguments",
    "progressToken",
    "requestId",
    "cursor",
    "level",
    "inputResponses",
    "requestState",
    "initialize",
    "notifications/initialized",
    "notifications/cancelled",
    "tools/list",
    "tools/call",
    "server/discover",
    "ping",
    "logging/setLevel",
    "textDocument/hover",
    "$/lean/plainGoal",
    "2026-07-28",
    "2025-11-25",
    "2024-11-05",
    "io.modelcontextprotocol/",
    "io.modelcontextprotocol/protocolVersion",
    "io.modelcontextprotocol/clientCapabilities",
    "io.modelcontextprotocol/clientInfo",
    "io.modelcontextprotocol/logLevel",
    "io.modelcontextprotocol/other",
    "debug",
    "notice",
    "emergency",
    "loud",
    "beam_stats",
    "lean_sync",
    "workspace",
    "root",
    "/",
    "",
    "..",
    "\u{0}",
    "é",
    "𝔽",
    "~1",
];

/// Numbers at the edges the code converts between (i64/u64/i128/f64, whole floats).
pub fn number(u: &mut Unstructured<'_>) -> Result<Value> {
    Ok(match u.int_in_range(0u8..=14)? {
        0 => Value::from(0),
        1 => Value::from(-1),
        2 => Value::from(i64::MAX),
        3 => Value::from(i64::MIN),
        4 => Value::from(u64::MAX),
        5 => Value::from(1u64 << 53),
        6 => Number::from_f64(2.0)
            .map(Value::Number)
            .unwrap_or(Value::Null),
        7 => Number::from_f64(-0.0)
            .map(Value::Number)
            .unwrap_or(Value::Null),
        8 => Number::from_f64(0.5)
            .map(Value::Number)
            .unwrap_or(Value::Null),
        9 => Number::from_f64(1e300)
            .map(Value::Number)
            .unwrap_or(Value::Null),
        10 => Number::from_f64(18446744073709551616.0)
            .map(Value::Number)
            .unwrap_or(Value::Null),
        11 => Value::from(u.arbitrary::<i64>()?),
        12 => Value::from(u.arbitrary::<u64>()?),
        13 => Number::from_f64(u.arbitrary::<f64>()?)
            .map(Value::Number)
            .unwrap_or(Value::Null),
        _ => Value::from(u.int_in_range(0i64..=1000)?),
    })
}

pub fn string(u: &mut Unstructured<'_>) -> Result<String> {
    Ok(if u.ratio(2u8, 3u8)? {
        (*u.choose(WORDS)?).to_string()
    } else {
        u.arbitrary::<String>()?
    })
}

/// Any JSON value, nested at most `depth` levels.
pub fn value(u: &mut Unstructured<'_>, depth: u32) -> Result<Value> {
    let top = if depth == 0 { 3 } else { 5 };
    Ok(match u.int_in_range(0u8..=top)? {
        0 => Value::Null,
        1 => Value::Bool(u.arbitrary()?),
        2 => number(u)?,
        3 => Value::String(string(u)?),
        4 => {
            let n = u.int_in_range(0usize..=4)?;
            let mut items = Vec::with_capacity(n);
            for _ in 0..n {
                items.push(value(u, depth - 1)?);
            }
            Value::Array(items)
        }
        _ => Value::Object(object(u, depth - 1)?),
    })
}

pub fn object(u: &mut Unstructured<'_>, depth: u32) -> Result<Map<String, Value>> {
    let n = u.int_in_range(0usize..=5)?;
    let mut map = Map::new();
    for _ in 0..n {
        let key = string(u)?;
        map.insert(key, value(u, depth)?);
    }
    Ok(map)
}

/// A value for `schema` (one of the generated, self-contained tool schemas):
/// valid most of the time, with an occasional wrong type, out-of-range number,
/// off-enum string, missing required or undeclared member.
pub fn from_schema(u: &mut Unstructured<'_>, schema: &Value, depth: u32) -> Result<Value> {
    if depth == 0 || u.ratio(1u8, 16u8)? {
        return value(u, depth.min(2));
    }
    if let Some(options) = schema.get("enum").and_then(Value::as_array) {
        if !options.is_empty() && u.ratio(7u8, 8u8)? {
            return Ok(u.choose(options)?.clone());
        }
    }
    match schema.get("type").and_then(Value::as_str) {
        Some("object") => {
            let empty = Map::new();
            let properties = schema
                .get("properties")
                .and_then(Value::as_object)
                .unwrap_or(&empty);
            let required: Vec<&str> = schema
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let mut out = Map::new();
            for (name, sub) in properties {
                let wanted = if required.contains(&name.as_str()) {
                    u.ratio(15u8, 16u8)?
                } else {
                    u.ratio(1u8, 2u8)?
                };
                if wanted {
                    out.insert(name.clone(), from_schema(u, sub, depth - 1)?);
                }
            }
            // Required keys of an open object (`code_action` needs `data`).
            for name in &required {
                if !out.contains_key(*name) && u.ratio(15u8, 16u8)? {
                    out.insert((*name).to_string(), value(u, 2)?);
                }
            }
            if u.ratio(1u8, 12u8)? {
                out.insert(string(u)?, value(u, 1)?);
            }
            Ok(Value::Object(out))
        }
        Some("array") => {
            let items = schema.get("items").cloned().unwrap_or(Value::Bool(true));
            let n = u.int_in_range(0usize..=3)?;
            let mut out = Vec::with_capacity(n);
            for _ in 0..n {
                out.push(from_schema(u, &items, depth - 1)?);
            }
            Ok(Value::Array(out))
        }
        Some("string") => Ok(Value::String(string(u)?)),
        Some("integer") => {
            if u.ratio(3u8, 4u8)? {
                Ok(Value::from(u.int_in_range(0u64..=200)?))
            } else {
                number(u)
            }
        }
        Some("boolean") => Ok(Value::Bool(u.arbitrary()?)),
        _ => value(u, depth.min(2)),
    }
}
