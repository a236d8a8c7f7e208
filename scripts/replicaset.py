"""A local replica set: N `lean-beam-mcp --http` replicas on loopback behind
HAProxy running deploy/haproxy/haproxy.cfg, and a small MCP client of both
protocol eras over HTTP (standard library only).

Used by scripts/replicas-lane.py (the test lane) and
scripts/replicas-figures.py (the figures). Every wait here is on a state the
programs report (a port announced, a health check, HAProxy's server state),
bounded by a time limit that only guards against a hang.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import mcpmeta

REPO = Path(__file__).resolve().parents[1]
HAPROXY_CFG = REPO / "deploy" / "haproxy" / "haproxy.cfg"
MODERN = mcpmeta.MODERN
LEGACY = "2025-11-25"
# The Host HAProxy sends to the replicas (LEAN_BEAM_REPLICA_HOST), which they
# accept through --allowed-host.
REPLICA_HOST = "lean-beam-replica"
# The header HAProxy adds with the name of the server that answered.
SERVED_BY = "x-lean-beam-server"


class Failure(AssertionError):
    pass


def check(condition: bool, message: str) -> None:
    if not condition:
        raise Failure(message)


def wait_until(predicate, limit: float, what: str, every: float = 0.05):
    """Poll `predicate` until it returns a true value (returned); fail after
    `limit` seconds (a liveness guard)."""
    deadline = time.monotonic() + limit
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise Failure(f"timed out after {limit} s waiting for {what}")
        time.sleep(every)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def copy_workspaces(count: int, into: Path, extra_files: dict[str, str] | None = None) -> list[str]:
    """`count` copies of tests/fixtures/basic with its build (.lake), each a
    separate workspace root (canonical path)."""
    source = REPO / "tests" / "fixtures" / "basic"
    check((source / ".lake" / "build").is_dir(), "tests/fixtures/basic is not built (scripts/build-fixtures.sh)")
    roots = []
    for i in range(count):
        root = into / f"ws{i}"
        shutil.copytree(source, root, copy_function=shutil.copy2)
        for rel, text in (extra_files or {}).items():
            (root / rel).write_text(text)
        roots.append(str(root.resolve()))
    return roots


@dataclass
class Replica:
    index: int
    process: subprocess.Popen
    port: int
    log_path: Path

    @property
    def server(self) -> str:
        """HAProxy's name for it (LEAN_BEAM_REPLICA<index>)."""
        return f"replica{self.index}"

    @property
    def replica_id(self) -> str:
        return f"r{self.index}"

    def alive(self) -> bool:
        return self.process.poll() is None


