//! What Lake records of a package module's build, read and checked the way
//! Lake checks it, so `lean_verify` can take a package's `.olean` only while
//! its recorded inputs are still what the package holds.
//!
//! Lake 4.35 (`Lake/Build/Trace.lean`, `Common.lean`, `Module.lean`) writes
//! next to each module's `.olean` a `<Mod>.trace`, the JSON of a
//! `BuildMetadata`: `schemaVersion`, `depHash` (the mix of every input's
//! hash), `inputs` (the input traces as a tree: `[caption, hash]` leaves,
//! `[caption, [...]]` nodes), `outputs`, `log`, `synthetic`; and a
//! `<file>.hash` per output (`.olean.hash`, `.ilean.hash`…): Lake's hash of
//! that file as 16 lowercase hex digits. Among the inputs, the module's source
//! is a leaf captioned with its path (`Module.recFetchInput`: `Hash.ofText`
//! of the file's text), and each import's `.olean` a leaf captioned with the
//! `.olean`'s path (`fetchFileTrace`: its `.hash` file, or the bytes' hash).
//!
//! Lake's hashes are Lean's runtime hashes: a text is
//! `mixHash 1723 (String.hash (crlfToLf text))` (`Hash.ofText`: `\r\n`
//! becomes `\n`, nothing else changes), bytes are `ByteArray.hash`; both are
//! MurmurHash64A with seed 11 (`runtime/hash.cpp`), and `mixHash` is
//! `runtime/hash.h`'s `hash(h, k)`. The unit tests pin values computed by the
//! 4.35 runtime itself (`libleanshared.so`'s `lean_string_hash`,
//! `lean_byte_array_hash`, `lean_uint64_mix_hash`).
//!
//! Not reproduced: `depHash` itself, which also mixes Lean's own trace (its
//! git hash), the platform, the module's options and `leanArgs` in Lake's job
//! order; each recorded leaf is checked instead, which is what `depHash`
//! summarises for a module's sources and imports.

use serde_json::Value;

const M: u64 = 0xc6a4a7935bd1e995;
const R: u32 = 47;

/// Lean's `hash_str` (MurmurHash64A) with Lean's seed, 11.
pub fn bytes_hash(bytes: &[u8]) -> u64 {
    let mut h: u64 = 11 ^ (bytes.len() as u64).wrapping_mul(M);
    let mut chunks = bytes.chunks_exact(8);
    for chunk in &mut chunks {
        let mut k = u64::from_le_bytes(chunk.try_into().expect("8 bytes"));
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h ^= k;
        h = h.wrapping_mul(M);
    }
    let tail = chunks.remainder();
    if !tail.is_empty() {
        for (i, b) in tail.iter().enumerate() {
            h ^= u64::from(*b) << (8 * i);
        }
        h = h.wrapping_mul(M);
    }
    h ^= h >> R;
    h = h.wrapping_mul(M);
    h ^= h >> R;
    h
}

/// Lean's `mixHash` (`runtime/hash.h`, `hash(h, k)`), quirks included.
pub fn mix(h: u64, k: u64) -> u64 {
    let mut k = k.wrapping_mul(M);
    k ^= k >> R;
    k ^= M;
    (h ^ k).wrapping_mul(M)
}

/// Lake's `Hash.nil` (the hash of `Name.anonymous`).
const NIL: u64 = 1723;

/// Lake's `Hash.ofText`: a source file's hash.
pub fn text_hash(text: &str) -> u64 {
    mix(NIL, bytes_hash(text.replace("\r\n", "\n").as_bytes()))
}

/// Lake's spelling of a hash: 16 lowercase hex digits.
pub fn hex(hash: u64) -> String {
    format!("{hash:016x}")
}

/// A hash as Lake writes it: 16 hex digits (its `.hash` files and today's
/// traces), or a JSON number / decimal string (older traces).
fn parse_hash(v: &Value) -> Option<u64> {
    match v {
        Value::String(s) if s.len() == 16 => u64::from_str_radix(s, 16).ok(),
        Value::String(s) => s.parse().ok(),
        Value::Number(n) => n.as_u64(),
        _ => None,
    }
}

/// A `.hash` file's content.
pub fn parse_hash_file(text: &str) -> Option<u64> {
    let t = text.trim();
    (t.len() == 16 && t.bytes().all(|b| b.is_ascii_hexdigit()))
        .then(|| u64::from_str_radix(t, 16).ok())
        .flatten()
}

/// A module's `.trace`: the leaves of its input tree (caption, hash).
#[derive(Debug, Clone, PartialEq)]
pub struct Trace {
    pub dep_hash: u64,
    pub leaves: Vec<(String, u64)>,
}

