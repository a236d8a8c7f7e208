#!/usr/bin/env python3
"""Benchmarks of lean_run_code and lean_verify (issue 18, item 8). Prints
figures; asserts only that the answers are the expected ones.

Clients and method as in scripts/bench-lean.py (same Lean build and options,
plain synchronous clients alternating call by call, medians and p90 of wall
time per call):

  1. lean_run_code, warm header: a snippet whose header was seen before vs a
     direct LSP client editing an open document with the same snippet
     (didChange of the whole text + waitForDiagnostics); target ratio <= 1.2.
  2. lean_run_code, cold header: the first snippet of a header (five headers
     in turn, one more than the server keeps, so each call re-imports) vs the
     direct client opening a new document with the same text (didOpen +
     waitForDiagnostics, then didClose).
  3. lean_verify of a 50-declaration file (all its theorems): the first call
     (the probe slot elaborates the file), after an edit of the last theorem
     (lean_sync, then lean_verify: only the tail is elaborated again), and
     unchanged; with lean_refresh of the same file for scale.

Usage: scripts/bench-snippets.py [--calls N] [--rounds N] [--no-build] [--binary PATH]
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

import sibling

REPO = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
bench = sibling.load("bench-lean.py")

HEADERS = [
    "prelude\nimport Fix.Basic\n",
    "prelude\nimport Ver.Clean\n",
    "prelude\nimport Ver.Hatch\n",
    "prelude\nimport Fix.Basic\nimport Ver.Clean\n",
    "prelude\nimport Fix.Basic\nimport Ver.Hatch\n",
]


def snippet(header, i):
    return f"{header}theorem t{i} (n : Fix.N) : Eq (Fix.N.add n Fix.N.zero) n := Eq.refl n\n"


def fifty(last="Eq.refl n"):
    lines = ["prelude", "import Ver.Clean", "", "namespace Ver.Fifty", ""]
    for i in range(50):
        if i % 2 == 0:
            proof = last if i == 48 else "Eq.refl n"
            lines.append(f"theorem t{i} (n : Fix.N) : Eq (Fix.N.add n Fix.N.zero) n := {proof}")
        else:
            lines.append(f"theorem t{i} : Eq True True := Ver.true_eq_true")
        lines.append("")
    lines.append("end Ver.Fifty")
    return "\n".join(lines) + "\n"


class Virtual:
    """A document of the direct client that exists only in its Lean server."""

    def __init__(self, lsp, name):
        self.lsp = lsp
        self.uri = bench.uri_of(os.path.join(lsp.root, name))
        self.version = 0

    def open(self, text):
        self.version += 1
        self.lsp.notify("textDocument/didOpen", {"textDocument": {
            "uri": self.uri, "languageId": "lean4", "version": self.version, "text": text}})
        return self.wait()

    def change(self, text):
        self.version += 1
        self.lsp.notify("textDocument/didChange", {
            "textDocument": {"uri": self.uri, "version": self.version}, "contentChanges": [{"text": text}]})
        return self.wait()

    def close(self):
        self.lsp.notify("textDocument/didClose", {"textDocument": {"uri": self.uri}})

    def wait(self):
        return self.lsp.request("textDocument/waitForDiagnostics", {"uri": self.uri, "version": self.version})


def figure(name, us):
    line = f"{name:<60} n={len(us):<4} median {statistics.median(us) / 1000:9.1f} ms (p90 {bench.p90(us) / 1000:9.1f})"
    print(line, flush=True)
    return {"name": name, "n": len(us), "median_us": statistics.median(us), "p90_us": bench.p90(us)}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=100, help="calls per warm comparison")
    parser.add_argument("--rounds", type=int, default=10, help="cold calls and verify rounds")
    parser.add_argument("--no-build", action="store_true", help="use the existing release binary")
    parser.add_argument("--binary", help="the lean-beam-mcp binary (default target/release/lean-beam-mcp)")
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()
    if not args.no_build:
        subprocess.run(["cargo", "build", "--release"], cwd=REPO, check=True)
    lean = subprocess.run([os.path.join(REPO, "scripts/install-test-lean.sh")], check=True,
                          capture_output=True, text=True).stdout.strip()
    subprocess.run([os.path.join(REPO, "scripts/build-fixtures.sh")], check=True,
                   env=dict(os.environ, LEAN=lean), stdout=subprocess.DEVNULL)
    binary = args.binary or os.path.join(REPO, "target/release/lean-beam-mcp")
    # A private copy of the basic fixture (sources and builds, times kept),
    # where the 50-declaration file is written.
    scratch = tempfile.mkdtemp(prefix="bench-snippets-")
    root = os.path.join(scratch, "basic")
    shutil.copytree(bench.fixture("basic"), root, symlinks=False)
    root = os.path.realpath(root)
    ws = {"root": root}
    print(f"lean_run_code / lean_verify benchmarks: {binary}\nLean: {lean}\n"
          f"cpus {os.cpu_count()}, load {os.getloadavg()}", flush=True)
    figures = {"cpus": os.cpu_count(), "loadavg_start": os.getloadavg(), "results": []}
    results = figures["results"]
    mcp = bench.Mcp(binary, lean)
    direct = bench.DirectLsp(lean, root)
    try:
        # 1. Warm header.
        header = HEADERS[0]
        first = mcp.call("lean_run_code", {"workspace": ws, "code": snippet(header, 0)})
        assert first["success"], first
        doc = Virtual(direct, "Snippet.lean")
        doc.open(snippet(header, 0))
        counter = [0]

        def mcp_warm():
            counter[0] += 1
            r = mcp.call("lean_run_code", {"workspace": ws, "code": snippet(header, counter[0])})
            assert r["success"] and not r["messages"], r

        def direct_warm():
            counter[0] += 1
            doc.change(snippet(header, counter[0]))

        m, d = bench.interleave(args.calls, mcp_warm, direct_warm)
        results.append(bench.compare("lean_run_code warm header vs didChange+wait", m, d, 1.2, None))

        # 2. Cold header: five headers in turn, four kept.
        opened = [0]

        def mcp_cold():
            counter[0] += 1
            h = HEADERS[counter[0] % len(HEADERS)]
            r = mcp.call("lean_run_code", {"workspace": ws, "code": snippet(h, counter[0])})
            assert r["success"], r

        def direct_cold():
            counter[0] += 1
            opened[0] += 1
            h = HEADERS[counter[0] % len(HEADERS)]
            fresh = Virtual(direct, f"Cold{opened[0]}.lean")
            fresh.open(snippet(h, counter[0]))
            fresh.close()

        m, d = bench.interleave(args.rounds, mcp_cold, direct_cold)
        results.append(bench.compare("lean_run_code cold header vs didOpen+wait", m, d, 1.2, None))
        results.append(figure("  cold cost of a header (lean_run_code)", m))

        # 3. lean_verify of a 50-declaration file.
        rel = "Ver/Fifty.lean"
        path = os.path.join(root, rel)
        with open(path, "w") as f:
            f.write(fifty())
        sync = {"workspace": ws, "path": rel}
        version = mcp.call("lean_sync", sync)["version"]
        verify = dict(sync, version=version)
        first = [bench.timed(lambda: mcp.call("lean_verify", verify))]
        r = mcp.call("lean_verify", verify)
        # propext is the fixture's own (the test toolchain's library is
        # empty), so the verdict is axiom_origin and nothing else.
        assert r["tier"] == "rebuilt" and len(r["declarations"]) == 50, r
        assert {f["reason"] for f in r["failures"]} <= {"axiom_origin"}, r
        results.append(figure("lean_verify 50 declarations, first call", first))
        edited, checks, unchanged, refresh = [], [], [], []
        # The default axioms in another order: the same verdict under another
        # key, so nothing is rebuilt but the checks run (the uncached repeat).
        other = ["Quot.sound", "Classical.choice", "propext"]
        for i in range(args.rounds):
            with open(path, "w") as f:
                # A text of its own each round: an edit is never a key seen before.
                f.write(fifty(last="Eq.refl n" if i % 2 else "(Eq.refl n)") + f"\n-- round {i}\n")
            version = mcp.call("lean_sync", sync)["version"]
            verify = dict(sync, version=version)
            edited.append(bench.timed(lambda: mcp.call("lean_verify", verify)))
            checks.append(bench.timed(lambda: mcp.call("lean_verify", dict(verify, allowed_axioms=other))))
            unchanged.append(bench.timed(lambda: mcp.call("lean_verify", verify)))
            assert mcp.call("lean_verify", verify)["provenance"].get("cached") is True
            refresh.append(bench.timed(lambda: mcp.call("lean_refresh", sync)))
        results.append(figure("lean_verify 50 declarations, after an edit of the last", edited))
        results.append(figure("lean_verify 50 declarations, unchanged, checks run (another request)", checks))
        results.append(figure("lean_verify 50 declarations, unchanged (the verdict cache)", unchanged))
        results.append(figure("  for scale: lean_refresh of the same file", refresh))
    finally:
        mcp.close()
        direct.close()
        shutil.rmtree(scratch, ignore_errors=True)
    bench.finish(figures, args.json)


if __name__ == "__main__":
    main()