def start_replica(binary: str, lean: str, index: int, token: str, workdir: Path, drain_secs: float = 30) -> Replica:
    log_path = workdir / f"replica{index}.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEAN_BEAM_")}
    env.update(
        {
            "LEAN_BEAM_LEAN": lean,
            "LEAN_BEAM_LOG": "info",
            "LEAN_BEAM_HTTP_TOKEN": token,
        }
    )
    process = subprocess.Popen(
        [
            os.path.abspath(binary),
            "--http",
            "127.0.0.1:0",
            "--allowed-host",
            REPLICA_HOST,
            "--replica-id",
            f"r{index}",
            "--drain-secs",
            str(drain_secs),
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=workdir,
    )
    port = announced_port(process, 30, log_path)
    if port is None:
        process.kill()
        raise Failure(f"replica {index} did not announce its port (see {log_path})")
    return Replica(index, process, port, log_path)


def announced_port(process: subprocess.Popen, timeout: float, log_path: Path | None = None) -> int | None:
    """The port a `lean-beam-mcp --http` server announces on its stderr (text
    mode), read by a thread that drains it to the end (into `log_path`, where
    given); None when none comes within `timeout` s."""
    found: dict[str, int] = {}
    ready = threading.Event()

    def drain() -> None:
        with open(log_path or os.devnull, "w") as log:
            for line in process.stderr:
                log.write(line)
                log.flush()
                match = re.search(r"listening on http://127\.0\.0\.1:(\d+)/mcp", line)
                if match:
                    found["port"] = int(match.group(1))
                    ready.set()

    threading.Thread(target=drain, daemon=True).start()
    return found["port"] if ready.wait(timeout) else None


@dataclass
class Balancer:
    process: subprocess.Popen
    port: int
    stats_port: int
    log_path: Path

    def server_states(self) -> dict[str, str]:
        """HAProxy's view of each server of backend `replicas` (UP, DOWN, ...)."""
        connection = http.client.HTTPConnection("127.0.0.1", self.stats_port, timeout=10)
        try:
            connection.request("GET", "/stats;csv")
            text = connection.getresponse().read().decode()
        finally:
            connection.close()
        lines = text.lstrip("# ").splitlines()
        header = lines[0].split(",")
        states = {}
        for line in lines[1:]:
            row = dict(zip(header, line.split(",")))
            if row.get("pxname") == "replicas" and row.get("svname") not in ("FRONTEND", "BACKEND"):
                states[row["svname"]] = row["status"]
        return states


def start_haproxy(haproxy: str, replicas: list[Replica], workdir: Path) -> Balancer:
    port, stats_port = free_port(), free_port()
    log_path = workdir / "haproxy.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEAN_BEAM_")}
    env["LEAN_BEAM_LB_BIND"] = f"127.0.0.1:{port}"
    env["LEAN_BEAM_LB_STATS_BIND"] = f"127.0.0.1:{stats_port}"
    env["LEAN_BEAM_REPLICA_HOST"] = REPLICA_HOST
    for replica in replicas:
        env[f"LEAN_BEAM_REPLICA{replica.index}"] = f"127.0.0.1:{replica.port}"
    log = open(log_path, "w")
    process = subprocess.Popen(
        [haproxy, "-db", "-f", str(HAPROXY_CFG)],
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
        cwd=workdir,
    )
    balancer = Balancer(process, port, stats_port, log_path)

    def all_up():
        check(process.poll() is None, f"haproxy exited: {log_path.read_text()}")
        try:
            states = balancer.server_states()
        except OSError:
            return False
        return len(states) == len(replicas) and all(s == "UP" for s in states.values())

    wait_until(all_up, 30, "HAProxy to see every replica UP")
    return balancer


def stop(process: subprocess.Popen, sig=signal.SIGTERM, limit: float = 60) -> None:
    if process.poll() is None:
        process.send_signal(sig)
        try:
            process.wait(limit)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@dataclass
class Answer:
    """One HTTP exchange of a JSON-RPC request."""

    status: int
    served_by: str | None
    headers: dict[str, str]
    message: dict | None = None  # the JSON-RPC response
    notifications: list = field(default_factory=list)
    transport_error: str | None = None
    started: float = 0.0
    ended: float = 0.0

    @property
    def result(self) -> dict | None:
        return (self.message or {}).get("result")

    @property
    def ok(self) -> bool:
        r = self.result
        return self.status == 200 and r is not None and r.get("isError") is False

    @property
    def tool_error(self) -> dict | None:
        r = self.result
        if r is not None and r.get("isError") is True:
            # A tool error's {code, message, data?} is its text block only.
            return json.loads(r["content"][0]["text"])
        return None

    @property
    def structured(self) -> dict:
        return (self.result or {}).get("structuredContent") or {}


class SessionLost(Exception):
    """A 2025-11-25 session the replica does not know (404): initialize again."""


