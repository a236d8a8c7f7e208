//! Redaction of feedback reports: the home directory, the user name and
//! anything that looks like a credential are removed from every string.

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

/// Key names whose values are secrets (`password=…`, `"api_key": "…"`).
const SECRET_KEYS: &[&str] = &[
    "password",
    "passwd",
    "secret",
    "token",
    "api_key",
    "apikey",
    "api-key",
    "auth",
    "credential",
    "private_key",
    "access_key",
];

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
        let mut out = redact_secrets(text);
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
                    if SECRET_KEYS.iter().any(|s| key.contains(s)) && v.is_string() {
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
/// mixed letters and digits (keys, hashes of secrets, JWTs).
fn looks_secret(token: &str) -> bool {
    let trimmed = token.trim_end_matches(['.', ',']);
    if TOKEN_PREFIXES
        .iter()
        .any(|p| trimmed.starts_with(p) && trimmed.len() >= p.len() + 8)
    {
        return true;
    }
    if trimmed.len() < 32 || trimmed.contains('/') {
        return false;
    }
    let letters = trimmed.chars().filter(char::is_ascii_alphabetic).count();
    let digits = trimmed.chars().filter(char::is_ascii_digit).count();
    let upper = trimmed.chars().filter(char::is_ascii_uppercase).count();
    letters >= 8 && digits >= 4 && (upper >= 2 || trimmed.starts_with("eyJ"))
}

/// Remove credential-looking tokens and the values of `secret-key=value` pairs.
fn redact_secrets(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.char_indices().peekable();
    let mut redact_next_value = false;
    while let Some(&(i, c)) = chars.peek() {
        if !token_char(c) {
            out.push(c);
            chars.next();
            if c == '=' || c == ':' {
                // keep the flag for the value after the separator
            } else if !c.is_whitespace() && c != '"' && c != '\'' {
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
        // `key=value` within one token.
        if let Some((key, _)) = token.split_once('=') {
            let k = key.to_ascii_lowercase();
            if SECRET_KEYS.iter().any(|s| k.ends_with(s)) {
                out.push_str(key);
                out.push('=');
                out.push_str(REDACTED);
                redact_next_value = false;
                continue;
            }
        }
        if redact_next_value || looks_secret(token) {
            out.push_str(REDACTED);
            redact_next_value = false;
            continue;
        }
        let lower = token.to_ascii_lowercase();
        redact_next_value = SECRET_KEYS.iter().any(|s| lower.ends_with(s)) || lower == "bearer";
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
