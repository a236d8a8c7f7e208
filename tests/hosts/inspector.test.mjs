// The MCP Inspector's command line against a real lean-beam-mcp, and the
// output-schema checks of the Inspector and of Gemini CLI over the whole
// catalog:
//
// - Inspector CLI 1.0.3 (npm @modelcontextprotocol/inspector-cli, on SDK v1)
//   and Inspector 2.12.0 `--cli` (npm @modelcontextprotocol/inspector, on the
//   v2 client) list the tools and call one, a success and an error, over stdio
//   and Streamable HTTP with a bearer token; the error they print is the
//   server's own text.
// - Inspector 2.12's schema-portability lint (`tools/list --strict`, its own
//   code) must print no finding.
// - Gemini CLI's schema handling, run from the installed package's own code
//   where it can be lifted out of the bundle (@google/genai's
//   `processJsonSchema`, the "older" path that maps a JSON schema onto the
//   Gemini API's OpenAPI subset) and ported where it cannot (its
//   SchemaValidator: Ajv draft-07, `strictSchema: false`, over every schema;
//   its LenientJsonSchemaValidator: SDK v1's AjvJsonSchemaValidator compiling
//   every output schema; its input-schema rewrite of `["X", "null"]` type
//   pairs), must raise no complaint; nor may an object schema lack
//   `properties`, which the Gemini API rejects, or a schema use
//   `$ref`/`$defs`, which hosts do not resolve in tool schemas.

import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { after, before, describe, test } from "node:test";
import { BINARY, CATALOG_SIZE, LEAN, MODULES, NODE, importFrom, installedVersion, run, scratch, serverEnv, startHttpServer } from "./common.mjs";

const GUARD_MS = 120_000;
assert.equal(installedVersion("@modelcontextprotocol/inspector-cli"), "1.0.3");
assert.equal(installedVersion("@modelcontextprotocol/inspector"), "2.12.0");
assert.equal(installedVersion("@google/gemini-cli"), "0.61.0");

const INSPECTOR_1 = join(MODULES, "@modelcontextprotocol/inspector-cli/build/index.js");
const INSPECTOR_2 = join(MODULES, "@modelcontextprotocol/inspector/clients/launcher/build/index.js");
const TOKEN = "hosts-lane-token";

let http;
before(async () => {
  http = await startHttpServer({ token: TOKEN });
});
after(() => http?.stop());

/** The Inspector's CLI (`version` 1 or 2) against stdio (`target: "stdio"`) or the HTTP server. */
async function inspector(version, target, args, cwd) {
  const home = scratch(`inspector-${version}-home`);
  const cli = version === 1 ? [INSPECTOR_1] : [INSPECTOR_2, "--cli"];
  // 1.0.3 passes a stdio server its own environment, 2.12 only what -e names.
  const where =
    target === "stdio"
      ? version === 1
        ? [BINARY]
        : ["-e", `LEAN_BEAM_LEAN=${LEAN}`, BINARY]
      : [http.url, "--transport", "http", "--header", `Authorization: Bearer ${TOKEN}`];
  const env = { ...serverEnv(), HOME: home, MCP_CATALOG_PATH: join(home, "catalog.json"), NO_COLOR: "1" };
  // Inspector CLI 1.0.3 reads its own package.json as "../package.json" from
  // the working directory: it runs in its build directory.
  const dir = version === 1 ? dirname(INSPECTOR_1) : cwd;
  return run(NODE, [...cli, ...where, ...args], { env, cwd: dir, guardMs: GUARD_MS });
}

function printedJson(result, what, exit = 0) {
  assert.equal(result.code, exit, `${what}: exit ${result.code}\n${result.stderr}\n${result.stdout}`);
  return JSON.parse(result.stdout);
}

for (const version of [1, 2]) {
  describe(`Inspector ${version === 1 ? "CLI 1.0.3" : "2.12.0 --cli"}`, () => {
    for (const target of ["stdio", "http"]) {
      test(`${target}: lists the tools, calls one, shows the server's error`, { timeout: GUARD_MS }, async () => {
        const root = scratch(`inspector-${version}-${target}`, { workspace: true });
        const list = printedJson(await inspector(version, target, ["--method", "tools/list"], root), "tools/list");
        const names = list.tools.map((t) => t.name);
        assert.ok(names.includes("lean_sync") && names.length === CATALOG_SIZE, names.join(","));

        const workspace = `workspace=${JSON.stringify({ root })}`;
        const sync = printedJson(
          await inspector(version, target, ["--method", "tools/call", "--tool-name", "lean_sync", "--tool-arg", workspace, "path=Fix/Goals.lean"], root),
          "lean_sync",
        );
        assert.notEqual(sync.isError, true, JSON.stringify(sync));
        assert.equal(sync.structuredContent.path, "Fix/Goals.lean");

        // A version this server never returned: the Inspector prints the server's error.
        const failed = await inspector(
          version,
          target,
          ["--method", "tools/call", "--tool-name", "lean_goals", "--tool-arg", workspace, "path=Fix/Goals.lean", "version=9999", "line=15", "character=4", "mode=before"],
          root,
        );
        // (Inspector 2.12 prints the result and exits 5 for a tool error.)
        const shown = printedJson(failed, "lean_goals at a version never synced", version === 2 ? 5 : 0);
        assert.equal(shown.isError, true, failed.stdout);
        const error = JSON.parse(shown.content[0].text);
        // A fresh stdio server never synced the file; the shared HTTP server did.
        assert.ok(["notSynced", "versionMismatch"].includes(error.data?.reason), shown.content[0].text);
        assert.match(error.message, /lean_sync/, shown.content[0].text);
      });
    }
  });
}