class Client:
    """One MCP client over HTTP on its own keep-alive connection: `era` is
    MODERN (sessionless) or LEGACY (an initialized session)."""

    def __init__(self, port: int, era: str, token: str, name: str, host: str | None = None) -> None:
        self.port = port
        self.era = era
        self.token = token
        self.name = name
        self.host = host
        self.session: str | None = None
        self.session_home: str | None = None
        self.next_id = 1
        self.connection: http.client.HTTPConnection | None = None

    def _connection(self) -> http.client.HTTPConnection:
        if self.connection is None:
            self.connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=300)
        return self.connection

    def close(self) -> None:
        if self.connection is not None:
            self.connection.close()
            self.connection = None

    def _post(self, body: dict, headers: dict[str, str]) -> Answer:
        all_headers = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "Authorization": f"Bearer {self.token}",
        }
        if self.host:
            all_headers["Host"] = self.host
        all_headers.update(headers)
        started = time.monotonic()
        try:
            connection = self._connection()
            connection.request("POST", "/mcp", json.dumps(body).encode(), all_headers)
            response = connection.getresponse()
            raw_headers = {k.lower(): v for k, v in response.getheaders()}
            status = response.status
            try:
                payload = response.read()
            except (http.client.HTTPException, OSError) as error:
                self.close()
                return Answer(status, raw_headers.get(SERVED_BY), raw_headers, transport_error=f"body cut: {error!r}", started=started, ended=time.monotonic())
        except (http.client.HTTPException, OSError) as error:
            self.close()
            return Answer(0, None, {}, transport_error=repr(error), started=started, ended=time.monotonic())
        answer = Answer(status, raw_headers.get(SERVED_BY), raw_headers, started=started, ended=time.monotonic())
        text = payload.decode()
        if raw_headers.get("content-type", "").startswith("text/event-stream"):
            for line in text.splitlines():
                if line.startswith("data:"):
                    message = json.loads(line[5:].strip())
                    if "id" in message and ("result" in message or "error" in message):
                        if answer.message is not None:
                            answer.transport_error = f"two answers on one stream: {text[:500]}"
                        answer.message = message
                    else:
                        answer.notifications.append(message)
            if answer.message is None:
                answer.transport_error = f"the stream ended without an answer: {text[-300:]!r}"
        elif text:
            try:
                answer.message = json.loads(text)
            except ValueError:
                answer.transport_error = f"not JSON ({status}): {text[:300]!r}"
        return answer

    def initialize(self) -> Answer:
        """Open a 2025-11-25 session (legacy era only)."""
        self.session = None
        body = {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": self.name, "version": "1"}},
        }
        answer = self._post(body, {})
        check(answer.status == 200 and answer.message and "result" in answer.message, f"{self.name}: initialize failed: {answer}")
        self.session = answer.headers.get("mcp-session-id")
        self.session_home = answer.served_by
        check(bool(self.session), f"{self.name}: no Mcp-Session-Id: {answer.headers}")
        done = self._post({"jsonrpc": "2.0", "method": "notifications/initialized"}, self._legacy_headers())
        check(done.status == 202, f"{self.name}: notifications/initialized got {done.status}")
        check(done.served_by == self.session_home, f"{self.name}: the session moved: {done.served_by} != {self.session_home}")
        return answer

    def _legacy_headers(self) -> dict[str, str]:
        return {"Mcp-Session-Id": self.session or "", "MCP-Protocol-Version": LEGACY}

    def call(self, tool: str, arguments: dict) -> Answer:
        """tools/call; raises SessionLost when a legacy session is unknown."""
        request_id = self.next_id
        self.next_id += 1
        params: dict = {"name": tool, "arguments": arguments}
        if self.era == MODERN:
            params["_meta"] = mcpmeta.modern_meta(self.name)
            headers = {"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call", "Mcp-Name": tool}
        else:
            if self.session is None:
                self.initialize()
            headers = self._legacy_headers()
        body = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
        answer = self._post(body, headers)
        if self.era == LEGACY and answer.status == 404:
            lost = self.session
            self.session = None
            raise SessionLost(f"{self.name}: session {lost} not found on {answer.served_by}")
        if answer.message is not None and answer.message.get("id") != request_id:
            answer.transport_error = f"answer for id {answer.message.get('id')} to request {request_id}"
        return answer


def direct(replica: Replica, token: str, tool: str, arguments: dict | None = None) -> dict:
    """Call a tool on one replica directly (not through HAProxy)."""
    client = Client(replica.port, MODERN, token, "direct", host=REPLICA_HOST)
    try:
        answer = client.call(tool, arguments or {})
    finally:
        client.close()
    check(answer.ok, f"{tool} on {replica.server}: {answer}")
    return answer.structured


def new_token() -> str:
    return secrets.token_hex(24)
