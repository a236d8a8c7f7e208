//! Redaction of feedback reports: the home directory, the user name and
//! anything that looks like a credential are removed from every string: known
//! token formats, long random-looking tokens (with or without `/`), URL
//! credentials (`scheme://user:pass@host`), the value after `Bearer`/`Basic`
//! and after a secret-looking key (`password: …`, `API_TOKEN=…`, quoted
//! values whole), and PEM blocks.

use serde_json::Value;

/// What to remove, read once from the environment of this process.
pub struct Redactor {
    home: Option<String>,
    user: Option<String>,
}

/// Prefixes of well-known credential formats.
const TOKEN_PREFIXES: &[&str] = &[
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "github_pat_",
    "glpat-",
    "sk-",
    "sk_live_",
    "sk_test_",
    "rk_live_",
    "xoxb-",
    "xoxp-",
    "xoxa-",
    "xoxs-",
    "AKIA",
    "ASIA",
    "AIza",
    "ya29.",
    "npm_",
    "pypi-",
    "hf_",
];

/// Key names whose values are secrets (`password=…`, `"api_key": "…"`): a
/// key ending with one of these, whatever separates the value.
const SECRET_KEYS: &[&str] = &[
    "password",
    "passwd",
    "secret",
    "token",
    "api_key",
    "apikey",
    "api-key",
    "auth",
    "authorization",
    "credential",
    "credentials",
    "private_key",
    "access_key",
];

/// Words that make a key secret wherever they appear in it (`MY_TOKEN_VALUE`,
/// `SIGNING_KEY_ID`), when the value follows an `=`: `KEY=value` is how
/// environments and config files set secrets, and Lean's `:=` is not it.
const SECRET_WORDS: &[&str] = &[
    "token",
    "secret",
    "password",
    "passwd",
    "key",
    "credential",
    "auth",
    "private",
];

/// Authorization schemes: kept, and the credential after them redacted.
const AUTH_SCHEMES: &[&str] = &["bearer", "basic", "token", "digest"];

const REDACTED: &str = "[REDACTED]";

/// Account names that identify nobody and are ordinary words: redacting them
/// would mangle reports (a `root` user's home is still replaced by `~`).
const GENERIC_ACCOUNTS: &[&str] = &[
    "root", "admin", "user", "users", "ubuntu", "runner", "nobody", "build", "ci",
];

impl Redactor {
    pub fn from_env() -> Self {
        let home = std::env::var("HOME").ok().filter(|h| h.len() > 1);
        let user = std::env::var("USER")
            .or_else(|_| std::env::var("LOGNAME"))
            .ok()
            .or_else(|| {
                home.as_deref()
                    .and_then(|h| std::path::Path::new(h).file_name())
                    .map(|n| n.to_string_lossy().into_owned())
            })
            .filter(|u| u.len() >= 3 && !GENERIC_ACCOUNTS.contains(&u.as_str()));
        Redactor { home, user }
    }

    #[cfg(test)]
    pub fn new(home: Option<&str>, user: Option<&str>) -> Self {
        Redactor {
            home: home.map(str::to_string),
            user: user.map(str::to_string),
        }
    }

    pub fn text(&self, text: &str) -> String {
        let mut out = redact_secrets(&redact_url_credentials(&redact_pem(text)));
        if let Some(home) = &self.home {
            out = out.replace(home.as_str(), "~");
        }
        if let Some(user) = &self.user {
            out = replace_word(&out, user, "<user>");
        }
        out
    }

    /// Redact every string value of a JSON value (keys are the report's own).
    pub fn value(&self, value: &mut Value) {
        match value {
            Value::String(s) => *s = self.text(s),
            Value::Array(items) => items.iter_mut().for_each(|v| self.value(v)),
            Value::Object(map) => {
                let entries: Vec<(String, Value)> = std::mem::take(map).into_iter().collect();
                for (k, mut v) in entries {
                    let key = k.to_ascii_lowercase();
                    if (SECRET_KEYS.iter().any(|s| key.contains(s)) || secret_key(&key, '='))
                        && v.is_string()
                    {
                        v = Value::String(REDACTED.into());
                    } else {
                        self.value(&mut v);
                    }
                    map.insert(k, v);
                }
            }
            _ => {}
        }
    }
}

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Replace `word` where it stands as a whole word.
fn replace_word(text: &str, word: &str, with: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find(word) {
        let before = rest[..i].chars().next_back();
        let after = rest[i + word.len()..].chars().next();
        out.push_str(&rest[..i]);
        if before.is_some_and(is_word_char) || after.is_some_and(is_word_char) {
            out.push_str(word);
        } else {
            out.push_str(with);
        }
        rest = &rest[i + word.len()..];
    }
    out.push_str(rest);
    out
}

