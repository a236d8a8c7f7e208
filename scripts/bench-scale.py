#!/usr/bin/env python3
"""How lean-beam-mcp's costs grow with the library (issue 29, item 2).

For each size, scripts/gen-library.py writes and compiles a prelude-only
library (reused when the same size was built before: --reuse); then one
lean-beam-mcp (bare `lean --server`) measures:

  * worker start-up: a cold lean_sync of a file that imports every module of
    the last layer (so the whole library), wall time and the worker's CPU
    seconds (utime+stime from /proc, far less load-sensitive than wall time);
  * each worker's proportional memory (PSS, /proc/<pid>/smaps_rollup: the
    .oleans are shared mappings, so RSS would count them once per worker)
    and its private memory;
  * time to the first diagnostic of a long file (a `sorry` put at its top,
    streamed as a `lean.diagnostic` log) and to its full sync;
  * a probe (lean_run_at) at the first and at the last declaration of the
    long file; batch throughput (8 candidates at the last declaration);
  * lean_verify of the long file (wall, and the compile's CPU from the
    server's reaped children), lean_workspace_symbols, lean_completions,
    lean_search (first call builds the index; then warm);
  * the server's own RSS, PSS and CPU seconds; the memory budget's figures
    from beam_stats (LEAN_BEAM_MAX_LEAN_MEMORY).

The load average is recorded before and after each size. Instruction counts
are read with `perf stat` where the kernel offers them (not on every VM).

Each figure is fitted as a power of the module count and of the declaration
count (least squares on log-log) and extrapolated to Mathlib's size (5,000
modules, 200,000 declarations).

Usage: nice -n 10 scripts/bench-scale.py --binary target/release/lean-beam-mcp
       [--sizes 10,20,40,80] [--lean PATH] [--work /tmp/bench-scale] [--reuse]
       [--json out.json]
"""

import argparse
import json
import math
import os
import subprocess
import sys
import time

import mcpmeta
import sibling

REPO = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
MATHLIB_MODULES = 5000
MATHLIB_DECLS = 200_000
TICK = os.sysconf("SC_CLK_TCK")

bench = sibling.load("bench-lean.py")


def meta(level=None):
    return mcpmeta.modern_meta("bench-scale", level)


class Mcp(bench.Mcp):
    """bench-lean.py's client, its calls made as bench-scale at an optional log level."""

    def call(self, tool, arguments, level=None, on_log=None):
        return super().call(tool, arguments, meta=meta(level), on_log=on_log)


def field_kib(pid, file, field):
    try:
        with open(f"/proc/{pid}/{file}") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def private_kib(pid):
    clean = field_kib(pid, "smaps_rollup", "Private_Clean") or 0
    dirty = field_kib(pid, "smaps_rollup", "Private_Dirty") or 0
    return clean + dirty


