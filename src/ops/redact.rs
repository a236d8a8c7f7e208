//! Redaction of feedback reports: the home directory, the user name and
//! anything that looks like a credential are removed from every string: known
//! token formats, long random-looking tokens (with or without `/`), URL
//! credentials (`scheme://user:pass@host`), webhook URLs (whose path is the
//! credential) and credential query parameters, the value after `Bearer`/`Basic`
//! and after a secret-looking key (`password: …`, `API_TOKEN=…`, quoted
//! values whole), and PEM blocks.

use serde_json::Value;

/// What to remove, read once from the environment of this process.
pub struct Redactor {
    home: Option<String>,
    user: Option<String>,
}

/// Prefixes of well-known credential formats (those of gitleaks' and
/// trufflehog's rules), each with the fewest characters that must follow it
/// for a token to count (short ones would hit ordinary words).
const TOKEN_PREFIXES: &[(&str, usize)] = &[
    // GitHub: personal, OAuth, user-to-server, server-to-server, refresh,
    // fine-grained tokens.
    ("ghp_", 8),
    ("gho_", 8),
    ("ghu_", 8),
    ("ghs_", 8),
    ("ghr_", 8),
    ("github_pat_", 8),
    // GitLab: personal, deploy, runner, pipeline trigger, OAuth app secret,
    // feed, incoming mail, SCIM, CI job tokens, and runner registration.
    ("glpat-", 8),
    ("gldt-", 8),
    ("glrt-", 8),
    ("glptt-", 8),
    ("gloas-", 8),
    ("glft-", 8),
    ("glimt-", 8),
    ("glsoat-", 8),
    ("glcbt-", 8),
    ("GR1348941", 8),
    // OpenAI, Anthropic (sk-ant-), DeepSeek and the like; Stripe.
    ("sk-", 8),
    ("sk_live_", 8),
    ("sk_test_", 8),
    ("rk_live_", 8),
    ("rk_test_", 8),
    ("pk_live_", 8),
    ("whsec_", 8),
    // Slack: bot, user, app-level, configuration, refresh, legacy tokens.
    ("xoxb-", 8),
    ("xoxp-", 8),
    ("xoxa-", 8),
    ("xoxs-", 8),
    ("xoxr-", 8),
    ("xoxe-", 8),
    ("xoxc-", 8),
    ("xapp-", 8),
    // AWS access key ids (long-term, temporary, and the rarer kinds).
    ("AKIA", 12),
    ("ASIA", 12),
    ("ABIA", 12),
    ("ACCA", 12),
    ("A3T", 13),
    // Google: API keys, OAuth access tokens, OAuth client secrets.
    ("AIza", 8),
    ("ya29.", 8),
    ("GOCSPX-", 8),
    // Package registries: npm, PyPI, RubyGems, Docker Hub.
    ("npm_", 8),
    ("pypi-", 8),
    ("rubygems_", 8),
    ("dckr_pat_", 8),
    // Hugging Face, Replicate, Groq, Perplexity.
    ("hf_", 8),
    ("r8_", 16),
    ("gsk_", 16),
    ("pplx-", 16),
    // SendGrid, Mailgun, Mailchimp-style, Twilio's are caught as random runs.
    ("SG.", 16),
    ("key-", 32),
    // Shopify, DigitalOcean, HashiCorp Vault and Terraform Cloud, Atlassian,
    // Databricks, Linear, Postman, Grafana, Sentry, New Relic, Doppler, age.
    ("shpat_", 16),
    ("shpss_", 16),
    ("shpca_", 16),
    ("shppa_", 16),
    ("dop_v1_", 16),
    ("doo_v1_", 16),
    ("dor_v1_", 16),
    ("hvs.", 16),
    ("hvb.", 16),
    ("atlasv1.", 16),
    ("ATATT", 16),
    ("dapi", 16),
    ("lin_api_", 16),
    ("PMAK-", 16),
    ("glc_", 16),
    ("glsa_", 16),
    ("sntrys_", 16),
    ("sntryu_", 16),
    ("NRAK-", 16),
    ("dp.pt.", 16),
    ("dp.st.", 16),
    ("AGE-SECRET-KEY-", 16),
];

