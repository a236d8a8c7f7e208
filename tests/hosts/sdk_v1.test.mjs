// The TypeScript SDK v1 (npm @modelcontextprotocol/sdk 1.32.2, what most hosts
// bundle: Gemini CLI, the Inspectors, mcp-remote, VS Code extensions) drives a
// real lean-beam-mcp over stdio and over Streamable HTTP and calls every tool,
// successes and errors, through `Client.callTool` — which checks a result's
// `structuredContent` against the tool's `outputSchema` and, where that fails,
// throws "Structured content does not match the tool's output schema" instead
// of showing the server's result. So every call here must come back as the
// server wrote it: a success whose JSON is `content[0].text`, an error
// (`isError: true`) whose `content[0].text` is the server's own
// `{code, message}`.
//
// SDK v1 speaks only the initialize-based family (its newest revision is
// 2025-11-25; it has no `server/discover`), over stdio and HTTP alike: the
// stateless 2026-07-28 family is the v2 client's lane
// (tests/clients/typescript). SDK 1.22.0 (newest revision 2025-06-18, what
// Gemini CLI and older hosts ship) must connect and call too.
//
// Run by scripts/test.sh through tests/hosts/run.sh.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { BINARY, REPO, importFrom, installedVersion, scratch, serverEnv, startHttpServer } from "./common.mjs";

const GUARD_MS = 120_000;
const SDK = "@modelcontextprotocol/sdk";
const OLD_SDK = "sdk-1-22"; // npm:@modelcontextprotocol/sdk@1.22.0 (package.json alias)

assert.equal(installedVersion(SDK), "1.32.2");
assert.equal(installedVersion(OLD_SDK), "1.22.0");

async function sdk(name) {
  const { Client } = await importFrom(name, "dist/esm/client/index.js");
  const { StdioClientTransport } = await importFrom(name, "dist/esm/client/stdio.js");
  const { StreamableHTTPClientTransport } = await importFrom(name, "dist/esm/client/streamableHttp.js");
  const { LATEST_PROTOCOL_VERSION } = await importFrom(name, "dist/esm/types.js");
  return { Client, StdioClientTransport, StreamableHTTPClientTransport, LATEST_PROTOCOL_VERSION };
}

const golden = JSON.parse(readFileSync(join(REPO, "tests/golden/tools.json"), "utf8"));

/** A success as SDK v1 hands it to a host: the structured result, equal to content[0].text. */
function success(result, name) {
  assert.notEqual(result.isError, true, `${name}: ${JSON.stringify(result).slice(0, 800)}`);
  assert.equal(result.content[0].type, "text", name);
  const shown = JSON.parse(result.content[0].text);
  assert.deepEqual(shown, result.structuredContent, `${name}: content[0].text is the structured result`);
  return shown;
}

/** An error as SDK v1 hands it to a host: the server's own {code, message} in content[0].text. */
function toolError(result, name, code) {
  assert.equal(result.isError, true, `${name}: expected a tool error, got ${JSON.stringify(result).slice(0, 800)}`);
  assert.equal(result.content[0].type, "text", name);
  const shown = JSON.parse(result.content[0].text);
  assert.equal(typeof shown.message, "string", `${name}: ${result.content[0].text}`);
  assert.ok(shown.message.length > 0, name);
  assert.doesNotMatch(shown.message, /Structured content does not match/, name);
  if (code) assert.equal(shown.code, code, `${name}: ${result.content[0].text}`);
  return shown;
}

/**
 * Every tool of the catalog, in an order where each call has what it needs:
 * the tools' successes on a copy of the `basic` fixture, then errors a user
 * meets (a version never synced, a missing file, a position past the end, an
 * unknown handle). Returns the names called.
 */
