#!/usr/bin/env python3
"""lean_search's index on a Mathlib-sized generated library (issue 28).

scripts/gen-library.py --flavour search writes the library (thousands of
modules, 100k+ Mathlib-like declarations; not compiled: the index reads
sources) as a Lake package, `.lake/packages/genlib`, of a small workspace.
One lean-beam-mcp then measures, over stdio:

  * the index build: the first lean_search (list every file, read, index);
  * resident memory of the server before and after it (VmRSS), and the
    index's own estimate (`index.bytes`);
  * the incremental refresh: one file of the library changed, the next query
    (which re-lists and re-stats every file, and reads that one);
  * query latency, p50/p99, of name queries (exact, suffix, fragment,
    subsequence) and statement patterns, each query including the freshness
    walk; side by side with a control, `beam_version` calls interleaved in the
    same run, since the machine is shared: the control's p50/p99 says how
    loaded it was, with the load average and core count.

Usage: scripts/bench-search.py [--binary target/release/lean-beam-mcp]
       [--lean PATH] [--modules 4000] [--decls 25] [--queries 300]
       [--work /tmp/bench-search]
"""

import argparse
import json
import os
import random
import re
import subprocess
import sys
import time

import sibling

REPO = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
bench_scale = sibling.load("bench-scale.py")

PATTERNS = [
    "?f ?x ?y = ?f ?y ?x",
    "⊢ 0 ≤ _ * _",
    "(h : _ ≤ _), ⊢ _ ≤ _",
    "(_ ++ _)",
    "⊢ _ ↔ _",
    "∃ _ ∈ _, _",
    "_⁻¹ = (_ _)⁻¹",
    "\"mul\", _ * _ = _",
    "Function.Injective _",
    "⊢ _ (_ + 1) = _ * (_ + 1)",
]


def percentile(values, p):
    ordered = sorted(values)
    k = min(len(ordered) - 1, max(0, round(p / 100 * (len(ordered) - 1))))
    return ordered[k]


def declared(root):
    """(full name, file) of the generated theorems, read back from the text."""
    out = []
    for base, _, files in os.walk(os.path.join(root, "Gen")):
        for f in files:
            path = os.path.join(base, f)
            with open(path, encoding="utf-8") as fh:
                text = fh.read()
            ns = re.search(r"^namespace (\S+)", text, re.M).group(1)
            out += [(f"{ns}.{m}", path) for m in re.findall(r"^(?:theorem|lemma) (\S+)", text, re.M)]
    return out


