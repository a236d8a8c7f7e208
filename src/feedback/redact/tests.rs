//! The redactor over planted secrets and the shapes secret scanners know.

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
