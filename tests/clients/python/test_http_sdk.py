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

import pytest
from beam_clients import (
    MODERN,
    MODES,
    HttpServer,
    check_listing_and_version,
    check_unknown_tool_is_a_protocol_error,
    one_result,
    progress_recorder,
    run,
)
from mcp import Client


@pytest.fixture(scope="module")
def http_server():
    server = HttpServer()
    yield server
    if server.process.poll() is None:
        server.stop()


@pytest.mark.parametrize("mode,revision", MODES.items(), ids=list(MODES))
def test_list_tools_and_call_beam_version(http_server: HttpServer, mode: str, revision: str) -> None:
    async def session():
        async with Client(http_server.url, mode=mode) as client:
            stats = await check_listing_and_version(client, revision)
            # The server counted the call in the era the client chose (the
            # server is shared by this module's tests).
            assert stats["requests"]["byEra"].get(revision, 0) >= 1, stats

    run(session())


@pytest.mark.parametrize("mode", [MODERN, "legacy"])
def test_progress_streams_before_the_result(http_server: HttpServer, mode: str) -> None:
    """A call with a progress token answers with an SSE stream: its progress
    update reaches the SDK's callback before the (here: tool error) result."""

    async def session():
        on_progress, updates = progress_recorder()
        async with Client(http_server.url, mode=mode) as client:
            result = await client.call_tool(
                "lean_sync",
                {"workspace": {"root": "/nonexistent/beam-http-sdk"}, "path": "A.lean"},
                progress_callback=on_progress,
            )
            assert result.is_error is True
            assert one_result(result)["code"] == "invalidInput"
            assert updates and "preparing" in (updates[0][2] or ""), updates

    run(session())


@pytest.mark.parametrize("mode", [MODERN, "legacy"])
def test_unknown_tool_is_a_protocol_error(http_server: HttpServer, mode: str) -> None:
    async def session():
        async with Client(http_server.url, mode=mode) as client:
            await check_unknown_tool_is_a_protocol_error(client)

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
    http_server.check_clean_exit()
