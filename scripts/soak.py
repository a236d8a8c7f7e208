#!/usr/bin/env python3
"""Soak test of lean-beam-mcp over stdio and HTTP (plain python3, release build).

    scripts/soak.py --minutes 10      the documented run (>= 10 minutes)
    scripts/soak.py --minutes 1.5     the CI run (scripts/test.sh)

Runs every tool against temp copies of three workspaces (tests/fixtures/basic,
tests/fixtures/second, examples/demo) with several requests in flight, random
cancellations and edits on disk, and checks:

  * every request that was not cancelled is answered exactly once, and a
    cancelled one at most once; no JSON-RPC error (only tool results);
  * diagnostics are always for the latest version: each workspace's scratch
    file Soak.lean is rewritten on disk with errors that name the edit
    (`missing_<edit>_<i>`); a sync sent after edit N reports only edit
    N' >= N, exactly its errors, and, when no edit raced it, N' is the
    latest; versions never go back and change exactly when the text did;
  * the server's RSS grows < 10 % from the end of the warm-up to the end;
  * open file descriptors and Lean processes are stable: measured at a
    quiescent, normalized point (every workspace dropped, one file synced in
    each) after the warm-up and at the end.

Next to it, for the same length, the hostile mix of scripts/soak_hostile.py
runs against two more servers started with their limits set low, one over
stdio and one over `--http` on loopback (with a bearer token): slow bodies,
evidence floods, FIFO paths, files past the size bound, cap hits (runtimes,
documents, proof handles and their bytes, legacy sessions, connections),
malformed messages and cancellations, interleaved with ordinary Lean calls.
It checks that every request is answered exactly once, that `beam_version`
stays answered and never stalls (judged against a control measured in the same
run: the same binary, idle, probed alongside by the same client; no absolute
time bound, so a loaded machine cannot fail it), and that RSS, file
descriptors and `lean` processes stay within their bounds (counts; its header
says exactly what). Each part
runs in a process of its own; `--parts benign,stdio,http` (the default)
picks them.

Prints the figures. Exit status 0 when every check holds. Options: --seed,
--concurrency, --binary (skip the release build), --lean, --parts.
"""
import argparse
import collections
import json
import os
import queue
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

import mcpmeta
import soak_hostile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
META = mcpmeta.modern_meta("soak")
# Tools whose calls the soak may cancel (lean_drop_workspace is not cancellable).
NOT_CANCELLABLE = {"lean_drop_workspace"}


def log(*args):
    print("soak:", *args, file=sys.stderr, flush=True)


class Failure(Exception):
    pass


# --------------------------------------------------------------------------
# Workspaces
# --------------------------------------------------------------------------

WORKSPACES = {
    # name: (fixture dir, import, namespace, type of a value, main file, positions)
    "basic": ("tests/fixtures/basic", "Fix.Basic", "Fix", "N", "Fix/Goals.lean",
              {"hover": (11, 9), "goals": (12, 2), "run": (15, 4), "ref": (11, 9), "sig": (16, 10)}),
    "second": ("tests/fixtures/second", "Sec.Base", "Sec", "Bit", "Sec/Main.lean",
               {"hover": (8, 9), "goals": (9, 2), "run": (9, 2), "ref": (8, 9), "sig": (11, 10)}),
    "demo": ("examples/demo", "Demo.Base", "Demo", "P", "Demo.lean",
             {"hover": (8, 9), "goals": (9, 2), "run": (10, 11), "ref": (8, 9), "sig": (11, 30)}),
}


def copy_workspace(src, dst):
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns(".lake"))