def cpu_seconds(pid, children=False):
    """utime+stime (and, with children, the reaped children's) of pid."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    # Fields 14-17 of stat; after the command name, index 11 is field 14.
    ticks = int(fields[11]) + int(fields[12])
    if children:
        ticks += int(fields[13]) + int(fields[14])
    return ticks / TICK


def tree_cpu(root_pid):
    """CPU seconds of every process below root_pid (Lean servers, workers,
    compiles), reaped children included, but not root_pid's own."""
    parent, own = {}, {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parent[int(name)] = int(fields[1])
        own[int(name)] = (int(fields[11]) + int(fields[12]), int(fields[13]) + int(fields[14]))
    below, grew = {root_pid}, True
    while grew:
        grew = False
        for pid, ppid in parent.items():
            if ppid in below and pid not in below:
                below.add(pid)
                grew = True
    ticks = own.get(root_pid, (0, 0))[1]
    ticks += sum(sum(own[p]) for p in below if p != root_pid)
    return ticks / TICK


def loadavg():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def instructions_supported():
    try:
        out = subprocess.run(["perf", "stat", "-x,", "-e", "instructions:u", "true"],
                             capture_output=True, text=True, timeout=10).stderr
    except (OSError, subprocess.TimeoutExpired):
        return False
    return "<not supported>" not in out and "instructions" in out


def timed(fn):
    started = time.perf_counter()
    value = fn()
    return (time.perf_counter() - started) * 1000, value


def costed(out, name, mcp, fn):
    """`name (ms)` wall and `name, Lean CPU (s)`: the CPU the Lean processes
    spent meanwhile."""
    before = tree_cpu(mcp.proc.pid)
    ms, value = timed(fn)
    out[f"{name} (ms)"] = ms
    out[f"{name}, Lean CPU (s)"] = tree_cpu(mcp.proc.pid) - before
    return value


def worker_of(stats, path):
    for rt in stats["workspaces"].values():
        for d in rt["documents"]:
            if d["path"] == path and d.get("workerPid"):
                return d["workerPid"]
    return None


def write_bench_files(root, summary):
    """Bench/Import.lean (the whole library) and Bench/Diag.lean (the long
    module with a `sorry` at its top). Written by the benchmark, not by the
    server (which never writes .lean files)."""
    os.makedirs(os.path.join(root, "Bench"), exist_ok=True)
    with open(os.path.join(root, "BUILD-MODULES")) as f:
        modules = [l.strip() for l in f if l.strip() and not l.startswith("#")]
    last_layer = summary["last_module"].rsplit(".", 1)[0] + "."
    tops = [m for m in modules if m.startswith(last_layer)]
    with open(os.path.join(root, "Bench/Import.lean"), "w") as f:
        f.write("prelude\n" + "".join(f"import {m}\n" for m in tops)
                + "\nnamespace Fix\ntheorem benchImport (n : N) : Eq n n := Eq.refl n\nend Fix\n")
    long_rel = summary["long_modules"][0].replace(".", "/") + ".lean"
    text = open(os.path.join(root, long_rel), encoding="utf-8").read()
    text = text.replace("namespace Fix\n", "namespace Fix\n\ntheorem benchFirst (n : N) : Eq n n := sorry\n", 1)
    with open(os.path.join(root, "Bench/Diag.lean"), "w") as f:
        f.write(text)
    return long_rel


def measure(binary, lean, root, summary):
    ws = {"root": root}
    long_rel = write_bench_files(root, summary)
    mcp = Mcp(binary, lean)
    out = {}
    try:
        # The server and a first worker start (not counted below).
        out["server start + tiny file sync (ms)"], _ = timed(
            lambda: mcp.call("lean_sync", {"workspace": ws, "path": "Fix/Basic.lean"}))
        out["worker start-up, whole library imported (ms)"], r = timed(
            lambda: mcp.call("lean_sync", {"workspace": ws, "path": "Bench/Import.lean"}))
        assert r["diagnostics"]["counts"]["error"] == 0, r
        stats = mcp.call("beam_stats", {})
        pid = worker_of(stats, "Bench/Import.lean")
        out["worker start-up CPU (s)"] = cpu_seconds(pid)
        out["worker PSS, whole library (MiB)"] = field_kib(pid, "smaps_rollup", "Pss") / 1024
        out["worker private, whole library (MiB)"] = private_kib(pid) / 1024
        out["worker RSS, whole library (MiB)"] = field_kib(pid, "status", "VmRSS") / 1024

        first = []
        started = time.perf_counter()

        def on_log(params):
            if params.get("logger") == "lean.diagnostic" and not first:
                first.append((time.perf_counter() - started) * 1000)
        synced = mcp.call("lean_sync", {"workspace": ws, "path": "Bench/Diag.lean",
                                        "diagnostic_scope": "all"}, level="warning", on_log=on_log)
        out["long file: full sync (ms)"] = (time.perf_counter() - started) * 1000
        out["long file: first diagnostic (ms)"] = first[0] if first else float("nan")
        stats = mcp.call("beam_stats", {})
        pid = worker_of(stats, "Bench/Diag.lean")
        out["long file: worker CPU (s)"] = cpu_seconds(pid)

        out["long file: sync of the module itself (ms)"], long_synced = timed(
            lambda: mcp.call("lean_sync", {"workspace": ws, "path": long_rel}))
        text = open(os.path.join(root, long_rel), encoding="utf-8").read().split("\n")
        # The line after each `:= by` of a zero_add theorem: `induction n with`.
        proofs = [i + 1 for i, l in enumerate(text) if "_zero_add" in l and l.endswith(":= by")]
        proof = "induction n with\n  | zero => exact Eq.refl N.zero\n  | succ m ih => exact congrArg N.succ ih"
        v = long_synced["version"]
        for label, line in (("first", proofs[0]), ("last", proofs[-1])):
            args = {"workspace": ws, "path": long_rel, "version": v,
                    "line": line, "character": 2, "text": proof}
            mcp.call("lean_run_at", args)  # the slot's worker starts
            ran = costed(out, f"probe, {label} declaration", mcp,
                         lambda: mcp.call("lean_run_at", args))
            assert ran["success"], ran
        texts = [proof, "exact Eq.refl n", "cases n", "induction n", "skip",
                 "exact N.zero_add n", "apply Eq.symm", "intro h"]
        batch = costed(out, "batch of 8 at the last declaration", mcp, lambda: mcp.call("lean_run_batch", {
            "workspace": ws, "path": long_rel, "version": v, "line": proofs[-1],
            "character": 2, "texts": texts, "stop_on_first_close": False}))
        batch_ms = out["batch of 8 at the last declaration (ms)"]
        out["batch throughput (candidates/s)"] = len(texts) / (batch_ms / 1000)
        out["batch throughput by Lean CPU (candidates/CPU s)"] = len(texts) / max(
            out["batch of 8 at the last declaration, Lean CPU (s)"], 1e-3)
        budget_note = batch.get("memory")

        verified = costed(out, "lean_verify, long file", mcp, lambda: mcp.call("lean_verify", {
            "workspace": ws, "path": long_rel, "version": v,
            "declarations": [{"name": "Fix." + text[proofs[-1] - 1].split()[1]}]}))

        out["workspace symbols (ms)"], _ = timed(
            lambda: mcp.call("lean_workspace_symbols", {"workspace": ws, "query": "zero_add"}))
        # After `exact Eq.symm (N.` of a comm theorem: identifier completion.
        cline = next(i for i, l in enumerate(text) if "exact Eq.symm (N.zero_add a)" in l)
        ccol = text[cline].index("N.zero_add") + 2
        costed(out, "completions", mcp, lambda: mcp.call("lean_completions", {
            "workspace": ws, "path": long_rel, "version": v, "line": cline, "character": ccol}))
        out["lean_search, first (index built) (ms)"], _ = timed(
            lambda: mcp.call("lean_search", {"workspace": ws, "query": "zero_add"}))
        out["lean_search, warm name (ms)"], _ = timed(
            lambda: mcp.call("lean_search", {"workspace": ws, "query": "comm"}))
        out["lean_search, warm pattern (ms)"], _ = timed(
            lambda: mcp.call("lean_search", {"workspace": ws, "query": "Eq (N.add ?a ?b) (N.add ?b ?a)"}))

        stats = mcp.call("beam_stats", {})
        budget = stats["limits"]["LEAN_BEAM_MAX_LEAN_MEMORY"]
        out["Lean processes, PSS total (MiB)"] = budget["usedMib"]
        out["  of which documents (MiB)"] = budget["documentsMib"]
        out["  of which probe slots (MiB)"] = budget["shadowsMib"]
        out["  of which server (MiB)"] = budget["serverMib"]
        out["one more worker, estimate (MiB)"] = budget["workerEstimateMib"]
        out["server RSS (MiB)"] = field_kib(mcp.proc.pid, "status", "VmRSS") / 1024
        out["server PSS (MiB)"] = field_kib(mcp.proc.pid, "smaps_rollup", "Pss") / 1024
        out["server CPU, whole run (s)"] = cpu_seconds(mcp.proc.pid)
        out["Lean CPU, whole run (s)"] = tree_cpu(mcp.proc.pid)
        extra = {"budget": budget, "batch memory note": budget_note,
                 "verify tier": verified.get("tier")}
        return out, extra
    finally:
        mcp.close()


def fit(xs, ys):
    """y = a * x^b by least squares on log-log; (a, b)."""
    pts = [(x, y) for x, y in zip(xs, ys) if y is not None and y > 0 and not math.isnan(y)]
    if len(pts) < 2:
        return float("nan"), float("nan")
    lx = [math.log(x) for x, _ in pts]
    ly = [math.log(y) for _, y in pts]
    n = len(pts)
    mx, my = sum(lx) / n, sum(ly) / n
    sxx = sum((x - mx) ** 2 for x in lx)
    b = sum((x - mx) * (y - my) for x, y in zip(lx, ly)) / sxx if sxx else 0.0
    return math.exp(my - b * mx), b


def fmt(y):
    if y is None or (isinstance(y, float) and math.isnan(y)):
        return "—"
    return f"{y:.0f}" if abs(y) >= 100 else f"{y:.2f}" if abs(y) < 10 else f"{y:.1f}"


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--binary", default=os.path.join(REPO, "target/release/lean-beam-mcp"))
    p.add_argument("--lean", default=os.environ.get("LEAN_BEAM_TEST_LEAN"))
    p.add_argument("--sizes", default="10,20,40,80")
    p.add_argument("--work", default="/tmp/bench-scale")
    p.add_argument("--reuse", action="store_true", help="keep a library already built at a size")
    p.add_argument("--json", help="write every figure here too")
    a = p.parse_args()
    if not a.lean:
        sys.exit("bench-scale: give --lean or set LEAN_BEAM_TEST_LEAN")
    sizes = [int(s) for s in a.sizes.split(",")]
    rows, meta_rows = {}, {}
    begun = time.perf_counter()
    for n in sizes:
        root = os.path.join(a.work, f"gen{n}")
        summary_path = os.path.join(root, "SUMMARY.json")
        if a.reuse and os.path.exists(summary_path):
            summary = json.load(open(summary_path))
        else:
            load = loadavg()
            gen = subprocess.run([sys.executable, os.path.join(REPO, "scripts/gen-library.py"),
                                  "--modules", str(n), "--out", root, "--lean", a.lean],
                                 check=True, capture_output=True, text=True)
            summary = json.loads(gen.stdout)
            summary["compile_load"] = (load + loadavg()) / 2
            json.dump(summary, open(summary_path, "w"))
        load_before = loadavg()
        rows[n], extra = measure(a.binary, a.lean, os.path.realpath(root), summary)
        extra.update(summary)
        extra["load average (1 min), before/after"] = [load_before, loadavg()]
        meta_rows[n] = extra
        print(f"{n} modules: {summary['declarations']} declarations, {summary['lines']} lines, "
              f"compiled in {summary['compile_seconds']} s; measured at load "
              f"{load_before:.1f}-{loadavg():.1f}", file=sys.stderr, flush=True)
    decls = [meta_rows[n]["declarations"] for n in sizes]
    mods = [meta_rows[n]["modules"] for n in sizes]
    for name in ["compile_seconds"]:
        for n in sizes:
            rows[n]["library compile, 2 jobs (s)"] = meta_rows[n][name]
    names = list(rows[sizes[0]])
    print(f"Run: {time.perf_counter() - begun:.0f} s; instruction counts "
          f"{'available' if instructions_supported() else 'not available on this kernel (perf: <not supported>)'}.")
    print("| figure | " + " | ".join(f"{m} modules / {d} decls" for m, d in zip(mods, decls))
          + f" | exponent (modules) | at {MATHLIB_MODULES} modules | exponent (decls) | at {MATHLIB_DECLS} decls |")
    print("|---|" + "---|" * (len(sizes) + 4))
    for name in names:
        ys = [rows[n][name] for n in sizes]
        am, bm = fit(mods, ys)
        ad, bd = fit(decls, ys)
        print(f"| {name} | " + " | ".join(fmt(y) for y in ys)
              + f" | {bm:.2f} | {fmt(am * MATHLIB_MODULES ** bm)} | {bd:.2f} | {fmt(ad * MATHLIB_DECLS ** bd)} |")
    print("| load average (1 min) | " + " | ".join(
        "{:.1f}-{:.1f}".format(*meta_rows[n]["load average (1 min), before/after"]) for n in sizes)
        + " | | | | |")
    if a.json:
        json.dump({"rows": rows, "meta": meta_rows}, open(a.json, "w"), indent=1, default=str)


if __name__ == "__main__":
    main()
