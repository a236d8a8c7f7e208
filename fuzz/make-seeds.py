#!/usr/bin/env python3
"""Write the committed seed corpus of the fuzz targets (fuzz/seeds/<target>/).

Seeds are the messages the protocol tests send (tests/protocol_stdio.rs,
tests/protocol_core.rs) and, for tool_arguments, a minimal and a full valid
arguments object per tool from the golden catalog (tests/golden/tools.json).
Re-run after changing the tool surface:  python3 fuzz/make-seeds.py
"""
import hashlib
import json
import pathlib

here = pathlib.Path(__file__).resolve().parent
repo = here.parent
MODERN = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "protocol-test", "version": "1"},
}


def write(target, data):
    if isinstance(data, (dict, list)):
        data = json.dumps(data, separators=(",", ":"))
    if isinstance(data, str):
        data = data.encode()
    d = here / "seeds" / target
    d.mkdir(parents=True, exist_ok=True)
    (d / hashlib.sha1(data).hexdigest()[:16]).write_bytes(data)


# --- jsonrpc_decode: lines from the protocol tests -------------------------
lines = [
    {"jsonrpc": "2.0", "id": 1, "method": "ping"},
    {"jsonrpc": "2.0", "id": "abc", "method": "tools/list", "params": {"_meta": META}},
    {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": META}},
    {"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7, "reason": "test"}},
    {"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {
        "name": "beam_stats", "arguments": {}, "_meta": dict(META, progressToken="p1")}},
    {"jsonrpc": "2.0", "id": 1, "method": "ping", "extra": True},
    {"jsonrpc": "2.0", "id": 2, "method": "ping", "result": {}},
    {"jsonrpc": "2.0", "id": 3, "method": "ping", "error": {"code": 1, "message": "x"}},
    {"jsonrpc": "1.0", "id": 4, "method": "ping"},
    {"jsonrpc": "2.0", "id": 6, "method": 7},
    {"jsonrpc": "2.0", "id": 7},
    {"jsonrpc": "2.0", "id": 8, "method": "ping", "params": [1]},
    {"jsonrpc": "2.0", "id": None, "method": "ping"},
    {"jsonrpc": "2.0", "id": 1.5, "method": "ping"},
    {"jsonrpc": "2.0", "id": 18446744073709551615, "method": "ping"},
    {"jsonrpc": "2.0", "id": -9223372036854775808, "method": "ping"},
    [{"jsonrpc": "2.0", "id": 1, "method": "ping"}],
]
for line in lines:
    write("jsonrpc_decode", line)
for raw in ["", "   ", "{", "not json", '{"jsonrpc":"2.0","id":1,"method":"ping"}\r',
            "[" * 200 + "]" * 200, '{"jsonrpc":"2.0","id":"\\ud800","method":"ping"}']:
    write("jsonrpc_decode", raw)
write("jsonrpc_decode", b'{"jsonrpc":"2.0","id":1,"method":"p\xffing"}')
write("jsonrpc_decode", b'{"jsonrpc":"2.0","id":1,"method":"ping\x00"}')

# --- era_gate: params objects (the target also reads JSON objects as params) --
metas = [
    META,
    dict(META, **{"io.modelcontextprotocol/logLevel": "debug"}),
    dict(META, **{"io.modelcontextprotocol/logLevel": "loud"}),
    dict(META, **{"io.modelcontextprotocol/protocolVersion": "2099-01-01"}),
    {"io.modelcontextprotocol/protocolVersion": MODERN},
    {"io.modelcontextprotocol/clientCapabilities": {}},
    {"io.modelcontextprotocol/clientCapabilities": [], "io.modelcontextprotocol/protocolVersion": 20260728},
    dict(META, **{"io.modelcontextprotocol/clientInfo": {"version": "1"}}),
    {"progressToken": 1},
    {"progressToken": 1.5},
    dict(META, progressToken="tok"),
]
for m in metas:
    write("era_gate", {"_meta": m})
write("era_gate", {"_meta": []})
write("era_gate", {"name": "beam_stats"})

# --- tool_arguments: {"name": tool, "arguments": {...}} ---------------------
def instance(schema, full):
    if "enum" in schema:
        return schema["enum"][-1 if full else 0]
    t = schema.get("type")
    if t == "object":
        out = {}
        for k, sub in schema.get("properties", {}).items():
            if full or k in schema.get("required", []):
                out[k] = instance(sub, full)
        for k in schema.get("required", []):
            out.setdefault(k, {"x": 1})
        return out
    if t == "array":
        return [instance(schema.get("items", {}), full)] if full else []
    if t == "string":
        return "/tmp/ws" if full else "Main.lean"
    if t == "integer":
        return 3 if full else 0
    if t == "boolean":
        return full
    return None


tools = json.loads((repo / "tests/golden/tools.json").read_text())
for tool in tools:
    for full in (False, True):
        write("tool_arguments", {"name": tool["name"], "arguments": instance(tool["inputSchema"], full)})

# --- dispatcher_lines: the target builds messages from raw bytes; a few fixed
# pseudo-random inputs give libFuzzer somewhere to start.
import random  # noqa: E402

for n in range(6):
    write("dispatcher_lines", random.Random(n).randbytes(256))