fn token_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/' | '+' | '=')
}

/// Whether a token looks like a credential: a known prefix, or a long run of
/// mixed letters and digits (keys, hashes of secrets, JWTs), `/` and `+`
/// included (base64: cloud secret keys) unless it reads as a path.
fn looks_secret(token: &str) -> bool {
    let trimmed = token.trim_end_matches(['.', ',']);
    if TOKEN_PREFIXES
        .iter()
        .any(|p| trimmed.starts_with(p) && trimmed.len() >= p.len() + 8)
    {
        return true;
    }
    let letters = trimmed.chars().filter(char::is_ascii_alphabetic).count();
    let digits = trimmed.chars().filter(char::is_ascii_digit).count();
    let upper = trimmed.chars().filter(char::is_ascii_uppercase).count();
    if trimmed.contains('/') {
        // A path starts at a root or a dot, or has a file extension; base64
        // has neither.
        let path_like = trimmed.starts_with(['/', '.', '~']) || trimmed.contains('.');
        let lower = letters - upper;
        return !path_like && trimmed.len() >= 30 && upper >= 3 && lower >= 3 && digits >= 1;
    }
    if trimmed.len() < 32 {
        return false;
    }
    letters >= 8 && digits >= 4 && (upper >= 2 || trimmed.starts_with("eyJ"))
}

/// Whether a key's value is a secret when `sep` (`=` or `:`) sets it.
fn secret_key(key: &str, sep: char) -> bool {
    let k = key.trim_start_matches('-').to_ascii_lowercase();
    !k.is_empty()
        && (SECRET_KEYS.iter().any(|s| k.ends_with(s))
            || (sep == '=' && SECRET_WORDS.iter().any(|s| k.contains(s))))
}

/// Replace every PEM block (`-----BEGIN …-----` to `-----END …-----`) whole.
fn redact_pem(text: &str) -> String {
    const BEGIN: &str = "-----BEGIN ";
    const END: &str = "-----END ";
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find(BEGIN) {
        out.push_str(&rest[..i]);
        out.push_str("[REDACTED PEM BLOCK]");
        let block = &rest[i..];
        rest = match block.find(END) {
            Some(j) => {
                let after = &block[j + END.len()..];
                // The END line's closing dashes, if on the same line.
                let line_end = after.find('\n').unwrap_or(after.len());
                match after[..line_end].find("-----") {
                    Some(k) => &after[k + 5..],
                    None => &after[line_end..],
                }
            }
            None => "",
        };
    }
    out.push_str(rest);
    out
}

/// Replace the user information of every `scheme://user:pass@host` URL.
fn redact_url_credentials(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("://") {
        let (head, tail) = rest.split_at(i + 3);
        out.push_str(head);
        let authority_len = tail
            .find(|c: char| {
                c.is_whitespace() || matches!(c, '/' | '?' | '#' | '"' | '\'' | '<' | '>' | '`')
            })
            .unwrap_or(tail.len());
        let authority = &tail[..authority_len];
        match authority.rfind('@') {
            Some(at) => {
                out.push_str(REDACTED);
                rest = &tail[at..];
            }
            None => rest = tail,
        }
    }
    out.push_str(rest);
    out
}

/// The end of a quoted value starting at `open` (the byte after the closing
/// quote), if it closes on the same line.
fn quoted_end(text: &str, open: usize, quote: char) -> Option<usize> {
    let body = &text[open + 1..];
    let line = &body[..body.find('\n').unwrap_or(body.len())];
    line.find(quote).map(|k| open + 1 + k + 1)
}

