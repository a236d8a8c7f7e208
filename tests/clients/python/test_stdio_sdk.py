"""The official MCP Python SDK (PyPI mcp==2.3.0) against the real stdio binary.

Run through scripts/test.sh (which builds the binary and installs the SDK into
target/test-clients/venv), or by hand:

    PY=$(scripts/setup-test-clients.sh)
    LEAN_BEAM_MCP_BIN=target/debug/lean-beam-mcp "$PY" -m pytest tests/clients/python

Timeouts are failure guards only.
"""

from __future__ import annotations

import pytest
from beam_clients import (
    BINARY,
    MODERN,
    MODES,
    check_listing_and_version,
    check_unknown_tool_is_a_protocol_error,
    one_result,
    run,
)
from mcp import Client, StdioServerParameters


def server() -> StdioServerParameters:
    assert BINARY.is_file(), f"{BINARY} does not exist; build it first (cargo build)"
    # The SDK adds its default environment (PATH, HOME, …) to this one.
    return StdioServerParameters(command=str(BINARY), args=[], env={"LEAN_BEAM_LOG": "warn"})


@pytest.mark.parametrize("mode,revision", MODES.items(), ids=list(MODES))
def test_list_tools_and_call_beam_version(mode: str, revision: str) -> None:
    async def session():
        async with Client(server(), mode=mode) as client:
            stats = await check_listing_and_version(client, revision)
            # The server counted the call in the era the client chose.
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
            await check_unknown_tool_is_a_protocol_error(client)

    run(session())
