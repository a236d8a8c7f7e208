// Real hosts, registered with the README's snippets (read out of README.md and
// run as written), each with a private HOME under target/hosts-lane, driven by
// a scripted model API on loopback (tests/hosts/model_apis.mjs):
//
// - Claude Code: `claude mcp list` shows the server connected (stdio and
//   HTTP with a bearer token); `claude -p` calls lean_sync → lean_goals →
//   lean_run_batch on a fixture file. With a Lean that cannot start, the list
//   still says connected and the README's smoke test shows the cause.
// - Codex: `codex exec` calls beam_version → lean_sync unattended (stdio; and,
//   as a control, is refused without `default_tools_approval_mode`), and
//   lean_sync over HTTP with `bearer_token_env_var`.
// - Gemini CLI: `gemini mcp list` shows the server connected (stdio and HTTP);
//   `gemini -p` calls beam_version → lean_sync.
// - mcp-remote, VS Code's and Cursor's mcp.json: the server each names is
//   started and called with SDK v1, errors included.
//
// Each host's own tool-result text, as it handed it back to the model, is
// checked: the call reached the server and the server's answer reached the
// model.

import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import {
  CATALOG_SIZE,
  MODULES,
  NODE,
  hostEnv,
  importFrom,
  installedVersion,
  readmeSnippets,
  resultJson,
  run,
  scratch,
  shellCommands,
  snippet,
  snippetsRun,
  startHttpServer,
} from "./common.mjs";
import { startModelApi } from "./model_apis.mjs";

const GUARD_MS = 180_000;
const TOKEN = "hosts-lane-token";
const CLAUDE = join(MODULES, "@anthropic-ai/claude-code/bin/claude.exe");
const CODEX = join(MODULES, ".bin/codex");
const GEMINI = [NODE, join(MODULES, "@google/gemini-cli/bundle/gemini.js")];
const MCP_REMOTE = join(MODULES, "mcp-remote/dist/proxy.js");

assert.equal(installedVersion("@anthropic-ai/claude-code"), "2.1.332");
assert.equal(installedVersion("@openai/codex"), "0.171.0");
assert.equal(installedVersion("@google/gemini-cli"), "0.61.0");
assert.equal(installedVersion("mcp-remote"), "0.15.1");

let http;
before(async () => {
  http = await startHttpServer({ token: TOKEN });
});
after(() => http?.stop());

/** The README snippet `name`, with this run's URL filled in. */
const readme = (name) => snippet(name, { "http://127.0.0.1:8765/mcp": http.url });

/** Run each command of a README shell snippet (its program resolved to the installed host). */
async function runSnippet(name, programs, env, cwd) {
  for (const [program, ...args] of shellCommands(readme(name), { LEAN_BEAM_TOKEN: TOKEN })) {
    assert.ok(programs[program], `${name}: unexpected program ${program}`);
    const [command, ...pre] = programs[program];
    const result = await run(command, [...pre, ...args], { env, cwd });
    assert.equal(result.code, 0, `${name}: ${program} ${args.join(" ")}\n${result.stdout}\n${result.stderr}`);
  }
}

function lean(results, i) {
  assert.ok(results.length > i, `the host fed back ${results.length} tool result(s), expected more`);
  return resultJson(results[i]);
}

const fixtureArgs = (root) => ({ workspace: { root }, path: "Fix/Goals.lean" });

/** README's smoke test as scripted model turns: beam_version, then a first lean_sync. */
const smokeTest = (root) => [
  { tool: "beam_version", args: () => ({}) },
  { tool: "lean_sync", args: () => fixtureArgs(root) },
];

/** The host ran both turns and handed both of the server's answers back to the model. */
function checkSmokeTest(api, output) {
  assert.deepEqual(api.state.errors, []);
  assert.ok(api.state.finished, output);
  assert.equal(lean(api.state.toolResults, 0).name, "lean-beam-mcp");
  const sync = lean(api.state.toolResults, 1);
  assert.equal(sync.path, "Fix/Goals.lean");
  assert.equal(sync.diagnostics.counts.error, 0);
}

// ---- Claude Code --------------------------------------------------------------------