async function everyTool(client, root) {
  const called = new Set();
  const workspace = { root };
  const call = async (name, args) => {
    called.add(name);
    return client.callTool({ name, arguments: args }, undefined, { timeout: GUARD_MS });
  };
  const ok = async (name, args) => success(await call(name, args), name);

  await ok("beam_version", {});
  await ok("beam_stats", {});

  const goalsFile = { workspace, path: "Fix/Goals.lean" };
  const sync = await ok("lean_sync", goalsFile);
  assert.equal(sync.diagnostics.counts.error, 0, JSON.stringify(sync));
  await ok("lean_update", goalsFile);
  const refreshed = await ok("lean_refresh", goalsFile);
  const v = refreshed.version;
  const at = (line, character) => ({ ...goalsFile, version: v, line, character });

  await ok("lean_hover", at(11, 10));
  await ok("lean_signature_help", at(16, 19));
  await ok("lean_completions", { ...at(16, 12), limit: 5 });
  await ok("lean_definition", at(16, 10));
  await ok("lean_references", at(16, 10));
  await ok("lean_document_symbols", { ...goalsFile, version: v, signatures: true });
  await ok("lean_workspace_symbols", { workspace, query: "add" });
  const found = await ok("lean_search", { workspace, query: "add_zero" });
  assert.ok(found.hits.length > 0, JSON.stringify(found));
  const goals = await ok("lean_goals", { ...at(15, 4), mode: "before", structured_goals: true });
  assert.equal(goals.goals[0].target, "Eq (N.zero.add m.succ) m.succ");
  await ok("lean_term_goal", at(13, 26));

  await ok("lean_run_at", { ...at(16, 4), text: "exact congrArg N.succ ih" });
  const started = await ok("lean_run_at_handle", { ...at(15, 4), text: "show Eq (N.succ (N.add N.zero m)) (N.succ m)" });
  assert.ok(started.next_handle, JSON.stringify(started));
  const next = await ok("lean_run_with", { ...goalsFile, handle: started.next_handle, text: "skip" });
  await ok("lean_handle_edit", { ...goalsFile, handle: next.next_handle ?? started.next_handle });
  await ok("lean_run_with_linear", { ...goalsFile, handle: started.next_handle, text: "exact congrArg N.succ ih" });
  const other = await ok("lean_run_at_handle", { ...at(15, 4), text: "skip" });
  await ok("lean_release", { ...goalsFile, handle: other.next_handle });
  const batch = await ok("lean_run_batch", { ...at(16, 4), texts: ["exact congrArg N.succ ih", "exact ih"] });
  assert.equal(batch.candidates.length, 2, JSON.stringify(batch));
  // No suggestion tactic is registered in Fix/Goals.lean: a tactic that
  // closes by itself is its own suggestion, the other is unavailable.
  const suggested = await ok("lean_suggest", { ...at(16, 4), tactics: ["exact congrArg N.succ ih", "exact?"] });
  assert.equal(suggested.suggestions[0].outcome, "closed", JSON.stringify(suggested));
  assert.equal(suggested.tactics[1].status, "unavailable", JSON.stringify(suggested));
  await ok("lean_run_code", { workspace, code: "prelude\nimport Fix.Basic\ntheorem t : Eq Fix.one Fix.one := Eq.refl _" });
  await ok("lean_verify", { ...goalsFile, version: v });

  const errorsFile = { workspace, path: "Fix/Errors.lean" };
  const errors = await ok("lean_sync", errorsFile);
  const todo = await ok("lean_todo", { ...errorsFile, version: errors.version, start_line: 0, start_character: 0, end_line: 26, end_character: 0 });
  const action = todo.items.find((i) => i.kind === "code_action");
  assert.ok(action, JSON.stringify(todo));
  await ok("lean_code_action_resolve", { ...errorsFile, version: errors.version, code_action: action.code_action });

  await ok("lean_save", goalsFile);
  await ok("lean_close_save", goalsFile);
  await ok("lean_close", errorsFile);
  await ok("beam_feedback_report", {
    workspace,
    title: "hosts lane",
    summary: "a report the SDK v1 lane writes",
    reproduction: "lean_sync Fix/Goals.lean",
    expected: "a result",
    actual: "a result",
  });

  // Errors a user meets, each shown as the server wrote it.
  toolError(await call("lean_goals", { ...goalsFile, version: 9999, line: 15, character: 4, mode: "before" }), "lean_goals at a version never synced");
  toolError(await call("lean_sync", { workspace, path: "Fix/Missing.lean" }), "lean_sync of a missing file");
  const again = await ok("lean_sync", goalsFile);
  toolError(await call("lean_hover", { ...goalsFile, version: again.version, line: 9999, character: 0 }), "lean_hover past the end");
  toolError(await call("lean_run_with", { ...goalsFile, handle: "not-a-handle", text: "skip" }), "lean_run_with an unknown handle");
  toolError(await call("lean_verify", { ...goalsFile, version: 9999 }), "lean_verify of a version never synced");
  await ok("lean_drop_workspace", { workspace });
  return called;
}

/** The most common set-up error: no `lake` on PATH and no LEAN_BEAM_LEAN. */
async function runtimeSetupError(client, root) {
  const result = await client.callTool({ name: "lean_sync", arguments: { workspace: { root }, path: "Fix/Goals.lean" } });
  const shown = toolError(result, "lean_sync without Lean", "runtimeSetup");
  assert.match(shown.message, /lake|LEAN_BEAM_LEAN/, shown.message);
}

function checkCatalog(tools) {
  assert.deepEqual(tools.map((t) => t.name), golden.map((t) => t.name));
}