/// Hosts whose URLs are credentials in themselves (incoming webhooks: whoever
/// has the URL can post), with the path under which the secret part lies;
/// a host matches itself and its subdomains.
const WEBHOOK_URLS: &[(&str, &str)] = &[
    ("hooks.slack.com", "/"),
    ("discord.com", "/api/webhooks/"),
    ("discordapp.com", "/api/webhooks/"),
    ("webhook.office.com", "/"),
    ("outlook.office.com", "/webhook"),
    ("outlook.office365.com", "/webhook"),
    ("logic.azure.com", "/"),
    ("hooks.zapier.com", "/"),
    ("chat.googleapis.com", "/v1/spaces/"),
    ("api.telegram.org", "/bot"),
    ("maker.ifttt.com", "/"),
    ("api.pushover.net", "/"),
];

/// URL query parameters whose values are credentials (`?sig=…`, `&token=…`).
const SECRET_PARAMS: &[&str] = &[
    "sig",
    "signature",
    "token",
    "access_token",
    "refresh_token",
    "id_token",
    "key",
    "api_key",
    "apikey",
    "secret",
    "client_secret",
    "password",
    "code",
    "auth",
    "x-amz-signature",
    "x-amz-credential",
    "x-amz-security-token",
    "x-goog-signature",
    "x-goog-credential",
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
        .any(|(p, rest)| trimmed.starts_with(p) && trimmed.len() >= p.len() + rest)
    {
        return true;
    }
    // A JWT: three base64url parts, the first a JSON object (`{"` is `eyJ`).
    if trimmed.starts_with("eyJ") && trimmed.matches('.').count() >= 2 && trimmed.len() >= 24 {
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

/// Where a URL's text ends: at white space, a quote or a bracket.
fn url_end(text: &str) -> usize {
    text.find(|c: char| {
        c.is_whitespace() || matches!(c, '"' | '\'' | '<' | '>' | '`' | ')' | ']' | '}' | '\\')
    })
    .unwrap_or(text.len())
}

/// Redact what makes a URL a credential: the secret part of a webhook URL
/// (Slack, Discord, Teams/Office 365, Power Automate, Zapier, Google Chat,
/// Telegram bots, IFTTT), and, in any URL, the values of credential query
/// parameters (`sig`, `token`, `key`, AWS/GCS presigned signatures…).
fn redact_urls(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("://") {
        let (head, tail) = rest.split_at(i + 3);
        out.push_str(head);
        let end = url_end(tail);
        let (url, after) = tail.split_at(end);
        let host_len = url.find(['/', '?', '#']).unwrap_or(url.len());
        let (authority, path) = url.split_at(host_len);
        let host = authority
            .rsplit('@')
            .next()
            .unwrap_or("")
            .split(':')
            .next()
            .unwrap_or("")
            .to_ascii_lowercase();
        out.push_str(authority);
        let webhook = WEBHOOK_URLS.iter().find(|(h, under)| {
            (host == *h || host.ends_with(&format!(".{h}")))
                && path.len() > under.len()
                && path.starts_with(under)
        });
        match webhook {
            Some((_, under)) => {
                out.push_str(under);
                out.push_str(REDACTED);
            }
            None => out.push_str(&redact_query(path)),
        }
        rest = after;
    }
    out.push_str(rest);
    out
}

/// The path and query of a URL with its credential parameters' values redacted.
fn redact_query(path: &str) -> String {
    let Some(q) = path.find('?') else {
        return path.to_string();
    };
    let (base, query) = path.split_at(q + 1);
    let (query, fragment) = query.split_at(query.find('#').unwrap_or(query.len()));
    let params: Vec<String> = query
        .split('&')
        .map(|param| match param.split_once('=') {
            Some((name, value))
                if !value.is_empty()
                    && SECRET_PARAMS.contains(&name.to_ascii_lowercase().as_str()) =>
            {
                format!("{name}={REDACTED}")
            }
            _ => param.to_string(),
        })
        .collect();
    format!("{base}{}{fragment}", params.join("&"))
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

    /// The shapes of the usual secret scanners' rules (gitleaks, trufflehog)
    /// beyond `planted`: webhook URLs, more token formats, signed URLs.
    fn scanner_shapes() -> Vec<(&'static str, &'static str)> {
        vec![
            // Webhook URLs: the URL is the credential.
            (
                "https://hooks.slack.com/services/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",
                "q1W2e3R4t5Y6u7I8o9P0aSdF",
            ),
            (
                "https://hooks.slack.com/services/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",
                "B4E5F6G7H",
            ),
            (
                "https://hooks.slack.com/workflows/T0A1B2C3D/A0B1C2D3E/4567890/AbCdEfGhIjKl",
                "AbCdEfGhIjKl",
            ),
            (
                "https://hooks.slack.com/triggers/T0A1B2C3D/5678901234/0a1b2c3d4e5f",
                "0a1b2c3d4e5f",
            ),
            (
                "https://discord.com/api/webhooks/123456789012345678/Xy_Zw-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
                "Xy_Zw-AbCdEf",
            ),
            (
                "https://discordapp.com/api/webhooks/123456789012345678/abcDEF",
                "abcDEF",
            ),
            (
                "https://contoso.webhook.office.com/webhookb2/0a1b2c3d-e5f6@72f9/IncomingWebhook/9f8e7d6c/a1b2c3",
                "IncomingWebhook/9f8e7d6c",
            ),
            (
                "https://outlook.office.com/webhook/0a1b2c3d-e5f6/IncomingWebhook/9f8e7d6c5b4a/a1b2c3",
                "9f8e7d6c5b4a",
            ),
            (
                "https://prod-12.westus.logic.azure.com:443/workflows/0a1b2c/triggers/manual/paths/invoke?api-version=2016-06-01&sig=Q1w2E3r4T5y6",
                "Q1w2E3r4T5y6",
            ),
            (
                "https://hooks.zapier.com/hooks/catch/1234567/abcdef1/",
                "abcdef1",
            ),
            (
                "https://chat.googleapis.com/v1/spaces/AAAA1234/messages?key=AIzaSyDdI0hCZtE6vySjMm-WEfRq3CPzqKqqsHI&token=tok3nV4lue",
                "tok3nV4lue",
            ),
            (
                "https://api.telegram.org/bot123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw/sendMessage",
                "AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw",
            ),
            (
                "https://maker.ifttt.com/trigger/event/with/key/dK3yV4lu3x",
                "dK3yV4lu3x",
            ),
            // Signed and keyed URLs.
            (
                "https://bucket.s3.amazonaws.com/f?X-Amz-Credential=AKIAEXAMPLE%2F2024&X-Amz-Signature=9f86d081884c7d65",
                "9f86d081884c7d65",
            ),
            (
                "https://storage.googleapis.com/b/o?X-Goog-Signature=5a2b3c4d5e6f7a8b",
                "5a2b3c4d5e6f7a8b",
            ),
            (
                "https://api.example.com/v1/items?page=2&access_token=opaqueV4lue9",
                "opaqueV4lue9",
            ),
            // More token formats.
            (
                "gho_16C7e42F292c6912E7710c838347Ae178B4a",
                "16C7e42F292c6912E7710c838347Ae178B4a",
            ),
            (
                "ghs_16C7e42F292c6912E7710c838347Ae178B4a",
                "16C7e42F292c6912E7710c838347Ae178B4a",
            ),
            ("gldt-AbCdEfGh12345678", "AbCdEfGh12345678"),
            ("glrt-AbCdEfGh12345678", "AbCdEfGh12345678"),
            ("GR1348941AbCdEfGh12345678", "AbCdEfGh12345678"),
            ("sk-ant-api03-AbCdEfGhIjKlMnOp", "AbCdEfGhIjKlMnOp"),
            ("rk_test_51HxYzAbCdEfGh", "51HxYzAbCdEfGh"),
            ("whsec_AbCdEfGh12345678", "AbCdEfGh12345678"),
            ("xoxe-1-AbCdEfGhIjKl", "AbCdEfGhIjKl"),
            ("xapp-1-A0B1C2D3E4F-1234567890-abcdef", "abcdef"),
            ("ASIAY34FZKBOKMUTVV7A", "Y34FZKBOKMUTVV7A"),
            ("GOCSPX-AbCdEfGhIjKlMnOp", "AbCdEfGhIjKlMnOp"),
            ("ya29.a0AfH6SMBx-opaque", "a0AfH6SMBx"),
            ("pypi-AgEIcHlwaS5vcmcCJGRhYzEy", "AgEIcHlwaS5vcmcCJGRhYzEy"),
            ("dckr_pat_AbCdEfGh12345678", "AbCdEfGh12345678"),
            ("hf_AbCdEfGhIjKlMnOpQrSt", "AbCdEfGhIjKlMnOpQrSt"),
            (
                "SG.AbCdEfGhIjKlMnOp.QrStUvWxYz0123456789",
                "AbCdEfGhIjKlMnOp",
            ),
            (
                "key-0123456789abcdef0123456789abcdef",
                "0123456789abcdef0123456789abcdef",
            ),
            ("shpat_0123456789abcdef0123", "0123456789abcdef0123"),
            ("dop_v1_0123456789abcdef0123", "0123456789abcdef0123"),
            ("hvs.CAESIAbCdEfGhIjKlMn", "CAESIAbCdEfGhIjKlMn"),
            ("glsa_AbCdEfGhIjKlMnOpQr", "AbCdEfGhIjKlMnOpQr"),
            ("lin_api_AbCdEfGhIjKlMnOpQr", "AbCdEfGhIjKlMnOpQr"),
            ("PMAK-0123456789abcdef0123", "0123456789abcdef0123"),
            ("AGE-SECRET-KEY-1QQQQQQQQQQQQQQQQQQ", "1QQQQQQQQQQQQQQQQQQ"),
            // A short JWT, few digits.
            (
                "eyJhbGciOiJub25lIn0.eyJzdWIiOiJhIn0.c2ln",
                "eyJzdWIiOiJhIn0",
            ),
            (
                "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----",
                "b3BlbnNzaC1rZXktdjEAAAAA",
            ),
            (
                "-----BEGIN PGP PRIVATE KEY BLOCK-----\nlQOYBGXyz\n-----END PGP PRIVATE KEY BLOCK-----",
                "lQOYBGXyz",
            ),
            ("Authorization: token ghx0paqu3V4lue", "ghx0paqu3V4lue"),
            (
                "https://x-access-token:ghs_abc123XYZ@github.com/o/r.git",
                "ghs_abc123XYZ",
            ),
            (
                "AccountName=acct;AccountKey=Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MA==;EndpointSuffix=core.windows.net",
                "Zm9vYmFyYmF6cXV4MTIz",
            ),
        ]
    }

    #[test]
    fn every_secret_scanner_shape_is_removed() {
        let r = Redactor::new(None, None);
        let mut survived = Vec::new();
        for (shape, secret) in scanner_shapes() {
            let out = r.text(&format!("before {shape} after"));
            let framed = out.starts_with("before ") && out.ends_with(" after");
            if out.contains(secret) || !framed || !out.contains("[REDACTED") {
                survived.push(out);
            }
            // Inside a JSON string too.
            let json = serde_json::to_string(&serde_json::json!({ "note": shape })).unwrap();
            let out = r.text(&json);
            if out.contains(secret) {
                survived.push(out);
            }
        }
        assert!(survived.is_empty(), "{survived:#?}");
    }

    #[test]
    fn webhook_urls_keep_their_host_and_ordinary_urls_survive() {
        let r = Redactor::new(None, None);
        assert_eq!(
            r.text("post to https://hooks.slack.com/services/T0/B1/xyzSECRET now"),
            "post to https://hooks.slack.com/[REDACTED] now"
        );
        assert_eq!(
            r.text("(https://discord.com/api/webhooks/1/tok)"),
            "(https://discord.com/api/webhooks/[REDACTED])"
        );
        for ordinary in [
            "see https://github.com/leanprover/lean4/issues/1234 and https://leanprover-community.github.io/mathlib4_docs/Mathlib/Algebra/Group/Basic.html",
            "https://discord.com/channels/123/456 and https://hooks.slack.com",
            "https://example.com/search?q=lean+theorem&page=2#top",
            "key-value pairs: the key-point is obvious",
            "theorem sig_key (sig : Signature) : True := trivial",
        ] {
            assert_eq!(r.text(ordinary), ordinary);
        }
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
