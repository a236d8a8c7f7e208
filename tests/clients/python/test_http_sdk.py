"""The official MCP Python SDK (PyPI mcp==2.3.0) against `lean-beam-mcp --http`.

The SDK's Streamable HTTP client connects to one /mcp endpoint in each mode it
offers: pinned modern (2026-07-28, sessionless), legacy (initialize and an
Mcp-Session-Id) and auto (discovery, then modern). Run through scripts/test.sh,
or by hand:

    PY=$(scripts/setup-test-clients.sh)
    LEAN_BEAM_MCP_BIN=target/debug/lean-beam-mcp "$PY" -m pytest tests/clients/python/test_http_sdk.py

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

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

REPO = Path(__file__).resolve().parents[3]
BINARY = Path(os.environ.get("LEAN_BEAM_MCP_BIN", REPO / "target" / "debug" / "lean-beam-mcp")).resolve()
GUARD_SECONDS = 60

MODERN = "2026-07-28"
LEGACY = "2025-11-25"

# mode → the revision the connection must end up speaking.
MODES = [(MODERN, MODERN), ("legacy", LEGACY), ("auto", MODERN)]


class HttpServer:
    """`lean-beam-mcp --http 127.0.0.1:0`, its announced URL and its stderr."""

    def __init__(self) -> None:
        assert BINARY.is_file(), f"{BINARY} does not exist; build it first (cargo build)"
        env = {k: v for k, v in os.environ.items() if not k.startswith("LEAN_BEAM_")}
        env["LEAN_BEAM_LOG"] = "warn"
        self.process = subprocess.Popen(
            [str(BINARY), "--http", "127.0.0.1:0"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
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
        assert announced.wait(20), f"the server did not announce its URL: {self.log}"

    def health(self) -> dict:
        with urllib.request.urlopen(self.url.replace("/mcp", "/health"), timeout=10) as response:
            return json.load(response)

    def stop(self) -> int:
        self.process.terminate()
        return self.process.wait(timeout=10)


@pytest.fixture(scope="module")
def http_server():
    server = HttpServer()
    yield server
    if server.process.poll() is None:
        server.stop()


def run(coroutine):
    async def guarded():
        return await asyncio.wait_for(coroutine, GUARD_SECONDS)

    return asyncio.run(guarded())


def one_result(result) -> dict:
    """The structured result; the text block must carry the same JSON."""
    assert len(result.content) == 1, result
    assert result.content[0].type == "text", result
    structured = result.structured_content
    assert json.loads(result.content[0].text) == structured, result
    return structured


@pytest.mark.parametrize("mode,revision", MODES, ids=[m for m, _ in MODES])
def test_list_tools_and_call_beam_version(http_server: HttpServer, mode: str, revision: str) -> None:
    async def session():
        async with Client(http_server.url, mode=mode) as client:
            assert client.protocol_version == revision
            if client.server_info is not None:
                assert client.server_info.name == "lean-beam-mcp"

            listing = await client.list_tools()
            names = [tool.name for tool in listing.tools]
            assert len(names) == 24, names
            assert names[:2] == ["beam_version", "beam_stats"]

            result = await client.call_tool("beam_version", {})
            assert result.is_error is False
            version = one_result(result)
            assert version["name"] == "lean-beam-mcp"
            assert version["mcp_protocol"] == MODERN

            # The server counted the call in the era the client chose.
            stats = one_result(await client.call_tool("beam_stats", {}))
            assert stats["requests"]["byEra"].get(revision, 0) >= 1, stats

    run(session())


@pytest.mark.parametrize("mode", [MODERN, "legacy"])
def test_progress_streams_before_the_result(http_server: HttpServer, mode: str) -> None:
    """A call with a progress token answers with an SSE stream: its progress
    update reaches the SDK's callback before the (here: tool error) result."""

    async def session():
        updates = []

        async def on_progress(progress, total, message):
            updates.append((progress, message))

        async with Client(http_server.url, mode=mode) as client:
            result = await client.call_tool(
                "lean_sync",
                {"workspace": {"root": "/nonexistent/beam-http-sdk"}, "path": "A.lean"},
                progress_callback=on_progress,
            )
            assert result.is_error is True
            assert one_result(result)["code"] == "invalidInput"
            assert updates and "preparing" in (updates[0][1] or ""), updates

    run(session())


@pytest.mark.parametrize("mode", [MODERN, "legacy"])
def test_unknown_tool_is_a_protocol_error(http_server: HttpServer, mode: str) -> None:
    async def session():
        async with Client(http_server.url, mode=mode) as client:
            with pytest.raises(MCPError) as raised:
                await client.call_tool("textDocument/hover", {})
            assert raised.value.code == -32602

    run(session())


def test_sessions_and_shutdown(http_server: HttpServer) -> None:
    """Legacy connections hold a session only while open; modern ones none.
    SIGTERM stops the server cleanly."""

    async def session():
        async with Client(http_server.url, mode="legacy"):
            assert http_server.health()["sessions"] >= 1
        async with Client(http_server.url, mode=MODERN) as client:
            await client.list_tools()

    run(session())
    health = http_server.health()
    assert health["sessions"] == 0, health
    assert health["requests"]["modern"] > 0 and health["requests"]["legacy"] > 0, health
    assert http_server.stop() == 0
    assert not any("ERROR" in line for line in http_server.log), http_server.log
