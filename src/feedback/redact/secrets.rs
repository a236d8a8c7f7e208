//! Credentials in free text: known token formats, long random-looking
//! tokens, the value after an authorization scheme or a secret-looking key,
//! and PEM blocks.

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

/// Key names whose values are secrets (`password=…`, `"api_key": "…"`): a
/// key ending with one of these, whatever separates the value.
pub(super) const SECRET_KEYS: &[&str] = &[
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

pub(super) const REDACTED: &str = "[REDACTED]";

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
pub(super) fn secret_key(key: &str, sep: char) -> bool {
    let k = key.trim_start_matches('-').to_ascii_lowercase();
    !k.is_empty()
        && (SECRET_KEYS.iter().any(|s| k.ends_with(s))
            || (sep == '=' && SECRET_WORDS.iter().any(|s| k.contains(s))))
}

/// Replace every PEM block (`-----BEGIN …-----` to `-----END …-----`) whole.
pub(super) fn redact_pem(text: &str) -> String {
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

/// The end of a quoted value starting at `open` (the byte after the closing
/// quote), if it closes on the same line.
fn quoted_end(text: &str, open: usize, quote: char) -> Option<usize> {
    let body = &text[open + 1..];
    let line = &body[..body.find('\n').unwrap_or(body.len())];
    line.find(quote).map(|k| open + 1 + k + 1)
}

/// Remove credential-looking tokens and the values of `secret-key=value` pairs.
pub(super) fn redact_secrets(text: &str) -> String {
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