describe("Claude Code 2.1.332", () => {
  // Every claude command gets a loopback API: without ANTHROPIC_BASE_URL even
  // `claude mcp list` looks up api.anthropic.com (about 19 s of DNS retries offline).
  let idle;
  before(async () => {
    idle = await startModelApi("anthropic", []);
  });
  after(() => idle?.close());
  const claudeEnv = (home, extra = {}) =>
    hostEnv(home, {
      CLAUDE_CONFIG_DIR: join(home, ".claude"),
      ANTHROPIC_API_KEY: "sk-ant-scripted-not-a-key",
      ANTHROPIC_BASE_URL: idle.url,
      // MCP tools are put in the request directly, not behind the tool-search tool.
      ENABLE_TOOL_SEARCH: "false",
      ...extra,
    });

  test("stdio: claude mcp list connected; claude -p runs lean_sync → lean_goals → lean_run_batch", { timeout: GUARD_MS }, async () => {
    const home = scratch("claude-home");
    const root = scratch("claude-work", { workspace: true });
    let env = claudeEnv(home);
    await runSnippet("claude-stdio", { claude: [CLAUDE] }, env, root);
    const list = await run(CLAUDE, ["mcp", "list"], { env, cwd: root });
    assert.match(list.stdout, /lean-beam: .*Connected/, list.stdout + list.stderr);

    const api = await startModelApi("anthropic", [
      { tool: "lean_sync", args: () => fixtureArgs(root) },
      { tool: "lean_goals", args: ([sync]) => ({ ...fixtureArgs(root), version: sync.version, line: 15, character: 4, mode: "before", structured_goals: true }) },
      {
        tool: "lean_run_batch",
        args: ([sync]) => ({ ...fixtureArgs(root), version: sync.version, line: 16, character: 4, texts: ["exact congrArg N.succ ih", "exact ih"] }),
      },
    ]);
    try {
      env = claudeEnv(home, { ANTHROPIC_BASE_URL: api.url });
      const [[program, ...args]] = shellCommands(readme("claude-headless"));
      assert.equal(program, "claude");
      const result = await run(CLAUDE, [...args, "--output-format", "json"], { env, cwd: root, input: "", guardMs: GUARD_MS });
      assert.equal(result.code, 0, result.stdout + result.stderr);
      assert.deepEqual(api.state.errors, []);
      assert.ok(api.state.finished, `the scripted turns did not all run: ${result.stdout}\n${result.stderr}`);
      const results = api.state.toolResults;
      const sync = lean(results, 0);
      assert.equal(sync.path, "Fix/Goals.lean");
      assert.equal(sync.diagnostics.counts.error, 0, results[0]);
      assert.equal(lean(results, 1).goals[0].target, "Eq (N.zero.add m.succ) m.succ");
      const batch = lean(results, 2);
      assert.deepEqual(batch.candidates.map((c) => c.outcome), ["closed", "failed"], results[2]);
      // Every tool of the server reached the model.
      const declared = JSON.parse(api.state.requests.find((r) => /lean_sync/.test(r.body)).body).tools.map((t) => t.name);
      const ours = declared.filter((n) => n.startsWith("mcp__lean-beam__"));
      assert.equal(ours.length, CATALOG_SIZE, ours.join(","));
    } finally {
      await api.close();
    }
  });

  test("a Lean that cannot start: claude mcp list still says connected; the smoke test's lean_sync names the cause", { timeout: GUARD_MS }, async () => {
    const home = scratch("claude-nolean-home");
    const root = scratch("claude-nolean-work", { workspace: true });
    const broken = snippet("claude-stdio", { "/absolute/path/to/lean": join(root, "no-such-lean") });
    for (const [, ...args] of shellCommands(broken)) {
      const added = await run(CLAUDE, args, { env: claudeEnv(home), cwd: root });
      assert.equal(added.code, 0, added.stdout + added.stderr);
    }
    const list = await run(CLAUDE, ["mcp", "list"], { env: claudeEnv(home), cwd: root });
    assert.match(list.stdout, /lean-beam: .*Connected/, list.stdout + list.stderr);
    const api = await startModelApi("anthropic", smokeTest(root));
    try {
      const [[, ...args]] = shellCommands(readme("claude-headless"));
      const result = await run(CLAUDE, args, { env: claudeEnv(home, { ANTHROPIC_BASE_URL: api.url }), cwd: root, input: "", guardMs: GUARD_MS });
      assert.equal(result.code, 0, result.stdout + result.stderr);
      assert.ok(api.state.finished, result.stdout + result.stderr);
      assert.equal(lean(api.state.toolResults, 0).name, "lean-beam-mcp");
      const failed = lean(api.state.toolResults, 1);
      assert.equal(failed.code, "runtimeSetup", api.state.toolResults[1]);
      assert.match(failed.message, /no-such-lean|LEAN_BEAM_LEAN/, failed.message);
    } finally {
      await api.close();
    }
  });

  test("HTTP with a bearer token: claude mcp list connected", { timeout: GUARD_MS }, async () => {
    const home = scratch("claude-http-home");
    const env = claudeEnv(home);
    await runSnippet("claude-http", { claude: [CLAUDE] }, env, home);
    const list = await run(CLAUDE, ["mcp", "list"], { env, cwd: home });
    assert.match(list.stdout, /lean-beam: .*Connected/, list.stdout + list.stderr);
  });
});

