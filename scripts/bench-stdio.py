#!/usr/bin/env python3
"""Measure lean-beam-mcp over stdio, as a client sees it (plain python3, no deps).

  * beam_version round trip: median and p99 of 10,000 sequential modern
    tools/call requests (after a warm-up), each timed from write to response;
  * tools/list round trip: median of 2,000 sequential modern tools/list
    requests (the whole catalog, output schemas included), write to the
    answer's last byte;
  * the byte floor of that round trip: the same answer, byte for byte, from a
    Python process that only reads the request line and writes it back, in
    the same alternation, so that what moving the catalog through a pipe to
    this client costs and what the server adds are told apart;
  * cold start: process start -> first tools/list answer, median of 20 runs;
  * idle RSS: VmRSS from /proc after start-up and one tools/list, and again
    after the 10,000 calls.

With --baseline OTHER_BINARY both binaries run side by side in one run: the
round trips alternate call by call between two live servers, the cold starts
run by run, so machine load hits both alike; the ratios (this / baseline) are
printed after the figures.

Wall-clock figures depend on what else the machine runs, so the script also
prints load-independent ones: the server's CPU time and context switches per
round trip (from /proc), the CPU time of a cold start (from wait4), the same
cold start measured with `cat` (the harness's own cost), and the load average.

Figures are printed against the targets of issue 29 (item 5). This is a measurement, not
a test: it exits 0 whatever the figures (non-zero only if the server misbehaves).

Usage: scripts/bench-stdio.py [--binary PATH] [--baseline PATH] [--build] [--calls N]
                              [--list-calls N] [--starts N]
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

import mcpmeta

REPO = Path(__file__).resolve().parent.parent
META = mcpmeta.modern_meta("bench-stdio")

TARGETS = {
    "round_trip_median_us": 40.0,
    "tools_list_median_us": 100.0,
    "cold_start_ms": 5.0,
    "idle_rss_mb": 12.0,
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


# The byte floor: answers every request line with the server's tools/list
# answer (its id replaced by the request's), with the least work a process
# can do per line: one readline, one writev of three slices.
FLOOR = r"""
import os, sys
answer = open(sys.argv[1], "rb").read()
head, tail = answer.split(b'"id":0', 1)
read = sys.stdin.buffer.readline
while True:
    request = read()
    if not request:
        break
    at = request.index(b'"id":') + 5
    id_ = request[at:request.index(b",", at)]
    parts = [head, b'"id":' + id_, tail]
    while parts:
        sent = os.writev(1, parts)
        while parts and sent >= len(parts[0]):
            sent -= len(parts.pop(0))
        if parts:
            parts[0] = parts[0][sent:]
