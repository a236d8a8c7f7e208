#!/usr/bin/env python3
"""Benchmark of speculative execution (issue 5, point 4): what a probe costs.

Against the release build of lean-beam-mcp and the real test toolchain, in
tests/fixtures/long/Long.lean (1,999 lines, 165 blocks; block k starts at line
18 + 12k and its theorem `sc<k>` has the tactic `show …` at (L+9, 2)):

  first   lean_run_at at the first declaration's proof (block 0)
  last    lean_run_at at the last declaration's proof (block 164)
  naive   the naive approach at the first declaration: a fresh virtual copy of
          the whole file with the probe inserted, opened in a `lean --server`
          started exactly as the broker starts it, through a minimal LSP client
          here (didOpen → plainGoal after the probe → waitForDiagnostics →
          didClose; "complete" is the time to the diagnostics, the only way to
          know every message of the probe is in; "goals only" a lower bound)
  4-par   probes per second with 4 probes in flight (4 shadow slots), at the
          last block, and spread over 5 blocks (more places than slots: slots
          move between places and re-elaborate what lies between)

From the second probe at a place with enough commands before it, the broker
compiles that prefix in the background and later probes there import it (a
"prefix base", src/broker/engine/bases.rs); the cold figures are before that.

Every probe has a text of its own (all successful), so each one is really
elaborated. Latencies are medians after a warm-up, measured twice: paced (an
idle pause between probes, as between an agent's calls) and back to back.
After every version Lean keeps computing the whole document's .ilean
reference index in the background (about 0.4 s at the end of Long.lean), so
back-to-back probes at the end of a long file compete with that work.
Targets (issue 5), on the paced figures: last/first <= 1.5x; naive/first >= 5x.

Usage: scripts/bench-speculate.py [--probes N] [--pace S] [--naive-probes N] [--no-build]
Plain python3, no dependencies. Prints figures; exits 0 whatever they are
(1 with --check when a target is missed).
"""

import argparse
import json
import os
import queue
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import mcpmeta

REPO = Path(__file__).resolve().parent.parent
ROOT = (REPO / "tests/fixtures/long").resolve()
FILE = "Long.lean"
BLOCKS = 165
PROTOCOL = "2026-07-28"


def block_line(k):
    return 18 + 12 * k


def show_position(k):
    """The `show` tactic of theorem sc<k>: goals `⊢ Eq (c<k>.add U.z.s) c<k>.s`."""
    return block_line(k) + 9, 2


def probe_text(k, i):
    """Probe number i at show_position(k): a successful step that closes the
    goal, different for every i (a text equal to a slot's current one would be
    answered without elaboration)."""
    step = f"exact (fun (_x{i} : U) => Eq.refl _) U.z"
    if i % 2:
        return f"show Eq (U.s (U.add c{k} U.z)) (U.s c{k})\n{step}"
    return step


def toolchain():
    lean = os.environ.get("LEAN")
    if not lean:
        out = subprocess.run(
            [str(REPO / "scripts/install-test-lean.sh")], check=True, capture_output=True, text=True
        )
        lean = out.stdout.strip()
    subprocess.run(
        [str(REPO / "scripts/build-fixtures.sh")],
        check=True,
        env=dict(os.environ, LEAN=lean),
        stdout=subprocess.DEVNULL,
    )
    return lean


# ---------------------------------------------------------------------------
# A minimal MCP stdio client (modern per-request metadata), several calls in
# flight at once.