class Workspace:
    def __init__(self, name, root):
        fixture, module, ns, ty, main, pos = WORKSPACES[name]
        self.name, self.root, self.module, self.ns, self.ty = name, root, module, ns, ty
        self.main, self.pos = main, pos
        self.edit = 0          # number of the edit on disk
        self.errors = {}       # edit -> expected error count
        self.soak_inflight = 0  # Soak.lean syncs in flight
        self.versions = {}     # file -> last version seen
        self.last_soak = (0, 0, 0, 0)  # (edit, version, epoch, refreshes) of the last check
        self.handles = []
        self.actions = []      # (path, version, code_action) from lean_todo
        self.epoch = 0         # lean_drop_workspace calls sent (a new runtime restarts versions)
        self.refreshes = 0     # lean_refresh calls of Soak.lean sent (each may add a version)
        self.open_refreshes = set()  # sent and not answered (cancelled ones stay: they may have run)

    def ws(self):
        return {"root": self.root}

    def write_soak(self, rng):
        self.edit += 1
        n = rng.randint(1, 3)
        self.errors[self.edit] = n
        lines = ["prelude", f"import {self.module}", "", f"namespace {self.ns}", ""]
        if self.name == "basic":
            lines += ["theorem soak_wait : Eq one one := by", f"  sleep {rng.randint(0, 250)}",
                      "  exact Eq.refl one", ""]
        for i in range(n):
            lines.append(f"def soakBad{i} : {self.ty} := missing_{self.edit}_{i}")
        lines += ["", f"end {self.ns}", ""]
        path = os.path.join(self.root, "Soak.lean")
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            f.write("\n".join(lines))
        os.replace(tmp, path)


# --------------------------------------------------------------------------
# The server
# --------------------------------------------------------------------------

class Server:
    def __init__(self, binary, env, stderr_path):
        self.stderr = open(stderr_path, "wb")
        self.proc = subprocess.Popen([binary], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.stderr, env=env)
        self.inbox = queue.Queue()
        self.lock = threading.Lock()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            self.inbox.put(json.loads(line))
        self.inbox.put(None)

    def send(self, message):
        data = (json.dumps(message) + "\n").encode()
        with self.lock:
            self.proc.stdin.write(data)
            self.proc.stdin.flush()

    @property
    def pid(self):
        return self.proc.pid

    def close(self):
        soak_hostile.end_server(self.proc, self.stderr, 60, eof=True)


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def processes_under(base):
    """Live processes whose working directory or environment names `base`
    (every Lean process of the soak's workspaces, re-parented workers included)."""
    found = []
    for pid in soak_hostile.live_processes():
        try:
            cwd = os.readlink(f"/proc/{pid}/cwd")
            with open(f"/proc/{pid}/environ", "rb") as f:
                environ = f.read()
        except OSError:
            continue
        if cwd.startswith(base) or base.encode() in environ:
            found.append(pid)
    return found


# --------------------------------------------------------------------------
# The soak
# --------------------------------------------------------------------------