def name_queries(names, rng, count):
    queries = []
    for k in range(count):
        full, _ = rng.choice(names)
        last = full.rsplit(".", 1)[1]
        kind = k % 4
        if kind == 0:
            queries.append(("exact", full))
        elif kind == 1:
            queries.append(("suffix", last))
        elif kind == 2:
            parts = last.split("_")
            queries.append(("fragment", "_".join(parts[:2])))
        else:
            letters = last.replace("_", "")
            queries.append(("subsequence", letters[:2] + letters[4:7]))
    return queries


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--binary", default=os.path.join(REPO, "target/release/lean-beam-mcp"))
    p.add_argument("--lean", default=os.environ.get("LEAN_BEAM_TEST_LEAN"))
    p.add_argument("--modules", type=int, default=4000)
    p.add_argument("--decls", type=int, default=25)
    p.add_argument("--queries", type=int, default=300)
    p.add_argument("--work", default="/tmp/bench-search")
    p.add_argument("--seed", type=int, default=7)
    a = p.parse_args()
    if not a.lean:
        sys.exit("bench-search: give --lean or set LEAN_BEAM_TEST_LEAN")
    rng = random.Random(a.seed)
    ws = os.path.join(a.work, "ws")
    lib = os.path.join(ws, ".lake/packages/genlib")
    os.makedirs(os.path.join(ws, "Ws"), exist_ok=True)
    with open(os.path.join(ws, "lean-toolchain"), "w") as f:
        f.write("leanprover/lean4:v4.35.0\n")
    with open(os.path.join(ws, "lakefile.toml"), "w") as f:
        f.write('name = "ws"\n\n[[require]]\nname = "genlib"\npath = ".lake/packages/genlib"\n')
    with open(os.path.join(ws, "Ws/Main.lean"), "w") as f:
        f.write("prelude\ntheorem ws_local (n : Nat) : n = n := sorry\n")
    gen = subprocess.run([sys.executable, os.path.join(REPO, "scripts/gen-library.py"),
                          "--modules", str(a.modules), "--decls", str(a.decls), "--out", lib,
                          "--flavour", "search", "--seed", str(a.seed)],
                         check=True, capture_output=True, text=True)
    summary = json.loads(gen.stdout)
    names = declared(lib)
    load_before = os.getloadavg()
    root = os.path.realpath(ws)
    w = {"root": root}
    mcp = bench_scale.Mcp(a.binary, a.lean)
    pid = mcp.proc.pid
    mcp.call("beam_version", {})
    rss_before = bench_scale.field_kib(pid, "status", "VmRSS")

    build_ms, first = bench_scale.timed(lambda: mcp.call("lean_search", {"workspace": w, "query": "add_comm"}))
    rss_after = bench_scale.field_kib(pid, "status", "VmRSS")
    index = first["index"]

    # Incremental refresh: one library file changed, then the query.
    refresh = []
    for k in range(10):
        _, path = rng.choice(names)
        with open(path, "a", encoding="utf-8") as f:
            f.write(f"\ntheorem bench_fresh_{k} (n : ℕ) : n + {k} = {k} + n := sorry\n")
        ms, r = bench_scale.timed(lambda: mcp.call("lean_search", {"workspace": w, "query": f"bench_fresh_{k}"}))
        assert r["index"]["refreshed_files"] == 1 and r["matched"] >= 1, r
        refresh.append(ms)

    timings = {"name": [], "statement": [], "control": []}
    by_kind = {}
    matched = {"name": [], "statement": []}
    queries = name_queries(names, rng, a.queries)
    for k, (kind, q) in enumerate(queries):
        ms, r = bench_scale.timed(lambda: mcp.call("lean_search", {"workspace": w, "query": q, "limit": 20}))
        assert r["index"]["refreshed_files"] == 0, r["index"]
        if kind == "exact":
            assert r["hits"] and r["hits"][0]["name"] == q, (q, r["hits"][:1])
        timings["name"].append(ms)
        by_kind.setdefault(kind, []).append(ms)
        matched["name"].append(r["matched"])
        pattern = PATTERNS[k % len(PATTERNS)]
        ms, r = bench_scale.timed(lambda: mcp.call("lean_search", {"workspace": w, "query": pattern, "limit": 20}))
        timings["statement"].append(ms)
        matched["statement"].append(r["matched"])
        ms, _ = bench_scale.timed(lambda: mcp.call("beam_version", {}))
        timings["control"].append(ms)
    load_after = os.getloadavg()
    rss_end = bench_scale.field_kib(pid, "status", "VmRSS")
    mcp.close()

    def stats(values):
        return {"p50_ms": round(percentile(values, 50), 2), "p99_ms": round(percentile(values, 99), 2)}

    report = {
        "library": {"modules": summary["modules"], "declarations_written": summary["declarations"],
                    "bytes": summary["bytes"]},
        "index": {"files": index["files"], "declarations": index["declarations"],
                  "bytes_estimate": index["bytes"]},
        "build_ms": round(build_ms, 1),
        "rss_kib": {"before": rss_before, "after_build": rss_after, "end": rss_end},
        "refresh_one_file": stats(refresh),
        "name_query": stats(timings["name"]),
        "name_query_by_kind": {k: stats(v) for k, v in by_kind.items()},
        "statement_query": stats(timings["statement"]),
        "control_beam_version": stats(timings["control"]),
        "matched_median": {k: sorted(v)[len(v) // 2] for k, v in matched.items()},
        "cores": os.cpu_count(),
        "load_average": {"before": [round(x, 2) for x in load_before],
                         "after": [round(x, 2) for x in load_after]},
    }
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
