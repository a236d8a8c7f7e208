// The official MCP TypeScript client (npm @modelcontextprotocol/client 2.4.0,
// locked in package-lock.json) drives a real lean-beam-mcp over stdio and over
// Streamable HTTP, in both protocol eras: the client's default (initialize,
// 2025-11-25) and negotiated modern 2026-07-28 ("auto": server/discover first;
// a pinned revision). Each session lists the tools, syncs a Lean file with a
// progress token (progress must arrive, before the result) and asks for goals.
//
// Run by scripts/test.sh (node --test), which installs the client and Node 22
// through scripts/setup-test-clients.sh. By hand:
//
//   scripts/setup-test-clients.sh >/dev/null
//   LEAN_BEAM_MCP_BIN=$PWD/target/debug/lean-beam-mcp \
//   LEAN_BEAM_LEAN=$(scripts/install-test-lean.sh) \
//   LEAN_BEAM_TS_CLIENT_DIR=$PWD/target/test-clients/typescript \
//     target/test-clients/typescript/node_modules/node/bin/node --test tests/clients/typescript/lean_loop.test.mjs
//
// Timeouts are failure guards only.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { after, describe, test } from "node:test";
import { pathToFileURL } from "node:url";

const REPO = resolve(import.meta.dirname, "../../..");
const BINARY = process.env.LEAN_BEAM_MCP_BIN ?? join(REPO, "target/debug/lean-beam-mcp");
const LEAN = process.env.LEAN_BEAM_LEAN;
const ROOT = resolve(process.env.LEAN_BEAM_FIXTURE ?? join(REPO, "tests/fixtures/basic"));
const CLIENT_DIR = process.env.LEAN_BEAM_TS_CLIENT_DIR ?? join(REPO, "target/test-clients/typescript");
const GUARD_MS = 120_000;

const MODERN = "2026-07-28";
const LEGACY = "2025-11-25";

assert.ok(LEAN, "set LEAN_BEAM_LEAN to the test toolchain's lean (scripts/install-test-lean.sh)");

// The client is installed under target/, not beside this file: load its ESM
// entry points through the package's own export map.
const packageDir = join(CLIENT_DIR, "node_modules/@modelcontextprotocol/client");
const manifest = JSON.parse(readFileSync(join(packageDir, "package.json"), "utf8"));
assert.equal(manifest.version, "2.4.0", "the locked client version");
const entry = (subpath) =>
  import(pathToFileURL(join(packageDir, manifest.exports[subpath].import.default)).href);
const { Client, StreamableHTTPClientTransport } = await entry(".");
const { StdioClientTransport } = await entry("./stdio");

function serverEnv() {
  const env = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (!key.startsWith("LEAN_BEAM_")) env[key] = value;
  }
  env.LEAN_BEAM_LEAN = LEAN;
  env.LEAN_BEAM_LOG = "warn";
  return env;
}

/** `lean-beam-mcp --http 127.0.0.1:0`, resolved with its announced URL. */
function startHttpServer() {
  const child = spawn(BINARY, ["--http", "127.0.0.1:0"], {
    cwd: ROOT,
    env: serverEnv(),
    stdio: ["ignore", "ignore", "pipe"],
  });
  const log = [];
  return new Promise((resolveUrl, reject) => {
    const guard = setTimeout(() => reject(new Error(`no URL announced: ${log.join("")}`)), 20_000);
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", (chunk) => {
      log.push(chunk);
      const found = log.join("").match(/listening on (http:\/\/127\.0\.0\.1:\d+\/mcp)/);
      if (found) {
        clearTimeout(guard);
        resolveUrl({ child, url: new URL(found[1]), log });
      }
    });
    child.on("exit", (code) => reject(new Error(`the server exited (${code}): ${log.join("")}`)));
  });
}

// How each connection is negotiated, and the revision it must end up speaking.
const MODES = [
  { name: "default", options: {}, revision: LEGACY },
  { name: "auto", options: { versionNegotiation: { mode: "auto" } }, revision: MODERN },
  { name: "pinned", options: { versionNegotiation: { mode: { pin: MODERN } } }, revision: MODERN },
];

