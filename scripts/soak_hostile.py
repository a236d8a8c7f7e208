"""The hostile half of scripts/soak.py: one server over stdio and one over
`--http` on loopback (with a bearer token), each started with its limits set
low, driven by a careless and hostile client for the length of the soak.

Each transport runs a *tour* first (every hostile act once, alone, with an
exact expected outcome, so that every bound is hit on every run), then a
*mix* until the deadline: worker threads picking seeded-random acts, and
every few seconds an act that needs the server to itself (cap hits, id
reuse, connection floods, session caps) run alone. Throughout, a probe sends
`beam_version` every 0.25 s and a census samples the server's file
descriptors and `lean` processes every 50 ms.

The acts: ordinary Lean calls over more workspaces and documents than the
limits allow (evictions), every runtime or document busy (resourceLimit),
more proof handles than LEAN_BEAM_MAX_HANDLES (evictions) and one past
LEAN_BEAM_MAX_HANDLE_BYTES (resourceLimit),
evidence floods on beam_feedback_report (40 items: /dev/zero,
/proc/self/environ, paths outside the root, a link out of it, FIFOs, a file
past the per-item cap), FIFO paths as documents and as the lakefile, a
synced document replaced by a FIFO, source files past LEAN_BEAM_MAX_FILE_BYTES,
malformed requests (fresh ids, no id, an 8 MiB+ line, ids of calls in
flight), cancellations; over HTTP also requests without or with a wrong
token, slow request bodies, declared bodies past the limit, connection
floods past the cap, more sessions than the cap, abandoned responses.

Checked, per transport: every request gets exactly one answer (a cancelled
one at most one; a request reusing an active id none), every HTTP request a
status; `beam_version` is answered throughout and never stalls, judged
against a control measured in the same run (no absolute time: the machine may
be loaded by anything): the same probe thread asks, interleaved, the same
binary started idle over the same transport, which shares the machine's load
but not the hostile work; the hostile server fails on any answer an order of
magnitude (10x) slower than the control's slowest (see PROBE_STALL_FACTOR);
no internal error,
no JSON-RPC error for a well-formed call, no 5xx but the connection cap's
503; the Lean language-server processes never exceed
MAX_RUNTIMES x (1 + MAX_DOCUMENTS) and the batch compilers never exceed
MAX_RUNTIMES + MAX_IN_FLIGHT; the server's file descriptors and peak RSS stay
under stated bounds; every bound was hit; the server exits 0 on EOF/SIGTERM
and leaves no process behind.
"""
import collections
import http.client
import json
import os
import queue
import re
import select
import shutil
import signal
import socket
import subprocess
import threading
import time
import traceback

import mcpmeta

MODERN = mcpmeta.MODERN
LEGACY = "2025-11-25"
META = mcpmeta.modern_meta("soak-hostile")

# The server's limits, set low so that each is hit.
LIMITS = {
    "LEAN_BEAM_MAX_RUNTIMES": 2,
    "LEAN_BEAM_MAX_DOCUMENTS": 2,
    "LEAN_BEAM_MAX_FILE_BYTES": 65536,
    "LEAN_BEAM_MAX_HANDLES": 4,
    "LEAN_BEAM_MAX_HANDLE_BYTES": 16384,
    "LEAN_BEAM_MAX_IN_FLIGHT": 6,
    "LEAN_BEAM_RUNTIME_IDLE_SECS": 20,
    "LEAN_BEAM_SHADOW_IDLE_SECS": 10,
}
HTTP_LIMITS = {
    "--max-connections": 16,
    "--body-timeout-secs": 3,
    "--max-body-bytes": 262144,
    "--max-sessions": 4,
    "--max-in-flight-per-client": 2,
}
R, D = LIMITS["LEAN_BEAM_MAX_RUNTIMES"], LIMITS["LEAN_BEAM_MAX_DOCUMENTS"]
MAX_LSP = R * (1 + D)
MAX_COMPILERS = R + LIMITS["LEAN_BEAM_MAX_IN_FLIGHT"]
# Stated bounds on the server process (measured figures are far below; the
# evidence flood alone took 571 MiB before the evidence caps).
RSS_BOUND_MIB = 256
FD_SLACK = 64          # over the descriptors of the idle server
MAX_REFUSING = 64      # evicted connections being answered 503 at once (src/http/mod.rs)
PROBE_PERIOD = 0.25
# A stall: a beam_version answer over this many times the control's slowest
# (the idle server probed alongside, see Probe.judge).
PROBE_STALL_FACTOR = 10.0
PROBE_WAIT = 30.0      # a probe not answered within this is unanswered (a hang guard, not a bound)
WORKERS = 4
EXCLUSIVE_EVERY = 8.0  # seconds between acts that need the server alone

EVIDENCE_SOURCES = ["/dev/zero", "/proc/self/environ", "/proc/self/fd/0", "../outside/secret.txt",
                    "link.txt", "evidence.fifo", "/etc/passwd", "big.txt", ".", "missing.txt"]
SECRET = "soak-outside-secret-7f3a"        # in a file outside the root
ENV_SECRET = "soak-environ-secret-91c2"    # in the server's environment


def log(*args):
    print("soak:", *args, file=__import__("sys").stderr, flush=True)


def end_server(proc, stderr, timeout, eof=False):
    """Waits `timeout` s for the server `proc` to exit (after closing its stdin
    first, with `eof`), killing it if it does not, then closes its `stderr`;
    returns whether it exited in time."""
    if eof:
        try:
            proc.stdin.close()
        except OSError:
            pass
    in_time = True
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        in_time = False
        proc.kill()
        proc.wait()
    stderr.close()
    return in_time


def payload(result):
    """A result's JSON: a success's structuredContent, an error's text block
    (its only form)."""
    if result.get("isError"):
        return json.loads(result["content"][0]["text"])
    return result.get("structuredContent") or {}


def tool_kind(message):
    """The outcome of a JSON-RPC answer to tools/call, as a short kind."""
    if "error" in message:
        return f"rpc:{message['error'].get('code')}"
    result = message.get("result") or {}
    if not result.get("isError"):
        return "ok"
    content = payload(result)
    code, data = content.get("code"), content.get("data") or {}
    if code == "resourceLimit":
        return f"tool:resourceLimit/{data.get('kind')}"
    reason = data.get("reason")
    if isinstance(reason, str) and re.fullmatch(r"[A-Za-z]+", reason):
        return f"tool:{code}/{reason}"
    return f"tool:{code}"


class Outcome:
    def __init__(self, kind, message=None, status=None, elapsed=0.0):
        self.kind, self.message, self.status, self.elapsed = kind, message, status, elapsed

    @property
    def content(self):
        return payload((self.message or {}).get("result") or {})

    def __repr__(self):
        return f"<{self.kind} {json.dumps(self.content)[:300]}>"


# --------------------------------------------------------------------------
# The census: fds and Lean processes of each watched server, every 50 ms.
# --------------------------------------------------------------------------

def read_status(pid, field):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


class Census(threading.Thread):
    """Samples, every `interval`, each watched server's open descriptors and
    its `lean` processes: language-server processes (marked with the server's
    LEAN_BEAM_LSP_TREE token, so re-parented workers count) and batch
    compilers (its `lean` children without the mark). Peak RSS is the
    kernel's high-water mark (VmHWM), read at each sample."""

    def __init__(self, interval=0.05):
        super().__init__(daemon=True)
        self.interval = interval
        self.lock = threading.Lock()
        self.watched = {}  # pid -> figures
        self.stopping = threading.Event()
        self.samples = 0

    def watch(self, pid, lsp_bound=None):
        """Watch server `pid`; past `lsp_bound` language-server processes,
        the first few samples are kept whole (for the report)."""
        with self.lock:
            self.watched[pid] = {"fds": 0, "fds_at_start": fd_count(pid), "lsp": 0, "compilers": 0,
                                 "lean": 0, "hwm_kb": 0, "samples": 0, "lsp_bound": lsp_bound,
                                 "over": []}

    def figures(self, pid):
        with self.lock:
            return dict(self.watched[pid], over=list(self.watched[pid]["over"]))

    def run(self):
        while not self.stopping.wait(self.interval):
            self.sample()

    def sample(self):
        with self.lock:
            pids = list(self.watched)
        if not pids:
            return
        marks = {pid: f"LEAN_BEAM_LSP_TREE={pid}-".encode() for pid in pids}
        lsp, compilers = collections.Counter(), collections.Counter()
        seen = collections.defaultdict(list)  # server pid -> (tree token, pid, ppid, state, argv)
        found = []  # (entry, its cmdline as read, what it counts as)
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    cmdline = f.read()
                argv0 = cmdline.split(b"\0", 1)[0]
                if os.path.basename(argv0) != b"lean":
                    continue
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                if fields[0] in ("Z", "X"):
                    continue
                ppid = int(fields[1])
                with open(f"/proc/{entry}/environ", "rb") as f:
                    environ = f.read()
            except (OSError, IndexError, ValueError):
                continue
            argv = cmdline.replace(b"\0", b" ")[:160].decode(errors="replace")
            owner = next((pid for pid, mark in marks.items() if mark in environ), None)
            if owner is not None:
                token = environ.split(marks[owner], 1)[1].split(b"\0", 1)[0].decode()
                found.append((entry, cmdline, ("lsp", owner, (token, int(entry), ppid, fields[0], argv))))
            elif ppid in marks:
                found.append((entry, cmdline, ("compiler", ppid, None)))
        # One scan of /proc is not one instant: a worker read early in it can
        # be gone before its successor (a higher pid) is read. Only processes
        # still there, running the same command line, once the scan ends were
        # there together (each from its reading until then).
        for entry, cmdline, (kind, owner, row) in found:
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    if f.read() != cmdline:
                        continue
            except OSError:
                continue
            if kind == "lsp":
                lsp[owner] += 1
                seen[owner].append(row)
            else:
                compilers[owner] += 1
        with self.lock:
            for pid in pids:
                fig = self.watched[pid]
                try:
                    fig["fds"] = max(fig["fds"], fd_count(pid))
                except OSError:
                    continue
                fig["lsp"] = max(fig["lsp"], lsp[pid])
                if fig["lsp_bound"] is not None and lsp[pid] > fig["lsp_bound"] and len(fig["over"]) < 5:
                    fig["over"].append((time.monotonic(), sorted(seen[pid])))
                fig["compilers"] = max(fig["compilers"], compilers[pid])
                fig["lean"] = max(fig["lean"], lsp[pid] + compilers[pid])
                fig["hwm_kb"] = max(fig["hwm_kb"], read_status(pid, "VmHWM"))
                fig["samples"] += 1
            self.samples += 1

    def stop(self):
        self.stopping.set()
        self.join()


