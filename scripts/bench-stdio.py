#!/usr/bin/env python3
"""Measure lean-beam-mcp over stdio, as a client sees it (plain python3, no deps).

  * beam_version round trip: median and p99 of 10,000 sequential modern
    tools/call requests (after a warm-up), each timed from write to response;
  * cold start: process start -> first tools/list answer, median of 20 runs;
  * idle RSS: VmRSS from /proc after start-up and one tools/list, and again
    after the 10,000 calls.

Figures are printed against the targets of issue 2. This is a measurement, not
a test: it exits 0 whatever the figures (non-zero only if the server misbehaves).

Usage: scripts/bench-stdio.py [--binary PATH] [--build] [--calls N] [--starts N]
The default binary is target/release/lean-beam-mcp (--build runs
`cargo build --release` first).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "bench-stdio", "version": "1"},
}

TARGETS = {
    "round_trip_median_us": 100.0,
    "cold_start_ms": 20.0,
    "idle_rss_mb": 15.0,
}


def line(message: dict) -> bytes:
    return (json.dumps(message, separators=(",", ":")) + "\n").encode()


def tools_list(id_: int) -> bytes:
    return line({"jsonrpc": "2.0", "id": id_, "method": "tools/list", "params": {"_meta": META}})


def beam_version(id_: int) -> bytes:
    return line({
        "jsonrpc": "2.0",
        "id": id_,
        "method": "tools/call",
        "params": {"_meta": META, "name": "beam_version", "arguments": {}},
    })


class Server:
    def __init__(self, binary: Path):
        env = dict(os.environ, LEAN_BEAM_LOG="error")
        self.proc = subprocess.Popen(
            [str(binary)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            bufsize=0,
        )
        self.out = self.proc.stdout
        self.fd = self.proc.stdin.fileno()

    def ask(self, request: bytes) -> bytes:
        os.write(self.fd, request)
        answer = self.out.readline()
        if not answer:
            raise SystemExit("bench-stdio: the server closed stdout unexpectedly")
        return answer

    def rss_kb(self) -> int:
        with open(f"/proc/{self.proc.pid}/status") as status:
            for entry in status:
                if entry.startswith("VmRSS:"):
                    return int(entry.split()[1])
        raise SystemExit("bench-stdio: no VmRSS in /proc")

    def close(self) -> None:
        self.proc.stdin.close()
        code = self.proc.wait(timeout=30)
        if code != 0:
            raise SystemExit(f"bench-stdio: the server exited with {code}")


def percentile(sorted_values: list[float], fraction: float) -> float:
    index = min(len(sorted_values) - 1, max(0, round(fraction * (len(sorted_values) - 1))))
    return sorted_values[index]


def check(answer: bytes, id_: int) -> None:
    message = json.loads(answer)
    if message.get("id") != id_ or "result" not in message:
        raise SystemExit(f"bench-stdio: unexpected answer {answer[:200]!r}")


def round_trips(binary: Path, calls: int) -> tuple[float, float, float, int, int]:
    server = Server(binary)
    check(server.ask(tools_list(0)), 0)
    idle_kb = server.rss_kb()
    for i in range(1, 501):  # warm-up
        check(server.ask(beam_version(i)), i)
    times = []
    clock = time.perf_counter_ns
    for i in range(1000, 1000 + calls):
        request = beam_version(i)
        start = clock()
        answer = server.ask(request)
        times.append((clock() - start) / 1000.0)
        if i % 1000 == 0:
            check(answer, i)
    after_kb = server.rss_kb()
    server.close()
    times.sort()
    return statistics.median(times), percentile(times, 0.99), times[-1], idle_kb, after_kb


def cold_starts(binary: Path, runs: int) -> list[float]:
    results = []
    for i in range(runs):
        start = time.perf_counter_ns()
        server = Server(binary)
        answer = server.ask(tools_list(i))
        elapsed_ms = (time.perf_counter_ns() - start) / 1e6
        check(answer, i)
        server.close()
        results.append(elapsed_ms)
    return results


def verdict(value: float, target: float) -> str:
    return "ok  " if value < target else "MISS"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--binary", type=Path, default=REPO / "target" / "release" / "lean-beam-mcp")
    parser.add_argument("--build", action="store_true", help="run cargo build --release first")
    parser.add_argument("--calls", type=int, default=10_000)
    parser.add_argument("--starts", type=int, default=20)
    args = parser.parse_args()

    if args.build:
        subprocess.run(["cargo", "build", "--release", "--locked"], cwd=REPO, check=True)
    if not args.binary.is_file():
        raise SystemExit(f"bench-stdio: {args.binary} not found; run `cargo build --release` or pass --build")

    median_us, p99_us, max_us, idle_kb, after_kb = round_trips(args.binary, args.calls)
    starts = cold_starts(args.binary, args.starts)
    cold_ms = statistics.median(starts)
    idle_mb = idle_kb / 1024.0

    print(f"lean-beam-mcp over stdio ({args.binary})")
    print(f"  beam_version round trip, {args.calls} sequential calls:")
    print(f"    median {median_us:8.1f} us   target < {TARGETS['round_trip_median_us']:.0f} us   "
          f"{verdict(median_us, TARGETS['round_trip_median_us'])}")
    print(f"    p99    {p99_us:8.1f} us   (max {max_us:.1f} us)")
    print(f"  cold start -> first tools/list answer, median of {args.starts}:")
    print(f"    median {cold_ms:8.2f} ms   target < {TARGETS['cold_start_ms']:.0f} ms    "
          f"{verdict(cold_ms, TARGETS['cold_start_ms'])}   (min {min(starts):.2f}, max {max(starts):.2f})")
    print(f"  RSS:")
    print(f"    idle   {idle_mb:8.2f} MB   target < {TARGETS['idle_rss_mb']:.0f} MB    "
          f"{verdict(idle_mb, TARGETS['idle_rss_mb'])}")
    print(f"    after {args.calls} calls {after_kb / 1024.0:.2f} MB")


if __name__ == "__main__":
    sys.exit(main())
