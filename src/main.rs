//! The `lean-beam-mcp` command line: the stdio MCP server by default, plus
//! `tools`, `validate` and `call` for using and debugging the surface without an
//! MCP client.

use std::io::Write;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;

use serde_json::Value;

use lean_beam_mcp::broker::Broker;
use lean_beam_mcp::context::CallContext;
use lean_beam_mcp::doctor;
use lean_beam_mcp::http;
use lean_beam_mcp::identity;
use lean_beam_mcp::mcp::config::Config;
use lean_beam_mcp::mcp::dispatcher::Dispatcher;
use lean_beam_mcp::mcp::stdio;
use lean_beam_mcp::ops::Beam;
use lean_beam_mcp::replica::{self, ReplicaId};
use lean_beam_mcp::stats::Stats;
use lean_beam_mcp::surface::{Handler, ParseError, Tool, ToolCall, ToolError, ToolSet};

mod cli_progress;

const USAGE: &str = "\
lean-beam-mcp: an MCP server that gives AI agents a Lean 4 theorem prover

USAGE:
    lean-beam-mcp                          serve MCP over stdio (both protocol eras)
    lean-beam-mcp tools                    print the tools/list catalog (JSON)
    lean-beam-mcp validate TOOL JSON|@FILE check arguments against TOOL's schema
    lean-beam-mcp call TOOL JSON|@FILE [TOOL JSON|@FILE ...]
                                           run tools in-process, in order, in one
                                           session, and print each structured result
    lean-beam-mcp --http [ADDR] [OPTIONS]  serve MCP over Streamable HTTP at http://ADDR/mcp
                                           (both eras; ADDR defaults to 127.0.0.1:8765)
    lean-beam-mcp doctor [ROOT]            check what the first call will meet: the Lean or Lake
                                           it starts and from where, whether it answers, the
                                           root's project files and build layout, the bounds;
                                           then print the host snippets for this binary
    lean-beam-mcp health [ADDR]            ask a running --http server's /health (default
                                           127.0.0.1:8765): exit 0 when it answers 200 (a
                                           container's health check)
    lean-beam-mcp --version                print the version
    lean-beam-mcp --help                   print this help

--tools PROFILE|NAME,... (any command; else LEAN_BEAM_TOOLS; default all):
    serve, list, validate and call only these tools: profiles of operations.toml
    (`core`: the everyday proof loop) and tool names, comma-separated; an unknown
    name stops start-up with the known ones

--max-result-bytes N (any command; else LEAN_BEAM_MAX_RESULT_BYTES; default 65536):
    the most bytes of JSON one tool result holds; longer fields (over 6,000
    characters) and results are cut, and say so in `truncated`

--http OPTIONS (each also read from the environment variable named; the flag wins):
    --http-token-file PATH   require `Authorization: Bearer <token>` on every request
                             but /health, the token read from PATH [LEAN_BEAM_HTTP_TOKEN
                             holds the token itself]; required for a non-loopback ADDR
    --allowed-host HOST      also accept this Host: NAME (any port), NAME:PORT, or `*`
                             (repeatable); by default only the bound address and
                             localhost, 127.0.0.1, [::1] with the bound port
    --allowed-origin ORIGIN  also accept this Origin, e.g. https://app.example (repeatable)
    --max-connections N      open connections; more are answered 503 (default 256)
                             [LEAN_BEAM_HTTP_MAX_CONNECTIONS]
    --body-timeout-secs S    time limit on reading a request's headers, and its body
                             (default 30) [LEAN_BEAM_HTTP_BODY_TIMEOUT_SECS]
    --max-body-bytes N       request body limit (default 10485760) [LEAN_BEAM_HTTP_MAX_BODY_BYTES]
    --max-sessions N         2025-11-25 sessions; a new one replaces the one idle the
                             longest (default 1024) [LEAN_BEAM_HTTP_MAX_SESSIONS]
    --session-idle-secs S    end an idle 2025-11-25 session after S seconds (default 1800)
                             [LEAN_BEAM_HTTP_SESSION_IDLE_SECS]
    --max-in-flight-per-client N
                             calls one 2025-11-25 session may run at once (default 64)
                             [LEAN_BEAM_HTTP_MAX_IN_FLIGHT_PER_CLIENT]
    --replica-id ID          this server's name in beam_version and beam_stats
                             (default HOSTNAME:PORT) [LEAN_BEAM_REPLICA_ID]
    --drain-secs S           on SIGTERM, answer new calls 503 + Retry-After and /health
                             503, and let the calls in flight finish for up to S
                             seconds before stopping (default 25; SIGINT stops at
                             once) [LEAN_BEAM_HTTP_DRAIN_SECS]

`validate` applies the schema and the server's workspace descriptor rules.
`call` resolves a relative workspace root against the current directory (the MCP
surface never does), shows progress on stderr and prints each result on stdout
labelled with its tool: {\"tool\": TOOL, \"result\"|\"error\": ...}.
Exit status: 0 success, 1 tool error or invalid arguments, 2 usage error.
`doctor`: 0 every line OK, 1 the worst line a WARN, 2 a FAIL.
";

enum Command {
    Serve,
    Http(Vec<String>),
    Tools,
    Validate(String, String),
    Call(Vec<(String, String)>),
    Doctor(Option<String>),
    Health(String),
    Version,
    Help,
}

fn parse_args(args: &[String]) -> Result<Command, String> {
    match args {
        [] => Ok(Command::Serve),
        [flag] if flag == "--version" || flag == "-V" => Ok(Command::Version),
        [flag] if flag == "--help" || flag == "-h" => Ok(Command::Help),
        [flag, rest @ ..] if flag == "--http" => Ok(Command::Http(rest.to_vec())),
        [cmd] if cmd == "tools" => Ok(Command::Tools),
        [cmd] if cmd == "doctor" => Ok(Command::Doctor(None)),
        [cmd, root] if cmd == "doctor" && !root.starts_with('-') => {
            Ok(Command::Doctor(Some(root.clone())))
        }
        [cmd, ..] if cmd == "doctor" => Err("`doctor` takes at most one argument: ROOT".into()),
        [cmd] if cmd == "health" => Ok(Command::Health("127.0.0.1:8765".into())),
        [cmd, addr] if cmd == "health" => Ok(Command::Health(addr.clone())),
        [cmd, tool, payload] if cmd == "validate" => {
            Ok(Command::Validate(tool.clone(), payload.clone()))
        }
        [cmd, rest @ ..] if cmd == "call" && !rest.is_empty() && rest.len() % 2 == 0 => {
            Ok(Command::Call(
                rest.chunks(2)
                    .map(|pair| (pair[0].clone(), pair[1].clone()))
                    .collect(),
            ))
        }
        [cmd, ..] if cmd == "validate" => {
            Err("`validate` takes exactly two arguments: TOOL and JSON or @FILE".into())
        }
        [cmd, ..] if cmd == "call" => {
            Err("`call` takes pairs of arguments: TOOL JSON|@FILE [TOOL JSON|@FILE ...]".into())
        }
        [cmd, ..] if cmd == "tools" => Err("`tools` takes no arguments".into()),
        [other, ..] if other.starts_with('-') => Err(format!("unknown flag `{other}`")),
        [other, ..] => Err(format!("unknown command `{other}`")),
    }
}

/// Remove `FLAG VALUE` (or `FLAG=VALUE`) from `args`, wherever it is;
/// `needs` says what the value is when it is missing.
fn take_flag(args: &mut Vec<String>, flag: &str, needs: &str) -> Result<Option<String>, String> {
    let mut spec = None;
    let mut i = 0;
    let with_value = format!("{flag}=");
    while i < args.len() {
        let value = if args[i] == flag {
            if i + 1 == args.len() {
                return Err(format!("{flag} needs {needs}"));
            }
            let value = args.remove(i + 1);
            args.remove(i);
            value
        } else if let Some(value) = args[i].strip_prefix(&with_value) {
            let value = value.to_string();
            args.remove(i);
            value
        } else {
            i += 1;
            continue;
        };
        if spec.replace(value).is_some() {
            return Err(format!("{flag} given twice"));
        }
    }
    Ok(spec)
}

/// Remove `--tools SPEC` (or `--tools=SPEC`) from `args`, wherever it is.
fn take_tools_flag(args: &mut Vec<String>) -> Result<Option<String>, String> {
    take_flag(args, "--tools", "a profile or comma-separated tool names")
}

/// `--max-result-bytes N`: the server's cap on one tool result (any command).
fn take_result_cap(args: &mut Vec<String>) -> Result<(), String> {
    let Some(value) = take_flag(args, "--max-result-bytes", "a number of bytes")? else {
        return Ok(());
    };
    let bytes: usize = value
        .parse()
        .map_err(|_| format!("--max-result-bytes {value:?} is not a number of bytes"))?;
    lean_beam_mcp::surface::budget::set_result_bytes(bytes)
}

fn main() -> ExitCode {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let parsed = take_result_cap(&mut args)
        .and_then(|()| take_tools_flag(&mut args))
        .and_then(|flag| Ok((flag, parse_args(&args)?)));
    let (tools_flag, command) = match parsed {
        Ok(parsed) => parsed,
        Err(message) => {
            eprintln!("lean-beam-mcp: {message}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    if let Command::Health(addr) = &command {
        return health(addr);
    }
    if matches!(command, Command::Help | Command::Version) {
        return match command {
            Command::Help => print_stdout(USAGE),
            _ => print_stdout(&format!("{} {}\n", identity::NAME, identity::VERSION)),
        };
    }
    // Chosen before anything runs: an unknown name stops start-up.
    let tools = match ToolSet::from_flag_or_env(tools_flag.as_deref(), env_var) {
        Ok(tools) => tools,
        Err(message) => {
            eprintln!("lean-beam-mcp: {message}");
            return ExitCode::from(2);
        }
    };
    match command {
        Command::Help | Command::Version | Command::Health(_) => unreachable!("answered above"),
        Command::Tools => print_stdout(&catalog_pretty(&tools)),
        Command::Validate(tool, payload) => validate(&tools, &tool, &payload),
        // The broker reads its environment and the machine's memory (for the
        // Lean memory budget) here, before any runtime runs: no read of a
        // file ever waits on a thread that serves clients.
        Command::Call(calls) => runtime().block_on(call_all(&tools, &calls, Broker::from_env())),
        Command::Serve => stdio_runtime().block_on(serve(tools, Broker::from_env())),
        Command::Doctor(root) => stdio_runtime().block_on(doctor(root.as_deref())),
        Command::Http(mut args) => {
            // Parsed (and the token file read) before any runtime runs.
            let parsed = replica::take_options(&mut args, env_var)
                .and_then(|options| Ok((http::parse_cli(&args, env_var)?, options)));
            match parsed {
                Ok(((addr, config), options)) => {
                    let broker = Broker::from_env();
                    runtime().block_on(serve_http(addr, config, options, tools, broker))
                }
                Err(message) => {
                    eprintln!("lean-beam-mcp: {message}\n\n{USAGE}");
                    ExitCode::from(2)
                }
            }
        }
    }
}

/// The protocol core's configuration from the environment; a malformed limit
/// stops start-up with exit status 2.
fn dispatcher_config(tools: ToolSet) -> Result<Config, ExitCode> {
    match Config::from_env() {
        Ok(config) => Ok(Config { tools, ..config }),
        Err(message) => {
            eprintln!("lean-beam-mcp: {message}");
            Err(ExitCode::from(2))
        }
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime")
}

/// The stdio server's runtime: every task on the main thread, unless
/// TOKIO_WORKER_THREADS asks for worker threads. One client and the I/O-bound
/// proxying to Lean gain nothing from a second thread, but waking it to steal
/// a just-woken task moved parts of a call to another thread: on a 2-core
/// machine about 1.7 more context switches per `lean_sync` and `lean_goals`
/// call, and 10-20 us more per call. One thread that also drives the reactor
/// spares the wake-ups between a worker and the thread in `block_on`.
/// Blocking work still goes to tokio's blocking pool.
fn stdio_runtime() -> tokio::runtime::Runtime {
    if std::env::var_os("TOKIO_WORKER_THREADS").is_some() {
        return runtime();
    }
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime")
}

fn print_stdout(text: &str) -> ExitCode {
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Ok(()) => ExitCode::SUCCESS,
        Err(_) => ExitCode::FAILURE,
    }
}

fn catalog_pretty(tools: &ToolSet) -> String {
    let catalog: Value = serde_json::from_str(tools.catalog_json()).expect("catalog is JSON");
    serde_json::to_string_pretty(&catalog).expect("catalog serializes") + "\n"
}

fn read_payload(payload: &str) -> Result<Value, String> {
    let text = match payload.strip_prefix('@') {
        Some(path) => {
            std::fs::read_to_string(path).map_err(|e| format!("cannot read {path}: {e}"))?
        }
        None => payload.to_string(),
    };
    serde_json::from_str(&text).map_err(|e| format!("the payload is not JSON: {e}"))
}

fn validate(tools: &ToolSet, tool: &str, payload: &str) -> ExitCode {
    let value = match read_payload(payload) {
        Ok(value) => value,
        Err(message) => {
            eprintln!("lean-beam-mcp: {message}");
            return ExitCode::from(2);
        }
    };
    match tools.parse(tool, Some(value)) {
        Ok(call) => match descriptor_error(&call) {
            None => print_stdout(&format!(
                "valid: arguments satisfy the `{tool}` schema and the workspace rules\n"
            )),
            Some(error) => {
                print_stdout(&format!(
                    "invalid: the workspace descriptor breaks the server's rules\n  /workspace/root: {}\n",
                    error.message
                ));
                ExitCode::FAILURE
            }
        },
        Err(ParseError::UnknownTool(name)) => unknown_tool(tools, &name),
        Err(ParseError::Invalid(violations)) => {
            let mut report = format!(
                "invalid: {} violation(s) of the `{tool}` schema\n",
                violations.len()
            );
            for v in &violations {
                let pointer = if v.pointer.is_empty() {
                    "(root)"
                } else {
                    &v.pointer
                };
                report.push_str(&format!("  {pointer}: {}\n", v.reason));
            }
            print_stdout(&report);
            ExitCode::FAILURE
        }
    }
}

/// The server's own descriptor check for this call (absolute, an existing
/// Lean/Lake project; a drop also accepts a root that has since disappeared),
/// or `None` for tools without a workspace.
fn descriptor_error(call: &ToolCall) -> Option<ToolError> {
    let descriptor = call.workspace()?;
    let checked = if call.tool() == Tool::LeanDropWorkspace {
        Broker::check_descriptor_to_drop(&descriptor.root)
    } else {
        Broker::check_descriptor(&descriptor.root)
    };
    checked.err().map(ToolError::from)
}

fn unknown_tool(tools: &ToolSet, name: &str) -> ExitCode {
    if tools.left_out(name).is_some() {
        eprintln!(
            "lean-beam-mcp: `{name}` is not in the tool set `{}` (--tools, LEAN_BEAM_TOOLS)",
            tools.spelling()
        );
        return ExitCode::from(2);
    }
    let hint = tools
        .nearest(name)
        .map(|tool| format!("; did you mean `{}`?", tool.name()))
        .unwrap_or_default();
    eprintln!("lean-beam-mcp: unknown tool `{name}`{hint} (see `lean-beam-mcp tools`)");
    ExitCode::from(2)
}

/// Resolve a relative `workspace.root` against the current directory: a
/// convenience of the command line only.
fn absolutize_root(value: &mut Value) {
    let Some(root) = value.pointer_mut("/workspace/root") else {
        return;
    };
    if let Some(text) = root.as_str() {
        let path = std::path::Path::new(text);
        if path.is_relative() {
            if let Ok(cwd) = std::env::current_dir() {
                *root = Value::String(cwd.join(path).to_string_lossy().into_owned());
            }
        }
    }
}

/// The replica id the environment names (or the default); a bad one is
/// said on stderr and is exit status 2.
fn replica_from_env() -> Result<ReplicaId, ExitCode> {
    ReplicaId::from_env_or_default(env_var, None).map_err(|message| {
        eprintln!("lean-beam-mcp: {message}");
        ExitCode::from(2)
    })
}

/// Run the calls in order in one in-process session (so that a version returned
/// by `lean_sync` can be used by the next call), stopping at the first failure.
async fn call_all(tools: &ToolSet, calls: &[(String, String)], broker: Broker) -> ExitCode {
    let replica = match replica_from_env() {
        Ok(replica) => replica,
        Err(status) => return status,
    };
    let stats = Arc::new(Stats::default());
    let beam = Beam::new(stats, broker).with_replica(replica);
    let mut status = ExitCode::SUCCESS;
    for (tool, payload) in calls {
        status = call(&beam, tools, tool, payload).await;
        if status != ExitCode::SUCCESS {
            break;
        }
    }
    beam.shutdown().await;
    status
}

async fn call(beam: &Beam, tools: &ToolSet, tool: &str, payload: &str) -> ExitCode {
    let mut value = match read_payload(payload) {
        Ok(value) => value,
        Err(message) => {
            eprintln!("lean-beam-mcp: {message}");
            return ExitCode::from(2);
        }
    };
    absolutize_root(&mut value);
    let call = match tools.parse(tool, Some(value)) {
        Ok(call) => call,
        Err(ParseError::UnknownTool(name)) => return unknown_tool(tools, &name),
        Err(invalid) => {
            let error = invalid.into_tool_error(tool);
            print_result(
                tool,
                "error",
                &serde_json::to_value(&error).expect("serializes"),
            );
            return ExitCode::FAILURE;
        }
    };
    let (out, progress) = cli_progress::stderr_renderer(tool);
    let ctx = CallContext::direct(
        Tool::from_name(tool).expect("parsed tool exists").into(),
        out,
    );
    let outcome = beam.handle(&ctx, call).await;
    drop(ctx);
    let _ = progress.await;
    match outcome {
        Ok(value) => print_result(tool, "result", &value),
        Err(error) => {
            print_result(
                tool,
                "error",
                &serde_json::to_value(&error).expect("serializes"),
            );
            ExitCode::FAILURE
        }
    }
}

/// One labelled result on stdout, `{"tool": ..., "result"|"error": ...}`, so
/// a run of several calls reads (and parses, as a JSON stream) call by call.
fn print_result(tool: &str, kind: &str, value: &Value) -> ExitCode {
    let labelled = serde_json::json!({ "tool": tool, kind: value });
    print_stdout(&(serde_json::to_string_pretty(&labelled).expect("serializes") + "\n"))
}

/// `health [ADDR]`: GET /health of a server on ADDR, within 3 s; exit 0 on
/// 200, 1 otherwise (draining answers 503), with the answer's first line.
fn health(addr: &str) -> ExitCode {
    use std::io::Read;
    const LIMIT: std::time::Duration = std::time::Duration::from_secs(3);
    let answer = http::parse_addr(addr).and_then(|addr| {
        let mut stream = std::net::TcpStream::connect_timeout(&addr, LIMIT)
            .map_err(|e| format!("cannot connect to {addr}: {e}"))?;
        stream.set_read_timeout(Some(LIMIT)).ok();
        stream.set_write_timeout(Some(LIMIT)).ok();
        let request = format!(
            "GET /health HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nConnection: close\r\n\r\n",
            addr.port()
        );
        stream
            .write_all(request.as_bytes())
            .map_err(|e| format!("cannot ask {addr}: {e}"))?;
        let mut head = vec![0u8; 512];
        let n = stream
            .read(&mut head)
            .map_err(|e| format!("no answer from {addr}: {e}"))?;
        let text = String::from_utf8_lossy(&head[..n]).into_owned();
        Ok(text.lines().next().unwrap_or_default().to_string())
    });
    match answer {
        Ok(status) if status.split(' ').nth(1) == Some("200") => {
            print_stdout(&format!("healthy: {status}\n"))
        }
        Ok(status) => {
            eprintln!("lean-beam-mcp: unhealthy: {status}");
            ExitCode::FAILURE
        }
        Err(message) => {
            eprintln!("lean-beam-mcp: unhealthy: {message}");
            ExitCode::FAILURE
        }
    }
}

/// `doctor [ROOT]`: the report on stdout, then the host snippets.
async fn doctor(root: Option<&str>) -> ExitCode {
    let env = doctor::Env {
        var: &env_var,
        path: env_var("PATH"),
    };
    let report = doctor::run(root, &env).await;
    let binary = std::env::current_exe()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| identity::NAME.into());
    let lean = env_var("LEAN_BEAM_LEAN").filter(|v| !v.is_empty());
    let worst = report.worst();
    let text = format!(
        "{}\n{}: {}\n\nRegister this binary with a host:\n\n{}",
        report.render(),
        identity::NAME,
        match worst {
            doctor::Level::Ok => "ready: the first call will start Lean as shown",
            doctor::Level::Warn => "usable, with the warnings above",
            doctor::Level::Fail => "the first call will fail: fix the FAIL lines above",
        },
        doctor::host_snippets(&binary, lean.as_deref())
    );
    let _ = print_stdout(&text);
    ExitCode::from(worst.exit_code())
}

fn env_var(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

async fn serve(tools: ToolSet, broker: Broker) -> ExitCode {
    let config = match dispatcher_config(tools) {
        Ok(config) => config,
        Err(status) => return status,
    };
    let replica = match replica_from_env() {
        Ok(replica) => replica,
        Err(status) => return status,
    };
    let stats = Arc::new(Stats::default());
    let beam = Arc::new(Beam::new(Arc::clone(&stats), broker).with_replica(replica));
    let dispatcher = Dispatcher::new(Arc::clone(&beam), stats, config);
    let (input, output) = stdio::process_stdio();
    stdio::serve(dispatcher, input, output, stdio::DEFAULT_MAX_LINE).await;
    beam.shutdown().await;
    ExitCode::SUCCESS
}

async fn serve_http(
    addr: SocketAddr,
    config: http::HttpConfig,
    options: replica::ReplicaOptions,
    tools: ToolSet,
    broker: Broker,
) -> ExitCode {
    let mut core = match dispatcher_config(tools) {
        Ok(core) => core,
        Err(status) => return status,
    };
    if let Some(n) = config.max_in_flight_per_client {
        core.max_in_flight_per_client = n;
    }
    let listener = match http::bind(addr).await {
        Ok(listener) => listener,
        Err(err) => {
            eprintln!("lean-beam-mcp: cannot listen on {addr}: {err}");
            return ExitCode::FAILURE;
        }
    };
    let local = listener.local_addr().unwrap_or(addr);
    let replica = options
        .id
        .unwrap_or_else(|| ReplicaId::default_for(Some(local.port())));
    // The listening line is the last one of start-up: tools and scripts wait for it.
    eprintln!("lean-beam-mcp: replica {}", replica.as_str());
    eprintln!("lean-beam-mcp: listening on http://{local}/mcp");
    let stats = Arc::new(Stats::default());
    let beam = Arc::new(Beam::new(Arc::clone(&stats), broker).with_replica(replica));
    let dispatcher = Dispatcher::new(Arc::clone(&beam), stats, core);
    let drain = config.drain.clone();
    let admitted = Arc::clone(&dispatcher);
    let stop = replica::drain_then_stop(
        replica::stop_signal,
        drain,
        async move { admitted.drain().await },
        options.drain,
    );
    http::serve(dispatcher, config, listener, stop).await;
    beam.shutdown().await;
    eprintln!("lean-beam-mcp: stopped");
    ExitCode::SUCCESS
}