function newClient(mode) {
  return new Client({ name: "lean-beam-ts-test", version: "1.0.0" }, mode.options);
}

/** The structured result; content[0].text must be the same JSON. */
function structured(result) {
  assert.equal(result.isError ?? false, false, JSON.stringify(result));
  assert.equal(result.content.length, 1, JSON.stringify(result));
  assert.equal(result.content[0].type, "text");
  assert.deepEqual(JSON.parse(result.content[0].text), result.structuredContent);
  return result.structuredContent;
}

/** tools/list, lean_sync with a progress token, lean_goals: the agent loop's start. */
async function leanLoop(client, mode) {
  assert.equal(client.getNegotiatedProtocolVersion(), mode.revision);
  assert.equal(client.getServerVersion()?.name, "lean-beam-mcp");
  assert.match(client.getInstructions() ?? "", /0-based/);

  const { tools } = await client.listTools();
  const names = tools.map((t) => t.name);
  // Every tool, in table order, as the checked-in catalog lists them.
  const golden = JSON.parse(readFileSync(new URL("../../golden/tools.json", import.meta.url), "utf8"));
  assert.deepEqual(names, golden.map((t) => t.name));
  for (const name of ["lean_sync", "lean_goals", "lean_run_at"]) assert.ok(names.includes(name), name);
  for (const tool of tools) {
    assert.equal(tool.inputSchema.type, "object", tool.name);
    assert.equal(tool.inputSchema.$schema, undefined, tool.name);
  }

  const workspace = { root: ROOT };
  const updates = [];
  let resultSeen = false;
  const sync = structured(
    await client.callTool(
      { name: "lean_sync", arguments: { workspace, path: "Fix/Goals.lean" } },
      {
        timeout: GUARD_MS,
        onprogress: (progress) => {
          assert.equal(resultSeen, false, "progress after the result");
          updates.push(progress);
        },
      },
    ),
  );
  resultSeen = true;
  assert.deepEqual(sync.workspace, workspace);
  assert.equal(sync.path, "Fix/Goals.lean");
  assert.ok(Number.isInteger(sync.version) && sync.version >= 1, JSON.stringify(sync));
  assert.equal(sync.diagnostics.counts.error, 0, JSON.stringify(sync));
  assert.ok(updates.length >= 1, "no progress arrived");
  const values = updates.map((u) => u.progress);
  for (let i = 1; i < values.length; i++) assert.ok(values[i] > values[i - 1], `not increasing: ${values}`);
  assert.match(updates[0].message ?? "", /lean_sync/);

  const goals = structured(
    await client.callTool(
      {
        name: "lean_goals",
        arguments: { workspace, path: "Fix/Goals.lean", version: sync.version, line: 15, character: 4, mode: "before" },
      },
      { timeout: GUARD_MS },
    ),
  );
  assert.equal(goals.version, sync.version);
  assert.equal(goals.goals.length, 1, JSON.stringify(goals));
  assert.equal(goals.goals[0].pretty, "case succ\nm : N\nih : Eq (N.zero.add m) m\n⊢ Eq (N.zero.add m.succ) m.succ");
  return updates.length;
}

describe("stdio", () => {
  for (const mode of MODES) {
    test(`${mode.name} → ${mode.revision}`, { timeout: GUARD_MS }, async () => {
      const client = newClient(mode);
      const transport = new StdioClientTransport({ command: BINARY, args: [], cwd: ROOT, env: serverEnv() });
      await client.connect(transport);
      try {
        await leanLoop(client, mode);
      } finally {
        await client.close();
      }
    });
  }
});

describe("Streamable HTTP", async () => {
  const server = await startHttpServer();
  after(() => server.child.kill("SIGTERM"));
  for (const mode of MODES) {
    test(`${mode.name} → ${mode.revision}`, { timeout: GUARD_MS }, async () => {
      const client = newClient(mode);
      await client.connect(new StreamableHTTPClientTransport(server.url));
      try {
        await leanLoop(client, mode);
      } finally {
        await client.close();
      }
    });
  }
});