impl Trace {
    /// Read a trace file's JSON; why it is not one Lake wrote.
    pub fn parse(bytes: &[u8]) -> Result<Trace, String> {
        let v: Value = serde_json::from_slice(bytes).map_err(|e| format!("is not JSON ({e})"))?;
        let Some(obj) = v.as_object() else {
            return Err(
                "records only a hash (a trace of an older Lake): its inputs are not recorded"
                    .to_string(),
            );
        };
        let dep_hash = obj
            .get("depHash")
            .and_then(parse_hash)
            .ok_or("has no depHash")?;
        let mut leaves = Vec::new();
        collect(obj.get("inputs").unwrap_or(&Value::Null), &mut leaves, 0)?;
        Ok(Trace { dep_hash, leaves })
    }

    /// The recorded hash of the input captioned `path` (a source or an
    /// `.olean` as Lake named it), matched by its trailing components.
    pub fn input_ending_with(&self, rel: &str) -> Option<(&str, u64)> {
        self.leaves
            .iter()
            .find(|(caption, _)| {
                caption == rel
                    || caption
                        .strip_suffix(rel)
                        .is_some_and(|head| head.ends_with('/'))
            })
            .map(|(c, h)| (c.as_str(), *h))
    }
}

/// The leaves of Lake's `serializeInputs` tree: an array of
/// `[caption, hash | [...]]` pairs.
fn collect(v: &Value, out: &mut Vec<(String, u64)>, depth: usize) -> Result<(), String> {
    if depth > 64 {
        return Err("nests its inputs deeper than 64".to_string());
    }
    let Some(items) = v.as_array() else {
        return if v.is_null() {
            Ok(())
        } else {
            Err("has inputs that are not an array".to_string())
        };
    };
    for item in items {
        let pair = item.as_array().filter(|p| p.len() == 2);
        let Some((caption, value)) = pair.and_then(|p| Some((p[0].as_str()?, &p[1]))) else {
            return Err("has an input that is not a [caption, trace] pair".to_string());
        };
        if value.is_array() {
            collect(value, out, depth + 1)?;
        } else {
            let hash = parse_hash(value)
                .ok_or_else(|| format!("records input {caption:?} without a hash"))?;
            out.push((caption.to_string(), hash));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Values computed by Lean 4.35.0's runtime (`libleanshared.so` of the
    /// test toolchain, called through ctypes): `lean_uint64_mix_hash`,
    /// `lean_string_hash` and `lean_byte_array_hash` (the same for equal
    /// bytes).
    #[test]
    fn the_hashes_are_lean_4_35s_own() {
        assert_eq!(mix(1723, 42), 16436471498770525538);
        assert_eq!(mix(0, 0), 3866779316627607737);
        assert_eq!(bytes_hash(b""), 9877294847684254529);
        assert_eq!(bytes_hash(b"a"), 15917291556903334389);
        assert_eq!(bytes_hash(b"hello world"), 1766380345486652199);
        assert_eq!(bytes_hash(b"0123456789abcdefXYZ"), 18205935541495862986);
        let all: Vec<u8> = (0..200u8).collect();
        assert_eq!(bytes_hash(&all), 7252484130816958528);
    }

    #[test]
    fn text_hashes_normalise_crlf_only() {
        assert_eq!(text_hash("a\r\nb\n"), text_hash("a\nb\n"));
        assert_ne!(text_hash("a\rb\n"), text_hash("a\nb\n"));
        assert_eq!(text_hash("a"), mix(1723, bytes_hash(b"a")));
        assert_eq!(hex(255), "00000000000000ff");
    }

    #[test]
    fn traces_are_read_as_lake_writes_them() {
        let json = br#"{"schemaVersion":"2025-09-10","depHash":"00000000000000ff",
            "inputs":[["Pkg.Basic:leanArts",[["./.lake/packages/pkg/Pkg/Basic.lean","0000000000000001"],
            ["Pkg.Util",[["./.lake/packages/pkg/.lake/build/lib/lean/Pkg/Util.olean","0000000000000002"]]]]],
            ["lean","0000000000000003"]],"outputs":null,"log":[],"synthetic":false}"#;
        let t = Trace::parse(json).unwrap();
        assert_eq!(t.dep_hash, 255);
        assert_eq!(t.leaves.len(), 3);
        assert_eq!(t.input_ending_with("Pkg/Basic.lean").unwrap().1, 1);
        assert_eq!(t.input_ending_with("lib/lean/Pkg/Util.olean").unwrap().1, 2);
        assert_eq!(
            t.input_ending_with("kg/Basic.lean"),
            None,
            "whole components"
        );
        assert!(Trace::parse(b"12345").unwrap_err().contains("older Lake"));
        assert!(Trace::parse(b"{}").is_err());
        assert!(Trace::parse(br#"{"depHash":"1","inputs":[["a"]]}"#).is_err());
        assert_eq!(parse_hash_file("00000000000000ff\n"), Some(255));
        assert_eq!(parse_hash_file("ff"), None);
    }
}