class Soak:
    def __init__(self, server, workspaces, rng, concurrency, base):
        self.s, self.wss, self.rng, self.k, self.base = server, workspaces, rng, concurrency, base
        self.next_id = 0
        self.pending = {}       # id -> (tool, ws, info, sent_at)
        self.cancelled = set()
        self.answers = collections.Counter()
        self.by_tool = collections.Counter()
        self.codes = collections.Counter()
        self.notifications = 0
        self.soak_checks = 0
        self.latest_checks = 0
        self.failures = []
        self.examples = {}      # outcome code -> one message
        self.tokens = {}        # progress token -> request id
        self.progress = 0

    # -- plumbing ----------------------------------------------------------
    def call(self, tool, arguments, ws=None, info=None):
        self.next_id += 1
        rid = self.next_id
        self.pending[rid] = (tool, ws, info or {}, time.monotonic())
        self.by_tool[tool] += 1
        meta = dict(META)
        if self.rng.random() < 0.3:
            meta["progressToken"] = f"p{rid}"
            self.tokens[f"p{rid}"] = rid
        if tool == "lean_drop_workspace" and ws is not None:
            ws.epoch += 1
        self.s.send({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                     "params": {"name": tool, "arguments": arguments, "_meta": meta}})
        return rid

    def cancel(self, rid):
        self.cancelled.add(rid)
        self.s.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
                     "params": {"requestId": rid, "reason": "soak"}})

    def fail(self, message):
        self.failures.append(message)
        log("FAIL:", message)

    def pump(self, timeout):
        """Handle messages for up to `timeout` seconds (at least one wait)."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            try:
                message = self.s.inbox.get(timeout=max(left, 0.001))
            except queue.Empty:
                return
            if message is None:
                raise Failure("the server closed its stdout")
            self.handle(message)
            if time.monotonic() >= deadline:
                return

    def handle(self, message):
        if "method" in message:
            self.notifications += 1
            if message["method"] == "notifications/progress":
                self.progress += 1
                rid = self.tokens.get(message["params"].get("progressToken"))
                if rid is None:
                    self.fail(f"progress for an unknown token: {message}")
                elif self.answers.get(rid):
                    self.fail(f"progress after the response to {rid}: {message}")
            return
        rid = message.get("id")
        self.answers[rid] += 1
        if self.answers[rid] > 1:
            self.fail(f"request {rid} answered {self.answers[rid]} times")
            return
        if rid in self.cancelled and rid not in self.pending:
            return
        entry = self.pending.pop(rid, None)
        if entry is None:
            self.fail(f"an answer to {rid}, which was never asked")
            return
        tool, ws, info, _ = entry
        if "error" in message:
            self.fail(f"JSON-RPC error for {tool} {rid}: {message['error']}")
            return
        result = message["result"]
        content = result.get("structuredContent")
        if result.get("isError"):
            # A tool error's {code, message, data?} is its text block only.
            content = json.loads(result["content"][0]["text"])
            if info.get("mode"):
                ws.soak_inflight -= 1
            code = f"{tool}:{content.get('code')}"
            self.codes[code] += 1
            self.examples.setdefault(code, content.get("message", "")[:200])
            if content.get("code") == "internalError":
                self.fail(f"{tool} {rid}: internal error {content}")
            return
        self.codes[f"{tool}:ok"] += 1
        self.observe(tool, ws, info, content)

    def observe(self, tool, ws, info, content):
        if ws is None:
            return
        if tool in ("lean_sync", "lean_refresh", "lean_update") and "version" in content:
            path = content.get("path")
            ws.versions[path] = content["version"]
            if path == "Soak.lean" and tool != "lean_update":
                self.check_soak(ws, info, content)
        if tool in ("lean_run_at_handle", "lean_run_with") and content.get("next_handle"):
            ws.handles.append((info["path"], content["next_handle"]))
        if tool == "lean_todo":
            for item in content.get("items", []):
                action = item.get("code_action") if isinstance(item, dict) else None
                if isinstance(action, dict) and "data" in action:
                    ws.actions = (ws.actions + [(content.get("path"), content.get("version"), action)])[-8:]

    def check_soak(self, ws, info, content):
        ws.soak_inflight -= 1
        items = content["diagnostics"].get("items", [])
        edits = set()
        for item in items:
            msg = item.get("message", "")
            if "missing_" in msg:
                edits.add(int(msg.split("missing_")[1].split("_")[0]))
        counts = content["diagnostics"]["counts"]
        if len(edits) != 1:
            self.fail(f"{ws.name} Soak.lean v{content['version']}: diagnostics of edits {sorted(edits)}: {items}")
            return
        (edit,) = edits
        if edit < info["edit_at_send"]:
            self.fail(f"{ws.name}: a sync sent after edit {info['edit_at_send']} reported edit {edit}")
        if counts["error"] != ws.errors[edit]:
            self.fail(f"{ws.name}: edit {edit} has {ws.errors[edit]} errors, the sync reported {counts['error']}")
        if info.get("rid") is not None:
            ws.open_refreshes.discard(info["rid"])
        last_edit, last_version, last_epoch, last_refreshes = ws.last_soak
        version = content["version"]
        if info["epoch"] != last_epoch:
            last_version = 0  # a dropped runtime: versions start again
        if edit > last_edit and version <= last_version:
            self.fail(f"{ws.name}: edit {edit} reported with version {version} <= {last_version}")
        # Only a re-elaboration (lean_refresh, answered or cancelled) moves the
        # version of unchanged text.
        if (edit == last_edit and last_version and version != last_version and info["mode"] == "sync"
                and info["refreshes"] == last_refreshes and not ws.open_refreshes):
            self.fail(f"{ws.name}: unchanged edit {edit} moved from version {last_version} to {version}")
        if edit < last_edit:
            self.fail(f"{ws.name}: went back from edit {last_edit} to {edit}")
        if not info["raced"] and edit != ws.edit:
            self.fail(f"{ws.name}: unraced sync reported edit {edit}, latest is {ws.edit}")
        if not info["raced"]:
            self.latest_checks += 1
        ws.last_soak = (max(edit, last_edit), max(version, last_version), info["epoch"], ws.refreshes)
        self.soak_checks += 1

    # -- the mix -----------------------------------------------------------
    def random_call(self):
        rng = self.rng
        ws = rng.choice(self.wss)
        main = ws.main
        version = ws.versions.get(main)
        at = lambda key: {"line": ws.pos[key][0], "character": ws.pos[key][1]}  # noqa: E731
        doc = {"workspace": ws.ws(), "path": main}
        r = rng.random()
        if r < 0.20:
            # Edit Soak.lean on disk (sometimes while a sync of it runs) and sync it.
            if ws.soak_inflight and rng.random() < 0.5:
                return None
            raced_before = ws.soak_inflight > 0
            wrote = rng.random() < 0.8
            if wrote:
                ws.write_soak(rng)
            mode = "refresh" if rng.random() < 0.15 else "sync"
            if mode == "refresh":
                ws.refreshes += 1
            info = {"edit_at_send": ws.edit, "raced": raced_before, "mode": mode, "epoch": ws.epoch,
                    "refreshes": ws.refreshes}
            rid = self.call("lean_" + mode, {"workspace": ws.ws(), "path": "Soak.lean",
                                             "diagnostics_in_result": True}, ws, info)
            if mode == "refresh":
                ws.open_refreshes.add(rid)
                info["rid"] = rid
            ws.soak_inflight += 1
            # Any earlier Soak sync in flight now races with this edit.
            for other, (tool, w, i, _) in self.pending.items():
                if wrote and w is ws and i.get("mode") and i is not info:
                    i["raced"] = True
            return rid
        if r < 0.30 or version is None:
            return self.call(rng.choice(["lean_sync", "lean_sync", "lean_update", "lean_refresh"]), doc, ws)
        if r < 0.40:
            return self.call("lean_hover", dict(doc, version=version, **at("hover")), ws)
        if r < 0.46:
            return self.call("lean_goals", dict(doc, version=version, mode=rng.choice(["before", "after"]), **at("goals")), ws)
        if r < 0.50:
            return self.call(rng.choice(["lean_definition", "lean_references", "lean_signature_help"]),
                             dict(doc, version=version, **at(rng.choice(["ref", "sig"]))), ws)
        if r < 0.53:
            return self.call("lean_document_symbols", dict(doc, version=version), ws)
        if r < 0.55:
            return self.call("lean_workspace_symbols", {"workspace": ws.ws(), "query": rng.choice(["add", "flip", "zero"])}, ws)
        if r < 0.60:
            info = {}
            with open(os.path.join(ws.root, main)) as f:
                last_line = f.read().count("\n")
            return self.call("lean_todo", dict(doc, version=version, start_line=0, start_character=0,
                                               end_line=last_line, end_character=0), ws, info)
        if r < 0.68:
            tool = rng.choice(["lean_run_at", "lean_run_at_handle"])
            text = rng.choice(["skip", "exact Eq.refl _", "sleep 200", "intro x"])
            return self.call(tool, dict(doc, version=version, text=text, **at("run")), ws, {"path": main})
        if r < 0.74 and ws.handles:
            path, handle = ws.handles.pop(rng.randrange(len(ws.handles)))
            tool = rng.choice(["lean_run_with", "lean_run_with_linear", "lean_release"])
            args = {"workspace": ws.ws(), "path": path, "handle": handle}
            if tool != "lean_release":
                args["text"] = rng.choice(["skip", "exact Eq.refl _"])
                if tool == "lean_run_with":
                    ws.handles.append((path, handle))
            return self.call(tool, args, ws, {"path": path})
        if r < 0.76:
            return self.call(rng.choice(["lean_save", "lean_close_save"]), {"workspace": ws.ws(), "path": main}, ws)
        if r < 0.78:
            return self.call("lean_close", doc, ws)
        if r < 0.79:
            ws.versions.clear()
            ws.handles.clear()
            return self.call("lean_drop_workspace", {"workspace": ws.ws()}, ws)
        if r < 0.80:
            return self.call("beam_feedback_report", {
                "workspace": ws.ws(), "title": "soak", "summary": "s", "reproduction": "r",
                "expected": "e", "actual": "a", "confidential": rng.random() < 0.5}, ws)
        if r < 0.82 and ws.actions:
            path, version, action = ws.actions.pop()
            return self.call("lean_code_action_resolve", {"workspace": ws.ws(), "path": path,
                                                          "version": version, "code_action": action}, ws)
        return self.call(rng.choice(["beam_version", "beam_stats"]), {})

    def drive(self, seconds, cancel_rate=0.08):
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            while len(self.pending) < self.k:
                rid = self.random_call()
                if rid is None:
                    break
                tool = self.pending[rid][0]
                if tool not in NOT_CANCELLABLE and self.rng.random() < cancel_rate:
                    self.pump(self.rng.random() * 0.3)
                    if rid in self.pending:
                        self.cancel(rid)
            self.pump(0.05)
            self.expire_cancelled()

    def expire_cancelled(self):
        """A cancelled call may never answer: stop waiting for it."""
        now = time.monotonic()
        for rid in [r for r in self.pending if r in self.cancelled]:
            tool, ws, info, sent = self.pending[rid]
            if now - sent > 2.0:
                del self.pending[rid]
                if info.get("mode"):
                    ws.soak_inflight -= 1

    def drain(self, limit=300):
        deadline = time.monotonic() + limit
        while self.pending:
            if time.monotonic() > deadline:
                raise Failure(f"{len(self.pending)} requests unanswered after {limit} s: "
                              f"{sorted((t, r) for r, (t, *_ ) in self.pending.items())[:10]}")
            self.pump(0.2)
            self.expire_cancelled()

    def wait(self, rid):
        while rid in self.pending:
            self.pump(0.2)

    def normalize(self):
        """A quiescent, comparable state: every runtime dropped, then one file
        synced in each workspace."""
        self.drain()
        for ws in self.wss:
            self.wait(self.call("lean_drop_workspace", {"workspace": ws.ws()}, ws))
            ws.versions.clear()
            ws.handles.clear()
        for ws in self.wss:
            self.wait(self.call("lean_sync", {"workspace": ws.ws(), "path": ws.main}, ws))
        time.sleep(1.0)
        self.pump(0.2)


PARTS = ("benign", "stdio", "http")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=float, default=10.0)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--concurrency", type=int, default=6)
    ap.add_argument("--binary", default=None, help="lean-beam-mcp to run (default: cargo build --release)")
    ap.add_argument("--lean", default=os.environ.get("LEAN"))
    ap.add_argument("--parts", default=",".join(PARTS),
                    help="comma-separated parts to run: benign (the stdio soak), stdio and http (the hostile mix)")
    args = ap.parse_args()
    parts = [p for p in args.parts.split(",") if p]
    if not parts or set(parts) - set(PARTS):
        ap.error(f"--parts takes a comma-separated subset of {','.join(PARTS)}")
    # A terminated soak still stops its servers and children (the finally below).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    seed = args.seed if args.seed is not None else random.randrange(1 << 32)
    rng = random.Random(seed)
    total = args.minutes * 60
    warmup = min(max(20.0, total * 0.2), 120.0)
    log(f"seed {seed}, {args.minutes} min ({warmup:.0f} s warm-up), concurrency {args.concurrency}, "
        f"parts {','.join(parts)}")

    binary = args.binary
    if binary is None:
        subprocess.run(["cargo", "build", "--release", "--locked"], cwd=REPO, check=True)
        binary = os.path.join(REPO, "target/release/lean-beam-mcp")
    lean = args.lean or subprocess.run([os.path.join(REPO, "scripts/install-test-lean.sh")],
                                       check=True, capture_output=True, text=True).stdout.strip()

    def build(root):
        subprocess.run([os.path.join(REPO, "scripts/build-fixtures.sh"), root], check=True,
                       env=dict(os.environ, LEAN=lean), stderr=subprocess.DEVNULL)

    # With several parts, each hostile part runs in a process of its own (this
    # script with --parts <part>): its own interpreter lock, so that the
    # client work of one part never shows as server latency in another.
    children = []
    local = parts
    if len(parts) > 1:
        local = [p for p in parts if p == "benign"]
        for part in parts:
            if part == "benign":
                continue
            out = tempfile.TemporaryFile(mode="w+")
            cmd = [sys.executable, os.path.abspath(__file__), "--parts", part, "--seed", str(seed),
                   "--minutes", str(args.minutes), "--binary", binary, "--lean", lean]
            children.append((part, subprocess.Popen(cmd, stdout=out), out))
    census = soak_hostile.Census()
    census.start()
    base = os.path.realpath(tempfile.mkdtemp(prefix="lean-beam-soak-"))
    hostile, threads = [], []
    try:
        transports = [p for p in local if p != "benign"]
        if transports:
            sys.setswitchinterval(0.001)  # hand the interpreter lock over promptly (probe latency)
            hostile, threads = soak_hostile.start_all(
                transports, binary, lean, WORKSPACES,
                lambda src, dst: copy_workspace(os.path.join(REPO, src), dst), build, seed, total, census)
        ok = True
        if "benign" in local:
            ok = benign(binary, lean, base, rng, args.concurrency, total, warmup, build, census)
        for thread in threads:
            thread.join()
        for run_ in hostile:
            ok = run_.report() and ok
            if run_.tally.failures:
                with open(run_.peer.stderr_path, "rb") as f:
                    log(f"hostile {run_.transport} server stderr tail:\n" + f.read()[-3000:].decode(errors="replace"))
        for part, child, out in children:
            status = child.wait()
            out.seek(0)
            sys.stdout.write(out.read())
            out.close()
            ok = status == 0 and ok
        label = "soak" if len(parts) > 1 else f"soak ({parts[0]})"
        print(f"{label}: {'PASS' if ok else 'FAIL'} (seed {seed})")
        return 0 if ok else 1
    finally:
        for part, child, out in children:
            if child.poll() is None:
                child.terminate()
                child.wait()
        census.stop()
        soak_hostile.cleanup(hostile)
        shutil.rmtree(base, ignore_errors=True)


def benign(binary, lean, base, rng, concurrency, total, warmup, build, census):
    """The stdio soak of the ordinary mix (the checks of this file's header)."""
    wss = []
    for name in WORKSPACES:
        root = os.path.join(base, name)
        copy_workspace(os.path.join(REPO, WORKSPACES[name][0]), root)
        build(root)
        ws = Workspace(name, root)
        ws.write_soak(rng)
        wss.append(ws)
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEAN_BEAM_")}
    env.update(LEAN_BEAM_LEAN=lean, LEAN_BEAM_LOG="warn")
    server = Server(binary, env, os.path.join(base, "server.stderr"))
    census.watch(server.pid)
    soak = Soak(server, wss, rng, concurrency, base)
    ok = run(soak, server, base, total, warmup)
    peaks = census.figures(server.pid)
    print(f"  sampled peaks         RSS {peaks['hwm_kb'] // 1024} MiB, {peaks['fds']} fds, "
          f"{peaks['lsp']} Lean language-server processes, {peaks['compilers']} batch compilers "
          f"({peaks['samples']} samples)")
    server.close()
    if server.proc.returncode != 0:
        soak.fail(f"server exit status {server.proc.returncode}")
        ok = False
    leftover = processes_under(base)
    if leftover:
        soak.fail(f"processes left after shutdown: {leftover}")
        ok = False
    if not ok:
        with open(os.path.join(base, "server.stderr"), "rb") as f:
            tail = f.read()[-4000:].decode(errors="replace")
        log("server stderr tail:\n" + tail)
    print(f"benign stdio soak: {'PASS' if ok else 'FAIL'}")
    return ok


def run(soak, server, base, total, warmup):
    pid = server.pid
    start = time.monotonic()
    samples = []  # (t, rss_kb)

    def sample():
        samples.append((time.monotonic() - start, rss_kb(pid)))

    # Warm-up: the same mix, then a normalized quiescent point.
    t = 0.0
    while t < warmup:
        soak.drive(min(5.0, warmup - t))
        sample()
        t = time.monotonic() - start
    soak.normalize()
    fd0, procs0, rss0 = soak_hostile.fd_count(pid), len(processes_under(base)), rss_kb(pid)
    t_warm = time.monotonic() - start
    log(f"warm at {t_warm:.0f} s: RSS {rss0} KiB, {fd0} fds, {procs0} Lean processes")
    while time.monotonic() - start < total:
        soak.drive(min(5.0, total - (time.monotonic() - start)))
        sample()
    soak.normalize()
    fd1, procs1, rss1 = soak_hostile.fd_count(pid), len(processes_under(base)), rss_kb(pid)
    elapsed = time.monotonic() - start

    after = [r for (t, r) in samples if t >= t_warm]
    late = after[-max(1, len(after) // 5):]
    early = after[:max(1, len(after) // 5)]
    base_rss = max(min(early), rss0) if early else rss0
    growth = (max(late) - base_rss) / base_rss if late else 0.0
    answered = sum(soak.answers.values())
    cancelled = len(soak.cancelled)
    print("soak figures:")
    print(f"  duration              {elapsed:.0f} s (warm-up {t_warm:.0f} s), seed-driven mix of {len(soak.by_tool)} tools")
    print(f"  requests              {soak.next_id} sent, {answered} answers, {cancelled} cancelled, "
          f"{soak.notifications} notifications")
    print(f"  per tool              {dict(sorted(soak.by_tool.items()))}")
    print(f"  outcomes              {dict(sorted(soak.codes.items()))}")
    print(f"  progress updates      {soak.progress} (none after its response)")
    print(f"  error examples        {json.dumps(soak.examples, indent=None)[:3000]}")
    print(f"  Soak.lean syncs       {soak.soak_checks} checked, {soak.latest_checks} unraced (exactly the latest edit)")
    print(f"  server RSS            warm {base_rss} KiB, late max {max(late) if late else 0} KiB, "
          f"end {rss1} KiB, growth {growth * 100:.1f} % (limit 10 %)")
    print(f"  open fds              {fd0} after warm-up, {fd1} at the end")
    print(f"  Lean processes        {procs0} after warm-up, {procs1} at the end (normalized)")
    ok = not soak.failures
    if growth >= 0.10:
        soak.fail(f"RSS grew {growth * 100:.1f} %")
        ok = False
    if fd1 > fd0:
        soak.fail(f"open fds grew from {fd0} to {fd1}")
        ok = False
    if procs1 != procs0:
        soak.fail(f"Lean processes {procs0} -> {procs1}")
        ok = False
    # Every non-cancelled request answered exactly once.
    for rid in range(1, soak.next_id + 1):
        n = soak.answers.get(rid, 0)
        if rid in soak.cancelled:
            if n > 1:
                soak.fail(f"cancelled request {rid} answered {n} times")
                ok = False
        elif n != 1:
            soak.fail(f"request {rid} answered {n} times")
            ok = False
    return ok


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Failure as e:
        log("FAIL:", e)
        sys.exit(1)
