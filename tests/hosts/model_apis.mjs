// Scripted model APIs on loopback: small HTTP servers that answer a host's own
// model requests (Gemini API, Anthropic Messages, OpenAI Responses) with fixed
// tool-use turns, so a real host (Gemini CLI, Claude Code, Codex) drives
// lean-beam-mcp as it would with a real model. They never reach the network.
//
// A script is a list of turns. Turn i is sent once the conversation the host
// sends back holds i tool results; each turn names one tool by its MCP name
// (the host's own prefix, `mcp__lean-beam__lean_sync` or `lean_sync`, is found
// among the tools the request declares) and builds its arguments from the
// results so far. After the last turn the model answers with plain text and
// the run ends. A request that declares none of the script's tools (a host's
// side request: a title, a summary, a quota probe) gets a short text answer.
//
// Every request is recorded (`api.requests`), and every tool result the host
// fed back (`api.toolResults`, in order, as the text the model would read).

import { createServer } from "node:http";

// Joins a Codex namespace and a tool name in the names this module matches on.
const NS = "\u0000";

/**
 * The declared tool that is MCP tool `short` under the host's naming: Claude
 * Code `mcp__lean-beam__lean_sync`, Gemini CLI `mcp_lean-beam_lean_sync`,
 * Codex `lean_sync` in the namespace `mcp__lean_beam` (see `NS`).
 */
function findTool(declared, short) {
  return declared.find(
    (name) => name === short || name.endsWith(`__${short}`) || name.endsWith(`${NS}${short}`) || (name.startsWith("mcp_") && name.endsWith(`_${short}`)),
  );
}

function textOf(value) {
  if (typeof value === "string") return value;
  if (Array.isArray(value)) return value.map(textOf).join("");
  if (value && typeof value === "object") {
    if (typeof value.text === "string") return value.text;
    if (value.content !== undefined) return textOf(value.content);
    if (value.output !== undefined) return textOf(value.output);
    return JSON.stringify(value);
  }
  return String(value ?? "");
}

// ---- each API's request reading and response writing ----------------------------

const anthropic = {
  match: (req) => req.method === "POST" && /\/v1\/messages(\?|$)/.test(req.url),
  declared: (body) => (body.tools ?? []).map((t) => t.name).filter(Boolean),
  results: (body) =>
    (body.messages ?? []).flatMap((m) =>
      Array.isArray(m.content) ? m.content.filter((c) => c.type === "tool_result").map((c) => textOf(c.content)) : [],
    ),
  respond(res, body, turn, n) {
    const id = `msg_scripted_${n}`;
    const usage = { input_tokens: 10, output_tokens: 5 };
    const block = turn.tool
      ? { type: "tool_use", id: `toolu_scripted_${n}`, name: turn.tool, input: {} }
      : { type: "text", text: "" };
    const stop = turn.tool ? "tool_use" : "end_turn";
    if (!body.stream) {
      const content = turn.tool ? [{ ...block, input: turn.args }] : [{ type: "text", text: turn.text }];
      return json(res, { id, type: "message", role: "assistant", model: body.model, content, stop_reason: stop, stop_sequence: null, usage });
    }
    const events = [
      ["message_start", { type: "message_start", message: { id, type: "message", role: "assistant", model: body.model, content: [], stop_reason: null, stop_sequence: null, usage } }],
      ["content_block_start", { type: "content_block_start", index: 0, content_block: block }],
      turn.tool
        ? ["content_block_delta", { type: "content_block_delta", index: 0, delta: { type: "input_json_delta", partial_json: JSON.stringify(turn.args) } }]
        : ["content_block_delta", { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: turn.text } }],
      ["content_block_stop", { type: "content_block_stop", index: 0 }],
      ["message_delta", { type: "message_delta", delta: { stop_reason: stop, stop_sequence: null }, usage: { output_tokens: 5 } }],
      ["message_stop", { type: "message_stop" }],
    ];
    sse(res, events);
  },
};

const gemini = {
  match: (req) => req.method === "POST" && /\/models\/[^/:]+:(stream)?[gG]enerateContent/.test(req.url),
  declared: (body) =>
    (body.tools ?? []).flatMap((t) => (t.functionDeclarations ?? t.function_declarations ?? []).map((f) => f.name)),
  results: (body) =>
    (body.contents ?? []).flatMap((c) =>
      (c.parts ?? []).filter((p) => p.functionResponse).map((p) => textOf(p.functionResponse.response)),
    ),
  respond(res, body, turn, n, req) {
    // Gemini CLI adds `wait_for_previous` to every tool's parameters and tells
    // the model to set it; a Gemini model does, so the scripted one does too.
    const declaration = (body.tools ?? [])
      .flatMap((t) => t.functionDeclarations ?? [])
      .find((f) => f.name === turn.tool);
    const injected = declaration?.parametersJsonSchema?.properties?.wait_for_previous ? { wait_for_previous: true } : {};
    const part = turn.tool ? { functionCall: { name: turn.tool, args: { ...turn.args, ...injected } } } : { text: turn.text };
    const chunk = {
      candidates: [{ content: { role: "model", parts: [part] }, finishReason: "STOP", index: 0 }],
      usageMetadata: { promptTokenCount: 10, candidatesTokenCount: 5, totalTokenCount: 15 },
      modelVersion: "scripted",
    };
    if (/:stream/.test(req.url)) return sse(res, [[null, chunk]]);
    json(res, chunk);
  },
};

