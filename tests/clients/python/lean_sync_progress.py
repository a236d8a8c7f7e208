"""End to end: the official Python MCP SDK (mcp==2.3.0) drives a real
lean-beam-mcp over stdio and calls lean_sync with a progress token on a Lean
fixture, once in each connection mode the SDK offers ("auto": the modern
2026-07-28 per-request protocol after discovery; "legacy": initialize).

Usage: python lean_sync_progress.py LEAN_BEAM_MCP_BINARY WORKSPACE_ROOT
(LEAN_BEAM_LEAN must name the test toolchain's lean; see tests/lean/broker.rs).
Prints "OK lean_sync ..." per mode and exits 0 on success.
"""

import os
import sys

from beam_clients import check, check_lean_sync, one_result, progress_recorder, run, server_env
from mcp import Client, StdioServerParameters


async def sync(binary: str, root: str, mode: str) -> None:
    env = server_env(LEAN_BEAM_LEAN=os.environ["LEAN_BEAM_LEAN"])
    server = StdioServerParameters(command=binary, args=[], env=env, cwd=root)
    on_progress, updates = progress_recorder()
    logs = []

    async def on_log(params):
        logs.append(params)

    async with Client(server, mode=mode, read_timeout_seconds=120, logging_callback=on_log) as client:
        tools = await client.list_tools()
        names = {t.name for t in tools.tools}
        check("lean_sync" in names, f"lean_sync not listed: {sorted(names)}")
        result = await client.call_tool(
            "lean_sync",
            {"workspace": {"root": root}, "path": "Fix/Errors.lean", "diagnostics_in_result": True},
            progress_callback=on_progress,
        )
        check(not result.is_error, f"lean_sync failed: {result}")
        structured = one_result(result)
        # Progress arrived through the SDK's callback, before the result.
        check_lean_sync(structured, root, "Fix/Errors.lean", updates)
        counts = structured["diagnostics"]["counts"]
        check((counts["error"], counts["warning"], counts["total"]) == (3, 1, 4), counts)
        items = structured["diagnostics"]["items"]
        check([i["range"]["start"]["line"] for i in items] == [8, 11, 20], items)
        check(structured["readiness"]["save_ready"] is False, structured["readiness"])
        # Lean diagnostics as logs: the legacy session starts at debug (errors of
        # the default scope); a modern request without a log level gets none.
        if mode == "legacy":
            check([(l.level, l.logger) for l in logs] == [("error", "lean.diagnostic")] * 3, logs)
        else:
            check(logs == [], logs)
        # A tool error travels as isError with the structured error as its text.
        bad = await client.call_tool("lean_sync", {"workspace": {"root": "relative"}, "path": "X.lean"})
        check(bad.is_error, f"a relative root must fail: {bad}")
        check(one_result(bad)["code"] == "invalidInput", bad)
        print(f"OK lean_sync mode={mode} protocol={client.protocol_version} updates={len(updates)} logs={len(logs)}")


def main() -> None:
    binary, root = os.path.realpath(sys.argv[1]), os.path.realpath(sys.argv[2])
    for mode in ("auto", "legacy"):
        run(sync(binary, root, mode), 180)


if __name__ == "__main__":
    main()
