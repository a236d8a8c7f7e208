#!/usr/bin/env python3
"""Benchmark `lean-beam-mcp --http` on loopback.

Measures requests per second and latency (p50/p99) of `tools/call beam_version`
with 1 and 16 concurrent clients in each protocol era (2026-07-28 sessionless
with its mirrored headers; 2025-11-25 inside an initialized session, one
session per client), each client on its own keep-alive connection; then the
server's resident memory idle, and with 100 open legacy sessions.

    scripts/bench-http.py [--binary PATH] [--seconds 5] [--json]

Without --binary it builds and uses target/release/lean-beam-mcp. Standard
library only; all traffic stays on 127.0.0.1 and every loop is bounded in time.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import replicaset

REPO = Path(__file__).resolve().parents[1]
MODERN = "2026-07-28"
LEGACY = "2025-11-25"


def start_server(binary: str) -> tuple[subprocess.Popen, int]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEAN_BEAM_")}
    env["LEAN_BEAM_LOG"] = "warn"
    process = subprocess.Popen(
        [binary, "--http", "127.0.0.1:0"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    port = replicaset.announced_port(process, 20)
    if port is None:
        process.kill()
        sys.exit("the server did not announce its port")
    return process, port


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


class Connection:
    """One keep-alive HTTP/1.1 connection (Content-Length bodies only)."""

    def __init__(self, port: int) -> None:
        self.port = port

    async def open(self) -> None:
        self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)

    async def post(self, body: bytes, headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        head = f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\nContent-Type: application/json\r\n"
        head += "Accept: application/json, text/event-stream\r\n"
        head += "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        head += f"Content-Length: {len(body)}\r\n\r\n"
        self.writer.write(head.encode() + body)
        status_line = await self.reader.readline()
        status = int(status_line.split()[1])
        response_headers: dict[str, str] = {}
        while True:
            line = await self.reader.readline()
            if line in (b"\r\n", b""):
                break
            name, _, value = line.decode().partition(":")
            response_headers[name.strip().lower()] = value.strip()
        length = int(response_headers.get("content-length", "0"))
        payload = await self.reader.readexactly(length) if length else b""
        return status, response_headers, payload

    def close(self) -> None:
        self.writer.close()


def call_body(request_id: int, era: str) -> bytes:
    params: dict = {"name": "beam_version", "arguments": {}}
    if era == MODERN:
        params["_meta"] = {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": {},
        }
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}).encode()


async def legacy_session(connection: Connection) -> str:
    init = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}},
    }
    status, headers, _ = await connection.post(json.dumps(init).encode(), {})
    assert status == 200, status
    session = headers["mcp-session-id"]
    done = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode()
    status, _, _ = await connection.post(done, {"Mcp-Session-Id": session, "MCP-Protocol-Version": LEGACY})
    assert status == 202, status
    return session


async def client(port: int, era: str, deadline: float, latencies: list[float]) -> None:
    connection = Connection(port)
    await connection.open()
    if era == MODERN:
        headers = {"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call", "Mcp-Name": "beam_version"}
    else:
        headers = {"Mcp-Session-Id": await legacy_session(connection), "MCP-Protocol-Version": LEGACY}
    request_id = 1
    while time.perf_counter() < deadline:
        body = call_body(request_id, era)
        started = time.perf_counter()
        status, _, payload = await connection.post(body, headers)
        latencies.append(time.perf_counter() - started)
        if status != 200 or b'"isError":false' not in payload:
            raise RuntimeError(f"unexpected answer {status}: {payload[:200]!r}")
        request_id += 1
    connection.close()


async def measure(port: int, era: str, clients: int, seconds: float) -> dict:
    latencies: list[float] = []
    # A short warm-up, not counted.
    await asyncio.gather(*(client(port, era, time.perf_counter() + 0.3, []) for _ in range(clients)))
    started = time.perf_counter()
    deadline = started + seconds
    await asyncio.gather(*(client(port, era, deadline, latencies) for _ in range(clients)))
    elapsed = time.perf_counter() - started
    latencies.sort()

    def pct(p: float) -> float:
        return latencies[min(len(latencies) - 1, int(p * len(latencies)))] * 1000

    return {
        "era": era,
        "clients": clients,
        "requests": len(latencies),
        "rps": round(len(latencies) / elapsed),
        "p50_ms": round(pct(0.50), 3),
        "p99_ms": round(pct(0.99), 3),
    }


async def idle_sessions(port: int, pid: int, count: int) -> dict:
    before = rss_kib(pid)
    connections = []
    for _ in range(count):
        connection = Connection(port)
        await connection.open()
        await legacy_session(connection)
        connections.append(connection)
    await asyncio.sleep(1.0)
    after = rss_kib(pid)
    for connection in connections:
        connection.close()
    return {"sessions": count, "rss_before_kib": before, "rss_kib": after}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--binary", help="lean-beam-mcp to run (default: build target/release/lean-beam-mcp)")
    parser.add_argument("--seconds", type=float, default=5.0, help="measuring time per case (default 5)")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args()
    binary = args.binary
    if binary is None:
        subprocess.run(["cargo", "build", "--release", "--bin", "lean-beam-mcp"], cwd=REPO, check=True)
        target = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
        binary = str(target / "release" / "lean-beam-mcp")

    results: dict = {"cases": []}
    process, port = start_server(binary)
    try:
        time.sleep(0.2)
        results["rss_idle_kib"] = rss_kib(process.pid)
        for era in (MODERN, LEGACY):
            for clients in (1, 16):
                results["cases"].append(asyncio.run(measure(port, era, clients, args.seconds)))
    finally:
        process.terminate()
        process.wait(timeout=30)
    # Memory on a fresh server, so the benchmark's sessions do not count.
    process, port = start_server(binary)
    try:
        time.sleep(0.2)
        results["idle"] = asyncio.run(idle_sessions(port, process.pid, 100))
    finally:
        process.terminate()
        process.wait(timeout=30)

    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(f"tools/call beam_version over HTTP/1.1 keep-alive, {args.seconds:g} s per case ({binary})")
    print(f"{'era':<12}{'clients':>8}{'requests':>10}{'req/s':>10}{'p50 ms':>10}{'p99 ms':>10}")
    for case in results["cases"]:
        print(
            f"{case['era']:<12}{case['clients']:>8}{case['requests']:>10}{case['rps']:>10}"
            f"{case['p50_ms']:>10.3f}{case['p99_ms']:>10.3f}"
        )
    idle = results["idle"]
    print(
        f"RSS: {idle['rss_before_kib'] / 1024:.1f} MiB idle, "
        f"{idle['rss_kib'] / 1024:.1f} MiB with {idle['sessions']} open legacy sessions"
    )


if __name__ == "__main__":
    main()
