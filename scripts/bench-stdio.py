#!/usr/bin/env python3
"""Measure lean-beam-mcp over stdio, as a client sees it (plain python3, no deps).

  * beam_version round trip: median and p99 of 10,000 sequential modern
    tools/call requests (after a warm-up), each timed from write to response;
  * cold start: process start -> first tools/list answer, median of 20 runs;
  * idle RSS: VmRSS from /proc after start-up and one tools/list, and again
    after the 10,000 calls.

Wall-clock figures depend on what else the machine runs, so the script also
prints load-independent ones: the server's CPU time and context switches per
round trip (from /proc), the CPU time of a cold start (from wait4), the same
cold start measured with `cat` (the harness's own cost), and the load average.

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
    def __init__(self, binary: Path | list[str]):
        env = dict(os.environ, LEAN_BEAM_LOG="error")
        self.proc = subprocess.Popen(
            [str(binary)] if isinstance(binary, Path) else binary,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            # Buffered: an unbuffered readline() reads one byte per syscall.
            # Requests are written with os.write on the raw descriptor.
            bufsize=-1,
        )
        self.out = self.proc.stdout
        self.fd = self.proc.stdin.fileno()

    def ask(self, request: bytes) -> bytes:
        os.write(self.fd, request)
        answer = self.out.readline()
        if not answer:
            raise SystemExit("bench-stdio: the server closed stdout unexpectedly")
        return answer

    def cpu_seconds(self) -> float:
        fields = open(f"/proc/{self.proc.pid}/stat").read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def context_switches(self) -> int:
        total = 0
        for task in os.listdir(f"/proc/{self.proc.pid}/task"):
            with open(f"/proc/{self.proc.pid}/task/{task}/status") as status:
                for entry in status:
                    if "ctxt_switches" in entry:
                        total += int(entry.split()[1])
        return total

    def rss_kb(self) -> int:
        with open(f"/proc/{self.proc.pid}/status") as status:
            for entry in status:
                if entry.startswith("VmRSS:"):
                    return int(entry.split()[1])
        raise SystemExit("bench-stdio: no VmRSS in /proc")

    def close(self) -> float:
        """Close stdin, reap the process; return its total CPU seconds."""
        self.proc.stdin.close()
        _, status, usage = os.wait4(self.proc.pid, 0)
        self.proc.returncode = os.waitstatus_to_exitcode(status)
        if self.proc.returncode != 0:
            raise SystemExit(f"bench-stdio: the server exited with {self.proc.returncode}")
        return usage.ru_utime + usage.ru_stime


def percentile(sorted_values: list[float], fraction: float) -> float:
    index = min(len(sorted_values) - 1, max(0, round(fraction * (len(sorted_values) - 1))))
    return sorted_values[index]


def check(answer: bytes, id_: int) -> None:
    message = json.loads(answer)
    if message.get("id") != id_ or "result" not in message:
        raise SystemExit(f"bench-stdio: unexpected answer {answer[:200]!r}")


def round_trips(binary: Path, calls: int) -> dict:
    server = Server(binary)
    check(server.ask(tools_list(0)), 0)
    idle_kb = server.rss_kb()
    for i in range(1, 501):  # warm-up
        check(server.ask(beam_version(i)), i)
    times = []
    clock = time.perf_counter_ns
    cpu0, switches0 = server.cpu_seconds(), server.context_switches()
    for i in range(1000, 1000 + calls):
        request = beam_version(i)
        start = clock()
        answer = server.ask(request)
        times.append((clock() - start) / 1000.0)
        if i % 1000 == 0:
            check(answer, i)
    cpu1, switches1 = server.cpu_seconds(), server.context_switches()
    after_kb = server.rss_kb()
    server.close()
    times.sort()
    return {
        "median_us": statistics.median(times),
        "p99_us": percentile(times, 0.99),
        "max_us": times[-1],
        "cpu_per_call_us": 1e6 * (cpu1 - cpu0) / calls,
        "switches_per_call": (switches1 - switches0) / calls,
        "idle_kb": idle_kb,
        "after_kb": after_kb,
    }


def cold_starts(binary: Path | list[str], runs: int, verify: bool = True) -> tuple[list[float], list[float]]:
    walls, cpus = [], []
    for i in range(runs):
        start = time.perf_counter_ns()
        server = Server(binary)
        answer = server.ask(tools_list(i))
        walls.append((time.perf_counter_ns() - start) / 1e6)
        if verify:
            check(answer, i)
        cpus.append(1e3 * server.close())
    return walls, cpus


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

    rt = round_trips(args.binary, args.calls)
    walls, cpus = cold_starts(args.binary, args.starts)
    # The harness's own cost: the same spawn, write and read against `cat`.
    cat_walls, _ = cold_starts(["cat"], args.starts, verify=False)
    cold_ms = statistics.median(walls)
    idle_mb = rt["idle_kb"] / 1024.0
    load = os.getloadavg()

    print(f"lean-beam-mcp over stdio ({args.binary})")
    print(f"  load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} CPUs "
          "(wall-clock figures include waiting for a CPU)")
    print(f"  beam_version round trip, {args.calls} sequential calls:")
    print(f"    median {rt['median_us']:8.1f} us   target < {TARGETS['round_trip_median_us']:.0f} us   "
          f"{verdict(rt['median_us'], TARGETS['round_trip_median_us'])}")
    print(f"    p99    {rt['p99_us']:8.1f} us   (max {rt['max_us']:.1f} us)")
    print(f"    server CPU {rt['cpu_per_call_us']:.1f} us and {rt['switches_per_call']:.2f} context switches per call")
    print(f"  cold start -> first tools/list answer, median of {args.starts}:")
    print(f"    median {cold_ms:8.2f} ms   target < {TARGETS['cold_start_ms']:.0f} ms    "
          f"{verdict(cold_ms, TARGETS['cold_start_ms'])}   (min {min(walls):.2f}, max {max(walls):.2f})")
    print(f"    server CPU per run (start, answer, EOF shutdown): median {statistics.median(cpus):.2f} ms")
    print(f"    harness baseline with `cat`: median {statistics.median(cat_walls):.2f} ms")
    print("  RSS:")
    print(f"    idle   {idle_mb:8.2f} MB   target < {TARGETS['idle_rss_mb']:.0f} MB    "
          f"{verdict(idle_mb, TARGETS['idle_rss_mb'])}")
    print(f"    after {args.calls} calls {rt['after_kb'] / 1024.0:.2f} MB")


if __name__ == "__main__":
    sys.exit(main())
