// What every file of the hosts lane shares: where things are, the server's
// environment, a private HOME per host, child processes with a failure guard,
// and the README's "Register it with a client" snippets, which the lane runs
// as they are written (placeholders filled in), so the README shows exactly
// what is tested.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { cpSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";

export const REPO = resolve(import.meta.dirname, "../..");
export const BINARY = process.env.LEAN_BEAM_MCP_BIN ?? join(REPO, "target/debug/lean-beam-mcp");
export const LEAN = process.env.LEAN_BEAM_LEAN;
export const HOSTS_DIR = process.env.LEAN_BEAM_TEST_HOSTS_DIR ?? join(REPO, "target/test-hosts");
export const MODULES = join(HOSTS_DIR, "node_modules");
export const NODE = join(MODULES, "node/bin/node");
/** How many tools the server serves: the catalog golden (tests/golden/tools.json). */
export const CATALOG_SIZE = JSON.parse(readFileSync(join(REPO, "tests/golden/tools.json"), "utf8")).length;
const FIXTURE = join(REPO, "tests/fixtures/basic");
const SCRATCH = join(REPO, "target/hosts-lane");

assert.ok(LEAN, "set LEAN_BEAM_LEAN to the test toolchain's lean (scripts/install-test-lean.sh)");

/** The version a locked package was installed at (package.json of node_modules/NAME). */
export function installedVersion(name) {
  return JSON.parse(readFileSync(join(MODULES, name, "package.json"), "utf8")).version;
}

/** Import a file of an installed package (ESM), e.g. ("@modelcontextprotocol/sdk", "dist/esm/client/index.js"). */
export function importFrom(name, file) {
  return import(pathToFileURL(join(MODULES, name, file)).href);
}

/**
 * A fresh directory under target/hosts-lane: a host's private HOME, or a copy
 * of the `basic` fixture workspace (with its compiled `Fix.Basic`) that a host
 * may write into.
 */
export function scratch(name, { workspace = false } = {}) {
  const dir = join(SCRATCH, name);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  if (workspace) cpSync(FIXTURE, dir, { recursive: true });
  return dir;
}

/** The server's environment: the caller's, without LEAN_BEAM_* settings, and the test Lean. */
export function serverEnv(extra = {}) {
  const env = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (!key.startsWith("LEAN_BEAM_")) env[key] = value;
  }
  return { ...env, LEAN_BEAM_LEAN: LEAN, ...extra };
}

/**
 * A host's environment: a private HOME (and XDG dirs in it), the Node the lane
 * installed first on PATH, no telemetry, update checks or auto-updates, and
 * no proxy (every model API and server is on loopback).
 */
export function hostEnv(home, extra = {}) {
  const keep = ["PATH", "LANG", "LC_ALL", "TERM", "TMPDIR", "USER", "LOGNAME", "SHELL"];
  const env = {};
  for (const key of keep) if (process.env[key] !== undefined) env[key] = process.env[key];
  return {
    ...env,
    PATH: `${join(MODULES, "node/bin")}:${join(MODULES, ".bin")}:${process.env.PATH}`,
    HOME: home,
    XDG_CONFIG_HOME: join(home, ".config"),
    XDG_CACHE_HOME: join(home, ".cache"),
    XDG_DATA_HOME: join(home, ".local/share"),
    XDG_STATE_HOME: join(home, ".local/state"),
    NO_COLOR: "1",
    CI: "1",
    NO_PROXY: "127.0.0.1,localhost",
    // Claude Code
    DISABLE_AUTOUPDATER: "1",
    DISABLE_UPDATES: "1",
    DISABLE_TELEMETRY: "1",
    DISABLE_ERROR_REPORTING: "1",
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
    CLAUDE_CODE_DISABLE_FEEDBACK_SURVEY: "1",
    // Gemini CLI
    GEMINI_CLI_NO_RELAUNCH: "true",
    GEMINI_TELEMETRY_ENABLED: "false",
    // npm (npx inside hosts) and Node
    npm_config_update_notifier: "false",
    NODE_NO_WARNINGS: "1",
    ...extra,
  };
}