describe("TypeScript SDK v1 1.32.2", async () => {
  const { Client, StdioClientTransport, StreamableHTTPClientTransport, LATEST_PROTOCOL_VERSION } = await sdk(SDK);
  assert.equal(LATEST_PROTOCOL_VERSION, "2025-11-25");
  const newClient = () => new Client({ name: "lean-beam-hosts-lane", version: "1.0.0" });

  test("stdio: every tool, successes and errors, as the server wrote them", { timeout: GUARD_MS * 2 }, async () => {
    const root = scratch("sdk-v1-stdio", { workspace: true });
    const client = newClient();
    await client.connect(new StdioClientTransport({ command: BINARY, args: [], cwd: root, env: serverEnv(), stderr: "ignore" }));
    try {
      assert.equal(client.getServerVersion()?.name, "lean-beam-mcp");
      const { tools } = await client.listTools();
      checkCatalog(tools);
      const called = await everyTool(client, root);
      assert.deepEqual([...called].sort(), golden.map((t) => t.name).sort(), "every tool called");
    } finally {
      await client.close();
    }
  });

  test("stdio: runtimeSetup (no lake, no LEAN_BEAM_LEAN) is shown as the server wrote it", { timeout: GUARD_MS }, async () => {
    const root = scratch("sdk-v1-setup", { workspace: true });
    const env = serverEnv();
    delete env.LEAN_BEAM_LEAN;
    env.PATH = "/nonexistent";
    const client = newClient();
    await client.connect(new StdioClientTransport({ command: BINARY, args: [], cwd: root, env, stderr: "ignore" }));
    try {
      await runtimeSetupError(client, root);
    } finally {
      await client.close();
    }
  });

  describe("Streamable HTTP with a bearer token", async () => {
    const token = "hosts-lane-token";
    let server;
    before(async () => {
      server = await startHttpServer({ token });
    });
    after(() => server?.stop());

    test("every tool, successes and errors, as the server wrote them", { timeout: GUARD_MS * 2 }, async () => {
      const root = scratch("sdk-v1-http", { workspace: true });
      const client = newClient();
      const transport = new StreamableHTTPClientTransport(new URL(server.url), {
        requestInit: { headers: { Authorization: `Bearer ${token}` } },
      });
      await client.connect(transport);
      try {
        assert.equal(client.getServerVersion()?.name, "lean-beam-mcp");
        checkCatalog((await client.listTools()).tools);
        const called = await everyTool(client, root);
        assert.equal(called.size, golden.length);
      } finally {
        await client.close();
      }
    });
  });
});

describe("TypeScript SDK v1 1.22.0 (offers 2025-06-18)", async () => {
  const { Client, StdioClientTransport, StreamableHTTPClientTransport, LATEST_PROTOCOL_VERSION } = await sdk(OLD_SDK);
  assert.equal(LATEST_PROTOCOL_VERSION, "2025-06-18");

  async function smoke(client, root) {
    assert.equal(client.getServerVersion()?.name, "lean-beam-mcp");
    checkCatalog((await client.listTools()).tools);
    success(await client.callTool({ name: "beam_version", arguments: {} }), "beam_version");
    const workspace = { root };
    const sync = success(await client.callTool({ name: "lean_sync", arguments: { workspace, path: "Fix/Goals.lean" } }, undefined, { timeout: GUARD_MS }), "lean_sync");
    toolError(
      await client.callTool({ name: "lean_goals", arguments: { workspace, path: "Fix/Goals.lean", version: sync.version + 100, line: 15, character: 4, mode: "before" } }),
      "lean_goals at a version never synced",
    );
  }

  test("stdio: connects, lists, calls, shows an error", { timeout: GUARD_MS }, async () => {
    const root = scratch("sdk-1-22-stdio", { workspace: true });
    const client = new Client({ name: "lean-beam-hosts-lane", version: "1.0.0" });
    await client.connect(new StdioClientTransport({ command: BINARY, args: [], cwd: root, env: serverEnv(), stderr: "ignore" }));
    try {
      await smoke(client, root);
    } finally {
      await client.close();
    }
  });

  test("Streamable HTTP: connects, lists, calls, shows an error", { timeout: GUARD_MS }, async () => {
    const root = scratch("sdk-1-22-http", { workspace: true });
    const server = await startHttpServer();
    const client = new Client({ name: "lean-beam-hosts-lane", version: "1.0.0" });
    try {
      const transport = new StreamableHTTPClientTransport(new URL(server.url));
      await client.connect(transport);
      // The revision it asked for, which the server answers in the initialize-based family.
      assert.equal(transport.protocolVersion, "2025-06-18");
      await smoke(client, root);
    } finally {
      await client.close();
      server.stop();
    }
  });
});
