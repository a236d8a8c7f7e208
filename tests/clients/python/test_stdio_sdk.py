"""The official MCP Python SDK (PyPI mcp==2.3.0) against the real stdio binary.

Run through scripts/test.sh (which builds the binary and installs the SDK into
target/test-clients/venv), or by hand:

    PY=$(scripts/setup-test-clients.sh)
    LEAN_BEAM_MCP_BIN=target/debug/lean-beam-mcp "$PY" -m pytest tests/clients/python

Timeouts are failure guards only.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError

REPO = Path(__file__).resolve().parents[3]
BINARY = Path(os.environ.get("LEAN_BEAM_MCP_BIN", REPO / "target" / "debug" / "lean-beam-mcp")).resolve()
GUARD_SECONDS = 60

MODERN = "2026-07-28"
LEGACY = "2025-11-25"

# mode → the revision the connection must end up speaking.
MODES = [(MODERN, MODERN), ("legacy", LEGACY), ("auto", MODERN)]


def server() -> StdioServerParameters:
    assert BINARY.is_file(), f"{BINARY} does not exist; build it first (cargo build)"
    return StdioServerParameters(command=str(BINARY), args=[], env={"LEAN_BEAM_LOG": "warn"})


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
def test_list_tools_and_call_beam_version(mode: str, revision: str) -> None:
    async def session():
        async with Client(server(), mode=mode) as client:
            assert client.protocol_version == revision
            if client.server_info is not None:
                assert client.server_info.name == "lean-beam-mcp"

            listing = await client.list_tools()
            names = [tool.name for tool in listing.tools]
            assert len(names) == 24, names
            assert names[:2] == ["beam_version", "beam_stats"]
            for tool in listing.tools:
                assert tool.input_schema["type"] == "object", tool.name
                assert tool.input_schema["additionalProperties"] is False, tool.name

            result = await client.call_tool("beam_version", {})
            assert result.is_error is False
            version = one_result(result)
            assert version["name"] == "lean-beam-mcp"
            assert version["mcp_protocol"] == MODERN
            assert isinstance(version["version"], str) and version["build"]

            # The server counted the call in the era the client chose.
            stats = one_result(await client.call_tool("beam_stats", {}))
            assert stats["requests"]["byTool"]["beam_version"] == {revision: 1}, stats

    run(session())


@pytest.mark.parametrize("mode", [MODERN, "legacy"])
def test_invalid_arguments_are_a_tool_error(mode: str) -> None:
    async def session():
        async with Client(server(), mode=mode) as client:
            result = await client.call_tool("lean_sync", {"path": 3, "undeclared": True})
            assert result.is_error is True
            error = one_result(result)
            assert error["code"] == "invalidInput"
            pointers = {v["pointer"] for v in error["data"]["violations"]}
            assert {"/path", "/undeclared"} <= pointers, pointers

    run(session())


@pytest.mark.parametrize("mode", [MODERN, "legacy"])
def test_unknown_tool_is_a_protocol_error(mode: str) -> None:
    async def session():
        async with Client(server(), mode=mode) as client:
            with pytest.raises(MCPError) as raised:
                await client.call_tool("textDocument/hover", {})
            assert raised.value.code == -32602

    run(session())
