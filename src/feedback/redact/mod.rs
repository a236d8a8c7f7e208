//! Redaction of feedback reports: the home directory, the user name and
//! anything that looks like a credential are removed from every string: known
//! token formats, long random-looking tokens (with or without `/`), URL
//! credentials (`scheme://user:pass@host`), webhook URLs (whose path is the
//! credential) and credential query parameters, the value after `Bearer`/`Basic`
//! and after a secret-looking key (`password: …`, `API_TOKEN=…`, quoted
//! values whole), and PEM blocks.

mod secrets;
mod urls;

use serde_json::Value;

use secrets::{REDACTED, SECRET_KEYS, redact_pem, redact_secrets, secret_key};
use urls::{redact_url_credentials, redact_urls};

/// What to remove, read once from the environment of this process.
pub struct Redactor {
    home: Option<String>,
    user: Option<String>,
}

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
        let mut out = redact_secrets(&redact_urls(&redact_url_credentials(&redact_pem(text))));
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

#[cfg(test)]
mod tests;