// ---- Codex --------------------------------------------------------------------------

describe("Codex 0.171.0", () => {
  /** A private CODEX_HOME: the lane's model provider, then the README's server table. */
  function codexHome(name, api, serverToml) {
    const home = scratch(name);
    const codexHomeDir = join(home, ".codex");
    mkdirSync(codexHomeDir, { recursive: true });
    const provider = [
      'model = "scripted-model"',
      'model_provider = "scripted"',
      'check_for_update_on_startup = false',
      "[analytics]",
      "enabled = false",
      "[features]",
      "plugins = false",
      "[model_providers.scripted]",
      'name = "scripted"',
      `base_url = "${api.url}/v1"`,
      'wire_api = "responses"',
      'env_key = "SCRIPTED_API_KEY"',
      "",
    ].join("\n");
    writeFileSync(join(codexHomeDir, "config.toml"), `${provider}\n${serverToml}`);
    return { home, env: hostEnv(home, { CODEX_HOME: codexHomeDir, SCRIPTED_API_KEY: "scripted-not-a-key", LEAN_BEAM_TOKEN: TOKEN }) };
  }

  async function exec(env, cwd, prompt) {
    const result = await run(CODEX, ["exec", "--skip-git-repo-check", prompt], { env, cwd, guardMs: GUARD_MS });
    assert.equal(result.code, 0, result.stdout + result.stderr);
    return result;
  }

  test("stdio: codex exec runs beam_version → lean_sync unattended (the smoke test)", { timeout: GUARD_MS }, async () => {
    const root = scratch("codex-work", { workspace: true });
    const api = await startModelApi("openai", smokeTest(root));
    try {
      const { env } = codexHome("codex-home", api, readme("codex-stdio"));
      const result = await exec(env, root, "Smoke-test lean-beam.");
      checkSmokeTest(api, result.stdout + result.stderr);
    } finally {
      await api.close();
    }
  });

  test("without default_tools_approval_mode, codex exec refuses lean_sync (why the README sets it)", { timeout: GUARD_MS }, async () => {
    const root = scratch("codex-ask-work", { workspace: true });
    const api = await startModelApi("openai", [{ tool: "lean_sync", args: () => fixtureArgs(root) }]);
    try {
      const setting = 'default_tools_approval_mode = "approve"\n';
      const toml = readme("codex-stdio");
      assert.ok(toml.includes(setting), toml);
      const { env } = codexHome("codex-ask-home", api, toml.replace(setting, ""));
      await exec(env, root, "Sync Fix/Goals.lean.");
      assert.ok(api.state.finished);
      assert.match(api.state.toolResults[0], /requires approval/, api.state.toolResults[0]);
    } finally {
      await api.close();
    }
  });

  test("HTTP with bearer_token_env_var: codex exec runs lean_sync", { timeout: GUARD_MS }, async () => {
    const root = scratch("codex-http-work", { workspace: true });
    const api = await startModelApi("openai", [{ tool: "lean_sync", args: () => fixtureArgs(root) }]);
    try {
      const { env } = codexHome("codex-http-home", api, readme("codex-http"));
      const result = await exec(env, root, "Sync Fix/Goals.lean.");
      assert.deepEqual(api.state.errors, []);
      assert.ok(api.state.finished, result.stdout + result.stderr);
      assert.equal(lean(api.state.toolResults, 0).path, "Fix/Goals.lean");
    } finally {
      await api.close();
    }
  });
});

// ---- Gemini CLI ---------------------------------------------------------------------