// ---- schema checks over the whole catalog -------------------------------------------

async function catalog() {
  const result = await run(BINARY, ["tools"], { env: serverEnv() });
  assert.equal(result.code, 0, result.stderr);
  const parsed = JSON.parse(result.stdout);
  return Array.isArray(parsed) ? parsed : parsed.tools;
}

test("Inspector 2.12's schema-portability lint (tools/list --strict) finds nothing", { timeout: GUARD_MS }, async () => {
  const root = scratch("inspector-lint", { workspace: true });
  const result = await inspector(2, "stdio", ["--method", "tools/list", "--strict"], root);
  assert.equal(result.code, 0, result.stderr);
  const findings = result.stderr.split("\n").filter((l) => /^(Warning|Error): tool /.test(l) || /Schema portability/.test(l));
  assert.deepEqual(findings, [], `Inspector 2.12 complains:\n${result.stderr.slice(0, 6000)}`);
});

/** @google/genai's processJsonSchema and its Type enum, lifted from the installed Gemini CLI bundle. */
function geminiProcessJsonSchema() {
  const bundle = join(MODULES, "@google/gemini-cli/bundle");
  for (const file of readdirSync(bundle).filter((f) => f.endsWith(".js"))) {
    const text = readFileSync(join(bundle, file), "utf8");
    const from = text.indexOf("function flattenTypeArrayToAnyOf(");
    const to = text.indexOf("function tSchema(");
    const typeFrom = text.indexOf("var Type;\n(function(Type2) {");
    if (from < 0 || to < from || typeFrom < 0) continue;
    const typeTo = text.indexOf("})(Type || (Type = {}));", typeFrom);
    assert.ok(typeTo > typeFrom, `${file}: the Type enum's end`);
    const source = `${text.slice(typeFrom, typeTo)}})(Type || (Type = {}));\n${text.slice(from, to)}\nreturn processJsonSchema;`;
    return new Function(source)();
  }
  throw new Error("@google/genai's processJsonSchema is not in the installed Gemini CLI bundle");
}

/** Every subschema of `schema` with its path. */
function* subschemas(schema, path = "") {
  if (!schema || typeof schema !== "object") return;
  yield [schema, path || "/"];
  for (const [key, value] of Object.entries(schema)) {
    if (["properties", "$defs", "definitions", "patternProperties"].includes(key) && value && typeof value === "object") {
      for (const [name, sub] of Object.entries(value)) yield* subschemas(sub, `${path}/${key}/${name}`);
    } else if (["items", "additionalProperties", "not", "if", "then", "else", "contains"].includes(key) && typeof value === "object") {
      yield* subschemas(value, `${path}/${key}`);
    } else if (["anyOf", "oneOf", "allOf", "prefixItems"].includes(key) && Array.isArray(value)) {
      for (const [i, sub] of value.entries()) yield* subschemas(sub, `${path}/${key}/${i}`);
    }
  }
}

test("Gemini CLI's schema checks raise no complaint over the whole catalog", { timeout: GUARD_MS }, async () => {
  const tools = await catalog();
  assert.equal(tools.length, CATALOG_SIZE);
  const processJsonSchema = geminiProcessJsonSchema();
  const { AjvJsonSchemaValidator } = await importFrom("@modelcontextprotocol/sdk", "dist/esm/validation/ajv-provider.js");
  const { default: Ajv } = await importFrom("ajv", "dist/ajv.js");
  const ajv = new Ajv({ strictSchema: false });
  const lenient = new AjvJsonSchemaValidator();
  const complaints = [];
  for (const tool of tools) {
    for (const [kind, schema] of [["inputSchema", tool.inputSchema], ["outputSchema", tool.outputSchema]]) {
      if (!schema) continue;
      const where = `${tool.name} ${kind}`;
      // SchemaValidator.validateSchema: the schema against its meta-schema.
      if (!ajv.validateSchema(schema)) complaints.push(`${where}: ${ajv.errorsText(ajv.errors)}`);
      // LenientJsonSchemaValidator: a schema SDK v1's Ajv cannot compile is not checked at all.
      if (kind === "outputSchema") {
        try {
          lenient.getValidator(schema);
        } catch (err) {
          complaints.push(`${where}: Failed to compile MCP tool output schema: ${err.message}`);
        }
      }
      // processJsonSchema (the OpenAPI-subset path) throws on what it cannot map.
      try {
        processJsonSchema(structuredClone(schema));
      } catch (err) {
        complaints.push(`${where}: processJsonSchema: ${err.message}`);
      }
      for (const [sub, path] of subschemas(schema)) {
        // discoverTools rewrites ["X","null"] in input schemas to nullable; the API has no type arrays.
        if (Array.isArray(sub.type)) complaints.push(`${where} ${path}: type array ${JSON.stringify(sub.type)}`);
        if (sub.type === "object" && !("properties" in sub)) complaints.push(`${where} ${path}: an object schema without properties`);
        if ("$ref" in sub || "$defs" in sub || "definitions" in sub) complaints.push(`${where} ${path}: $ref/$defs (not self-contained)`);
      }
    }
  }
  assert.deepEqual(complaints, [], `${complaints.length} complaints:\n${complaints.slice(0, 40).join("\n")}`);
});