class Mcp:
    def __init__(self, binary, env):
        self.proc = subprocess.Popen(
            [binary],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        self.lock = threading.Lock()
        self.waiters = {}
        self.results = {}
        self.next_id = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            message = json.loads(line)
            if "id" not in message or "method" in message:
                continue
            with self.lock:
                self.results[message["id"]] = message
                event = self.waiters.pop(message["id"], None)
            if event:
                event.set()

    def start(self, tool, arguments):
        with self.lock:
            self.next_id += 1
            call_id = self.next_id
            self.waiters[call_id] = threading.Event()
        meta = mcpmeta.modern_meta("bench-speculate")
        request = {
            "jsonrpc": "2.0",
            "id": call_id,
            "method": "tools/call",
            "params": {"_meta": meta, "name": tool, "arguments": arguments},
        }
        data = (json.dumps(request) + "\n").encode()
        with self.lock:
            self.proc.stdin.write(data)
            self.proc.stdin.flush()
        return call_id

    def wait(self, call_id, timeout=600):
        with self.lock:
            event = self.waiters.get(call_id)
        if event and not event.wait(timeout):
            raise TimeoutError(f"no answer to call {call_id}")
        with self.lock:
            message = self.results.pop(call_id)
        result = message.get("result")
        if result is None or result.get("isError"):
            raise RuntimeError(f"call {call_id} failed: {json.dumps(message)[:1000]}")
        return result["structuredContent"]

    def call(self, tool, arguments):
        return self.wait(self.start(tool, arguments))

    def close(self):
        self.proc.stdin.close()
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()


# ---------------------------------------------------------------------------
# A minimal LSP client for the naive approach, against `lean --server` started
# as the broker starts it for a bare-lean workspace.


class Lsp:
    def __init__(self, lean, root):
        env = dict(os.environ)
        env.pop("LAKE", None)
        env["LEAN_PATH"] = str(root / ".lake/build/lib/lean")
        env["LEAN_SRC_PATH"] = str(root)
        self.proc = subprocess.Popen(
            [lean, "--server", "-Dserver.reportDelayMs=0"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=root,
            env=env,
        )
        self.answers = queue.Queue()
        self.next_id = 0
        threading.Thread(target=self._read, daemon=True).start()
        self.request("initialize", {"processId": os.getpid(), "rootUri": root.as_uri(), "capabilities": {}})
        self.notify("initialized", {})

    def _read(self):
        out = self.proc.stdout
        while True:
            length = None
            while True:
                header = out.readline()
                if not header:
                    return
                header = header.strip()
                if not header:
                    break
                name, _, value = header.decode().partition(":")
                if name.lower() == "content-length":
                    length = int(value)
            message = json.loads(out.read(length))
            if "id" in message and "method" not in message:
                self.answers.put(message)
            else:
                self.on_message(message)

    def on_message(self, message):
        """A notification or a request from the server (subclasses look)."""

    def _send(self, message):
        body = json.dumps(message).encode()
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def notify(self, method, params):
        self._send({"jsonrpc": "2.0", "method": method, "params": params})

    def request(self, method, params, timeout=600):
        self.next_id += 1
        call_id = self.next_id
        self._send({"jsonrpc": "2.0", "id": call_id, "method": method, "params": params})
        while True:
            answer = self.answers.get(timeout=timeout)
            if answer["id"] == call_id:
                if "error" in answer:
                    raise RuntimeError(f"{method}: {answer['error']}")
                return answer["result"]

    def close(self):
        try:
            self.request("shutdown", None, timeout=10)
            self.notify("exit", None)
            self.proc.wait(10)
        except Exception:
            self.proc.kill()


def naive_probe(lsp, source, line, character, text, n):
    """Open a fresh virtual copy of the whole file with `text` inserted at
    (line, character), ask for the goals after the probe, wait for the copy's
    complete diagnostics (the only way to know that every message of the probe
    is in), close it. Returns (seconds to the goals, seconds to complete
    diagnostics, goals)."""
    lines = source.split("\n")
    indent = " " * character
    inserted = [indent + t for t in text.split("\n")]
    copy = "\n".join(lines[:line] + inserted + lines[line:])
    uri = (ROOT / f".naive-copy-{n}.lean").as_uri()
    end = {"line": line + len(inserted) - 1, "character": len(inserted[-1])}
    started = time.perf_counter()
    lsp.notify(
        "textDocument/didOpen",
        {"textDocument": {"uri": uri, "languageId": "lean4", "version": 1, "text": copy}},
    )
    goal = lsp.request("$/lean/plainGoal", {"textDocument": {"uri": uri}, "position": end})
    to_goals = time.perf_counter() - started
    lsp.request("textDocument/waitForDiagnostics", {"uri": uri, "version": 1})
    to_complete = time.perf_counter() - started
    lsp.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    return to_goals, to_complete, goal


# ---------------------------------------------------------------------------


def median_ms(samples):
    return statistics.median(samples) * 1000


COUNTER = [0]


def next_index():
    COUNTER[0] += 1
    return COUNTER[0]


def probe_args(version, k):
    """lean_run_at arguments of a new probe at block k's `show` tactic."""
    line, character = show_position(k)
    return {
        "workspace": {"root": str(ROOT)},
        "path": FILE,
        "version": version,
        "line": line,
        "character": character,
        "text": probe_text(k, next_index()),
    }


def run_probes(mcp, version, k, count, pace=0.0):
    """`count` sequential probes at block k, `pace` seconds apart; returns
    their latencies (s)."""
    times = []
    for _ in range(count):
        args = probe_args(version, k)
        started = time.perf_counter()
        result = mcp.call("lean_run_at", args)
        times.append(time.perf_counter() - started)
        if not result["success"] or result["proof_state"]["goals"] != []:
            raise RuntimeError(f"probe at block {k} did not close its goal: {json.dumps(result)[:800]}")
        time.sleep(pace)
    return times


def wait_for_base(mcp, limit=60):
    """Wait until no prefix base is compiling (the one the warm-up probes
    started); returns the seconds waited."""
    started = time.perf_counter()
    while time.perf_counter() - started < limit:
        stats = mcp.call("beam_stats", {})
        bases = [w.get("prefixBases", {}) for w in stats.get("workspaces", {}).values()]
        if bases and not any(b.get("compiling") for b in bases):
            break
        time.sleep(0.05)
    return time.perf_counter() - started


def parallel(mcp, version, blocks, total, width=4):
    """`total` probes over `blocks`, `width` in flight; returns probes/second."""
    started = time.perf_counter()
    in_flight = []
    for i in range(total):
        args = probe_args(version, blocks[i % len(blocks)])
        in_flight.append(mcp.start("lean_run_at", args))
        if len(in_flight) == width:
            result = mcp.wait(in_flight.pop(0))
            assert result["success"], result
    for call_id in in_flight:
        assert mcp.wait(call_id)["success"]
    return total / (time.perf_counter() - started)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--probes", type=int, default=30, help="measured probes per position (default 30)")
    parser.add_argument("--warmup", type=int, default=4, help="warm-up probes per position (default 4)")
    parser.add_argument("--naive-probes", type=int, default=20, help="naive whole-file copies (default 20)")
    parser.add_argument("--parallel-probes", type=int, default=80, help="probes in the 4-parallel run (default 80)")
    parser.add_argument("--pace", type=float, default=1.0, help="idle seconds between paced probes (default 1)")
    parser.add_argument("--no-build", action="store_true", help="use target/release as it is")
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    args = parser.parse_args()

    lean = toolchain()
    if not args.no_build:
        subprocess.run(["cargo", "build", "--release"], cwd=REPO, check=True)
    binary = str(REPO / "target/release/lean-beam-mcp")
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEAN_BEAM_")}
    env.update(LEAN_BEAM_LEAN=lean, LEAN_BEAM_LOG="warning", LEAN_BEAM_SHADOW_SLOTS="4")
    source = (ROOT / FILE).read_text()
    print(f"fixture  {ROOT / FILE}: {source.count(chr(10))} lines, {BLOCKS} blocks; {os.cpu_count()} CPUs")

    mcp = Mcp(binary, env)
    try:
        started = time.perf_counter()
        sync = mcp.call("lean_sync", {"workspace": {"root": str(ROOT)}, "path": FILE})
        version = sync["version"]
        print(f"sync     {(time.perf_counter() - started) * 1000:8.1f} ms (server start + full elaboration)")

        first, last = 0, BLOCKS - 1
        cold = run_probes(mcp, version, first, 1)
        run_probes(mcp, version, first, args.warmup)
        first_times = run_probes(mcp, version, first, args.probes)
        first_paced = run_probes(mcp, version, first, args.probes, pace=args.pace)
        cold_last = run_probes(mcp, version, last, 1)
        run_probes(mcp, version, last, args.warmup)
        waited = wait_for_base(mcp)
        last_times = run_probes(mcp, version, last, args.probes)
        time.sleep(args.pace)
        last_paced = run_probes(mcp, version, last, args.probes, pace=args.pace)
        print(f"cold     first probe {cold[0] * 1000:.1f} ms; first probe at the last block {cold_last[0] * 1000:.1f} ms")
        print(f"base     the last block's prefix base was ready {waited:.2f} s after the warm-up probes")

        spread = [0, 41, 82, 123, 164]
        # Warm every slot on every position once (the pool prefers the slot
        # whose text shares the longest prefix, so a slot moves between blocks).
        parallel(mcp, version, [last], 8)
        par_last = parallel(mcp, version, [last], args.parallel_probes)
        parallel(mcp, version, spread, 2 * len(spread) * 4)
        par_spread = parallel(mcp, version, spread, args.parallel_probes)
        seq_rate = 1 / statistics.median(last_times)
    finally:
        mcp.close()

    lsp = Lsp(lean, ROOT)
    try:
        line, character = show_position(first)
        naive_probe(lsp, source, line, character, probe_text(first, 0), 0)  # warm-up
        naive_times, naive_goal_times = [], []
        for n in range(args.naive_probes):
            text = probe_text(first, next_index())
            to_goals, to_complete, goal = naive_probe(lsp, source, line, character, text, n + 1)
            if goal is None or goal.get("goals") != []:
                raise RuntimeError(f"the naive copy did not close the goal: {goal}")
            naive_times.append(to_complete)
            naive_goal_times.append(to_goals)
    finally:
        lsp.close()

    f, l, n = median_ms(first_paced), median_ms(last_paced), median_ms(naive_times)
    print()
    print(f"{'probe latency (median)':<40}{'ms':>9}   min      max   (n)")
    for name, times in [
        ("first declaration, paced", first_paced),
        ("last declaration, paced", last_paced),
        ("first declaration, back to back", first_times),
        ("last declaration, back to back", last_times),
        ("naive copy, first decl.: complete", naive_times),
        ("naive copy, first decl.: goals only", naive_goal_times),
    ]:
        print(
            f"{name:<40}{median_ms(times):9.1f}{min(times) * 1000:8.1f}{max(times) * 1000:9.1f}   ({len(times)})"
        )
    ratio_last, ratio_naive = l / f, n / f
    ok_last, ok_naive = ratio_last <= 1.5, ratio_naive >= 5
    print()
    print(f"last / first, paced    {ratio_last:6.2f}x   target <= 1.5x  {'met' if ok_last else 'MISSED'}")
    print(f"  back to back         {median_ms(last_times) / median_ms(first_times):6.2f}x")
    print(f"naive / first          {ratio_naive:6.1f}x   target >= 5x    {'met' if ok_naive else 'MISSED'}")
    print(f"  goals-only lower bound of the naive copy: {median_ms(naive_goal_times) / f:.1f}x")
    print()
    print(f"throughput, 4 in parallel, last block:        {par_last:7.1f} probes/s")
    print(f"throughput, 4 in parallel, 5 spread blocks:   {par_spread:7.1f} probes/s")
    print(f"throughput, one at a time, last block:        {seq_rate:7.1f} probes/s")
    if args.check and not (ok_last and ok_naive):
        sys.exit(1)


if __name__ == "__main__":
    main()
