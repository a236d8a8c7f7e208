"""End to end over Streamable HTTP: the official Python MCP SDK (mcp==2.3.0)
drives `lean-beam-mcp --http` and calls lean_sync with a progress token on the
basic fixture's Fix/Goals.lean, once in each connection mode (pinned modern,
legacy, auto), each against a fresh server.

Usage: python lean_sync_http.py LEAN_BEAM_MCP_BINARY WORKSPACE_ROOT
(LEAN_BEAM_LEAN must name the test toolchain's lean; see tests/http_contract.rs).
Prints "OK lean_sync over http ..." per mode and exits 0 on success.
"""

import asyncio
import json
import os
import re
import subprocess
import sys
import threading

from mcp import Client

MODES = {"2026-07-28": "2026-07-28", "legacy": "2025-11-25", "auto": "2026-07-28"}


def check(condition, message):
    if not condition:
        raise AssertionError(message)


def start(binary: str, root: str):
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEAN_BEAM_")}
    env["LEAN_BEAM_LEAN"] = os.environ["LEAN_BEAM_LEAN"]
    env["LEAN_BEAM_LOG"] = "warn"
    process = subprocess.Popen(
        [binary, "--http", "127.0.0.1:0"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=root,
    )
    found = {}
    ready = threading.Event()
    log = []

    def drain():
        for line in process.stderr:
            log.append(line.rstrip("\n"))
            match = re.search(r"listening on (http://127\.0\.0\.1:\d+/mcp)", line)
            if match:
                found["url"] = match.group(1)
                ready.set()

    threading.Thread(target=drain, daemon=True).start()
    check(ready.wait(20), f"the server did not announce its URL: {log}")
    return process, found["url"], log


async def run(url: str, root: str, mode: str) -> int:
    updates = []

    async def on_progress(progress, total, message):
        updates.append((progress, total, message))

    async with Client(url, mode=mode, read_timeout_seconds=120) as client:
        check(client.protocol_version == MODES[mode], f"{mode}: {client.protocol_version}")
        result = await client.call_tool(
            "lean_sync",
            {"workspace": {"root": root}, "path": "Fix/Goals.lean"},
            progress_callback=on_progress,
        )
        check(not result.is_error, f"lean_sync failed: {result}")
        structured = result.structured_content
        check(structured is not None, "no structuredContent")
        check(json.loads(result.content[0].text) == structured, "content[0].text differs from structuredContent")
        check(structured["workspace"] == {"root": root}, structured["workspace"])
        check(structured["path"] == "Fix/Goals.lean", structured["path"])
        check(structured["version"] == 1, structured["version"])
        counts = structured["diagnostics"]["counts"]
        check(
            counts == {"error": 0, "warning": 0, "information": 0, "hint": 0, "unknown": 0, "total": 0},
            counts,
        )
        check("items" not in structured["diagnostics"], structured["diagnostics"])
        check(structured["readiness"]["save_ready"] is True, structured["readiness"])
        check(structured["document_progress"]["done"] is True, structured["document_progress"])
        # Progress came in the POST's SSE stream, through the SDK's callback.
        check(len(updates) >= 2, f"progress updates: {updates}")
        values = [u[0] for u in updates]
        check(all(a < b for a, b in zip(values, values[1:])), f"progress not increasing: {values}")
        check("preparing" in (updates[0][2] or ""), f"first update: {updates[0]}")
        return len(updates)


def main() -> None:
    binary, root = os.path.realpath(sys.argv[1]), os.path.realpath(sys.argv[2])
    for mode in MODES:
        process, url, log = start(binary, root)
        try:
            count = asyncio.run(asyncio.wait_for(run(url, root, mode), 180))
        finally:
            process.terminate()
            code = process.wait(timeout=30)
        check(code == 0, f"the server exited with {code}: {log}")
        check(not any("ERROR" in line for line in log), log)
        print(f"OK lean_sync over http mode={mode} protocol={MODES[mode]} updates={count}")


if __name__ == "__main__":
    main()