"""


def floor_server(answer: bytes) -> Server:
    path = Path(os.environ.get("TMPDIR", "/tmp")) / f"bench-stdio-floor-{os.getpid()}.json"
    path.write_bytes(answer)
    server = Server([sys.executable, "-c", FLOOR, str(path)])
    check(server.ask(tools_list(0)), 0)
    path.unlink()
    return server


def percentile(sorted_values: list[float], fraction: float) -> float:
    index = min(len(sorted_values) - 1, max(0, round(fraction * (len(sorted_values) - 1))))
    return sorted_values[index]


def check(answer: bytes, id_: int) -> None:
    message = json.loads(answer)
    if message.get("id") != id_ or "result" not in message:
        raise SystemExit(f"bench-stdio: unexpected answer {answer[:200]!r}")


def timed_calls(servers: list[Server], make, first_id: int, calls: int, check_every: int) -> list[list[float]]:
    """`calls` sequential requests to each server, alternating server by
    server (the order reversed every other call); microseconds per call."""
    times: list[list[float]] = [[] for _ in servers]
    clock = time.perf_counter_ns
    order = list(range(len(servers)))
    for i in range(first_id, first_id + calls):
        request = make(i)
        for j in (order if i % 2 == 0 else order[::-1]):
            start = clock()
            answer = servers[j].ask(request)
            times[j].append((clock() - start) / 1000.0)
            if i % check_every == 0:
                check(answer, i)
    return times


def round_trips(binaries: list[Path], calls: int, list_calls: int) -> list[dict]:
    servers = [Server(binary) for binary in binaries]
    figures = []
    for server in servers:
        answer = server.ask(tools_list(0))
        check(answer, 0)
        figures.append({"idle_kb": server.rss_kb(), "list_bytes": len(answer), "list_answer": answer})
    for i in range(1, 501):  # warm-up
        for server in servers:
            check(server.ask(beam_version(i)), i)
    before = [(s.cpu_seconds(), s.context_switches()) for s in servers]
    version_times = timed_calls(servers, beam_version, 1000, calls, 1000)
    after = [(s.cpu_seconds(), s.context_switches()) for s in servers]
    floors = [floor_server(fig.pop("list_answer")) for fig in figures]
    listed = servers + floors
    list_cpu0 = [s.cpu_seconds() for s in listed]
    all_list_times = timed_calls(listed, tools_list, 1000 + calls, list_calls, 100)
    list_cpu = [(s.cpu_seconds() - c0) / list_calls for s, c0 in zip(listed, list_cpu0)]
    list_times = all_list_times[: len(servers)]
    for fig, times, cpu, floor in zip(figures, all_list_times[len(servers):], list_cpu[len(servers):], floors):
        fig["floor_median_us"] = statistics.median(times)
        fig["floor_cpu_per_call_us"] = 1e6 * cpu
        floor.close()
    for server, fig, times, lists, lcpu, (cpu0, sw0), (cpu1, sw1) in zip(
        servers, figures, version_times, list_times, list_cpu, before, after
    ):
        times.sort()
        fig.update({
            "median_us": statistics.median(times),
            "p99_us": percentile(times, 0.99),
            "max_us": times[-1],
            "cpu_per_call_us": 1e6 * (cpu1 - cpu0) / calls,
            "switches_per_call": (sw1 - sw0) / calls,
            "list_median_us": statistics.median(lists),
            "list_cpu_per_call_us": 1e6 * lcpu,
            "list_p90_us": percentile(sorted(lists), 0.9),
            "after_kb": server.rss_kb(),
        })
        server.close()
    return figures


def cold_starts(binaries: list, runs: int, verify: bool = True) -> list[tuple[list[float], list[float]]]:
    """Cold starts of each binary, run by run in turns."""
    results = [([], []) for _ in binaries]
    for i in range(runs):
        for j in (range(len(binaries)) if i % 2 == 0 else reversed(range(len(binaries)))):
            start = time.perf_counter_ns()
            server = Server(binaries[j])
            answer = server.ask(tools_list(i))
            results[j][0].append((time.perf_counter_ns() - start) / 1e6)
            if verify:
                check(answer, i)
            results[j][1].append(1e3 * server.close())
    return results


def verdict(value: float, target: float) -> str:
    return "ok  " if value < target else "MISS"


def report(binary: Path, rt: dict, walls: list[float], cpus: list[float], calls: int, list_calls: int) -> None:
    idle_mb = rt["idle_kb"] / 1024.0
    after_mb = rt["after_kb"] / 1024.0
    cold_ms = statistics.median(walls)
    print(f"lean-beam-mcp over stdio ({binary})")
    print(f"  beam_version round trip, {calls} sequential calls:")
    print(f"    median {rt['median_us']:8.1f} us   target < {TARGETS['round_trip_median_us']:.0f} us   "
          f"{verdict(rt['median_us'], TARGETS['round_trip_median_us'])}")
    print(f"    p99    {rt['p99_us']:8.1f} us   (max {rt['max_us']:.1f} us)")
    print(f"    server CPU {rt['cpu_per_call_us']:.1f} us and {rt['switches_per_call']:.2f} context switches per call")
    print(f"  tools/list round trip ({rt['list_bytes']} bytes), {list_calls} sequential calls:")
    print(f"    median {rt['list_median_us']:8.1f} us   target < {TARGETS['tools_list_median_us']:.0f} us  "
          f"{verdict(rt['list_median_us'], TARGETS['tools_list_median_us'])}   (p90 {rt['list_p90_us']:.1f} us)")
    print(f"    server CPU {rt['list_cpu_per_call_us']:.1f} us per call; the byte floor (the same answer "
          f"from a process that only writes it): median {rt['floor_median_us']:.1f} us, "
          f"its CPU {rt['floor_cpu_per_call_us']:.1f} us per call")
    print(f"  cold start -> first tools/list answer, median of {len(walls)}:")
    print(f"    median {cold_ms:8.2f} ms   target < {TARGETS['cold_start_ms']:.0f} ms    "
          f"{verdict(cold_ms, TARGETS['cold_start_ms'])}   (min {min(walls):.2f}, max {max(walls):.2f})")
    print(f"    server CPU per run (start, answer, EOF shutdown): median {statistics.median(cpus):.2f} ms")
    print("  RSS:")
    print(f"    idle   {idle_mb:8.2f} MiB  (after start-up and one tools/list)")
    print(f"    after {calls} + {list_calls} calls {after_mb:.2f} MiB   target < {TARGETS['idle_rss_mb']:.0f} MiB  "
          f"{verdict(after_mb, TARGETS['idle_rss_mb'])}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--binary", type=Path, default=REPO / "target" / "release" / "lean-beam-mcp")
    parser.add_argument("--baseline", type=Path, help="another build, measured side by side")
    parser.add_argument("--build", action="store_true", help="run cargo build --release first")
    parser.add_argument("--calls", type=int, default=10_000)
    parser.add_argument("--list-calls", type=int, default=2_000)
    parser.add_argument("--starts", type=int, default=20)
    args = parser.parse_args()

    if args.build:
        subprocess.run(["cargo", "build", "--release", "--locked"], cwd=REPO, check=True)
    binaries = [args.binary] + ([args.baseline] if args.baseline else [])
    for binary in binaries:
        if not binary.is_file():
            raise SystemExit(f"bench-stdio: {binary} not found; run `cargo build --release` or pass --build")

    load0 = os.getloadavg()
    rts = round_trips(binaries, args.calls, args.list_calls)
    starts = cold_starts(binaries, args.starts)
    # The harness's own cost: the same spawn, write and read against `cat`.
    (cat_walls, _), = cold_starts([["cat"]], args.starts, verify=False)
    load1 = os.getloadavg()

    print(f"load average {load0[0]:.2f} {load0[1]:.2f} {load0[2]:.2f} at start, "
          f"{load1[0]:.2f} {load1[1]:.2f} {load1[2]:.2f} at end, on {os.cpu_count()} CPUs "
          "(wall-clock figures include waiting for a CPU)")
    for binary, rt, (walls, cpus) in zip(binaries, rts, starts):
        report(binary, rt, walls, cpus, args.calls, args.list_calls)
    print(f"harness baseline, the cold start with `cat`: median {statistics.median(cat_walls):.2f} ms")
    if args.baseline:
        new, old = rts
        (new_walls, new_cpus), (old_walls, old_cpus) = starts
        print(f"ratios, {args.binary.name} / baseline {args.baseline}:")
        for name, a, b in [
            ("beam_version median", new["median_us"], old["median_us"]),
            ("beam_version server CPU per call", new["cpu_per_call_us"], old["cpu_per_call_us"]),
            ("tools/list median", new["list_median_us"], old["list_median_us"]),
            ("tools/list over its byte floor", new["list_median_us"] - new["floor_median_us"],
             old["list_median_us"] - old["floor_median_us"]),
            ("tools/list byte floor", new["floor_median_us"], old["floor_median_us"]),
            ("cold start median", statistics.median(new_walls), statistics.median(old_walls)),
            ("cold start server CPU", statistics.median(new_cpus), statistics.median(old_cpus)),
            ("RSS after the calls", new["after_kb"], old["after_kb"]),
        ]:
            print(f"  {name:<36} {a:10.2f} / {b:10.2f} = {a / b:5.3f}")


if __name__ == "__main__":
    sys.exit(main())