const openai = {
  match: (req) => req.method === "POST" && /\/responses(\?|$)/.test(req.url),
  // Codex declares an MCP server's tools in a namespace (`mcp__lean_beam`)
  // and expects a call to name the namespace and the tool apart.
  declared: (body) =>
    (body.tools ?? []).flatMap((t) =>
      t.type === "namespace" ? (t.tools ?? []).map((inner) => `${t.name}${NS}${inner.name}`) : [t.name ?? t.function?.name],
    ).filter(Boolean),
  results: (body) =>
    (Array.isArray(body.input) ? body.input : [])
      .filter((item) => item.type === "function_call_output")
      .map((item) => textOf(item.output)),
  respond(res, body, turn, n) {
    const id = `resp_scripted_${n}`;
    const [namespace, name] = turn.tool?.includes(NS) ? turn.tool.split(NS) : [undefined, turn.tool];
    const item = turn.tool
      ? { type: "function_call", id: `fc_scripted_${n}`, call_id: `call_scripted_${n}`, ...(namespace ? { namespace } : {}), name, arguments: JSON.stringify(turn.args), status: "completed" }
      : { type: "message", id: `msg_scripted_${n}`, role: "assistant", status: "completed", content: [{ type: "output_text", text: turn.text, annotations: [] }] };
    const usage = { input_tokens: 10, input_tokens_details: { cached_tokens: 0 }, output_tokens: 5, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 15 };
    const response = { id, object: "response", status: "completed", model: body.model, output: [item], usage };
    sse(res, [
      ["response.created", { type: "response.created", response: { ...response, status: "in_progress", output: [] } }],
      ["response.output_item.added", { type: "response.output_item.added", output_index: 0, item }],
      ["response.output_item.done", { type: "response.output_item.done", output_index: 0, item }],
      ["response.completed", { type: "response.completed", response }],
    ]);
  },
};

const APIS = { anthropic, gemini, openai };

function json(res, value) {
  const body = JSON.stringify(value);
  res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
  res.end(body);
}

function sse(res, events) {
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  for (const [event, data] of events) {
    if (event) res.write(`event: ${event}\n`);
    res.write(`data: ${JSON.stringify(data)}\n\n`);
  }
  res.end();
}

/**
 * Start one scripted API of `kind` ("anthropic", "gemini", "openai") on
 * 127.0.0.1. `script`: [{ tool: "lean_sync", args: (results) => ({...}) }, ...];
 * `results` are the tool results so far, each parsed as JSON where it is JSON.
 */
export async function startModelApi(kind, script, { finalText = "Done: the scripted turns are over." } = {}) {
  const api = APIS[kind];
  if (!api) throw new Error(`unknown model API ${kind}`);
  const state = { requests: [], toolResults: [], errors: [] };
  let served = 0;
  const server = createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const raw = Buffer.concat(chunks).toString("utf8");
      state.requests.push({ method: req.method, url: req.url, body: raw });
      if (!api.match(req)) {
        // Token counting and model listings some hosts ask for on the side.
        if (/count_tokens|countTokens/.test(req.url)) return json(res, { input_tokens: 10, totalTokens: 10 });
        if (req.method === "GET" && /\/models/.test(req.url)) return json(res, { data: [], models: [] });
        res.writeHead(404, { "content-type": "application/json" });
        return res.end(JSON.stringify({ error: { message: `scripted API: nothing at ${req.method} ${req.url}` } }));
      }
      let body;
      try {
        body = JSON.parse(raw);
      } catch (err) {
        state.errors.push(`unparsable request body: ${err}`);
        res.writeHead(400);
        return res.end();
      }
      const declared = api.declared(body);
      const results = api.results(body);
      const n = served++;
      const scripted = script.some((t) => findTool(declared, t.tool));
      let turn;
      if (!scripted) {
        turn = { text: "ok" };
      } else if (results.length < script.length) {
        const step = script[results.length];
        const name = findTool(declared, step.tool);
        if (!name) {
          state.errors.push(`turn ${results.length}: ${step.tool} is not among the declared tools ${declared.join(", ")}`);
          turn = { text: `missing tool ${step.tool}` };
        } else {
          state.toolResults = results;
          const parsed = results.map((r) => {
            try {
              return JSON.parse(r);
            } catch {
              return r;
            }
          });
          turn = { tool: name, args: step.args(parsed) };
        }
      } else {
        state.toolResults = results;
        state.finished = true;
        turn = { text: finalText };
      }
      api.respond(res, body, turn, n, req);
    });
  });
  await new Promise((ok) => server.listen(0, "127.0.0.1", ok));
  const { port } = server.address();
  return {
    url: `http://127.0.0.1:${port}`,
    state,
    close: () => new Promise((ok) => server.close(ok)),
  };
}
