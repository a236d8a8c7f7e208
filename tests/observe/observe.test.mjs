// /metrics and /status of a real lean-beam-mcp --http with the real Lean, as an
// operator meets them: Prometheus's own checker reads /metrics, and Debian's
// headless Chromium loads /status (with the bearer token, as a browser behind
// an authenticating proxy would send it), which must show the workspace a
// lean_sync opened, raise no console error, load nothing from elsewhere and
// reload itself. The screenshot is kept at $LEAN_BEAM_STATUS_SHOT.
//
// Environment: LEAN_BEAM_MCP_BIN, LEAN_BEAM_LEAN, LEAN_BEAM_FIXTURE (a root),
// PROMTOOL (a promtool, or empty when the lane runs without it), CHROMIUM (a
// chromium, or empty), LEAN_BEAM_STATUS_SHOT (the PNG to write).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { createInterface } from "node:readline";
import { mkdirSync } from "node:fs";
import { dirname } from "node:path";

const TOKEN = "observe-lane-token-8e21";
const env = (name) => {
  const value = process.env[name];
  if (value === undefined) throw new Error(`${name} is not set`);
  return value;
};
const root = env("LEAN_BEAM_FIXTURE");
let server;
let base;

before(async () => {
  server = spawn(env("LEAN_BEAM_MCP_BIN"), ["--http", "127.0.0.1:0", "--replica-id", "lane-r1"], {
    env: { ...process.env, LEAN_BEAM_LOG: "warn", LEAN_BEAM_HTTP_TOKEN: TOKEN, LEAN_BEAM_LEAN: env("LEAN_BEAM_LEAN") },
    stdio: ["ignore", "ignore", "pipe"],
  });
  base = await new Promise((resolve, reject) => {
    const lines = createInterface({ input: server.stderr });
    lines.on("line", (line) => {
      const m = line.match(/listening on (http:\/\/[^/]+)\/mcp/);
      if (m) resolve(m[1]);
    });
    server.on("exit", (code) => reject(new Error(`the server exited (${code}) before listening`)));
  });
  // One workspace synced, and one call refused by its schema.
  const synced = await call(1, "lean_sync", { workspace: { root }, path: "Fix/Errors.lean" });
  assert.equal(synced.result.isError, false, JSON.stringify(synced));
  const wrong = await call(2, "lean_goals", { workspace: { root }, path: "Fix/Errors.lean", version: 1, line: "x", character: 0 });
  assert.equal(wrong.result.isError, true, JSON.stringify(wrong));
});

after(() => server?.kill("SIGINT"));

async function call(id, name, args) {
  const response = await fetch(`${base}/mcp`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${TOKEN}`,
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": "2026-07-28",
      "mcp-method": "tools/call",
      "mcp-name": name,
    },
    body: JSON.stringify({
      jsonrpc: "2.0", id, method: "tools/call",
      params: { name, arguments: args, _meta: { "io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {} } },
    }),
  });
  const text = await response.text();
  const messages = text.startsWith("{")
    ? [JSON.parse(text)]
    : text.split("\n").filter((l) => l.startsWith("data:")).map((l) => JSON.parse(l.slice(5)));
  return messages.find((m) => m.id === id);
}

test("promtool check metrics accepts /metrics", { skip: !process.env.PROMTOOL && "no promtool here (scripts/observe-lane.sh said why)" }, async () => {
  const refused = await fetch(`${base}/metrics`);
  assert.equal(refused.status, 401, "/metrics needs the token when one is set");
  const response = await fetch(`${base}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
  assert.equal(response.status, 200);
  const text = await response.text();
  assert.match(text, /^lean_beam_tool_calls_total\{tool="lean_sync",era="2026-07-28"\} 1$/m);
  assert.match(text, /^lean_beam_tool_errors_total\{tool="lean_goals",code="invalidInput"\} 1$/m);
  assert.match(text, /^lean_beam_lean_servers 1$/m);
  const check = spawnSync(process.env.PROMTOOL, ["check", "metrics"], { input: text, encoding: "utf8" });
  const said = `${check.stdout}${check.stderr}`.trim();
  console.log(`promtool check metrics: exit ${check.status}${said ? `: ${said}` : ", no findings"} (${text.split("\n").length} lines)`);
  assert.equal(check.status, 0, said);
  assert.equal(said, "", "promtool found nothing to lint");
});

test("/status in headless Chromium", { skip: !process.env.CHROMIUM && "no chromium here (scripts/observe-lane.sh said why)" }, async () => {
  const { chromium } = await import("playwright-core");
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM,
    // The flags that work on this kind of machine (closed network, root).
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
  try {
    // Without the token: refused, and nothing of the page is shown.
    const anonymous = await browser.newPage();
    const refused = await anonymous.goto(`${base}/status`);
    assert.equal(refused.status(), 401);
    await anonymous.close();

    const context = await browser.newContext({
      extraHTTPHeaders: { authorization: `Bearer ${TOKEN}` },
      viewport: { width: 1280, height: 900 },
    });
    const page = await context.newPage();
    const problems = [];
    page.on("console", (m) => { if (m.type() === "error" || m.type() === "warning") problems.push(`console ${m.type()}: ${m.text()}`); });
    page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
    page.on("requestfailed", (r) => problems.push(`request failed: ${r.url()} ${r.failure()?.errorText}`));
    const requests = [];
    page.on("request", (r) => requests.push(r.url()));

    const response = await page.goto(`${base}/status`, { waitUntil: "load" });
    assert.equal(response.status(), 200);
    const csp = response.headers()["content-security-policy"];
    assert.ok(csp.startsWith("default-src 'none'"), csp);
    const body = await page.locator("body").innerText();
    for (const expected of [root, "Fix/Errors.lean", "lane-r1", "LEAN_BEAM_MAX_RUNTIMES", "invalidInput", "running, pid"]) {
      assert.ok(body.includes(expected), `${expected} is not on the page:\n${body}`);
    }
    const shot = env("LEAN_BEAM_STATUS_SHOT");
    mkdirSync(dirname(shot), { recursive: true });
    await page.screenshot({ path: shot, fullPage: true });

    // It reloads itself (meta refresh): the next load comes without our asking.
    await page.waitForEvent("load", { timeout: 60_000 });
    assert.ok((await page.locator("body").innerText()).includes(root));
    assert.deepEqual(problems, [], problems.join("\n"));
    assert.ok(requests.every((u) => u.startsWith(`${base}/status`)), `only the page itself is loaded: ${requests.join(", ")}`);
    console.log(`status page: ${requests.length} loads of /status, no console error; screenshot ${shot}`);
    await context.close();
  } finally {
    await browser.close();
  }
});

// A control for the console check: an error on a page is seen (the check is
// not blind).
test("the console check sees an error", { skip: !process.env.CHROMIUM && "no chromium here" }, async () => {
  const { chromium } = await import("playwright-core");
  const browser = await chromium.launch({ executablePath: process.env.CHROMIUM, args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync"] });
  try {
    const page = await browser.newPage();
    const seen = [];
    page.on("console", (m) => { if (m.type() === "error") seen.push(m.text()); });
    await page.setContent("<script>console.error('lean-beam control')</script>");
    assert.deepEqual(seen, ["lean-beam control"]);
  } finally {
    await browser.close();
  }
});
