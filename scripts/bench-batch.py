#!/usr/bin/env python3
"""Benchmark of lean_run_batch (issue 17, item 7): many candidates in one call.

Against the release build of lean-beam-mcp and the real test toolchain, in
tests/fixtures/long/Long.lean (the file, positions and candidate texts of
scripts/bench-speculate.py: block k's `show` tactic, each candidate a
different text that closes the goal), with 4 shadow slots:

  batch     16 candidates at one position as one lean_run_batch call
  seq       the same 16 as 16 sequential lean_run_at calls
  direct    the limit: a minimal LSP client against `lean --server` (started
            as the broker starts it) running the same 16 edits over the same
            number of documents (4), each document holding what a shadow
            holds (the file up to the probe, then the candidate); per
            candidate a minimal didChange, then the version's "done" file
            progress, then plainGoal at the candidate's end ("complete"), or
            plainGoal at once ("goals only", a lower bound). The documents
            hold the whole prefix: the direct client has no prefix bases
  per-cand  the batch's cost per candidate at the first and at the last
            declaration (block 0 and block 164)
  loop      the agent loop in calls: lean_sync, lean_goals, lean_run_batch of 5
            candidates, a 3-step chain with lean_run_with, then the edit (in a
            temp copy) and lean_sync again

Figures are medians over --rounds rounds after a warm-up round (prefix bases
compiled). Targets (issue 17): batch within 1.2x of direct; batch >= 3x the
throughput of seq; last/first per candidate <= 1.5x; the loop <= 10 calls.

Usage: scripts/bench-batch.py [--rounds N] [--no-build | --binary PATH] [--check]
Plain python3, no dependencies. Prints figures; exits 0 whatever they are
(1 with --check when a target is missed).
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import sibling

bs = sibling.load("bench-speculate.py")

REPO, ROOT, FILE, BLOCKS = bs.REPO, bs.ROOT, bs.FILE, bs.BLOCKS
WIDTH = 4
CANDIDATES = 16


def texts(k, n):
    return [bs.probe_text(k, bs.next_index()) for _ in range(n)]


def position(version, k):
    line, character = bs.show_position(k)
    return {"workspace": {"root": str(ROOT)}, "path": FILE, "version": version, "line": line, "character": character}


def run_batch(mcp, version, k, n=CANDIDATES):
    args = dict(position(version, k), texts=texts(k, n), handles=False)
    started = time.perf_counter()
    result = mcp.call("lean_run_batch", args)
    took = time.perf_counter() - started
    outcomes = [c["outcome"] for c in result["candidates"]]
    if outcomes != ["closed"] * n:
        raise RuntimeError(f"batch at block {k}: {outcomes}")
    return took


def run_sequential(mcp, version, k, n=CANDIDATES):
    started = time.perf_counter()
    for text in texts(k, n):
        result = mcp.call("lean_run_at", dict(position(version, k), text=text))
        if not result["success"] or result["proof_state"]["goals"] != []:
            raise RuntimeError(f"lean_run_at at block {k}: {json.dumps(result)[:500]}")
    return time.perf_counter() - started


# ---------------------------------------------------------------------------
# The direct client: the limit of what the broker does for a batch.


class Direct(bs.Lsp):
    """bs.Lsp plus `$/lean/fileProgress` tracking: the versions Lean reported
    done, per document."""

    def __init__(self, lean, root):
        self.done = {}
        self.cond = threading.Condition()
        super().__init__(lean, root)

    def on_message(self, message):
        if message.get("method") == "$/lean/fileProgress":
            params = message["params"]
            if not params["processing"]:
                doc = params["textDocument"]
                with self.cond:
                    self.done[doc["uri"]] = max(self.done.get(doc["uri"], 0), doc["version"])
                    self.cond.notify_all()

    def wait_done(self, uri, version, timeout=600):
        with self.cond:
            if not self.cond.wait_for(lambda: self.done.get(uri, 0) >= version, timeout):
                raise TimeoutError(f"{uri} v{version} never done")

    def request_concurrent(self, method, params):
        """A request that may run beside others (answers routed by id)."""
        with self.cond:
            self.next_id += 1
            call_id = self.next_id
            waiter = self.pending.setdefault(call_id, [threading.Event(), None])
        self._send({"jsonrpc": "2.0", "id": call_id, "method": method, "params": params})
        waiter[0].wait(600)
        return waiter[1]


def position_of(text, offset):
    before = text[:offset]
    line = before.count("\n")
    col = len(before) - (before.rfind("\n") + 1)
    return {"line": line, "character": len(before[len(before) - col :].encode("utf-16-le")) // 2}


class Shadow:
    """One virtual document as a shadow slot holds it: the file up to the
    probe position, then the candidate."""

    def __init__(self, lsp, source, k, n):
        line, character = bs.show_position(k)
        lines = source.split("\n")
        self.prefix = "\n".join(lines[:line]) + "\n" + " " * character
        self.uri = (ROOT / f".direct-shadow-{n}.lean").as_uri()
        self.lsp = lsp
        self.wait_for_done = True
        self.version = 1
        self.text = self.prefix + "skip\n"
        lsp.notify(
            "textDocument/didOpen",
            {"textDocument": {"uri": self.uri, "languageId": "lean4", "version": 1, "text": self.text}},
        )
        lsp.wait_done(self.uri, 1)

    def run(self, candidate, indent):
        """A minimal edit (the old candidate → the new one), the version's
        done progress, then the goals after the candidate."""
        body = candidate.replace("\n", "\n" + " " * indent) + "\n"
        start = position_of(self.text, len(self.prefix))
        end = position_of(self.text, len(self.text))
        self.version += 1
        self.text = self.prefix + body
        self.lsp.notify(
            "textDocument/didChange",
            {
                "textDocument": {"uri": self.uri, "version": self.version},
                "contentChanges": [{"range": {"start": start, "end": end}, "text": body}],
            },
        )
        if self.wait_for_done:
            self.lsp.wait_done(self.uri, self.version)
        at = position_of(self.text, len(self.text.rstrip()))
        return self.lsp.request_concurrent(
            "$/lean/plainGoal", {"textDocument": {"uri": self.uri}, "position": at}
        )

    def close(self):
        self.lsp.notify("textDocument/didClose", {"textDocument": {"uri": self.uri}})


def direct_round(shadows, k, n=CANDIDATES):
    """`n` candidates over the shadows, one thread each, taking the next
    candidate as it finishes one (as the batch's slots do)."""
    _, indent = bs.show_position(k)
    todo = list(texts(k, n))
    lock = threading.Lock()
    failures = []

    def work(shadow):
        while True:
            with lock:
                if not todo:
                    return
                text = todo.pop(0)
            goal = shadow.run(text, indent)
            if not goal or goal.get("goals") != []:
                failures.append(goal)

    started = time.perf_counter()
    threads = [threading.Thread(target=work, args=(s,)) for s in shadows]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    took = time.perf_counter() - started
    if failures:
        raise RuntimeError(f"direct client: a candidate did not close the goal: {failures[0]}")
    return took


def direct_client(lean, source, k, rounds):
    lsp = Direct(lean, ROOT)
    # Answers by id for concurrent requests.
    lsp.pending = {}
    original_read = lsp.answers

    def route():
        while True:
            answer = original_read.get()
            with lsp.cond:
                waiter = lsp.pending.pop(answer["id"], None)
            if waiter:
                waiter[1] = answer.get("result")
                waiter[0].set()

    threading.Thread(target=route, daemon=True).start()
    shadows = [Shadow(lsp, source, k, n) for n in range(WIDTH)]
    try:
        direct_round(shadows, k)  # warm-up
        complete = [direct_round(shadows, k) for _ in range(rounds)]
        for shadow in shadows:
            shadow.wait_for_done = False
        direct_round(shadows, k)
        goals_only = [direct_round(shadows, k) for _ in range(rounds)]
        return complete, goals_only
    finally:
        for s in shadows:
            s.close()
        lsp.proc.kill()


# ---------------------------------------------------------------------------
# The agent loop, counted in calls.


def agent_loop(binary, env, k):
    tmp = Path(tempfile.mkdtemp(prefix="bench-batch-"))
    try:
        root = tmp / "long"
        shutil.copytree(ROOT, root, symlinks=True)
        mcp = bs.Mcp(binary, env)
        calls = [0]

        def call(tool, args):
            calls[0] += 1
            return mcp.call(tool, args)

        ws = {"root": str(root)}
        line, character = bs.show_position(k)
        started = time.perf_counter()
        try:
            version = call("lean_sync", {"workspace": ws, "path": FILE})["version"]
            at = {"workspace": ws, "path": FILE, "version": version, "line": line, "character": character}
            goals = call("lean_goals", dict(at, mode="before"))["goals"]
            assert goals, goals
            candidates = [
                "exact U.z_add _",
                f"show Eq (U.s (U.add c{k} U.z)) (U.s c{k})",
                "exact Eq.refl U.z",
                "intro h",
                f"show Eq (U.add c{k} (U.s U.z)) (U.s c{k})",
            ]
            batch = call("lean_run_batch", dict(at, texts=candidates))
            chosen = next(c for c in batch["candidates"] if c["outcome"] == "progressed")
            handle = chosen["handle"]
            chain = [
                f"show Eq (U.s (U.add c{k} U.z)) (U.s c{k})",
                f"show Eq (U.s c{k}) (U.s c{k})",
                "exact Eq.refl _",
            ]
            for step in chain:
                result = call("lean_run_with", {"workspace": ws, "path": FILE, "handle": handle, "text": step})
                assert result["success"], result
                handle = result["next_handle"]
            assert result["proof_state"]["goals"] == [], result
            # The agent keeps the proof: its own edit, then a re-sync.
            source = (root / FILE).read_text().split("\n")
            proof = [candidates[batch["candidates"].index(chosen)]] + chain
            steps = [" " * character + s for p in proof for s in p.split("\n")]
            source[line : line + 2] = steps
            (root / FILE).write_text("\n".join(source))
            synced = call("lean_sync", {"workspace": ws, "path": FILE})
            assert synced["diagnostics"]["counts"]["error"] == 0, synced
        finally:
            mcp.close()
        return calls[0], time.perf_counter() - started
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5, help="measured rounds of 16 candidates (default 5)")
    parser.add_argument("--no-build", action="store_true", help="use target/release as it is")
    parser.add_argument("--binary", help="this server binary instead of target/release (no build)")
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    args = parser.parse_args()

    lean = bs.toolchain()
    if not args.no_build and not args.binary:
        subprocess.run(["cargo", "build", "--release"], cwd=REPO, check=True)
    binary = args.binary or str(REPO / "target/release/lean-beam-mcp")
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEAN_BEAM_")}
    env.update(LEAN_BEAM_LEAN=lean, LEAN_BEAM_LOG="warning", LEAN_BEAM_SHADOW_SLOTS=str(WIDTH))
    source = (ROOT / FILE).read_text()
    print(f"fixture  {ROOT / FILE}: {source.count(chr(10))} lines; {os.cpu_count()} CPUs; {WIDTH} slots")
    first, last = 0, BLOCKS - 1

    mcp = bs.Mcp(binary, env)
    try:
        version = mcp.call("lean_sync", {"workspace": {"root": str(ROOT)}, "path": FILE})["version"]
        measured = {}
        for k in (first, last):
            # Warm-up: slots open, the prefix base compiled and imported.
            run_batch(mcp, version, k)
            bs.wait_for_base(mcp)
            run_batch(mcp, version, k)
            measured[k] = [run_batch(mcp, version, k) for _ in range(args.rounds)]
        run_sequential(mcp, version, last, 4)
        seq = [run_sequential(mcp, version, last) for _ in range(args.rounds)]
    finally:
        mcp.close()

    direct, direct_goals = direct_client(lean, source, last, args.rounds)
    calls, loop_time = agent_loop(binary, env, last)

    med = statistics.median
    b_first, b_last, s_last = med(measured[first]), med(measured[last]), med(seq)
    d_last, d_goals = med(direct), med(direct_goals)
    print()
    print(f"{'16 candidates (median of ' + str(args.rounds) + ')':<44}{'ms':>9}{'ms/cand':>10}")
    for name, t in [
        ("lean_run_batch, first declaration", b_first),
        ("lean_run_batch, last declaration", b_last),
        ("16 sequential lean_run_at, last decl.", s_last),
        ("direct LSP client, 4 docs: complete", d_last),
        ("direct LSP client, 4 docs: goals only", d_goals),
    ]:
        print(f"{name:<44}{t * 1000:9.1f}{t * 1000 / CANDIDATES:10.1f}")
    # The limit is the direct client's fastest signal (the goals; without
    # the version's "done" it may miss late messages).
    vs_direct = b_last / min(d_last, d_goals)
    vs_seq = s_last / b_last
    per_cand = b_last / b_first
    print()
    targets = [
        (f"batch / direct          {vs_direct:6.2f}x", "target <= 1.2x", vs_direct <= 1.2),
        (f"throughput batch / seq  {vs_seq:6.2f}x", "target >= 3x", vs_seq >= 3),
        (f"per candidate last/first{per_cand:6.2f}x", "target <= 1.5x", per_cand <= 1.5),
        (f"agent loop              {calls:6d} calls ({loop_time:.1f} s)", "target <= 10", calls <= 10),
    ]
    for figure, target, ok in targets:
        print(f"{figure}   {target:<16}{'met' if ok else 'MISSED'}")
    if args.check and not all(ok for _, _, ok in targets):
        sys.exit(1)


if __name__ == "__main__":
    main()