/// Remove credential-looking tokens and the values of `secret-key=value` pairs.
fn redact_secrets(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.char_indices().peekable();
    let mut redact_next_value = false;
    while let Some(&(i, c)) = chars.peek() {
        if !token_char(c) {
            // An opening quote: after the separator, not the key's own
            // closing quote.
            let opening = out.trim_end().ends_with([':', '=']);
            // A quote escaped inside a JSON string (`KEY=\"…\"`) opens one too.
            let escaped = c == '\\' && text[i + 1..].starts_with('"');
            if redact_next_value && opening && escaped {
                if let Some(k) = text[i + 2..].find("\\\"") {
                    let end = i + 2 + k + 2;
                    if !text[i..end].contains('\n') {
                        out.push_str("\\\"");
                        out.push_str(REDACTED);
                        out.push_str("\\\"");
                        while chars.peek().is_some_and(|&(j, _)| j < end) {
                            chars.next();
                        }
                        redact_next_value = false;
                        continue;
                    }
                }
            }
            if redact_next_value && opening && (c == '"' || c == '\'') {
                if let Some(end) = quoted_end(text, i, c) {
                    // A quoted value, spaces and all.
                    out.push(c);
                    out.push_str(REDACTED);
                    out.push(c);
                    while chars.peek().is_some_and(|&(j, _)| j < end) {
                        chars.next();
                    }
                    redact_next_value = false;
                    continue;
                }
            }
            out.push(c);
            chars.next();
            if c == '\\' && text[i + 1..].starts_with(['n', 'r', 't']) {
                // A JSON escape (`\n` in a pretty-printed payload) separates
                // tokens like the white space it stands for.
                if let Some((_, e)) = chars.next() {
                    out.push(e);
                }
                continue;
            }
            if c == ':' || c.is_whitespace() || matches!(c, '"' | '\'' | '\\') {
                // keep the flag for the value after the separator
            } else {
                redact_next_value = false;
            }
            continue;
        }
        let mut end = i;
        while let Some(&(j, c)) = chars.peek() {
            if !token_char(c) {
                break;
            }
            end = j + c.len_utf8();
            chars.next();
        }
        let token = &text[i..end];
        if token.chars().all(|c| c == '=') {
            // `KEY = value`: the separator alone.
            out.push_str(token);
            continue;
        }
        // `key=value` within one token (`KEY="…"` leaves the value to the
        // quote rule).
        if let Some((key, value)) = token.split_once('=') {
            if secret_key(key, '=') || (key.is_empty() && redact_next_value) {
                out.push_str(key);
                out.push('=');
                if value.is_empty() {
                    redact_next_value = true;
                } else {
                    out.push_str(REDACTED);
                    redact_next_value = false;
                }
                continue;
            }
        }
        let lower = token.to_ascii_lowercase();
        if redact_next_value && AUTH_SCHEMES.contains(&lower.as_str()) {
            // `Authorization: Bearer <credential>`: the scheme stays.
            out.push_str(token);
            continue;
        }
        if redact_next_value || looks_secret(token) {
            out.push_str(REDACTED);
            redact_next_value = false;
            continue;
        }
        let sep = text[end..]
            .trim_start_matches([' ', '\t', '"', '\''])
            .chars()
            .next();
        redact_next_value = lower == "bearer"
            || match sep {
                Some(sep @ ('=' | ':')) => secret_key(token, sep),
                _ => SECRET_KEYS.iter().any(|s| lower.ends_with(s)),
            };
        out.push_str(token);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn removes_home_user_and_secrets() {
        let r = Redactor::new(Some("/home/alice"), Some("alice"));
        let text = "alice ran /home/alice/proj with token=abc123 and ghp_abcdefghijklmnopqrstuvwxyz012345; Authorization: Bearer abc.def.ghi password: hunter2 aliceberg";
        let out = r.text(text);
        for secret in [
            "/home/alice",
            "abc123",
            "ghp_abcdef",
            "abc.def.ghi",
            "hunter2",
        ] {
            assert!(!out.contains(secret), "{secret} in {out}");
        }
        assert!(out.contains("<user> ran ~/proj"));
        assert!(out.contains("aliceberg"), "whole words only: {out}");
    }

    /// Secret shapes and the part of each that must not survive.
    pub(crate) fn planted() -> Vec<(String, &'static str)> {
        vec![
            ("ghp_aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dF3hJ5".into(), "aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dF3hJ5"),
            ("github_pat_11ABCDEFG0abcdefghijklmn_OPQRSTUVWXYZ0123456789".into(), "11ABCDEFG0abcdefghijklmn"),
            ("glpat-xY7zQ2wE4rT6yU8iO0pA".into(), "xY7zQ2wE4rT6yU8iO0pA"),
            ("sk-proj-Q9w8E7r6T5y4U3i2O1pAsDfGhJkLzXcV".into(), "Q9w8E7r6T5y4U3i2O1pAsDfGhJkLzXcV"),
            ("sk_live_51HxYzAbCdEfGh12345678".into(), "51HxYzAbCdEfGh12345678"),
            ("xoxb-1234567890-0987654321-AbCdEfGhIjKlMnOpQrStUvWx".into(), "AbCdEfGhIjKlMnOpQrStUvWx"),
            ("key id AKIAIOSFODNN7EXAMPLE".into(), "IOSFODNN7EXAMPLE"),
            ("wJalrXUtnFEMI/K7MDENG/bPxRfiCY9EXAMPLEKEY1".into(), "bPxRfiCY9EXAMPLEKEY1"),
            ("AIzaSyA1B2C3D4E5F6G7H8I9J0KlMnOpQrStUv".into(), "SyA1B2C3D4E5F6G7H8I9J0KlMnOpQrStUv"),
            ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U".into(), "dozjgNryP4J3jVmNHl0w5N"),
            ("clone https://alice:Pa55w0rdXyz@git.example.com/repo.git".into(), "Pa55w0rdXyz"),
            ("DATABASE_URL=postgres://dbuser:dbSecretQ7@db.internal:5432/app".into(), "dbSecretQ7"),
            ("Authorization: Bearer opaqueTok3nValue".into(), "opaqueTok3nValue"),
            ("-H 'Authorization: Basic dXNlcjpwYXNzd29yZA=='".into(), "dXNlcjpwYXNzd29yZA"),
            ("DATABASE_PASSWORD=hunter2/with/slashes".into(), "hunter2/with/slashes"),
            ("MY_API_TOKEN_VALUE=tokval123".into(), "tokval123"),
            ("SIGNING_KEY = \"quoted secret value\"".into(), "quoted secret value"),
            ("export CLIENT_SECRET_ID='s3cr3t-id/value'".into(), "s3cr3t-id/value"),
            ("-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\nVTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxK\n-----END RSA PRIVATE KEY-----".into(), "VTLw7onLRnrq0"),
            ("\"password\": \"pa/ss word\"".into(), "pa/ss word"),
            ("{\"note\": \"SIGNING_KEY = \\\"esc secret\\\" and \\\"password\\\": \\\"esc pw\\\"\"}".into(), "esc"),
            ("npm_aB1cD2eF3gH4iJ5kL6mN7oP8qR9sT0uV1wX2".into(), "aB1cD2eF3gH4iJ5kL6mN7oP8qR9sT0uV1wX2"),
        ]
    }

    #[test]
    fn every_planted_shape_is_removed_and_prose_survives() {
        let r = Redactor::new(None, None);
        for (shape, secret) in planted() {
            let out = r.text(&format!("before {shape} after"));
            assert!(!out.contains(secret), "{secret:?} survives in {out:?}");
            assert!(
                out.starts_with("before ") && out.ends_with(" after"),
                "{out:?}"
            );
        }
        // The same inside a pretty-printed JSON string (how request payloads
        // reach the Markdown).
        let all: String = planted().iter().map(|(s, _)| format!("{s}\n")).collect();
        let json = serde_json::to_string_pretty(&serde_json::json!({ "note": all })).unwrap();
        let out = r.text(&json);
        for (_, secret) in planted() {
            let escaped = serde_json::to_string(secret).unwrap();
            assert!(
                !out.contains(secret) && !out.contains(escaped.trim_matches('"')),
                "{secret:?} survives in {out}"
            );
        }
        let prose = "the key point: Mathlib/Algebra/Group/Basic.lean at /home/x/.lake/build/lib/lean/Fix/Goals.olean; theorem foo_key : Nat := 1";
        assert_eq!(r.text(prose), prose);
    }

    #[test]
    fn json_keys_named_like_secrets_are_redacted() {
        let r = Redactor::new(None, None);
        let mut v =
            serde_json::json!({"api_key": "plain", "nested": [{"note": "AKIAABCDEFGHIJKLMNOP"}]});
        r.value(&mut v);
        assert_eq!(v["api_key"], REDACTED);
        assert_eq!(v["nested"][0]["note"], REDACTED);
    }
}
