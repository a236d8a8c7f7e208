#!/usr/bin/env python3
"""Benchmarks of the Lean broker (issues 3 and 4): what lean-beam-mcp adds on
top of the Lean server it drives. Prints figures; asserts nothing.

Every comparison runs the same request through two clients of the same Lean
build with the same options (lean --server -Dserver.reportDelayMs=0,
LEAN_PATH/LEAN_SRC_PATH of the workspace, initializationOptions editDelay 0):

  * MCP:    the release lean-beam-mcp (LEAN_BEAM_LEAN=<test lean>), modern era,
            one synchronous tools/call at a time over stdio;
  * direct: a minimal LSP client written here, talking to its own
            `lean --server` over stdio.

Both clients are plain Python, synchronous, on the main thread, and alternate
call by call, so machine load hits both alike. Reported: medians (and p90)
of wall time per call from the client's write to the parsed answer.

  1. time to diagnostics: a full elaboration of a file (lean_refresh vs
     didClose+didOpen+waitForDiagnostics), target ratio <= 1.05
  2. lean_sync of an unchanged file vs one waitForDiagnostics round trip,
     target ratio <= 1.10 and < 1 ms added (lean_sync answers an unchanged
     file whose report Lean finished without a round trip)
  3. RSS of the lean-beam-mcp process itself (Lean processes excluded) after
     the runs of 1, 2 and 4 with one workspace open, target < 12 MiB, and
     with 3 workspaces open, target < 30 MB
  4. hover and goals (lean_goals vs $/lean/rpc/call getInteractiveGoals), >= 200
     calls each, target ratio <= 1.05 and < 200 us added; hover's target over
     the forwarder's floor: < 40 us added (issue 29)

For 2 and 4 a third client shows this machine's floor: the direct client
through examples/forward.rs, a forwarder that only copies bytes both ways (the
two extra pipe hops any server in between pays), interleaved with the others.

With --baseline OTHER_BINARY a second lean-beam-mcp (another build) joins
the interleaved turns of 2 and 4 and the RSS figure, and the ratios
(this / baseline) are printed: two builds compared in one run.

Usage: scripts/bench-lean.py [--calls N] [--rounds N] [--no-build] [--baseline PATH]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import mcpmeta

REPO = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
MODERN = mcpmeta.modern_meta("bench-lean")


def log(*args):
    print(*args, file=sys.stderr, flush=True)


def setup(build):
    lean = subprocess.run(
        [os.path.join(REPO, "scripts/install-test-lean.sh")], check=True, capture_output=True, text=True
    ).stdout.strip()
    subprocess.run(
        [os.path.join(REPO, "scripts/build-fixtures.sh")], check=True, env=dict(os.environ, LEAN=lean),
        stdout=subprocess.DEVNULL,
    )
    if build:
        subprocess.run(["cargo", "build", "--release"], cwd=REPO, check=True)
        subprocess.run(["cargo", "build", "--release", "--example", "forward"], cwd=REPO, check=True)
    binary = os.path.join(REPO, "target/release/lean-beam-mcp")
    forwarder = os.path.join(REPO, "target/release/examples/forward")
    if not os.path.exists(binary) or not os.path.exists(forwarder):
        sys.exit("no release binaries: run cargo build --release && cargo build --release --example forward")
    return lean, binary, forwarder


def fixture(name):
    return os.path.realpath(os.path.join(REPO, "tests/fixtures", name))


def uri_of(path):
    return "file://" + path


# ---------------------------------------------------------------------------
# A minimal direct LSP client.


class DirectLsp:
    def __init__(self, lean, root, forwarder=None):
        env = {k: v for k, v in os.environ.items() if k != "LAKE"}
        env["LEAN_PATH"] = os.path.join(root, ".lake/build/lib/lean")
        env["LEAN_SRC_PATH"] = root
        self.proc = subprocess.Popen(
            ([forwarder] if forwarder else []) + [lean, "--server", "-Dserver.reportDelayMs=0"], cwd=root, env=env,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        )
        self.out = self.proc.stdin
        self.inp = self.proc.stdout
        self.next_id = 0
        self.root = root
        self.request("initialize", {
            "processId": os.getpid(),
            "rootUri": uri_of(root),
            "capabilities": {
                "general": {"positionEncodings": ["utf-16"]},
                "textDocument": {
                    "publishDiagnostics": {"relatedInformation": True, "versionSupport": True},
                    "hover": {"contentFormat": ["markdown", "plaintext"]},
                },
            },
            "initializationOptions": {"editDelay": 0},
        })
        self.notify("initialized", {})

    def send(self, message):
        body = json.dumps(message).encode()
        self.out.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.out.flush()

    def read(self):
        length = None
        while True:
            line = self.inp.readline()
            if not line:
                raise EOFError("lean --server closed its output")
            line = line.strip()
            if not line:
                break
            key, _, value = line.partition(b":")
            if key.lower() == b"content-length":
                length = int(value)
        return json.loads(self.inp.read(length))

    def request(self, method, params):
        self.next_id += 1
        rid = self.next_id
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        while True:
            message = self.read()
            if "method" in message and "id" in message:
                self.send({"jsonrpc": "2.0", "id": message["id"], "result": None})
            elif message.get("id") == rid:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message["result"]

    def notify(self, method, params):
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def open(self, rel, version):
        path = os.path.join(self.root, rel)
        with open(path, encoding="utf-8") as f:
            text = f.read()
        self.notify("textDocument/didOpen", {"textDocument": {
            "uri": uri_of(path), "languageId": "lean4", "version": version, "text": text}})
        return self.request("textDocument/waitForDiagnostics", {"uri": uri_of(path), "version": version})

    def reopen(self, rel, version):
        self.notify("textDocument/didClose", {"textDocument": {"uri": uri_of(os.path.join(self.root, rel))}})
        return self.open(rel, version)

    def close(self):
        try:
            self.request("shutdown", None)
            self.notify("exit", None)
        except Exception:
            pass
        self.proc.kill()
        self.proc.wait()


# ---------------------------------------------------------------------------
# A minimal synchronous MCP client (modern era).


class Mcp:
    def __init__(self, binary, lean):
        env = {k: v for k, v in os.environ.items() if not k.startswith("LEAN_BEAM_")}
        env["LEAN_BEAM_LEAN"] = lean
        self.proc = subprocess.Popen(
            [binary], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        )
        self.next_id = 0

    def call(self, tool, arguments, meta=MODERN, on_log=None):
        """Calls `tool` and returns its structured result; `on_log`, where given, is
        handed each notifications/message's params that comes before the answer."""
        self.next_id += 1
        rid = self.next_id
        line = json.dumps({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                           "params": {"name": tool, "arguments": arguments, "_meta": meta}})
        self.proc.stdin.write(line.encode() + b"\n")
        self.proc.stdin.flush()
        while True:
            raw = self.proc.stdout.readline()
            if not raw:
                raise EOFError("lean-beam-mcp closed its output")
            message = json.loads(raw)
            if message.get("method") == "notifications/message" and on_log:
                on_log(message["params"])
            if message.get("id") == rid:
                result = message["result"]
                if result.get("isError"):
                    raise RuntimeError(f"{tool}: {result['content'][0]['text']}")
                return result["structuredContent"]

    def rss_kib(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return None

    def close(self):
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()


# ---------------------------------------------------------------------------


def finish(figures, json_path):
    """Records and prints the load at the end, and writes `figures` to `json_path` where given."""
    figures["loadavg_end"] = os.getloadavg()
    print(f"load at end {os.getloadavg()}", flush=True)
    if json_path:
        with open(json_path, "w") as f:
            json.dump(figures, f, indent=2)


def timed(fn):
    start = time.perf_counter_ns()
    fn()
    return (time.perf_counter_ns() - start) / 1000.0  # microseconds


def p90(xs):
    return sorted(xs)[int(0.9 * (len(xs) - 1))]


def compare(name, mcp_us, direct_us, ratio_target, added_target_us, label="MCP"):
    m, d = statistics.median(mcp_us), statistics.median(direct_us)
    ratio = m / d
    added = m - d
    # Calls alternate, so each MCP call has a direct neighbour under the same
    # load: the median of those differences is less noisy than m - d.
    paired = statistics.median(a - b for a, b in zip(mcp_us, direct_us))
    ok_ratio = "ok" if ratio <= ratio_target else "MISSED"
    line = (f"{name:<44} n={len(mcp_us):<4} {label:<3} median {m:10.1f} us (p90 {p90(mcp_us):10.1f})"
            f"   direct median {d:10.1f} us (p90 {p90(direct_us):10.1f})"
            f"   ratio {ratio:5.3f} (target <= {ratio_target}: {ok_ratio})   added {added:8.1f} us"
            f" (paired {paired:8.1f} us)")
    if added_target_us is not None:
        line += f" (target < {added_target_us:.0f} us: {'ok' if added < added_target_us else 'MISSED'})"
    print(line, flush=True)
    return {"name": name, "n": len(mcp_us), "mcp_median_us": m, "direct_median_us": d,
            "ratio": ratio, "added_us": added, "paired_added_us": paired, "load": os.getloadavg()}


def versus(name, new_us, old_us):
    """This build against the baseline build, same turns."""
    n, o = statistics.median(new_us), statistics.median(old_us)
    paired = statistics.median(a - b for a, b in zip(new_us, old_us))
    print(f"{'  this build / baseline: ' + name:<44} median {n:10.1f} us / {o:10.1f} us = {n / o:5.3f}"
          f"   (paired difference {paired:8.1f} us)", flush=True)
    return {"name": f"versus baseline: {name}", "new_median_us": n, "old_median_us": o, "ratio": n / o,
            "paired_us": paired}


def interleave(count, *fns):
    """Time each of `fns` `count` times, call by call, in turns; returns one
    list of microseconds per function."""
    times = [[] for _ in fns]
    order = list(range(len(fns)))
    for i in range(count):
        # Alternate the order, so that none always follows the same one.
        for j in (order if i % 2 == 0 else order[::-1]):
            times[j].append(timed(fns[j]))
    return times


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=300, help="calls per fast comparison (>= 200)")
    parser.add_argument("--rounds", type=int, default=15, help="full elaborations per file")
    parser.add_argument("--no-build", action="store_true", help="use the existing release binary")
    parser.add_argument("--json", help="also write the figures to this file")
    parser.add_argument("--baseline", help="another lean-beam-mcp binary, measured side by side")
    args = parser.parse_args()
    lean, binary, forwarder = setup(not args.no_build)
    basic, second, long = fixture("basic"), fixture("second"), fixture("long")
    figures = {"cpus": os.cpu_count(), "loadavg_start": os.getloadavg()}
    print(f"lean-beam-mcp benchmarks: {binary}\nLean: {lean}\ncpus {os.cpu_count()}, load {os.getloadavg()}",
          flush=True)

    mcp = Mcp(binary, lean)
    base = Mcp(args.baseline, lean) if args.baseline else None
    mcps = [mcp] + ([base] if base else [])
    direct = {basic: DirectLsp(lean, basic), long: DirectLsp(lean, long)}
    forwarded = DirectLsp(lean, basic, forwarder)
    results = []
    try:
        # Warm up both sides: server started, imports loaded, files elaborated.
        # The long workspace is opened after the one-workspace RSS figure.
        for client in mcps:
            for root, rel in [(basic, "Fix/Errors.lean"), (basic, "Fix/Goals.lean")]:
                client.call("lean_sync", {"workspace": {"root": root}, "path": rel})
        versions = {}
        for root, rel in [(basic, "Fix/Errors.lean"), (basic, "Fix/Goals.lean"), (long, "Long.lean")]:
            versions[(root, rel)] = 1
            direct[root].open(rel, 1)
        forwarded.open("Fix/Goals.lean", 1)

        # 1. Time to diagnostics: a full elaboration (Long.lean after 3).
        def time_to_diagnostics(root, rel, rounds):
            def mcp_fn():
                mcp.call("lean_refresh", {"workspace": {"root": root}, "path": rel})

            def direct_fn():
                versions[(root, rel)] += 1
                direct[root].reopen(rel, versions[(root, rel)])

            m, d = interleave(rounds, mcp_fn, direct_fn)
            results.append(compare(f"time to diagnostics {rel} (full elaboration)", m, d, 1.05, None))

        time_to_diagnostics(basic, "Fix/Errors.lean", args.rounds * 2)

        # 2. lean_sync of an unchanged file vs one waitForDiagnostics round trip.
        goals_uri = uri_of(os.path.join(basic, "Fix/Goals.lean"))
        sync_args = {"workspace": {"root": basic}, "path": "Fix/Goals.lean"}
        wait_params = {"uri": goals_uri, "version": versions[(basic, "Fix/Goals.lean")]}

        def against_lean(tool, tool_args, base_args, method, params):
            """Times `tool` (and the baseline's, with `base_args`) against
            `method` sent to Lean directly and through the forwarder."""
            return interleave(
                args.calls,
                lambda: mcp.call(tool, tool_args),
                lambda: direct[basic].request(method, params),
                lambda: forwarded.request(method, params),
                *([lambda: base.call(tool, base_args)] if base else []),
            )

        m, d, f, *b = against_lean("lean_sync", sync_args, sync_args, "textDocument/waitForDiagnostics", wait_params)
        results.append(compare("lean_sync unchanged vs waitForDiagnostics", m, d, 1.10, 1000))
        results.append(compare("  floor: waitForDiagnostics via forwarder", f, d, 1.10, None, "fwd"))
        if base:
            results.append(compare("  baseline: lean_sync unchanged", b[0], d, 1.10, 1000, "old"))
            results.append(versus("lean_sync unchanged", m, b[0]))

        # 4. Hover and goals.
        version = mcp.call("lean_sync", sync_args)["version"]
        hover_args = dict(sync_args, version=version, line=11, character=34)
        base_hover_args = dict(hover_args, version=base.call("lean_sync", sync_args)["version"]) if base else None
        hover_params = {"textDocument": {"uri": goals_uri}, "position": {"line": 11, "character": 34}}
        m, d, f, *b = against_lean("lean_hover", hover_args, base_hover_args, "textDocument/hover", hover_params)
        results.append(compare("hover Fix/Goals.lean 11:34", m, d, 1.05, 200))
        results.append(compare("  floor: hover via forwarder", f, d, 1.05, None, "fwd"))
        results.append(compare("  hover over the forwarder's floor", m, f, 1.05, 40, "MCP"))
        if base:
            results.append(compare("  baseline: hover", b[0], d, 1.05, 200, "old"))
            results.append(compare("  baseline: hover over the forwarder's floor", b[0], f, 1.05, 40, "old"))
            results.append(versus("hover", m, b[0]))

        goals_args = dict(sync_args, version=version, line=15, character=4, mode="after")
        first = mcp.call("lean_goals", goals_args)
        assert first["source"] == "rpc", first
        position = first["position"]
        session = direct[basic].request("$/lean/rpc/connect", {"uri": goals_uri})["sessionId"]
        rpc_params = {
            "textDocument": {"uri": goals_uri}, "position": position, "sessionId": session,
            "method": "Lean.Widget.getInteractiveGoals",
            "params": {"textDocument": {"uri": goals_uri}, "position": position},
        }
        calls_since_keepalive = [0]

        def refs(value, out):
            if isinstance(value, dict):
                if "__rpcref" in value:
                    out.append({"__rpcref": value["__rpcref"]})
                for v in value.values():
                    refs(v, out)
            elif isinstance(value, list):
                for v in value:
                    refs(v, out)
            return out

        def direct_goals():
            answer = direct[basic].request("$/lean/rpc/call", rpc_params)
            # A well-behaved client releases the references it was given, as
            # lean_goals does.
            held = refs(answer, [])
            if held:
                direct[basic].notify("$/lean/rpc/release", {"uri": goals_uri, "sessionId": session, "refs": held})
            calls_since_keepalive[0] += 1
            if calls_since_keepalive[0] % 100 == 0:
                direct[basic].notify("$/lean/rpc/keepAlive", {"uri": goals_uri, "sessionId": session})

        base_goals_args = dict(goals_args, version=base_hover_args["version"]) if base else None
        m, d, *b = interleave(
            args.calls,
            lambda: mcp.call("lean_goals", goals_args),
            direct_goals,
            *([lambda: base.call("lean_goals", base_goals_args)] if base else []),
        )
        results.append(compare("goals Fix/Goals.lean 15:4 after (RPC)", m, d, 1.05, 200))
        if base:
            results.append(compare("  baseline: goals", b[0], d, 1.05, 200, "old"))
            results.append(versus("goals", m, b[0]))

        # 3. RSS of the server process after the runs, one workspace open.
        for client, label in [(mcp, "")] + ([(base, " (baseline)")] if base else []):
            rss = client.rss_kib()
            print(f"{'RSS of lean-beam-mcp, 1 workspace open' + label:<44} {rss / 1024:.2f} MiB "
                  f"(target < 12 MiB: {'ok' if rss < 12 * 1024 else 'MISSED'}; after the runs above)", flush=True)
            figures["rss_one_workspace_kib" + ("_baseline" if label else "")] = rss

        # 1, continued: the long file.
        mcp.call("lean_sync", {"workspace": {"root": long}, "path": "Long.lean"})
        time_to_diagnostics(long, "Long.lean", args.rounds)

        # 3. RSS of the server process with 3 workspaces open.
        mcp.call("lean_sync", {"workspace": {"root": second}, "path": "Sec/Main.lean"})
        stats = mcp.call("beam_stats", {})
        assert len(stats["workspaces"]) == 3, stats["workspaces"].keys()
        rss = mcp.rss_kib()
        print(f"{'RSS of lean-beam-mcp, 3 workspaces open':<44} {rss / 1024:.1f} MiB "
              f"(target < 30 MB: {'ok' if rss * 1024 < 30e6 else 'MISSED'}; Lean processes excluded)", flush=True)
        figures["rss_kib"] = rss
    finally:
        for client in mcps:
            client.close()
        for client in [*direct.values(), forwarded]:
            client.close()
    figures["results"] = results
    finish(figures, args.json)


if __name__ == "__main__":
    main()
