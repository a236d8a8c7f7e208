"""What the official-SDK client tests share: the binary under test, the
connection modes and revisions, a server started with `--http`, the time
guard, and the checks of a result that every test makes.

Imported by the pytest modules (test_*.py) and by the scripts the Rust tests
run (lean_sync_*.py); both find it next to themselves on sys.path.
Timeouts are failure guards only.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import threading
import urllib.request
from pathlib import Path

from mcp.shared.exceptions import MCPError

REPO = Path(__file__).resolve().parents[3]
BINARY = Path(os.environ.get("LEAN_BEAM_MCP_BIN", REPO / "target" / "debug" / "lean-beam-mcp")).resolve()
GUARD_SECONDS = 60

MODERN = "2026-07-28"
LEGACY = "2025-11-25"

# The SDK's connection mode → the revision the connection must end up speaking.
MODES = {MODERN: MODERN, "legacy": LEGACY, "auto": MODERN}


# Every tool, in table order, as the checked-in catalog lists them.
GOLDEN_TOOL_NAMES = [
    tool["name"]
    for tool in json.loads(
        (Path(__file__).resolve().parents[2] / "golden" / "tools.json").read_text()
    )
]


def check(condition, message) -> None:
    """An assertion that `python -O` keeps (the scripts run outside pytest)."""
    if not condition:
        raise AssertionError(message)


def server_env(**extra: str) -> dict:
    """The environment of a server under test: no inherited LEAN_BEAM_*
    setting, warnings only on stderr, then `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEAN_BEAM_")}
    env["LEAN_BEAM_LOG"] = "warn"
    env.update(extra)
    return env


def run(coroutine, guard: float = GUARD_SECONDS):
    """Run `coroutine` to its end, failing it past `guard` seconds."""

    async def guarded():
        return await asyncio.wait_for(coroutine, guard)

    return asyncio.run(guarded())


def one_result(result) -> dict:
    """The result's JSON: a success's structuredContent, which the text block
    carries too; an error's {code, message, data?}, which only the text block
    carries (no structuredContent an SDK-v1 host would check against the
    success's outputSchema)."""
    check(len(result.content) == 1, result)
    check(result.content[0].type == "text", result)
    text = json.loads(result.content[0].text)
    if result.is_error:
        check(result.structured_content is None, f"a tool error with structuredContent: {result}")
        return text
    structured = result.structured_content
    check(structured is not None, f"no structuredContent: {result}")
    check(text == structured, f"content[0].text differs: {result}")
    return structured


class HttpServer:
    """`lean-beam-mcp --http 127.0.0.1:0`, its announced URL and its stderr."""

    def __init__(self, binary: Path = BINARY, env: dict | None = None, cwd: str | None = None) -> None:
        check(Path(binary).is_file(), f"{binary} does not exist; build it first (cargo build)")
        self.process = subprocess.Popen(
            [str(binary), "--http", "127.0.0.1:0"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env=env if env is not None else server_env(),
            cwd=cwd,
        )
        self.log: list[str] = []
        announced = threading.Event()
        self.url = ""

        def drain() -> None:
            for line in self.process.stderr:
                self.log.append(line.rstrip("\n"))
                found = re.search(r"listening on (http://127\.0\.0\.1:\d+/mcp)", line)
                if found:
                    self.url = found.group(1)
                    announced.set()

        threading.Thread(target=drain, daemon=True).start()
        check(announced.wait(20), f"the server did not announce its URL: {self.log}")

    def health(self) -> dict:
        with urllib.request.urlopen(self.url.replace("/mcp", "/health"), timeout=10) as response:
            return json.load(response)

    def stop(self) -> int:
        """SIGTERM; the exit code."""
        self.process.terminate()
        return self.process.wait(timeout=30)

    def check_clean_exit(self) -> None:
        """Stop it: a clean exit, and no ERROR in its log."""
        code = self.stop()
        check(code == 0, f"the server exited with {code}: {self.log}")
        check(not any("ERROR" in line for line in self.log), self.log)


async def check_listing_and_version(client, revision: str) -> dict:
    """A fresh connection: it speaks `revision`, lists the catalog, answers
    beam_version; returns beam_stats (how the server counted the calls)."""
    check(client.protocol_version == revision, f"{client.protocol_version} != {revision}")
    if client.server_info is not None:
        check(client.server_info.name == "lean-beam-mcp", client.server_info)

    listing = await client.list_tools()
    names = [tool.name for tool in listing.tools]
    check(names == GOLDEN_TOOL_NAMES, names)
    check(names[:2] == ["beam_version", "beam_stats"], names)
    for tool in listing.tools:
        check(tool.input_schema["type"] == "object", tool.name)
        check(tool.input_schema["additionalProperties"] is False, tool.name)

    result = await client.call_tool("beam_version", {})
    check(result.is_error is False, result)
    version = one_result(result)
    check(version["name"] == "lean-beam-mcp", version)
    check(version["mcp_protocol"] == MODERN, version)
    check(isinstance(version["version"], str) and version["build"], version)

    return one_result(await client.call_tool("beam_stats", {}))


async def check_unknown_tool_is_a_protocol_error(client) -> None:
    """A tool name that is not in the catalog is JSON-RPC -32602, not a result."""
    try:
        await client.call_tool("textDocument/hover", {})
    except MCPError as error:
        check(error.code == -32602, error)
    else:
        raise AssertionError("an unknown tool was called")


def progress_recorder():
    """A progress callback for `call_tool` and the list of what it received:
    (progress, total, message) in arrival order."""
    updates: list[tuple] = []

    async def on_progress(progress, total, message):
        updates.append((progress, total, message))

    return on_progress, updates


def check_lean_sync(structured: dict, root: str, path: str, updates: list[tuple]) -> None:
    """A lean_sync result of version 1 elaborated to its end, for `path` in
    `root`, whose progress reached the SDK's callback in increasing steps,
    starting with the preparation."""
    check(structured["workspace"] == {"root": root}, structured["workspace"])
    check(structured["path"] == path, structured["path"])
    check(structured["version"] == 1, structured["version"])
    check(structured["document_progress"]["done"] is True, structured["document_progress"])
    check(len(updates) >= 2, f"progress updates: {updates}")
    values = [u[0] for u in updates]
    check(all(a < b for a, b in zip(values, values[1:])), f"progress not increasing: {values}")
    check("preparing" in (updates[0][2] or ""), f"first update: {updates[0]}")