/** Run a program to its end; the guard only turns a hang into a failure. */
export function run(command, args, { env, cwd, guardMs = 120_000, input } = {}) {
  return new Promise((done, fail) => {
    const child = spawn(command, args, { env, cwd, stdio: [input === undefined ? "ignore" : "pipe", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (d) => (stdout += d));
    child.stderr.setEncoding("utf8").on("data", (d) => (stderr += d));
    if (input !== undefined) child.stdin.end(input);
    const guard = setTimeout(() => {
      child.kill("SIGKILL");
      fail(new Error(`${command} ${args.join(" ")}: still running after ${guardMs} ms\nstdout: ${stdout}\nstderr: ${stderr}`));
    }, guardMs);
    child.on("error", (err) => {
      clearTimeout(guard);
      fail(err);
    });
    child.on("exit", (code, signal) => {
      clearTimeout(guard);
      done({ code, signal, stdout, stderr });
    });
  });
}

/** `lean-beam-mcp --http 127.0.0.1:0` (optionally with a bearer token), with its announced URL. */
export function startHttpServer({ token, cwd = REPO } = {}) {
  const env = serverEnv(token ? { LEAN_BEAM_HTTP_TOKEN: token } : {});
  const child = spawn(BINARY, ["--http", "127.0.0.1:0"], { cwd, env, stdio: ["ignore", "ignore", "pipe"] });
  const log = [];
  return new Promise((resolveUrl, reject) => {
    const guard = setTimeout(() => reject(new Error(`no URL announced: ${log.join("")}`)), 20_000);
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", (chunk) => {
      log.push(chunk);
      const found = log.join("").match(/listening on (http:\/\/127\.0\.0\.1:\d+\/mcp)/);
      if (found) {
        clearTimeout(guard);
        resolveUrl({ child, url: found[1], log, stop: () => child.kill("SIGINT") });
      }
    });
    child.on("exit", (code) => reject(new Error(`the server exited (${code}): ${log.join("")}`)));
  });
}

// ---- the README's snippets --------------------------------------------------------

/**
 * Every fenced block of README.md preceded by `<!-- hosts-lane: NAME -->`, by NAME.
 * The lane runs these and nothing else for the hosts' configuration.
 */
export function readmeSnippets() {
  const text = readFileSync(join(REPO, "README.md"), "utf8");
  const snippets = new Map();
  const marker = /<!-- hosts-lane: ([a-z0-9-]+) -->\n+```[a-z]*\n([\s\S]*?)```/g;
  for (const [, name, body] of text.matchAll(marker)) {
    assert.ok(!snippets.has(name), `README: two snippets named ${name}`);
    snippets.set(name, body);
  }
  return snippets;
}

/** The names of the snippets this process has run (see `snippet`). */
export const snippetsRun = new Set();

/** A README snippet with its placeholders replaced by this run's paths, URL and token. */
export function snippet(name, values = {}) {
  const all = readmeSnippets();
  assert.ok(all.has(name), `README.md has no snippet marked <!-- hosts-lane: ${name} -->`);
  snippetsRun.add(name);
  let text = all.get(name);
  const table = {
    "/absolute/path/to/lean-beam-mcp": BINARY,
    "/absolute/path/to/lean": LEAN,
    ...values,
  };
  // Longest first: the binary's placeholder contains the lean one's.
  for (const key of Object.keys(table).sort((a, b) => b.length - a.length)) text = text.split(key).join(table[key]);
  return text;
}

/**
 * The words of a shell command line as sh would split them: single and double
 * quotes, backslash-newline continuations, `$VAR` expanded from `vars` (the
 * README writes `$LEAN_BEAM_TOKEN`, never a literal token). Enough for the
 * README's one-line commands; anything fancier fails loudly.
 */
export function shellWords(line, vars = {}) {
  const words = [];
  let word = null;
  let i = 0;
  const src = line.replace(/\\\n\s*/g, " ").trim();
  const expand = () => {
    const m = src.slice(i).match(/^\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?/);
    assert.ok(m, `unsupported $ at ${src.slice(i)}`);
    assert.ok(m[1] in vars, `the snippet uses $${m[1]}, which the lane does not set`);
    i += m[0].length;
    return vars[m[1]];
  };
  while (i < src.length) {
    const c = src[i];
    if (/\s/.test(c)) {
      if (word !== null) words.push(word);
      word = null;
      i++;
    } else if (c === "'") {
      const end = src.indexOf("'", i + 1);
      assert.ok(end > i, `unbalanced quote in ${src}`);
      word = (word ?? "") + src.slice(i + 1, end);
      i = end + 1;
    } else if (c === '"') {
      i++;
      word = word ?? "";
      while (src[i] !== '"') {
        assert.ok(i < src.length, `unbalanced quote in ${src}`);
        if (src[i] === "$") word += expand();
        else word += src[i++];
      }
      i++;
    } else if (c === "$") {
      word = (word ?? "") + expand();
    } else {
      assert.ok(!"|&;<>()`*?#".includes(c), `unsupported shell syntax ${c} in ${src}`);
      word = (word ?? "") + c;
      i++;
    }
  }
  if (word !== null) words.push(word);
  return words;
}

/** The commands of a shell snippet: one per line, comments and blank lines skipped. */
export function shellCommands(text, vars = {}) {
  return text
    .replace(/\\\n\s*/g, " ")
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith("#"))
    .map((l) => shellWords(l, vars));
}

/**
 * A tool result's text as JSON. Hosts wrap it: Codex puts "Wall time ...
 * Output:" before it, Gemini CLI puts it inside <untrusted_context>.
 */
export function resultJson(text) {
  const start = text.indexOf("{");
  const end = text.lastIndexOf("}");
  assert.ok(start >= 0 && end > start, `no JSON in the tool result the host passed on: ${text.slice(0, 500)}`);
  return JSON.parse(text.slice(start, end + 1));
}
