//! Unit tests of the HTTP transport's configuration and helpers.
use super::*;

#[test]
fn addresses() {
    assert_eq!(
        parse_addr("9000").unwrap(),
        "127.0.0.1:9000".parse().unwrap()
    );
    assert_eq!(
        parse_addr("0.0.0.0:1").unwrap(),
        "0.0.0.0:1".parse().unwrap()
    );
    assert_eq!(parse_addr("[::1]:2").unwrap(), "[::1]:2".parse().unwrap());
    assert_eq!(parse_addr("localhost").unwrap().port(), DEFAULT_PORT);
    assert_eq!(parse_addr("127.0.0.1").unwrap().port(), DEFAULT_PORT);
    assert!(parse_addr("nowhere:x").is_err());
}

#[test]
fn command_line() {
    let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let no_env = |_: &str| None;
    let (addr, config) = parse_cli(&args(&[]), no_env).unwrap();
    assert_eq!(addr, SocketAddr::from(([127, 0, 0, 1], DEFAULT_PORT)));
    assert_eq!(config.session_idle, DEFAULT_SESSION_IDLE);
    assert_eq!(config.max_connections, DEFAULT_MAX_CONNECTIONS);
    assert_eq!(config.body_timeout, DEFAULT_BODY_TIMEOUT);
    assert_eq!(config.max_sessions, DEFAULT_MAX_SESSIONS);
    assert!(config.token.is_none());
    let (addr, config) = parse_cli(
        &args(&[
            "0",
            "--allowed-host",
            "box.lan",
            "--allowed-origin",
            "https://a.b",
            "--session-idle-secs",
            "0.5",
            "--max-connections",
            "7",
            "--body-timeout-secs",
            "2",
            "--max-sessions",
            "3",
            "--max-body-bytes",
            "1000",
            "--max-in-flight-per-client",
            "5",
        ]),
        no_env,
    )
    .unwrap();
    assert_eq!(addr.port(), 0);
    assert_eq!(config.allow.hosts, vec!["box.lan"]);
    assert_eq!(config.allow.origins, vec!["https://a.b"]);
    assert_eq!(config.session_idle, Duration::from_millis(500));
    assert_eq!(config.max_connections, 7);
    assert_eq!(config.body_timeout, Duration::from_secs(2));
    assert_eq!(config.max_sessions, 3);
    assert_eq!(config.body_limit, 1000);
    assert_eq!(config.max_in_flight_per_client, Some(5));
    for bad in [
        &["--allowed-host"][..],
        &["--nope", "x"],
        &["--session-idle-secs", "-1"],
        &["--max-connections", "0"],
        &["--body-timeout-secs", "inf"],
        &["--http-token-file", "/nonexistent/beam-token"],
    ] {
        assert!(parse_cli(&args(bad), no_env).is_err(), "{bad:?}");
    }
}

#[test]
fn environment_and_flags() {
    let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let env = |name: &str| match name {
        "LEAN_BEAM_HTTP_MAX_CONNECTIONS" => Some("9".to_string()),
        "LEAN_BEAM_HTTP_BODY_TIMEOUT_SECS" => Some("1.5".to_string()),
        "LEAN_BEAM_HTTP_MAX_SESSIONS" => Some("4".to_string()),
        "LEAN_BEAM_HTTP_TOKEN" => Some("tok-en\n".to_string()),
        _ => None,
    };
    let (_, config) = parse_cli(&args(&["--max-sessions", "5"]), env).unwrap();
    assert_eq!(config.max_connections, 9);
    assert_eq!(config.body_timeout, Duration::from_millis(1500));
    assert_eq!(config.max_sessions, 5, "a flag wins over its variable");
    assert_eq!(config.token, Some(Token::new("tok-en", "t").unwrap()));
    let bad = |name: &str| (name == "LEAN_BEAM_HTTP_MAX_CONNECTIONS").then(|| "many".into());
    assert!(parse_cli(&args(&[]), bad).is_err());
    let empty = |name: &str| (name == "LEAN_BEAM_HTTP_TOKEN").then(String::new);
    assert!(
        parse_cli(&args(&[]), empty).is_err(),
        "an empty token is refused"
    );
}

#[test]
fn a_non_loopback_address_needs_a_token() {
    let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let no_env = |_: &str| None;
    for addr in ["0.0.0.0:8765", "[::]:1", "192.168.1.2:80", "10.0.0.1"] {
        let err = parse_cli(&args(&[addr]), no_env).unwrap_err();
        assert!(err.contains("LEAN_BEAM_HTTP_TOKEN"), "{addr}: {err}");
    }
    for addr in ["127.0.0.1:0", "[::1]:0", "localhost", "9000", "127.1.2.3:4"] {
        assert!(parse_cli(&args(&[addr]), no_env).is_ok(), "{addr}");
    }
    let token = |name: &str| (name == "LEAN_BEAM_HTTP_TOKEN").then(|| "t0k".into());
    assert!(parse_cli(&args(&["0.0.0.0:8765"]), token).is_ok());
}
