//! Credentials in URLs: user information (`scheme://user:pass@host`),
//! webhook URLs (whose path is the credential) and credential query
//! parameters.

use super::secrets::REDACTED;

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

/// Replace the user information of every `scheme://user:pass@host` URL.
pub(super) fn redact_url_credentials(text: &str) -> String {
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
pub(super) fn redact_urls(text: &str) -> String {
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