def fd_count(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def live_processes():
    """The pids in /proc of the processes that are not zombies (nor dead)."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X"):
                    continue
        except (OSError, IndexError):
            continue
        yield int(entry)


def lean_processes_of(pid):
    """Live `lean` processes carrying the LSP tree mark of server `pid`."""
    mark = f"LEAN_BEAM_LSP_TREE={pid}-".encode()
    found = []
    for live in live_processes():
        try:
            with open(f"/proc/{live}/environ", "rb") as f:
                if mark in f.read():
                    found.append(live)
        except OSError:
            continue
    return found


# --------------------------------------------------------------------------
# Tally: what was sent and answered, by kind.
# --------------------------------------------------------------------------

class Tally:
    def __init__(self, name):
        self.name = name
        self.lock = threading.Lock()
        self.kinds = collections.Counter()      # outcome kinds (tool codes, rpc codes, HTTP statuses)
        self.acts = collections.Counter()       # hostile acts run
        self.examples = {}
        self.failures = []
        self.served = 0                         # answers (stdio) or statuses (HTTP) received

    def count(self, kind, example=None):
        with self.lock:
            self.kinds[kind] += 1
            if example is not None and kind not in self.examples:
                self.examples[kind] = example[:200]

    def act(self, name):
        with self.lock:
            self.acts[name] += 1

    def fail(self, message):
        with self.lock:
            self.failures.append(message[:1000])
        log(f"FAIL [{self.name}]:", message)


# --------------------------------------------------------------------------
# Workspaces of the hostile mix
# --------------------------------------------------------------------------

class Fixtures:
    """Temp copies: a and d (basic), b (second), c (demo) are more roots than
    MAX_RUNTIMES; `lake` has a FIFO lakefile.lean; a holds the hostile files."""

    def __init__(self, base, table, copy, build):
        self.base = base
        self.roots = {}
        self.main = {}
        self.pos = {}
        for name, fixture in (("a", "basic"), ("b", "second"), ("c", "demo"), ("d", "basic"),
                              ("lake", "second")):
            src, _module, _ns, _ty, main, pos = table[fixture]
            root = os.path.join(base, "ws", name)
            copy(src, root)
            build(root)
            self.roots[name], self.main[name], self.pos[name] = root, main, pos
        os.mkfifo(os.path.join(self.roots["lake"], "lakefile.lean"))
        outside = os.path.join(base, "ws", "outside")
        os.makedirs(outside)
        with open(os.path.join(outside, "secret.txt"), "w") as f:
            f.write(SECRET + "\n")
        a = self.roots["a"]
        os.mkfifo(os.path.join(a, "Fifo.lean"))
        os.mkfifo(os.path.join(a, "evidence.fifo"))
        os.symlink(os.path.join(outside, "secret.txt"), os.path.join(a, "link.txt"))
        with open(os.path.join(a, "big.txt"), "w") as f:
            f.write("0123456789abcdef" * (300 * 64))  # 300 KiB, past the 256 KiB item cap
        with open(os.path.join(a, "Big.lean"), "w") as f:
            f.write("prelude\n" + "-- padding\n" * (LIMITS["LEAN_BEAM_MAX_FILE_BYTES"] // 10 + 100))
        # The main document of a with 20 KiB of comment after it: the same
        # positions, but its text alone is past LEAN_BEAM_MAX_HANDLE_BYTES.
        with open(os.path.join(a, self.main["a"])) as f:
            main = f.read()
        self.handle_big = os.path.join(os.path.dirname(self.main["a"]), "HandleBig.lean")
        with open(os.path.join(a, self.handle_big), "w") as f:
            f.write(main + "\n/-\n" + "-- padding\n" * 2048 + "-/\n")
        self.serial = 0
        self.serial_lock = threading.Lock()

    def next_serial(self):
        with self.serial_lock:
            self.serial += 1
            return self.serial

    def ws(self, name):
        return {"root": self.roots[name]}

    def write_hold(self, ms):
        """A fresh document in a whose elaboration sleeps `ms` (a new name and
        theorem each time: never elaborated before)."""
        n = self.next_serial()
        path = f"Hold{n}.lean"
        with open(os.path.join(self.roots["a"], path), "w") as f:
            f.write(f"prelude\nimport Fix.Basic\nnamespace Fix\ntheorem held{n} : Eq one one := by\n"
                    f"  sleep {ms}\n  exact Eq.refl one\nend Fix\n")
        return path

    def remove(self, name, path):
        try:
            os.unlink(os.path.join(self.roots[name], path))
        except FileNotFoundError:
            pass


# --------------------------------------------------------------------------
# Peers: the stdio stream and the HTTP endpoint
# --------------------------------------------------------------------------

class StdioPeer:
    """One stdio stream shared by every thread: requests are matched to
    answers by id; every id's answers are counted."""
    transport = "stdio"

    def __init__(self, binary, env, stderr_path, tally):
        self.tally = tally
        self.stderr_path = stderr_path
        self.stderr = open(stderr_path, "wb")
        # Answers of several MiB (evidence floods) are read in large pieces:
        # with the default 8 KiB, each of hundreds of reads waits for the GIL,
        # and the probe's answer queued behind them would measure the client.
        self.proc = subprocess.Popen([binary], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.stderr, env=env, bufsize=1 << 20)
        widen_pipe(self.proc.stdout)
        widen_pipe(self.proc.stdin)
        self.lock = threading.Lock()
        self.write_lock = threading.Lock()
        self.next_id = 0
        self.waiters = {}                       # id -> queue of answers
        self.answers = collections.Counter()    # id -> answers received
        self.expect = {}                        # id -> "one" | "at_most_one"
        self.null_answers = 0
        self.null_expected = 0
        self.closed = threading.Event()
        self.notifications = 0
        self.progress = {}                      # progress token -> queue of messages
        threading.Thread(target=self._read, daemon=True).start()

    @property
    def pid(self):
        return self.proc.pid

    ANSWER = re.compile(rb'\{"jsonrpc":"2\.0","id":(null|-?\d+|"[^"\\]*")[,}]')

    def _read(self):
        """Routes each line by the id at its start (the server writes
        `{"jsonrpc":"2.0","id":` first); the waiting thread parses it, so
        that a probe's answer never queues behind the parsing of a
        multi-MiB one."""
        for line in self.proc.stdout:
            head = self.ANSWER.match(line)
            if head is None:
                try:
                    message = json.loads(line)
                except ValueError:
                    self.tally.fail(f"a line on stdout that is not JSON: {line[:200]!r}")
                    continue
                if "method" in message:
                    with self.lock:
                        self.notifications += 1
                        token = (message.get("params") or {}).get("progressToken")
                        route = self.progress.get(token)
                    if route is not None:
                        route.put(message)
                    continue
                rid = message.get("id")
            else:
                rid = json.loads(head.group(1))
                message = line
            with self.lock:
                self.tally.served += 1
                if rid is None:
                    self.null_answers += 1
                    continue
                self.answers[rid] += 1
                waiter = self.waiters.get(rid)
            if rid not in self.expect:
                self.tally.fail(f"an answer to id {rid}, which was never asked: {json.dumps(message)[:300]}")
            if waiter is not None:
                waiter.put(message)
        self.closed.set()
        with self.lock:
            for waiter in self.waiters.values():
                waiter.put(None)

    def new_id(self):
        with self.lock:
            self.next_id += 1
            rid = self.next_id
            self.waiters[rid] = queue.Queue()
            self.expect[rid] = "one"
            return rid

    def send(self, data):
        with self.write_lock:
            self.proc.stdin.write(data)
            self.proc.stdin.flush()

    def send_json(self, message):
        self.send((json.dumps(message) + "\n").encode())

    def wait(self, rid, limit):
        try:
            message = self.waiters[rid].get(timeout=limit)
        except queue.Empty:
            return None
        return json.loads(message) if isinstance(message, bytes) else message

    def call(self, tool, args, limit=180, progress=False):
        rid = self.new_id()
        meta = dict(META)
        if progress:
            meta["progressToken"] = f"p{rid}"
        start = time.monotonic()
        self.send_json({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                        "params": {"name": tool, "arguments": args, "_meta": meta}})
        message = self.wait(rid, limit)
        if message is None:
            self.tally.fail(f"{tool} (id {rid}) unanswered after {limit} s")
            return Outcome("unanswered")
        outcome = Outcome(tool_kind(message), message, elapsed=time.monotonic() - start)
        self.tally.count(outcome.kind, json.dumps(outcome.content.get("message") or "")[1:-1])
        return outcome

    def start(self, tool, args):
        """A call whose progress the caller follows: a StdioCall."""
        rid = self.new_id()
        token = f"s{rid}"
        with self.lock:
            self.progress[token] = queue.Queue()
        self.send_json({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                        "params": {"name": tool, "arguments": args, "_meta": dict(META, progressToken=token)}})
        return StdioCall(self, rid, token, tool)

    def cancel(self, rid):
        with self.lock:
            self.expect[rid] = "at_most_one"
        self.send_json({"jsonrpc": "2.0", "method": "notifications/cancelled",
                        "params": {"requestId": rid, "reason": "soak"}})

    def drain(self, limit=180):
        """Wait until every request expected to answer has; the ids still unanswered."""
        deadline = time.monotonic() + limit
        while True:
            with self.lock:
                missing = [r for r, e in self.expect.items() if e == "one" and self.answers[r] == 0]
            if not missing or time.monotonic() > deadline or self.closed.is_set():
                return missing
            time.sleep(0.1)

    def check_answers(self):
        with self.lock:
            for rid, expect in sorted(self.expect.items()):
                n = self.answers[rid]
                if expect == "one" and n != 1:
                    self.tally.fail(f"request {rid} answered {n} times")
                elif expect == "at_most_one" and n > 1:
                    self.tally.fail(f"cancelled request {rid} answered {n} times")
            if self.null_answers != self.null_expected:
                self.tally.fail(f"{self.null_answers} answers with a null id, {self.null_expected} expected "
                                f"(one per unparseable or oversized line)")

    def close(self):
        if not end_server(self.proc, self.stderr, 90, eof=True):
            self.tally.fail("the server did not exit within 90 s of EOF")
        return self.proc.returncode


class StdioCall:
    def __init__(self, peer, rid, token, tool):
        self.peer, self.rid, self.token, self.tool = peer, rid, token, tool

    def progress_until(self, needle, limit):
        """Wait for a progress message containing `needle`: True, or False
        when the call answered first or `limit` passed."""
        deadline = time.monotonic() + limit
        route = self.peer.progress[self.token]
        while time.monotonic() < deadline:
            if self.peer.answers[self.rid]:
                return False
            try:
                message = route.get(timeout=0.1)
            except queue.Empty:
                continue
            if needle in (message.get("params") or {}).get("message", ""):
                return True
        return False

    def result(self, limit=180):
        message = self.peer.wait(self.rid, limit)
        with self.peer.lock:
            self.peer.progress.pop(self.token, None)
        if message is None:
            self.peer.tally.fail(f"{self.tool} (id {self.rid}) unanswered after {limit} s")
            return Outcome("unanswered")
        outcome = Outcome(tool_kind(message), message)
        self.peer.tally.count(outcome.kind)
        return outcome


class HttpCall:
    """A modern call whose SSE stream the caller reads as it comes."""

    def __init__(self, peer, rid, tool, conn, response):
        self.peer, self.rid, self.tool, self.conn, self.response = peer, rid, tool, conn, response
        self.answer = None
        self.buffer = b""

    def events(self):
        """The stream's messages, one at a time (blocking)."""
        if not self.response.getheader("content-type", "").startswith("text/event-stream"):
            payload = self.response.read()
            if payload:
                yield json.loads(payload)
            return
        data = []
        while True:
            line = self.response.readline()
            if not line:
                return
            line = line.rstrip(b"\r\n")
            if line.startswith(b"data:"):
                data.append(line[5:].lstrip())
            elif not line and data:
                yield json.loads(b"\n".join(data))
                data = []

    def progress_until(self, needle, limit):
        self.conn.sock.settimeout(limit)
        try:
            for message in self.events():
                if "method" not in message:
                    self.answer = message
                    return False
                if needle in (message.get("params") or {}).get("message", ""):
                    return True
        except (OSError, http.client.HTTPException):
            return False
        return False

    def result(self, limit=180):
        self.conn.sock.settimeout(limit) if self.conn.sock else None
        try:
            if self.answer is None:
                for message in self.events():
                    if "method" not in message:
                        if self.answer is not None:
                            self.peer.tally.fail(f"{self.tool} (id {self.rid}) answered twice")
                        self.answer = message
        except (OSError, http.client.HTTPException) as e:
            self.peer.tally.fail(f"{self.tool} (id {self.rid}): the stream broke ({e!r})")
        finally:
            self.conn.close()
        if self.answer is None:
            self.peer.tally.fail(f"{self.tool} (id {self.rid}): the stream ended without an answer")
            return Outcome("unanswered")
        outcome = Outcome(tool_kind(self.answer), self.answer, 200)
        self.peer.tally.count(outcome.kind)
        return outcome


def widen_pipe(pipe):
    """Give a pipe 1 MiB of buffer where the system allows (Linux)."""
    try:
        import fcntl
        fcntl.fcntl(pipe.fileno(), getattr(fcntl, "F_SETPIPE_SZ", 1031), 1 << 20)
    except OSError:
        pass


def parse_sse(data):
    messages = []
    for event in data.decode(errors="replace").split("\n\n"):
        payload = "\n".join(line[5:].lstrip() for line in event.split("\n") if line.startswith("data:"))
        if payload:
            messages.append(json.loads(payload))
    return messages


class HttpPeer:
    """The `--http` server on loopback: one fresh connection per request (a
    kept-alive idle connection is closed by the server's header time limit),
    every request's status counted."""
    transport = "http"

    def __init__(self, binary, env, stderr_path, tally, token_file, token):
        self.tally = tally
        self.token = token
        self.stderr_path = stderr_path
        self.stderr = open(stderr_path, "wb")
        args = [binary, "--http", "127.0.0.1:0", "--http-token-file", token_file]
        for flag, value in HTTP_LIMITS.items():
            args += [flag, str(value)]
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=self.stderr, env=env)
        self.port = None
        deadline = time.monotonic() + 60
        while self.port is None:
            with open(stderr_path, "rb") as f:
                found = re.search(rb"listening on http://127\.0\.0\.1:(\d+)/mcp", f.read())
            if found:
                self.port = int(found.group(1))
            elif self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the HTTP server did not start (exit {self.proc.poll()})")
            else:
                time.sleep(0.05)
        self.host = f"127.0.0.1:{self.port}"
        self.lock = threading.Lock()
        self.next_id = 0
        self.requests = 0
        self.no_status = 0

    @property
    def pid(self):
        return self.proc.pid

    def new_id(self):
        with self.lock:
            self.next_id += 1
            return self.next_id

    def headers(self, extra=None, token=True):
        h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        if token:
            h["Authorization"] = f"Bearer {self.token}"
        h.update(extra or {})
        return h

    def record(self, status, kind=None, example=None):
        with self.lock:
            self.requests += 1
            if status is None:
                self.no_status += 1
            else:
                self.tally.served += 1
        if status is not None and status != 200:
            self.tally.count(kind or f"http:{status}", example)

    def exchange(self, method, path, body=None, headers=None, limit=180):
        """One request on a fresh connection: (status, headers, body), or
        None (counted as a failure) when no status came."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=limit)
        try:
            data = body if isinstance(body, (bytes, type(None))) else json.dumps(body).encode()
            conn.request(method, path, data, headers or {})
            response = conn.getresponse()
            payload = response.read()
            return response.status, response, payload
        except (OSError, http.client.HTTPException) as e:
            self.record(None)
            self.tally.fail(f"{method} {path}: no HTTP status ({e!r})")
            return None
        finally:
            conn.close()

    def answer_of(self, status, response, payload, rid):
        """The JSON-RPC answer to `rid` in a JSON or SSE body (None when the
        stream ended without one); a second answer is a failure."""
        if response.getheader("content-type", "").startswith("text/event-stream"):
            answers = [m for m in parse_sse(payload) if "id" in m and "method" not in m]
        else:
            answers = [json.loads(payload)] if payload else []
        if len(answers) > 1:
            self.tally.fail(f"request {rid} answered {len(answers)} times in one response")
        for a in answers:
            if a.get("id") not in (rid, None):
                self.tally.fail(f"request {rid} got the answer of {a.get('id')}")
        return answers[0] if answers else None

    def modern_headers(self, tool, method="tools/call", token=True):
        return self.headers({"MCP-Protocol-Version": MODERN, "Mcp-Method": method, "Mcp-Name": tool}, token)

    def call(self, tool, args, limit=180, progress=False):
        rid = self.new_id()
        meta = dict(META)
        if progress:
            meta["progressToken"] = f"p{rid}"
        body = {"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                "params": {"name": tool, "arguments": args, "_meta": meta}}
        start = time.monotonic()
        got = self.exchange("POST", "/mcp", body, self.modern_headers(tool), limit)
        if got is None:
            return Outcome("no-status")
        status, response, payload = got
        elapsed = time.monotonic() - start
        message = self.answer_of(status, response, payload, rid) if payload else None
        if status != 200:
            kind = f"http:{status}"
            self.record(status, kind, payload.decode(errors="replace"))
            return Outcome(kind, message, status, elapsed)
        self.record(status)
        if message is None:
            self.tally.fail(f"{tool} (id {rid}): 200 without an answer")
            return Outcome("unanswered", None, status, elapsed)
        outcome = Outcome(tool_kind(message), message, status, elapsed)
        self.tally.count(outcome.kind, json.dumps(outcome.content.get("message") or "")[1:-1])
        return outcome

    def start(self, tool, args):
        """A modern call with a progress token, its response read as it
        comes: an HttpCall (None, counted, when no status came)."""
        rid = self.new_id()
        body = {"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                "params": {"name": tool, "arguments": args, "_meta": dict(META, progressToken=f"h{rid}")}}
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=180)
        try:
            conn.request("POST", "/mcp", json.dumps(body).encode(), self.modern_headers(tool))
            response = conn.getresponse()
        except (OSError, http.client.HTTPException) as e:
            conn.close()
            self.record(None)
            self.tally.fail(f"{tool}: no HTTP status ({e!r})")
            return None
        self.record(response.status)
        if response.status != 200:
            self.tally.fail(f"{tool}: HTTP {response.status}")
        return HttpCall(self, rid, tool, conn, response)

    # -- legacy sessions ------------------------------------------------
    def legacy_session(self):
        """A 2025-11-25 session (initialize, then initialized): its id, or None."""
        init = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
                "params": {"protocolVersion": LEGACY, "capabilities": {},
                           "clientInfo": {"name": "soak-hostile", "version": "1"}}}
        got = self.exchange("POST", "/mcp", init, self.headers())
        if got is None:
            return None
        status, response, payload = got
        self.record(status, example=payload.decode(errors="replace"))
        sid = response.getheader("mcp-session-id")
        if status != 200 or not sid:
            return None
        got = self.exchange("POST", "/mcp", {"jsonrpc": "2.0", "method": "notifications/initialized"},
                            self.legacy_headers(sid))
        if got is not None:
            self.record(got[0], example=got[2].decode(errors="replace"))
        return sid

    def legacy_headers(self, sid):
        return self.headers({"Mcp-Session-Id": sid, "MCP-Protocol-Version": LEGACY})

    def legacy_post(self, sid, message):
        got = self.exchange("POST", "/mcp", message, self.legacy_headers(sid))
        if got is not None:
            self.record(got[0], example=got[2].decode(errors="replace"))
        return got

    def end_session(self, sid):
        got = self.exchange("DELETE", "/mcp", None, self.legacy_headers(sid))
        if got is not None:
            self.record(got[0], example=got[2].decode(errors="replace"))
        return got[0] if got else None

    # -- raw sockets ----------------------------------------------------
    def raw(self):
        s = socket.create_connection(("127.0.0.1", self.port), timeout=30)
        s.setblocking(False)
        return s

    def slow_head(self, declared):
        return (f"POST /mcp HTTP/1.1\r\nHost: {self.host}\r\nAuthorization: Bearer {self.token}\r\n"
                f"Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
                f"MCP-Protocol-Version: {MODERN}\r\nContent-Length: {declared}\r\n\r\n{{").encode()

    def statuses(self, socks, trickle, limit):
        """Trickle a byte every 0.3 s into the sockets of `trickle` until each
        socket has a status line (or `limit` passes): {socket: status or None}."""
        got = {s: None for s in socks}
        buffers = {s: b"" for s in socks}
        deadline = time.monotonic() + limit
        next_drip = time.monotonic() + 0.3
        while any(v is None for v in got.values()) and time.monotonic() < deadline:
            waiting = [s for s, v in got.items() if v is None]
            readable, _, _ = select.select(waiting, [], [], max(0.0, min(next_drip, deadline) - time.monotonic()))
            for s in readable:
                try:
                    chunk = s.recv(4096)
                except BlockingIOError:
                    continue
                except OSError:
                    chunk = b""
                buffers[s] += chunk
                line = buffers[s].split(b"\r\n", 1)[0]
                if b"\r\n" in buffers[s]:
                    got[s] = int(line.split()[1])
                elif not chunk:
                    got[s] = 0  # closed without a status
            if time.monotonic() >= next_drip:
                next_drip = time.monotonic() + 0.3
                for s in trickle:
                    if got[s] is None:
                        try:
                            s.send(b" ")
                        except (BlockingIOError, OSError):
                            pass
        for s in socks:
            got[s] = got[s] or None
            self.record(got[s])
            if got[s] is None:
                self.tally.fail("a connection got no HTTP status")
            s.close()
        return got

    def close(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        if not end_server(self.proc, self.stderr, 90):
            self.tally.fail("the server did not exit within 90 s of SIGTERM")
        return self.proc.returncode


# --------------------------------------------------------------------------
# The probe: beam_version every 0.25 s, to the hostile server and to the
# control (the same binary, idle), interleaved.
# --------------------------------------------------------------------------

class Probe(threading.Thread):
    def __init__(self, peer, tally, control):
        super().__init__(daemon=True)
        self.peer, self.tally, self.control = peer, tally, control
        self.stopping = threading.Event()
        self.latencies = []
        self.control_latencies = []
        self.timed = []         # (latency, start) of the server's probes
        self.stats_checks = 0
        self.most_used = collections.Counter()
        self.conns = {}
        self.ticks = 0

    def run(self):
        last_stats = 0.0
        while not self.stopping.wait(PROBE_PERIOD):
            self.once()
            if time.monotonic() - last_stats > 2.0:
                last_stats = time.monotonic()
                self.check_stats()

    def once(self):
        # Interleaved, the order alternating, so that neither side always
        # pays for the other's wake-up.
        self.ticks += 1
        order = [(self.peer, self.latencies, self.tally), (self.control, self.control_latencies, None)]
        for peer, latencies, tally in order[::1 if self.ticks % 2 else -1]:
            start = time.monotonic()
            ok = self.version(peer)
            took = time.monotonic() - start
            latencies.append(took)
            if tally is not None:
                self.timed.append((took, start))
            if not ok and tally is not None:
                tally.fail(f"beam_version not answered (waited {took:.2f} s)")

    def version(self, peer):
        if peer.transport == "stdio":
            rid = peer.new_id()
            peer.send_json({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                            "params": {"name": "beam_version", "arguments": {}, "_meta": META}})
            message = peer.wait(rid, PROBE_WAIT)
            return message is not None and tool_kind(message) == "ok"
        return self.http_version(peer)

    def http_version(self, peer):
        """On one kept-alive connection per server (opened before any flood),
        so that the connection cap never refuses the probe."""
        rid = peer.new_id()
        body = json.dumps({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                           "params": {"name": "beam_version", "arguments": {}, "_meta": META}}).encode()
        for attempt in range(2):
            conn = self.conns.get(peer.port)
            if conn is None:
                conn = self.conns[peer.port] = http.client.HTTPConnection("127.0.0.1", peer.port,
                                                                          timeout=PROBE_WAIT)
            try:
                conn.request("POST", "/mcp", body, peer.modern_headers("beam_version"))
                response = conn.getresponse()
                payload = response.read()
            except (OSError, http.client.HTTPException) as e:
                conn.close()
                del self.conns[peer.port]
                if attempt == 0:
                    continue
                peer.record(None)
                peer.tally.fail(f"beam_version probe: no HTTP status ({e!r})")
                return False
            peer.record(response.status)
            return response.status == 200 and tool_kind(json.loads(payload)) == "ok"
        return False

    def judge(self):
        """(p99, max, control p99, control max) in seconds. A stall, which
        fails, is an answer an order of magnitude slower than the control's
        slowest: the control's slowest answer is what the machine's load alone
        did to the same probe in the same run (the hostile server's own
        multi-MiB answers on its one stdio stream delay a probe queued behind
        them by a few times that; a blocked server, by far more)."""
        lat = sorted(self.latencies) or [0.0]
        ctl = sorted(self.control_latencies) or [0.0]
        p99 = lat[min(len(lat) - 1, int(len(lat) * 0.99))]
        ctl_p99 = ctl[min(len(ctl) - 1, int(len(ctl) * 0.99))]
        bound = PROBE_STALL_FACTOR * ctl[-1]
        stalls = [t for t in lat if t > bound]
        if stalls:
            self.tally.fail(f"{len(stalls)} beam_version stall(s), the slowest {lat[-1] * 1000:.0f} ms: over "
                            f"{PROBE_STALL_FACTOR:.0f}x the control's slowest, {ctl[-1] * 1000:.0f} ms")
        return p99, lat[-1], ctl_p99, ctl[-1]

    def check_stats(self):
        out = self.peer.call("beam_stats", {}, limit=30)
        if out.kind != "ok":
            return
        self.stats_checks += 1
        for env, entry in (out.content.get("limits") or {}).items():
            used, limit = entry.get("used"), entry.get("limit")
            if isinstance(used, int):
                self.most_used[env] = max(self.most_used[env], used)
                if env in ("LEAN_BEAM_MAX_RUNTIMES", "LEAN_BEAM_MAX_DOCUMENTS") and used > limit:
                    self.tally.fail(f"beam_stats: {env} used {used} > limit {limit}")

    def stop(self):
        self.stopping.set()
        self.join()
        for conn in self.conns.values():
            conn.close()


# --------------------------------------------------------------------------
# The hostile run of one transport
# --------------------------------------------------------------------------

class Exclusive:
    """Ordinary acts share the server; an exclusive act waits for them to
    finish and runs alone."""

    def __init__(self):
        self.cond = threading.Condition()
        self.shared = 0
        self.alone = False

    def enter_shared(self):
        with self.cond:
            self.cond.wait_for(lambda: not self.alone)
            self.shared += 1

    def leave_shared(self):
        with self.cond:
            self.shared -= 1
            self.cond.notify_all()

    def enter_alone(self):
        with self.cond:
            self.cond.wait_for(lambda: not self.alone)
            self.alone = True
            self.cond.wait_for(lambda: self.shared == 0)

    def leave_alone(self):
        with self.cond:
            self.alone = False
            self.cond.notify_all()


class Hostile:
    def __init__(self, transport, binary, lean, base, table, copy, build, rng, census, seconds):
        self.transport = transport
        self.rng = rng
        self.rng_lock = threading.Lock()
        self.seconds = seconds
        self.deadline = None
        self.base = base
        self.census = census
        self.tally = Tally(transport)
        self.fx = Fixtures(base, table, copy, build)
        env = {k: v for k, v in os.environ.items() if not k.startswith("LEAN_BEAM_")}
        env.update({k: str(v) for k, v in LIMITS.items()})
        env.update(LEAN_BEAM_LEAN=lean, LEAN_BEAM_LOG="info", SOAK_ENV_SECRET=ENV_SECRET)
        stderr_path = os.path.join(base, "server.stderr")
        control_stderr = os.path.join(base, "control.stderr")
        # The control: the same binary over the same transport, idle but for
        # the probe (its own tally: its figures are not the server's).
        self.control_tally = Tally(f"{transport} control")
        if transport == "stdio":
            self.peer = StdioPeer(binary, env, stderr_path, self.tally)
            self.control = StdioPeer(binary, env, control_stderr, self.control_tally)
        else:
            token = "soak-" + os.urandom(16).hex()
            token_file = os.path.join(base, "token")
            with open(os.open(token_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as f:
                f.write(token)
            self.peer = HttpPeer(binary, env, stderr_path, self.tally, token_file, token)
            self.control = HttpPeer(binary, env, control_stderr, self.control_tally, token_file, token)
        census.watch(self.peer.pid, lsp_bound=MAX_LSP)
        self.versions = {}      # (ws, path) -> last version seen
        self.handles = []       # (ws, path, handle)
        self.state_lock = threading.Lock()
        self.exclusive = Exclusive()
        self.tour_done = False
        self.rounds = 0
        self.exit_status = None
        self.leftover = []
        self.unanswered = 0
        self.act_spans = []     # (start, end, act name), to tell what a slow probe overlapped

    # -- helpers -----------------------------------------------------------
    def choice(self, seq):
        with self.rng_lock:
            return self.rng.choice(seq)

    def random(self):
        with self.rng_lock:
            return self.rng.random()

    def expect(self, outcome, allowed, what):
        """`allowed`: outcome kinds this act may get. Anything else fails."""
        if outcome.kind not in allowed:
            self.tally.fail(f"{what}: got {outcome.kind} {json.dumps(outcome.content)[:400]}, "
                            f"expected one of {sorted(allowed)}")
            return False
        return True

    def sync(self, name, path, tool="lean_sync"):
        out = self.peer.call(tool, {"workspace": self.fx.ws(name), "path": path})
        if out.kind == "ok" and isinstance(out.content.get("version"), int):
            with self.state_lock:
                self.versions[(name, path)] = out.content["version"]
        return out

    def at(self, name, key):
        line, character = self.fx.pos[name][key]
        return {"line": line, "character": character}

    def probe_args(self, name, version, text):
        return dict({"workspace": self.fx.ws(name), "path": self.fx.main[name], "version": version,
                     "text": text}, **self.at(name, "run"))

    def stats(self):
        out = self.peer.call("beam_stats", {}, limit=30)
        return out.content if out.kind == "ok" else {}

    def wait_for_stats(self, condition, limit=60.0):
        """Poll beam_stats until `condition(stats)` holds (True) or `limit`."""
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            if condition(self.stats()):
                return True
            time.sleep(0.1)
        return False

    def quiet(self):
        """No runtime has a call in flight (cancelled calls still finishing
        included): the exclusive acts' starting point."""
        if not self.wait_for_stats(lambda s: (s.get("limits") or {}).get("LEAN_BEAM_MAX_RUNTIMES", {})
                                   .get("busy") == 0, 120):
            self.tally.fail("the runtimes never became idle (120 s) before an exclusive act")

    # -- ordinary acts -------------------------------------------------------
    def lean_allowed(self, outcome, what):
        bad = (outcome.kind in ("unanswered", "no-status") or outcome.kind.startswith("rpc:")
               or outcome.kind.startswith("tool:internalError")
               or (outcome.status is not None and outcome.status >= 500))
        if bad:
            self.tally.fail(f"{what}: {outcome.kind} {json.dumps(outcome.content)[:400]}")

    def act_lean(self, strict=False):
        """An ordinary Lean call on a random workspace and document: more
        roots than MAX_RUNTIMES and files than MAX_DOCUMENTS, so runtimes and
        documents are evicted (or refused while busy)."""
        name = self.choice(["a", "b", "c", "d", "a", "d"])
        main = self.fx.main[name]
        paths = [main] + (["Fix/Errors.lean", "Fix/Sorry.lean", "Fix/Unicode.lean"] if name in "ad" else [])
        path = self.choice(paths)
        with self.state_lock:
            version = self.versions.get((name, main))
        r = self.random()
        doc = {"workspace": self.fx.ws(name), "path": main}
        if r < 0.30 or version is None:
            out = self.sync(name, path, self.choice(["lean_sync", "lean_sync", "lean_update", "lean_refresh"]))
        elif r < 0.45:
            out = self.peer.call("lean_hover", dict(doc, version=version, **self.at(name, "hover")))
        elif r < 0.55:
            out = self.peer.call("lean_goals", dict(doc, version=version, mode="after", **self.at(name, "goals")))
        elif r < 0.72:
            tool = self.choice(["lean_run_at", "lean_run_at_handle"])
            text = self.choice(["skip", "exact Eq.refl _", "sleep 300"] if name in "ad" else ["skip"])
            out = self.peer.call(tool, self.probe_args(name, version, text))
            handle = out.content.get("next_handle")
            if out.kind == "ok" and handle:
                with self.state_lock:
                    self.handles = (self.handles + [(name, main, handle)])[-12:]
        elif r < 0.82 and self.handles:
            with self.state_lock:
                hname, hpath, handle = self.handles.pop(0)
            tool = self.choice(["lean_run_with", "lean_release"])
            args = {"workspace": self.fx.ws(hname), "path": hpath, "handle": handle}
            if tool == "lean_run_with":
                args["text"] = "skip"
            out = self.peer.call(tool, args)
        elif r < 0.88:
            out = self.peer.call(self.choice(["lean_save", "lean_close"]), doc)
        elif r < 0.91 and self.transport == "http":
            # On stdio a drop is a full stream-order fence: every later call,
            # beam_version included, waits for every earlier one (the
            # specification's rule), so the 1 s probe bound holds only
            # without drops there. Over HTTP a drop fences its root only.
            out = self.peer.call("lean_drop_workspace", {"workspace": self.fx.ws(name)})
        else:
            out = self.peer.call("lean_document_symbols", dict(doc, version=version))
        self.lean_allowed(out, "a Lean call")

    def act_evidence(self, strict=False):
        """40 evidence items naming /dev/zero, /proc/self/environ, paths out
        of the root, a FIFO, a file past the item cap: a bounded report."""
        items = [{"name": f"e{i}", "path": EVIDENCE_SOURCES[i % len(EVIDENCE_SOURCES)]} for i in range(40)]
        out = self.peer.call("beam_feedback_report", {
            "workspace": self.fx.ws("a"), "title": "soak flood", "summary": "s", "reproduction": "r",
            "expected": "e", "actual": "a", "evidence": items, "redact": False,
            "confidential": self.random() < 0.5})
        if not self.expect(out, {"ok"}, "evidence flood"):
            return
        text = json.dumps(out.message)
        evidence = out.content.get("evidence") or []
        read = sum(len(e.get("content") or "") for e in evidence)
        if len(evidence) > 32 or read > 1024 * 1024:
            self.tally.fail(f"evidence flood: {len(evidence)} items, {read} bytes read (caps 32, 1 MiB)")
        if SECRET in text or ENV_SECRET in text:
            self.tally.fail("evidence flood: a secret from outside the root or the environment was returned")
        if len(text) > 5 * 1024 * 1024:
            self.tally.fail(f"evidence flood: a {len(text)}-byte answer")
        if "left out" not in json.dumps(out.content.get("collection_warnings")):
            self.tally.fail("evidence flood: no warning about the items left out")
        self.tally.count("evidence:flood-bounded")

    def act_fifo_document(self, strict=False):
        out = self.sync("a", "Fifo.lean", self.choice(["lean_sync", "lean_update"]))
        allowed = {"tool:invalidInput"} | (set() if strict else {"tool:resourceLimit/runtimes"})
        if self.expect(out, allowed, "a FIFO as a document") and out.kind == "tool:invalidInput":
            if "FIFO" not in out.content.get("message", ""):
                self.tally.fail(f"a FIFO as a document: the refusal does not name the FIFO: {out.content}")
            self.tally.count("fifo:document-refused")

    def act_fifo_lakefile(self, strict=False):
        if strict:
            self.expect(self.sync("lake", self.fx.main["lake"]), {"ok"}, "a sync next to a FIFO lakefile")
        out = self.peer.call("lean_save", {"workspace": self.fx.ws("lake"), "path": self.fx.main["lake"]})
        allowed = {"tool:invalidInput/notRegularFile"}
        if not strict:
            allowed |= {"tool:resourceLimit/runtimes", "tool:resourceLimit/documents", "tool:contentModified",
                        "tool:invalidParams", "tool:requestCancelled"}
        if self.expect(out, allowed, "lean_save with a FIFO lakefile") and "notRegularFile" in out.kind:
            self.tally.count("fifo:lakefile-refused")

    def act_fifo_swap(self, strict=False):
        """A synced document replaced by a FIFO: refused, never read."""
        path = f"Swap{self.fx.next_serial()}.lean"
        full = os.path.join(self.fx.roots["a"], path)
        with open(full, "w") as f:
            f.write("prelude\nimport Fix.Basic\nnamespace Fix\ndef swapped : N := one\nend Fix\n")
        first = self.sync("a", path)
        if strict:
            self.expect(first, {"ok"}, "the document before its swap")
        os.unlink(full)
        os.mkfifo(full)
        try:
            out = self.sync("a", path, self.choice(["lean_sync", "lean_update", "lean_refresh"]))
            allowed = {"tool:invalidInput", "tool:invalidInput/notRegularFile"}
            if not strict:
                allowed |= {"tool:resourceLimit/runtimes", "tool:resourceLimit/documents"}
            if self.expect(out, allowed, "a synced document replaced by a FIFO") and "invalidInput" in out.kind:
                self.tally.count("fifo:swap-refused")
        finally:
            os.unlink(full)

    def act_oversize(self, strict=False):
        out = self.sync("a", "Big.lean", self.choice(["lean_sync", "lean_update"]))
        allowed = {"tool:invalidInput/fileTooLarge"} | (set() if strict else {"tool:resourceLimit/runtimes"})
        if self.expect(out, allowed, "a file past LEAN_BEAM_MAX_FILE_BYTES") and "fileTooLarge" in out.kind:
            if out.content.get("data", {}).get("limit") != LIMITS["LEAN_BEAM_MAX_FILE_BYTES"]:
                self.tally.fail(f"fileTooLarge names the wrong limit: {out.content}")

    def act_cancel(self, strict=False):
        """A slow call cancelled after a random moment: answered at most once
        (over HTTP: a status, with or without the answer)."""
        path = self.fx.write_hold(self.choice([400, 800, 1500]))
        delay = self.random() * 0.6
        try:
            if self.transport == "stdio":
                self.cancel_stdio(path, delay)
            else:
                self.cancel_http(path, delay)
        finally:
            self.fx.remove("a", path)

    def cancel_stdio(self, path, delay):
        peer = self.peer
        rid = peer.new_id()
        peer.send_json({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                        "params": {"name": "lean_sync", "arguments": {"workspace": self.fx.ws("a"), "path": path},
                                   "_meta": dict(META, progressToken=f"c{rid}")}})
        message = peer.wait(rid, delay)
        if message is None:
            peer.cancel(rid)
            message = peer.wait(rid, 5.0)
        kind = "cancelled:no-answer" if message is None else f"cancelled:{tool_kind(message)}"
        self.tally.count(kind)
        if message is not None:
            self.lean_allowed(Outcome(tool_kind(message), message), "a cancelled call")

    def cancel_http(self, path, delay):
        """A legacy call cancelled with notifications/cancelled (its POST then
        ends with or without the answer), or a modern call whose client
        closes the response (the modern way to cancel)."""
        peer = self.peer
        modern = self.random() < 0.3
        sid = None if modern else peer.legacy_session()
        if not modern and sid is None:
            self.tally.count("cancelled:no-session")
            return
        rid = peer.new_id()
        args = {"workspace": self.fx.ws("a"), "path": path}
        if modern:
            call = {"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                    "params": {"name": "lean_sync", "arguments": args, "_meta": dict(META, progressToken=f"c{rid}")}}
            headers = peer.modern_headers("lean_sync")
        else:
            call = {"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                    "params": {"name": "lean_sync", "arguments": args, "_meta": {"progressToken": f"c{rid}"}}}
            headers = peer.legacy_headers(sid)
        conn = http.client.HTTPConnection("127.0.0.1", peer.port, timeout=120)
        try:
            conn.request("POST", "/mcp", json.dumps(call).encode(), headers)
            response = conn.getresponse()  # headers: at the first progress, or with the answer
            time.sleep(delay)
            if modern:
                conn.close()
                peer.record(response.status, example="abandoned")
                self.tally.count("cancelled:abandoned")
                return
            peer.legacy_post(sid, {"jsonrpc": "2.0", "method": "notifications/cancelled",
                                   "params": {"requestId": rid, "reason": "soak"}})
            payload = response.read()
            peer.record(response.status, example=payload.decode(errors="replace"))
            message = peer.answer_of(response.status, response, payload, rid) if payload else None
            kind = "no-answer" if message is None else tool_kind(message)
            self.tally.count(f"cancelled:{kind} (HTTP {response.status})")
            if message is not None and response.status == 200:
                self.lean_allowed(Outcome(kind, message), "a cancelled call")
        except (OSError, http.client.HTTPException) as e:
            peer.record(None)
            self.tally.fail(f"a cancelled call: no HTTP status ({e!r})")
        finally:
            conn.close()
            if sid is not None:
                peer.end_session(sid)

    def act_malformed(self, strict=False):
        if self.transport == "stdio":
            self.malformed_stdio(strict)
        else:
            self.malformed_http(strict)

    def malformed_stdio(self, strict):
        peer = self.peer
        shapes = ["unparseable", "params", "jsonrpc", "method", "tool", "extra"]
        if strict or self.random() < 0.03:
            shapes.append("long line")
        for shape in (shapes if strict else [self.choice(shapes)]):
            if shape in ("unparseable", "long line"):
                with peer.lock:
                    peer.null_expected += 1
                line = b"{not json\n" if shape == "unparseable" else b'{"x":"' + b"a" * (9 << 20) + b'"}\n'
                peer.send(line)
                self.tally.count(f"rpc:null-id ({shape})")
                continue
            rid = peer.new_id()
            message = {"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                       "params": {"name": "beam_version", "arguments": {}, "_meta": META}}
            if shape == "params":
                message["params"] = []
            elif shape == "jsonrpc":
                message["jsonrpc"] = "1.0"
            elif shape == "method":
                message["method"] = "no/such/method"
            elif shape == "tool":
                message["params"]["name"] = "no_such_tool"
            else:
                message["extra"] = 1
            peer.send_json(message)
            answer = peer.wait(rid, 30)
            if answer is None or "error" not in answer:
                self.tally.fail(f"malformed request ({shape}): {answer}")
            else:
                self.tally.count(f"rpc:{answer['error'].get('code')}")

    def malformed_http(self, strict):
        peer = self.peer
        shapes = ["json", "mismatch", "method", "no session", "auth none", "auth wrong", "auth scheme"]
        for shape in (shapes if strict else [self.choice(shapes)]):
            rid = peer.new_id()
            body = {"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                    "params": {"name": "beam_version", "arguments": {}, "_meta": META}}
            headers = peer.modern_headers("beam_version")
            expected = 400
            if shape == "json":
                body = b"{not json"
            elif shape == "mismatch":
                headers["Mcp-Name"] = "beam_stats"
            elif shape == "method":
                body["method"] = "no/such/method"
                headers["Mcp-Method"] = "no/such/method"
                expected = 404
            elif shape == "no session":
                body = {"jsonrpc": "2.0", "id": rid, "method": "tools/list"}
                headers = peer.headers({"MCP-Protocol-Version": LEGACY})
            elif shape.startswith("auth"):
                expected = 401
                if shape == "auth none":
                    del headers["Authorization"]
                elif shape == "auth wrong":
                    headers["Authorization"] = "Bearer " + "0" * len(peer.token)
                else:
                    headers["Authorization"] = "Basic " + peer.token
            got = peer.exchange("POST", "/mcp", body, headers)
            if got is None:
                continue
            status, _, payload = got
            peer.record(status, example=payload.decode(errors="replace"))
            if status != expected:
                self.tally.fail(f"malformed HTTP request ({shape}): {status}, expected {expected}: {payload[:200]!r}")
        if strict:
            got = peer.exchange("GET", "/health", None, {})  # no token needed
            if got is not None:
                peer.record(got[0])
                if got[0] != 200:
                    self.tally.fail(f"/health without a token: {got[0]}")

    def act_slow_bodies(self, strict=False):
        """Connections declaring a body and trickling it: 408 after the body
        time limit; a declared body past the limit: 413 at once."""
        peer = self.peer
        slow = [peer.raw() for _ in range(2)]
        big = peer.raw()
        for s in slow:
            s.sendall(peer.slow_head(100_000))
        big.sendall(peer.slow_head(HTTP_LIMITS["--max-body-bytes"] + 1))
        got = peer.statuses(slow + [big], slow, HTTP_LIMITS["--body-timeout-secs"] + 10)
        for s in slow:
            if got[s] not in ((408,) if strict else (408, 503)):
                self.tally.fail(f"a slow body got {got[s]}, expected 408")
        if got[big] not in ((413,) if strict else (413, 503)):
            self.tally.fail(f"a declared body past the limit got {got[big]}, expected 413")

    # -- exclusive acts ------------------------------------------------------
    PROBE_RUNNING = "elaborating the probe"

    def hold_probe(self, name, version, ms=3000):
        """A probe sleeping `ms` in `name`'s main file, once it runs in its
        slot (its progress says so): the call, or None."""
        call = self.peer.start("lean_run_at", self.probe_args(name, version, f"sleep {ms}"))
        if call is None:
            return None
        if not call.progress_until(self.PROBE_RUNNING, 60):
            self.tally.fail(f"a probe in {name} never reported running: {call.result()}")
            return None
        return call

    def act_runtime_cap(self, strict=True):
        """Both runtimes busy: a call on a third root gets resourceLimit
        (runtimes); once one is idle again, it is evicted for the third."""
        self.quiet()
        # Both files synced first, so that the first hold is still running
        # when the second is in place (a Lean server start in between can
        # take longer than a hold under load).
        versions = {}
        for name in ("a", "d"):
            out = self.sync(name, self.fx.main[name])
            if not self.expect(out, {"ok"}, f"runtime cap: sync {name}"):
                return
            versions[name] = out.content["version"]
        hold_ms = 6000
        holds = []
        first_running = None
        for name in ("a", "d"):
            call = self.hold_probe(name, versions[name], hold_ms)
            if call is None:
                break
            first_running = first_running or time.monotonic()
            holds.append((name, call))
        if len(holds) == 2 and time.monotonic() - first_running > hold_ms / 1000 - 1:
            # The first hold may have ended before the check: it would say
            # nothing about the bound.
            self.tally.count("inconclusive:runtime-cap")
        elif len(holds) == 2:
            out = self.sync("b", self.fx.main["b"])
            if self.expect(out, {"tool:resourceLimit/runtimes"}, "a third root while both runtimes are busy"):
                data = out.content.get("data") or {}
                if data.get("env") != "LEAN_BEAM_MAX_RUNTIMES" or data.get("limit") != R:
                    self.tally.fail(f"resourceLimit (runtimes) names the wrong bound: {data}")
        for name, call in holds:
            self.expect(call.result(), {"ok"}, f"runtime cap: the probe holding {name}")
        if len(holds) == 2:
            self.expect(self.sync("b", self.fx.main["b"]), {"ok"}, "a third root once a runtime is idle")

    def act_document_cap(self, strict=True):
        """A probe holds its document and a slot (MAX_DOCUMENTS = 2): another
        document gets resourceLimit (documents); afterwards it evicts one."""
        self.quiet()
        out = self.sync("a", self.fx.main["a"])
        if not self.expect(out, {"ok"}, "document cap: sync"):
            return
        call = self.hold_probe("a", out.content["version"])
        if call is None:
            return
        out = self.sync("a", "Fix/Errors.lean")
        if self.expect(out, {"tool:resourceLimit/documents"}, "a document while every one is busy"):
            data = out.content.get("data") or {}
            if data.get("env") != "LEAN_BEAM_MAX_DOCUMENTS" or data.get("limit") != D:
                self.tally.fail(f"resourceLimit (documents) names the wrong bound: {data}")
        self.expect(call.result(), {"ok"}, "document cap: the probe")
        # Both documents open and now idle: opening a third closes one.
        before = (self.stats().get("workspaces") or {}).get(self.fx.roots["a"]) or {}
        if self.expect(self.sync("a", "Fix/Errors.lean"), {"ok"}, "a document once one is idle"):
            after = (self.stats().get("workspaces") or {}).get(self.fx.roots["a"]) or {}
            opened = {d["path"] for d in after.get("documents", []) if d.get("open")}
            if before.get("documentsOpenInLean") == D and "Fix/Errors.lean" in opened:
                if after.get("documentsOpenInLean", 0) > D:
                    self.tally.fail(f"document cap: {after.get('documentsOpenInLean')} documents open")
                else:
                    self.tally.count("eviction:documents")

    def act_handle_cap(self, strict=True):
        """Two handles more than LEAN_BEAM_MAX_HANDLES on one document: the
        least recently used are evicted (a later use is refused as unknown)
        and beam_stats never shows more than the bound; a handle on a
        document whose text alone is past LEAN_BEAM_MAX_HANDLE_BYTES:
        resourceLimit (handleBytes), while a probe without a handle runs."""
        self.quiet()
        root, main = self.fx.roots["a"], self.fx.main["a"]
        out = self.sync("a", main)
        if not self.expect(out, {"ok"}, "handle cap: sync"):
            return
        before = ((self.stats().get("workspaces") or {}).get(root) or {}).get("handles") or {}
        args = self.probe_args("a", out.content["version"], "skip")
        handles = []
        for _ in range(LIMITS["LEAN_BEAM_MAX_HANDLES"] + 2):
            got = self.peer.call("lean_run_at_handle", args)
            if not self.expect(got, {"ok"}, "handle cap: a handle") or not got.content.get("next_handle"):
                return
            handles.append(got.content["next_handle"])
        after = ((self.stats().get("workspaces") or {}).get(root) or {}).get("handles") or {}
        if after.get("live", 0) > LIMITS["LEAN_BEAM_MAX_HANDLES"]:
            self.tally.fail(f"handle cap: {after.get('live')} live handles")
        evicted = after.get("evicted", 0) - before.get("evicted", 0)
        if evicted < 2:
            self.tally.fail(f"handle cap: {len(handles)} handles minted and {evicted} evicted ({after})")
        self.tally.count("eviction:handles", None)
        first = self.peer.call("lean_run_with", {"workspace": self.fx.ws("a"), "path": main,
                                                 "handle": handles[0], "text": "skip"})
        if not first.kind.startswith("tool:invalid") or "unknown" not in first.content.get("message", ""):
            self.tally.fail(f"an evicted handle: {first.kind} {json.dumps(first.content)[:400]}, "
                            f"expected a refusal that says it is unknown")
        for handle in handles[-LIMITS["LEAN_BEAM_MAX_HANDLES"]:]:
            self.peer.call("lean_release", {"workspace": self.fx.ws("a"), "path": main, "handle": handle})
        out = self.sync("a", self.fx.handle_big)
        if not self.expect(out, {"ok"}, "handle bytes: sync"):
            return
        big = dict(args, path=self.fx.handle_big, version=out.content["version"])
        refused = self.peer.call("lean_run_at_handle", big)
        if self.expect(refused, {"tool:resourceLimit/handleBytes"}, "a handle past LEAN_BEAM_MAX_HANDLE_BYTES"):
            data = refused.content.get("data") or {}
            if data.get("env") != "LEAN_BEAM_MAX_HANDLE_BYTES" or data.get("limit") != LIMITS["LEAN_BEAM_MAX_HANDLE_BYTES"]:
                self.tally.fail(f"resourceLimit (handleBytes) names the wrong bound: {data}")
        self.expect(self.peer.call("lean_run_at", big), {"ok"}, "a probe without a handle past the handle bytes")

    def act_reuse_id(self, strict=True):
        """Malformed (and well-formed) requests reusing the id of a call in
        flight are ignored: the call answers once, the reuses never (stdio)
        or with 409 (HTTP)."""
        self.quiet()
        path = self.fx.write_hold(2000)
        try:
            if self.transport == "stdio":
                self.reuse_stdio(path)
            else:
                self.reuse_http(path)
        finally:
            self.fx.remove("a", path)

    def reuses(self, rid):
        """Requests reusing `rid`: malformed four ways, and well-formed (in the
        stream's era: modern on stdio, legacy on the HTTP session)."""
        params = {"name": "beam_version", "arguments": {}}
        if self.transport == "stdio":
            params["_meta"] = META
        base = {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}
        return [dict(base, params=[]), dict(base, jsonrpc="1.0"), dict(base, extra=1),
                dict(base, method="no/such/method"), base]

    def reuse_stdio(self, path):
        peer = self.peer
        rid = peer.new_id()
        peer.send_json({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                        "params": {"name": "lean_sync", "arguments": {"workspace": self.fx.ws("a"), "path": path},
                                   "_meta": META}})
        for message in self.reuses(rid):
            peer.send_json(message)
        answer = peer.wait(rid, 120)
        if answer is None:
            self.tally.fail(f"reused id {rid}: the call never answered")
            return
        # The hold elaborates for 2 s after it was read, and the reuses were
        # read right after it: none may be answered (checked at the end:
        # exactly one answer per id).
        kind = tool_kind(answer)
        self.tally.count(kind)
        if self.expect(Outcome(kind, answer), {"ok"}, "the call whose id was reused"):
            self.tally.count("reuse:ignored")

    def reuse_http(self, path):
        peer = self.peer
        sid = peer.legacy_session()
        if sid is None:
            self.tally.fail("reused id: no legacy session")
            return
        rid = peer.new_id()
        call = {"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                "params": {"name": "lean_sync", "arguments": {"workspace": self.fx.ws("a"), "path": path},
                           "_meta": {"progressToken": f"r{rid}"}}}
        conn = http.client.HTTPConnection("127.0.0.1", peer.port, timeout=120)
        try:
            conn.request("POST", "/mcp", json.dumps(call).encode(), peer.legacy_headers(sid))
            response = conn.getresponse()  # at its first progress: the call is in flight
            for message in self.reuses(rid):
                got = peer.legacy_post(sid, message)
                if got is not None and got[0] != 409:
                    self.tally.fail(f"a request reusing active id {rid} got {got[0]}, expected 409")
            payload = response.read()
            peer.record(response.status)
            answer = peer.answer_of(response.status, response, payload, rid)
            self.expect(Outcome(tool_kind(answer) if answer else "unanswered", answer), {"ok"},
                        "the call whose id was reused")
        except (OSError, http.client.HTTPException) as e:
            peer.record(None)
            self.tally.fail(f"reused id: no HTTP status ({e!r})")
        finally:
            conn.close()
            peer.end_session(sid)

    def act_flood(self, strict=True):
        """More connections than the cap: `cap` + 8 slow bodies with the
        token (each holds its slot until its 408; the ones past the cap get
        503), and 8 /health checks without it, which the pending pool
        (connections yet to send the token) still serves (200) however full
        the proved one is."""
        peer = self.peer
        cap = HTTP_LIMITS["--max-connections"]
        slow = []
        for _ in range(cap + 8):
            s = peer.raw()
            s.sendall(peer.slow_head(100_000))
            slow.append(s)
        health = []
        for _ in range(8):
            s = peer.raw()
            s.sendall(f"GET /health HTTP/1.1\r\nHost: {peer.host}\r\nConnection: close\r\n\r\n".encode())
            health.append(s)
        got = peer.statuses(slow + health, slow, HTTP_LIMITS["--body-timeout-secs"] + 10)
        statuses = collections.Counter(got[s] for s in slow)
        if statuses[503] < 8:
            self.tally.fail(f"connection flood: {dict(statuses)}, expected at least 8 refusals (503)")
        if set(statuses) - {408, 503}:
            self.tally.fail(f"connection flood: unexpected statuses {dict(statuses)}")
        served = collections.Counter(got[s] for s in health)
        if served != {200: len(health)}:
            self.tally.fail(f"connection flood: token-less /health got {dict(served)}, expected 200 each "
                            f"(the pending pool is apart from the proved one)")
        self.tally.count("flood:connections", None)

    def act_sessions(self, strict=True):
        """One session more than --max-sessions: the one idle the longest is
        replaced (404 for it afterwards)."""
        peer = self.peer
        cap = HTTP_LIMITS["--max-sessions"]
        sids = [peer.legacy_session() for _ in range(cap + 1)]
        if None in sids:
            self.tally.fail(f"sessions: an initialize failed ({sids})")
            return
        gone = 0
        for sid in sids:
            got = peer.legacy_post(sid, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
            if got is not None and got[0] == 404:
                gone += 1
            elif got is not None and got[0] != 200:
                self.tally.fail(f"sessions: tools/list on a live session got {got[0]}")
        if gone < 1:
            self.tally.fail(f"sessions: {cap + 1} sessions with --max-sessions {cap} and none replaced")
        for sid in sids:
            peer.end_session(sid)

    # -- driving -------------------------------------------------------------
    def ordinary_acts(self):
        acts = [(self.act_lean, 40), (self.act_evidence, 8), (self.act_fifo_document, 5),
                (self.act_fifo_lakefile, 4), (self.act_fifo_swap, 4), (self.act_oversize, 5),
                (self.act_cancel, 12), (self.act_malformed, 8)]
        if self.transport == "http":
            acts.append((self.act_slow_bodies, 6))
        return acts

    def exclusive_acts(self):
        acts = [self.act_runtime_cap, self.act_document_cap, self.act_handle_cap, self.act_reuse_id]
        if self.transport == "http":
            acts += [self.act_flood, self.act_sessions]
        return acts

    def run_act(self, act, strict, tour=False):
        name = act.__name__[4:]
        self.tally.act(name + (" (tour)" if tour else ""))
        start = time.monotonic()
        try:
            act(strict=strict)
        except Exception as e:  # a bug of the soak or a broken server: reported, the run goes on
            self.tally.fail(f"{name}: {e!r}\n{traceback.format_exc()}")
        finally:
            with self.state_lock:
                self.act_spans.append((start, time.monotonic(), name))

    def tour(self):
        """Every act once, alone, with exact expectations."""
        for act, _ in self.ordinary_acts():
            self.run_act(act, True, tour=True)
        for act in self.exclusive_acts():
            self.run_act(act, True, tour=True)
        self.tour_done = True

    def worker(self):
        acts = self.ordinary_acts()
        weights = [w for _, w in acts]
        while time.monotonic() < self.deadline:
            with self.rng_lock:
                act = self.rng.choices([a for a, _ in acts], weights)[0]
            self.exclusive.enter_shared()
            try:
                self.run_act(act, False)
            finally:
                self.exclusive.leave_shared()

    def run(self):
        probe = Probe(self.peer, self.tally, self.control)
        probe.start()
        self.probe = probe
        started = time.monotonic()
        self.started = started
        self.deadline = started + self.seconds
        try:
            self.tour()
            workers = [threading.Thread(target=self.worker, daemon=True) for _ in range(WORKERS)]
            for w in workers:
                w.start()
            cycle = self.exclusive_acts()
            i = 0
            while time.monotonic() + EXCLUSIVE_EVERY < self.deadline:
                time.sleep(EXCLUSIVE_EVERY)
                self.exclusive.enter_alone()
                try:
                    self.run_act(cycle[i % len(cycle)], True)
                finally:
                    self.exclusive.leave_alone()
                i += 1
            self.rounds = i
            for w in workers:
                w.join()
        finally:
            self.elapsed = time.monotonic() - started
            probe.stop()
            self.finish()

    def finish(self):
        pid = self.peer.pid
        if self.transport == "stdio":
            missing = self.peer.drain()
            self.unanswered = len(missing)
            if missing:
                self.tally.fail(f"{len(missing)} requests never answered: {missing[:10]}")
            self.peer.check_answers()
        self.census.sample()
        self.figures = self.census.figures(pid)
        self.exit_status = self.peer.close()
        self.control.close()
        for failure in self.control_tally.failures:
            self.tally.fail(f"the control: {failure}")
        if self.exit_status != 0:
            self.tally.fail(f"server exit status {self.exit_status}")
        if self.transport == "http":
            self.unanswered = self.peer.no_status
        if self.transport == "http" and self.peer.no_status:
            self.tally.fail(f"{self.peer.no_status} HTTP requests got no status")
        deadline = time.monotonic() + 15
        while True:
            self.leftover = lean_processes_of(pid)
            if not self.leftover or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        if self.leftover:
            self.tally.fail(f"Lean processes left after the server exited: {self.leftover}")
        with open(self.peer.stderr_path, "rb") as f:
            stderr = f.read().decode(errors="replace")
        self.evictions = {
            "runtimes (log)": stderr.count("evicted the runtime of"),
            "documents (seen in beam_stats)": self.tally.kinds["eviction:documents"],
        }
        self.check_bounds()

    def check_bounds(self):
        t, fig, kinds = self.tally, self.figures, self.tally.kinds
        if fig["lsp"] > MAX_LSP:
            t.fail(f"{fig['lsp']} Lean language-server processes at once, bound {MAX_LSP} "
                   f"(MAX_RUNTIMES {R} x (1 + MAX_DOCUMENTS {D}))")
            for when, procs in fig["over"]:
                log(f"[{self.transport}] {len(procs)} language-server processes at "
                    f"{when - self.started:.2f} s (tree token, pid, ppid, state, command):")
                for proc in procs:
                    log("    ", proc)
        if fig["compilers"] > MAX_COMPILERS:
            t.fail(f"{fig['compilers']} batch compilers at once, bound {MAX_COMPILERS}")
        fd_bound = self.fd_bound()
        if fig["fds"] > fd_bound:
            t.fail(f"{fig['fds']} open file descriptors, bound {fd_bound}")
        if fig["hwm_kb"] > RSS_BOUND_MIB * 1024:
            t.fail(f"peak RSS {fig['hwm_kb'] // 1024} MiB, bound {RSS_BOUND_MIB} MiB")
        hits = {
            "resourceLimit (runtimes)": kinds["tool:resourceLimit/runtimes"],
            "resourceLimit (documents)": kinds["tool:resourceLimit/documents"],
            "resourceLimit (handleBytes)": kinds["tool:resourceLimit/handleBytes"],
            "handle evictions": kinds["eviction:handles"],
            "runtime evictions": self.evictions["runtimes (log)"],
            "document evictions": self.evictions["documents (seen in beam_stats)"],
            "fileTooLarge": kinds["tool:invalidInput/fileTooLarge"],
            "FIFO documents refused": kinds["fifo:document-refused"] + kinds["fifo:swap-refused"],
            "FIFO lakefile refused": kinds["fifo:lakefile-refused"],
            "bounded evidence floods": kinds["evidence:flood-bounded"],
            "ignored id reuses": kinds["reuse:ignored"] if self.transport == "stdio" else kinds["http:409"],
        }
        if self.transport == "http":
            hits.update({"401 (token)": kinds["http:401"], "408 (slow body)": kinds["http:408"],
                         "413 (body limit)": kinds["http:413"], "503 (connection cap)": kinds["http:503"],
                         "404 (replaced session)": kinds["http:404"]})
        self.hits = hits
        for what, n in hits.items():
            if n < 1:
                t.fail(f"the bound was never hit: {what}")

    def fd_bound(self):
        bound = self.figures["fds_at_start"] + FD_SLACK
        if self.transport == "http":
            # Proved connections, as many pending ones, and the evicted ones
            # being answered.
            bound += 2 * HTTP_LIMITS["--max-connections"] + MAX_REFUSING
        return bound

    def report(self):
        t, fig, probe = self.tally, self.figures, self.probe
        p99, slowest, ctl_p99, ctl_max = probe.judge()
        served = (f"{t.served} answers ({self.peer.null_answers} with a null id)" if self.transport == "stdio"
                  else f"{t.served} HTTP statuses of {self.peer.requests} requests")
        limits = ", ".join(f"{k[10:]}={v}" for k, v in LIMITS.items())
        if self.transport == "http":
            limits += ", " + ", ".join(f"{k[2:]}={v}" for k, v in HTTP_LIMITS.items())
        print(f"hostile {self.transport} figures:")
        print(f"  duration              {self.elapsed:.0f} s (tour, then {WORKERS} workers; "
              f"{self.rounds} exclusive acts in the mix)")
        print(f"  limits                {limits}")
        print(f"  requests served       {served}")
        print(f"  unanswered            {self.unanswered} (every request answered exactly once, a cancelled "
              f"one at most once{'' if self.transport == 'stdio' else ', every HTTP request a status'})")
        print(f"  acts                  {dict(sorted(t.acts.items()))}")
        # Answers by kind: tool error codes (with their kind or reason),
        # JSON-RPC error codes, HTTP statuses; the acts' own checks apart.
        answered = ("tool", "rpc", "http", "cancelled")
        errors = {k: v for k, v in sorted(t.kinds.items())
                  if k.split(":", 1)[0] in answered and k not in ("ok", "http:202")}
        checks = {k: v for k, v in sorted(t.kinds.items()) if k.split(":", 1)[0] not in answered and k != "ok"}
        accepted = f", 202 (notification accepted) {t.kinds['http:202']}" if self.transport == "http" else ""
        print(f"  outcomes              ok {t.kinds['ok']}{accepted}")
        print(f"  errors by kind        {errors}")
        print(f"  checked outcomes      {checks}")
        print(f"  bounds hit            {self.hits}")
        print(f"  evictions             {self.evictions}")
        print(f"  beam_version          {len(probe.latencies)} probes, max {slowest * 1000:.0f} ms, "
              f"p99 {p99 * 1000:.0f} ms; the control (same binary, idle, same client) max "
              f"{ctl_max * 1000:.0f} ms, p99 {ctl_p99 * 1000:.0f} ms (a stall: over {PROBE_STALL_FACTOR:.0f}x "
              f"the control's max); {probe.stats_checks} beam_stats checks, most used {dict(probe.most_used)}")
        for took, at in sorted(probe.timed, reverse=True)[:3]:
            during = sorted({name for start, end, name in self.act_spans if start <= at + took and end >= at})
            print(f"    slow probe          {took * 1000:.0f} ms at {at - self.started:.1f} s, during {during}")
        print(f"  peak RSS              {fig['hwm_kb'] // 1024} MiB (bound {RSS_BOUND_MIB} MiB)")
        print(f"  file descriptors      peak {fig['fds']}, {fig['fds_at_start']} at start (bound {self.fd_bound()})")
        print(f"  lean processes        peak {fig['lsp']} language-server (bound {MAX_LSP}), "
              f"{fig['compilers']} batch compilers (bound {MAX_COMPILERS}), {fig['lean']} in all; "
              f"{fig['samples']} samples; {len(self.leftover)} left after exit")
        print(f"  exit status           {self.exit_status}")
        if t.failures:
            print(f"  failures              {len(t.failures)}: {t.failures[:5]}")
        return not t.failures


def start_all(transports, binary, lean, table, copy, build, seed, seconds, census):
    """Set up the hostile mix of each transport (workspaces, server) and run
    it in a thread of its own for `seconds`: (runs, threads); join the
    threads, then call .report() on each run."""
    import random
    import tempfile
    runs = []
    for transport in transports:
        base = os.path.realpath(tempfile.mkdtemp(prefix=f"lean-beam-hostile-{transport}-"))
        rng = random.Random(f"{seed}/{transport}")
        try:
            runs.append(Hostile(transport, binary, lean, base, table, copy, build, rng, census, seconds))
        except Exception:
            shutil.rmtree(base, ignore_errors=True)
            raise
    threads = [threading.Thread(target=run.run, daemon=True) for run in runs]
    for thread in threads:
        thread.start()
    return runs, threads


def cleanup(runs):
    for run in runs:
        if run.peer.proc.poll() is None:
            run.peer.proc.kill()
            run.peer.proc.wait()
        shutil.rmtree(run.base, ignore_errors=True)
