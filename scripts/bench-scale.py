#!/usr/bin/env python3
"""How lean-beam-mcp's costs grow with the library: a first cut of issue 29,
item 2. For each size, scripts/gen-library.py writes and compiles a library;
then one lean-beam-mcp (bare `lean --server`) measures, on the last module
and the first long one:

  * cold sync of the last module (worker start-up: imports, then elaboration);
  * each worker's proportional memory (PSS, /proc/<pid>/smaps_rollup: the
    .oleans are shared mappings, so RSS would count them once per worker);
  * a probe (lean_run_at) at the first and at the last declaration of a long
    file; lean_workspace_symbols; the server's own RSS.

Each figure is fitted as a power of the module count (least squares on
log-log) and extrapolated to Mathlib's size (5,000 modules). Not yet measured:
batch throughput, lean_verify, completions, lean_search.

Usage: scripts/bench-scale.py --binary target/release/lean-beam-mcp
       [--sizes 20,60,180] [--lean PATH] [--work /tmp/bench-scale]
"""

import argparse
import json
import math
import os
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
MODERN = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "bench-scale", "version": "1"},
}
MATHLIB_MODULES = 5000


class Mcp:
    def __init__(self, binary, lean):
        env = {k: v for k, v in os.environ.items() if not k.startswith("LEAN_BEAM_")}
        env["LEAN_BEAM_LEAN"] = lean
        self.proc = subprocess.Popen([binary], env=env, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.next_id = 0

    def call(self, tool, arguments):
        self.next_id += 1
        rid = self.next_id
        line = json.dumps({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                           "params": {"name": tool, "arguments": arguments, "_meta": MODERN}})
        self.proc.stdin.write(line.encode() + b"\n")
        self.proc.stdin.flush()
        while True:
            raw = self.proc.stdout.readline()
            if not raw:
                raise EOFError("lean-beam-mcp closed its output")
            message = json.loads(raw)
            if message.get("id") == rid:
                result = message["result"]
                if result.get("isError"):
                    raise RuntimeError(f"{tool}: {result['content'][0]['text']}")
                return result["structuredContent"]

    def close(self):
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def kib(pid, file, field):
    try:
        with open(f"/proc/{pid}/{file}") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def timed(fn):
    started = time.perf_counter()
    value = fn()
    return (time.perf_counter() - started) * 1000, value


def measure(binary, lean, root, summary):
    ws = {"root": root}
    last = summary["last_module"].replace(".", "/") + ".lean"
    long_rel = summary["long_modules"][0].replace(".", "/") + ".lean"
    mcp = Mcp(binary, lean)
    try:
        out = {}
        out["cold sync, last module (ms)"], synced = timed(
            lambda: mcp.call("lean_sync", {"workspace": ws, "path": last}))
        assert synced["diagnostics"]["counts"]["error"] == 0, synced
        out["sync, long module (ms)"], long_synced = timed(
            lambda: mcp.call("lean_sync", {"workspace": ws, "path": long_rel}))
        text = open(os.path.join(root, long_rel), encoding="utf-8").read().split("\n")
        # The line after each `:= by` of a zero_add theorem: `induction n with`.
        proofs = [i + 1 for i, l in enumerate(text) if "_zero_add" in l and l.endswith(":= by")]
        for label, line in (("first", proofs[0]), ("last", proofs[-1])):
            args = {"workspace": ws, "path": long_rel, "version": long_synced["version"],
                    "line": line, "character": 2,
                    "text": "induction n with\n  | zero => exact Eq.refl N.zero\n  | succ m ih => exact congrArg N.succ ih"}
            mcp.call("lean_run_at", args)  # the slot's worker starts
            out[f"probe, {label} declaration of a long file (ms)"], ran = timed(
                lambda: mcp.call("lean_run_at", args))
            assert ran["success"], ran
        out["workspace symbols (ms)"], _ = timed(
            lambda: mcp.call("lean_workspace_symbols", {"workspace": ws, "query": "zero_add"}))
        stats = mcp.call("beam_stats", {})
        workers = [d["workerPid"] for rt in stats["workspaces"].values()
                   for d in rt["documents"] if d.get("workerPid")]
        pss = [kib(pid, "smaps_rollup", "Pss") for pid in workers]
        pss = [p for p in pss if p]
        out["worker PSS, mean (MiB)"] = sum(pss) / len(pss) / 1024
        out["server RSS (MiB)"] = kib(mcp.proc.pid, "status", "VmRSS") / 1024
        return out
    finally:
        mcp.close()


def fit(xs, ys):
    """y = a * x^b by least squares on log-log; (a, b)."""
    lx = [math.log(x) for x in xs]
    ly = [math.log(max(y, 1e-9)) for y in ys]
    n = len(xs)
    mx, my = sum(lx) / n, sum(ly) / n
    sxx = sum((x - mx) ** 2 for x in lx)
    b = sum((x - mx) * (y - my) for x, y in zip(lx, ly)) / sxx if sxx else 0.0
    return math.exp(my - b * mx), b


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--binary", default=os.path.join(REPO, "target/release/lean-beam-mcp"))
    p.add_argument("--lean", default=os.environ.get("LEAN_BEAM_TEST_LEAN"))
    p.add_argument("--sizes", default="20,60,180")
    p.add_argument("--work", default="/tmp/bench-scale")
    a = p.parse_args()
    if not a.lean:
        sys.exit("bench-scale: give --lean or set LEAN_BEAM_TEST_LEAN")
    sizes = [int(s) for s in a.sizes.split(",")]
    rows = {}
    for n in sizes:
        root = os.path.join(a.work, f"gen{n}")
        gen = subprocess.run([sys.executable, os.path.join(REPO, "scripts/gen-library.py"),
                              "--modules", str(n), "--out", root, "--lean", a.lean],
                             check=True, capture_output=True, text=True)
        summary = json.loads(gen.stdout)
        print(f"{n} modules: {summary['declarations']} declarations, {summary['lines']} lines, "
              f"compiled in {summary['compile_seconds']} s", file=sys.stderr, flush=True)
        rows[n] = measure(a.binary, a.lean, os.path.realpath(root), summary)
    names = list(rows[sizes[0]])
    print("| figure | " + " | ".join(f"{n} modules" for n in sizes)
          + f" | growth (exponent) | at {MATHLIB_MODULES} modules |")
    print("|---|" + "---|" * (len(sizes) + 2))
    for name in names:
        ys = [rows[n][name] for n in sizes]
        a_, b_ = fit(sizes, ys)
        print(f"| {name} | " + " | ".join(f"{y:.1f}" for y in ys)
              + f" | n^{b_:.2f} | {a_ * MATHLIB_MODULES ** b_:.1f} |")


if __name__ == "__main__":
    main()