describe("Gemini CLI 0.61.0", () => {
  function geminiHome(name, root, settings) {
    const home = scratch(name);
    const dir = join(home, ".gemini");
    mkdirSync(dir, { recursive: true });
    // What the user does once, interactively: trust the project folder.
    writeFileSync(join(dir, "trustedFolders.json"), JSON.stringify({ [root]: "TRUST_FOLDER" }));
    const quiet = {
      security: { auth: { selectedType: "gemini-api-key" } },
      general: { enableAutoUpdate: false, enableAutoUpdateNotification: false },
      privacy: { usageStatisticsEnabled: false },
      telemetry: { enabled: false },
    };
    writeFileSync(join(dir, "settings.json"), JSON.stringify({ ...quiet, ...settings }, null, 2));
    return home;
  }
  const geminiEnv = (home, extra = {}) => hostEnv(home, { GEMINI_API_KEY: "scripted-not-a-key", ...extra });

  test("stdio: gemini mcp list connected; gemini -p runs beam_version → lean_sync", { timeout: GUARD_MS }, async () => {
    const root = scratch("gemini-work", { workspace: true });
    const home = geminiHome("gemini-home", root, JSON.parse(readme("gemini-settings")));
    const list = await run(GEMINI[0], [GEMINI[1], "mcp", "list"], { env: geminiEnv(home), cwd: root });
    assert.match(list.stdout + list.stderr, /lean-beam: .*Connected/, list.stdout + list.stderr);

    const api = await startModelApi("gemini", smokeTest(root));
    try {
      const env = geminiEnv(home, { GOOGLE_GEMINI_BASE_URL: api.url });
      // A model named on the command line: no routing classifier request.
      const args = [GEMINI[1], "-p", "Smoke-test lean-beam.", "-m", "gemini-2.5-flash", "--output-format", "json"];
      const result = await run(GEMINI[0], args, { env, cwd: root, guardMs: GUARD_MS });
      assert.equal(result.code, 0, result.stdout + result.stderr);
      checkSmokeTest(api, result.stdout + result.stderr);
    } finally {
      await api.close();
    }
  });

  test("HTTP with a bearer token (gemini mcp add): gemini mcp list connected", { timeout: GUARD_MS }, async () => {
    const root = scratch("gemini-http-work");
    const home = geminiHome("gemini-http-home", root, {});
    const env = geminiEnv(home);
    await runSnippet("gemini-http", { gemini: GEMINI }, env, root);
    const list = await run(GEMINI[0], [GEMINI[1], "mcp", "list"], { env, cwd: root });
    assert.match(list.stdout + list.stderr, /lean-beam: .*Connected/, list.stdout + list.stderr);
  });
});

// ---- mcp.json of VS Code and Cursor; mcp-remote --------------------------------------

describe("mcp.json entries, started and called with SDK v1 1.32.2", async () => {
  const { Client } = await importFrom("@modelcontextprotocol/sdk", "dist/esm/client/index.js");
  const { StdioClientTransport } = await importFrom("@modelcontextprotocol/sdk", "dist/esm/client/stdio.js");

  /** Start the stdio server an mcp.json entry names, list, sync, and show an error. */
  async function callEntry(entry, root, envExtra = {}) {
    const client = new Client({ name: "lean-beam-hosts-lane", version: "1.0.0" });
    const env = { ...hostEnv(scratch(`entry-home-${Math.random().toString(36).slice(2)}`)), ...entry.env, ...envExtra };
    await client.connect(new StdioClientTransport({ command: entry.command, args: entry.args ?? [], env, cwd: root, stderr: "ignore" }));
    try {
      const { tools } = await client.listTools();
      assert.equal(tools.length, CATALOG_SIZE);
      const version = await client.callTool({ name: "beam_version", arguments: {} });
      assert.equal(JSON.parse(version.content[0].text).name, "lean-beam-mcp");
      const sync = await client.callTool({ name: "lean_sync", arguments: fixtureArgs(root) }, undefined, { timeout: GUARD_MS });
      assert.notEqual(sync.isError, true, JSON.stringify(sync));
      const missing = await client.callTool({ name: "lean_sync", arguments: { workspace: { root }, path: "Fix/Missing.lean" } });
      assert.equal(missing.isError, true, JSON.stringify(missing));
      const error = JSON.parse(missing.content[0].text);
      assert.ok(error.code && error.message, missing.content[0].text);
    } finally {
      await client.close();
    }
  }

  test("VS Code (.vscode/mcp.json)", { timeout: GUARD_MS }, async () => {
    const root = scratch("vscode-work", { workspace: true });
    const { servers } = JSON.parse(readme("vscode"));
    assert.equal(servers["lean-beam"].type, "stdio");
    await callEntry(servers["lean-beam"], root);
  });

  test("Cursor (~/.cursor/mcp.json)", { timeout: GUARD_MS }, async () => {
    const root = scratch("cursor-work", { workspace: true });
    const { mcpServers } = JSON.parse(readme("cursor"));
    await callEntry(mcpServers["lean-beam"], root);
  });

  test("mcp-remote 0.15.1 to the HTTP server with a bearer token", { timeout: GUARD_MS }, async () => {
    const root = scratch("mcp-remote-work", { workspace: true });
    const entry = JSON.parse(readme("mcp-remote")).mcpServers["lean-beam"];
    // `npx -y mcp-remote@0.15.1` is the installed mcp-remote 0.15.1 (no download).
    assert.equal(entry.command, "npx");
    assert.deepEqual(entry.args.slice(0, 2), ["-y", "mcp-remote@0.15.1"]);
    const local = { ...entry, command: NODE, args: [MCP_REMOTE, ...entry.args.slice(2)] };
    await callEntry(local, root, { LEAN_BEAM_AUTH: `Bearer ${TOKEN}` });
  });
});

// Last (tests run in order): no README snippet goes untested.
test("every snippet marked in README.md was run", () => {
  assert.deepEqual([...snippetsRun].sort(), [...readmeSnippets().keys()].sort());
});
