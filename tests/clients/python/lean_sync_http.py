"""End to end over Streamable HTTP: the official Python MCP SDK (mcp==2.3.0)
drives `lean-beam-mcp --http` and calls lean_sync with a progress token on the
basic fixture's Fix/Goals.lean, once in each connection mode (pinned modern,
legacy, auto), each against a fresh server.

Usage: python lean_sync_http.py LEAN_BEAM_MCP_BINARY WORKSPACE_ROOT
(LEAN_BEAM_LEAN must name the test toolchain's lean; see tests/http_contract.rs).
Prints "OK lean_sync over http ..." per mode and exits 0 on success.
"""

import os
import sys

from beam_clients import MODES, HttpServer, check, check_lean_sync, one_result, progress_recorder, run, server_env
from mcp import Client


async def sync(url: str, root: str, mode: str) -> int:
    on_progress, updates = progress_recorder()
    async with Client(url, mode=mode, read_timeout_seconds=120) as client:
        check(client.protocol_version == MODES[mode], f"{mode}: {client.protocol_version}")
        result = await client.call_tool(
            "lean_sync",
            {"workspace": {"root": root}, "path": "Fix/Goals.lean"},
            progress_callback=on_progress,
        )
        check(not result.is_error, f"lean_sync failed: {result}")
        structured = one_result(result)
        # Progress came in the POST's SSE stream, through the SDK's callback.
        check_lean_sync(structured, root, "Fix/Goals.lean", updates)
        counts = structured["diagnostics"]["counts"]
        check(
            counts == {"error": 0, "warning": 0, "information": 0, "hint": 0, "unknown": 0, "total": 0},
            counts,
        )
        check("items" not in structured["diagnostics"], structured["diagnostics"])
        check(structured["readiness"]["save_ready"] is True, structured["readiness"])
        return len(updates)


def main() -> None:
    binary, root = os.path.realpath(sys.argv[1]), os.path.realpath(sys.argv[2])
    for mode in MODES:
        server = HttpServer(binary, server_env(LEAN_BEAM_LEAN=os.environ["LEAN_BEAM_LEAN"]), cwd=root)
        try:
            count = run(sync(server.url, root, mode), 180)
        except BaseException:
            server.stop()
            raise
        server.check_clean_exit()
        print(f"OK lean_sync over http mode={mode} protocol={MODES[mode]} updates={count}")


if __name__ == "__main__":
    main()
