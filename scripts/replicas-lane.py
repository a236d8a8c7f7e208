#!/usr/bin/env python3
"""The multi-replica lane: 3 `lean-beam-mcp --http` replicas behind HAProxy
(deploy/haproxy/haproxy.cfg), 12 concurrent clients over 6 workspaces.

    scripts/replicas-lane.py --binary target/debug/lean-beam-mcp --lean LEAN [--haproxy haproxy]

Each workspace has a 2026-07-28 client and a 2025-11-25 client (its own
session). Each client loops: continue from the proof handle of its previous
round (lean_run_with), lean_sync, lean_goals, lean_run_at_handle, lean_run_with.

1. Steady state: every answer arrives once, for its request; the replicas
   executed exactly the calls the clients made (beam_stats); the modern calls
   of a workspace all reach one replica and a legacy session's calls the
   replica that created it, and the runtimes the replicas hold (beam_stats)
   are exactly those; a root spelled with a trailing or doubled slash routes
   alike; a body too large to route is refused with 413.
2. Failover: the replica holding the most workspaces is killed (SIGKILL) in
   the middle of the loops. Its workspaces are served by survivors within a
   bounded time, only they move, a handle from it gets the structured
   `otherProcess` error, a legacy session on it gets 404 and a new session,
   and every call that did not depend on the dead replica succeeds.
3. Draining: SIGTERM to a survivor while a call runs there: the call still
   answers, a new call for its workspace is redispatched by HAProxy (retry on
   503) to the other replica, and the drained replica exits cleanly.

Standard library only; prints its figures and `N passed, 0 failed` at the end.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import replicaset as rs  # noqa: E402
from replicaset import LEGACY, MODERN, Failure, check  # noqa: E402

GOALS = "Fix/Goals.lean"
SLEEPY = "Fix/Sleepy.lean"
SLEEPY_TEXT = "prelude\nimport Fix.Basic\n\nnamespace Fix\n\ntheorem sleepy : Eq one one := by\n  sleep 6000\n  exact Eq.refl one\n\nend Fix\n"
# `theorem and_swap`'s first tactic in Fix/Goals.lean (0-based line 33).
PROBE = {"line": 33, "character": 2}
WORKSPACES = 6
STEADY_ROUNDS = 3
ROUNDS_AFTER_KILL = 3
# Liveness guards, not measurements.
RESERVE_LIMIT = 90.0
PHASE_LIMIT = 600.0


class Loop:
    """One client's sync → goals → probe → handle continuation loop, with a
    record of every call and of where (and when) each piece of state it
    carries was issued."""

    def __init__(self, client: rs.Client, root: str) -> None:
        self.client = client
        self.root = root
        self.handle: str | None = None
        # (server, time) that issued the handle.
        self.handle_from: tuple[str | None, float] = (None, 0.0)
        self.calls: list[tuple[str, rs.Answer]] = []
        # (kind, tool, answer, (server, time) of the state it failed on).
        self.failures: list[tuple[str, str, rs.Answer | None, tuple[str | None, float]]] = []
        # Continuations from the handle of an earlier round: (answer, (server, time) that issued it).
        self.handle_uses: list[tuple[rs.Answer, tuple[str | None, float]]] = []
        self.rounds = 0

    def history(self, last: int = 12) -> str:
        lines = []
        for tool, a in self.calls[-last:]:
            outcome = "ok" if a.ok else ((a.tool_error or {}).get("data") or {}).get("reason") or a.transport_error or a.status
            lines.append(f"  {a.started:.3f} {tool} on {a.served_by}: {outcome} {str(a.structured.get('next_handle', ''))[:24]}")
        return "\n".join(lines)

    def args(self, **more) -> dict:
        return {"workspace": {"root": self.root}, "path": GOALS, **more}

    def call(self, tool: str, arguments: dict) -> rs.Answer:
        answer = self.client.call(tool, arguments)
        self.calls.append((tool, answer))
        return answer

    def round(self, failover: bool) -> None:
        """One round. During a failover (`failover`), a failure that lost
        state can explain (a call cut with its replica, a version or handle
        issued by another replica, a lost session) ends the round early; it is
        recorded and checked against the failover's timeline afterwards."""
        try:
            self._round(failover)
        except rs.SessionLost as lost:
            check(failover, str(lost))
            # Its handle, from the old session's replica, is tried next round.
            self.failures.append(("sessionLost", str(lost), None, (self.client.session_home, time.monotonic())))
        self.rounds += 1

    def _round(self, failover: bool) -> None:
        if self.handle is not None:
            answer = self.call("lean_run_with", self.args(handle=self.handle, text="cases h"))
            self.handle_uses.append((answer, self.handle_from))
            if not self._explained(answer, failover, "lean_run_with", self.handle_from):
                check(answer.ok and answer.structured.get("success") is True, f"{self.client.name}: run_with: {answer}")
            if not answer.ok:
                self.handle = None
        sync = self.call("lean_sync", self.args())
        if self._explained(sync, failover, "lean_sync", (None, 0.0)):
            return
        check(sync.ok and sync.structured["diagnostics"]["counts"]["error"] == 0, f"{self.client.name}: sync: {sync}")
        version, synced = sync.structured["version"], (sync.served_by, sync.started)
        goals = self.call("lean_goals", self.args(version=version, mode="before", **PROBE))
        if self._explained(goals, failover, "lean_goals", synced):
            return
        check(goals.ok and goals.structured["goals"][0]["pretty"].endswith("⊢ And p q → And q p"), f"{self.client.name}: goals: {goals}")
        probe = self.call("lean_run_at_handle", self.args(version=version, text="intro h", **PROBE))
        if self._explained(probe, failover, "lean_run_at_handle", synced):
            return
        check(probe.ok and probe.structured["success"] is True, f"{self.client.name}: probe: {probe}")
        handle = probe.structured["next_handle"]
        step = self.call("lean_run_with", self.args(handle=handle, text="cases h"))
        if self._explained(step, failover, "lean_run_with", (probe.served_by, probe.started)):
            return
        check(step.ok and step.structured["success"] is True and step.structured.get("next_handle"), f"{self.client.name}: run_with: {step}")
        self.handle, self.handle_from = handle, (probe.served_by, probe.started)

    def _explained(self, answer: rs.Answer, failover: bool, tool: str, state: tuple[str | None, float]) -> bool:
        """Whether `answer` failed in a way a failover may explain: cut in
        flight (no answer), or a structured error about a version or a handle
        that another replica issued. Which replica and when is checked after
        the phase (see `check_failures`)."""
        if answer.ok or not failover:
            return False
        if answer.message is None or answer.status >= 500:
            self.failures.append(("cut", tool, answer, state))
            return True
        error = answer.tool_error or {}
        reason = (error.get("data") or {}).get("reason")
        if reason in ("otherProcess", "notSynced", "versionMismatch") and state[0] != answer.served_by:
            if reason == "otherProcess":
                check(error.get("code") == "contentModified", f"{error}")
                check("server process, which is gone" in error["message"] and "Repeat the probe" in error["message"], error["message"])
                check(error["data"].get("next") == ["lean_sync", "lean_run_batch"], f"{error}")
            self.failures.append((reason, tool, answer, state))
            return True
        return False


def run_rounds(loops: list[Loop], rounds: int, failover: bool, on_round=None) -> None:
    errors: list[BaseException] = []

    def run(loop: Loop) -> None:
        try:
            target = loop.rounds + rounds
            deadline = time.monotonic() + PHASE_LIMIT
            while loop.rounds < target:
                check(time.monotonic() < deadline, f"{loop.client.name}: no progress")
                loop.round(failover)
                if on_round:
                    on_round(loop)
        except Failure as failure:
            errors.append(Failure(f"{failure}\n{loop.client.name}'s last calls:\n{loop.history()}"))
        except BaseException as error:  # noqa: BLE001 - reported below
            errors.append(error)

    threads = [threading.Thread(target=run, args=(loop,)) for loop in loops]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


def executed_calls(replicas: list[rs.Replica], token: str) -> dict[str, int]:
    totals: dict[str, int] = defaultdict(int)
    for replica in replicas:
        by_tool = rs.direct(replica, token, "beam_stats")["requests"]["byTool"]
        for tool, eras in by_tool.items():
            totals[tool] += sum(eras.values())
    return totals


def runtimes(replicas: list[rs.Replica], token: str) -> dict[str, set[str]]:
    """Workspace root → the servers holding a runtime for it."""
    where: dict[str, set[str]] = defaultdict(set)
    for replica in replicas:
        stats = rs.direct(replica, token, "beam_stats")
        check(stats["replica"] == replica.replica_id, f"{stats['replica']} != {replica.replica_id}")
        for root in stats["workspaces"]:
            where[root].add(replica.server)
    return where


def affinity(loops: list[Loop], since: int = 0) -> tuple[dict[str, str], dict[str, str]]:
    """(workspace → the one server of its modern calls, legacy client → the
    one server of its session's calls), over the calls from index `since`."""
    owners: dict[str, set[str]] = defaultdict(set)
    homes: dict[str, set[str]] = defaultdict(set)
    for loop in loops:
        for _, answer in loop.calls[since:]:
            if not answer.ok:
                continue
            if loop.client.era == MODERN:
                owners[loop.root].add(answer.served_by)
            else:
                homes[loop.client.name].add(answer.served_by)
    for root, servers in owners.items():
        check(len(servers) == 1, f"the modern calls of {root} reached {servers}")
    for name, servers in homes.items():
        check(len(servers) == 1, f"the calls of legacy session {name} reached {servers}")
    return ({k: next(iter(v)) for k, v in owners.items()}, {k: next(iter(v)) for k, v in homes.items()})


def expected_runtimes(loops: list[Loop], owners: dict[str, str], homes: dict[str, str]) -> dict[str, set[str]]:
    want: dict[str, set[str]] = defaultdict(set)
    for loop in loops:
        want[loop.root].add(owners[loop.root] if loop.client.era == MODERN else homes[loop.client.name])
    return want


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--binary", default=str(rs.REPO / "target" / "debug" / "lean-beam-mcp"))
    parser.add_argument("--lean", default=os.environ.get("LEAN_BEAM_TEST_LEAN"))
    parser.add_argument("--haproxy", default="haproxy")
    parser.add_argument("--keep", action="store_true", help="keep the work directory (logs)")
    options = parser.parse_args()
    check(bool(options.lean), "--lean or LEAN_BEAM_TEST_LEAN: the test toolchain's lean")
    subprocess.run([str(rs.REPO / "scripts" / "build-fixtures.sh"), "tests/fixtures/basic"], check=True, env={**os.environ, "LEAN": options.lean}, stdout=subprocess.DEVNULL)

    workdir = Path(tempfile.mkdtemp(prefix="lean-beam-replicas-"))
    token = rs.new_token()
    replicas: list[rs.Replica] = []
    balancer = None
    passed = 0
    try:
        roots = rs.copy_workspaces(WORKSPACES, workdir, {SLEEPY: SLEEPY_TEXT})
        replicas = [rs.start_replica(options.binary, options.lean, i, token, workdir) for i in (1, 2, 3)]
        balancer = rs.start_haproxy(options.haproxy, replicas, workdir)
        by_server = {r.server: r for r in replicas}
        print(f"replicas-lane: 3 replicas ({', '.join(f'{r.server}=:{r.port}' for r in replicas)}) behind HAProxy :{balancer.port}; work dir {workdir}", file=sys.stderr)

        loops = []
        for i, root in enumerate(roots):
            for era in (MODERN, LEGACY):
                name = f"{'m' if era == MODERN else 'l'}{i}"
                loops.append(Loop(rs.Client(balancer.port, era, token, name), root))

        # ---- 1. steady state ------------------------------------------------
        run_rounds(loops, STEADY_ROUNDS, False)
        for loop in loops:
            for tool, answer in loop.calls:
                check(answer.transport_error is None, f"{loop.client.name} {tool}: {answer.transport_error}")
                check(answer.ok, f"{loop.client.name} {tool}: {answer}")
        made: dict[str, int] = defaultdict(int)
        for loop in loops:
            for tool, _ in loop.calls:
                made[tool] += 1
        executed = executed_calls(replicas, token)
        for tool, count in made.items():
            check(executed.get(tool) == count, f"{tool}: clients made {count} calls, the replicas executed {executed.get(tool)}")
        passed += 1
        print(f"ok: steady state: {sum(made.values())} calls by 12 clients, each answered once; the replicas executed exactly those", file=sys.stderr)

        owners, homes = affinity(loops)
        where = runtimes(replicas, token)
        want = expected_runtimes(loops, owners, homes)
        check(dict(where) == dict(want), f"runtimes {dict(where)} != expected {dict(want)}")
        modern_only = sum(1 for root in roots if where[root] == {owners[root]})
        passed += 1
        print(f"ok: affinity: workspaces → {owners}; legacy sessions → {homes}; {modern_only} of 6 workspaces on exactly one replica (the others also on a legacy session's replica)", file=sys.stderr)

        probe = rs.Client(balancer.port, MODERN, token, "spelling")
        for spelling in (roots[0] + "/", roots[0].replace("/ws0", "//ws0") + "//"):
            answer = probe.call("lean_sync", {"workspace": {"root": spelling}, "path": GOALS})
            check(answer.ok and answer.served_by == owners[roots[0]], f"{spelling!r} went to {answer.served_by}, not {owners[roots[0]]}: {answer}")
        big = probe.call("lean_run_at", {"workspace": {"root": roots[0]}, "path": GOALS, "version": 1, "text": "x" * 300_000, **PROBE})
        check(big.status == 413 and "routing buffer" in (big.message or {}).get("error", {}).get("message", ""), f"a 300 kB body: {big}")
        probe.close()
        # The replicas hold the token: HAProxy passes the client's
        # Authorization through (every call above carried it), so a call
        # without it is refused by the replica, and /health needs none.
        stranger = rs.Client(balancer.port, MODERN, "wrong-token", "stranger")
        refused = stranger.call("beam_version", {})
        check(refused.status == 401 and refused.served_by is not None, f"a call with a wrong token: {refused}")
        stranger.close()
        check(_health_through(balancer) == 200, "/health through HAProxy without a token")
        passed += 1
        print("ok: a root with a trailing or doubled slash routes alike; a 300 kB body is refused with 413; a wrong token gets 401 from the replica", file=sys.stderr)

        # ---- 2. failover ------------------------------------------------------
        load: dict[str, int] = defaultdict(int)
        for server in owners.values():
            load[server] += 1
        victim = max(sorted(load), key=lambda s: load[s])
        moved = sorted(root for root, server in owners.items() if server == victim)
        marks = {id(loop): len(loop.calls) for loop in loops}
        started_rounds = {id(loop): loop.rounds for loop in loops}
        killed = threading.Event()
        kill_lock = threading.Lock()
        timeline: dict[str, float] = {}

        def maybe_kill(_loop: Loop) -> None:
            # Once every client has done a round of this phase: mid-run.
            if killed.is_set() or not all(l.rounds > started_rounds[id(l)] for l in loops):
                return
            with kill_lock:
                if not killed.is_set():
                    os.kill(by_server[victim].process.pid, signal.SIGKILL)
                    timeline["kill"] = time.monotonic()
                    killed.set()

        def watch_down() -> None:
            killed.wait(PHASE_LIMIT)
            timeline["down"] = rs.wait_until(
                lambda: balancer.server_states().get(victim, "").startswith("DOWN") and time.monotonic(),
                30,
                f"HAProxy to mark {victim} DOWN",
                every=0.01,
            )

        watcher = threading.Thread(target=watch_down)
        watcher.start()
        run_rounds(loops, ROUNDS_AFTER_KILL, True, maybe_kill)
        watcher.join()
        check(killed.is_set() and "down" in timeline, "the victim was never killed, or never marked DOWN")
        # Every client works on after HAProxy took the victim out too.
        run_rounds(loops, ROUNDS_AFTER_KILL, True)
        t_kill, t_down = timeline["kill"], timeline["down"]
        by_server[victim].process.wait(30)
        survivors = [r for r in replicas if r.server != victim]

        # Only the victim's workspaces move, and once HAProxy took the victim
        # out each is served by exactly one survivor.
        final: dict[str, set[str]] = defaultdict(set)
        window: dict[str, set[str]] = defaultdict(set)
        window_ok: dict[str, set[str]] = defaultdict(set)
        reserved: dict[str, float] = {}
        for loop in loops:
            if loop.client.era != MODERN:
                continue
            for tool, answer in loop.calls[marks[id(loop)]:]:
                if answer.served_by is None or answer.message is None:
                    continue
                # A call in flight on the victim when it died is retried by
                # HAProxy on a survivor (`retry-on empty-response` with
                # `option redispatch`): it started before the kill but a
                # survivor served it, and may have opened a runtime there.
                if answer.started < t_kill and (answer.served_by == victim or loop.root not in moved):
                    continue
                if loop.root not in moved:
                    check(answer.served_by == owners[loop.root], f"{loop.root} (of {owners[loop.root]}) reached {answer.served_by} after the kill")
                    continue
                check(answer.started < t_down or answer.served_by != victim, f"{loop.root}: {victim} answered after it was DOWN")
                (final if answer.started > t_down else window)[loop.root].add(answer.served_by)
                if answer.ok and answer.started <= t_down:
                    window_ok[loop.root].add(answer.served_by)
                if tool == "lean_sync" and answer.ok and loop.root not in reserved:
                    reserved[loop.root] = answer.ended - t_kill
        current = dict(owners)
        for root in moved:
            check(len(final[root]) == 1 and victim not in final[root], f"{root} after {victim} was DOWN: {final[root]}")
            current[root] = next(iter(final[root]))
            check(reserved.get(root, RESERVE_LIMIT + 1) < RESERVE_LIMIT, f"{root} re-served after {reserved.get(root)} s")

        # Every failure is one that the failover explains.
        kinds: dict[str, int] = defaultdict(int)
        for loop in loops:
            explained = set()
            for kind, tool, answer, (state_server, state_time) in loop.failures:
                kinds[kind] += 1
                what = f"{loop.client.name} {tool} {kind} (state from {state_server} at {state_time - t_kill:+.3f} s): {answer}"
                if kind == "cut":
                    check(answer.served_by in (victim, None) and answer.started < t_down, what)
                elif kind == "sessionLost":
                    check(state_server == victim, what)
                else:
                    check(state_time < t_down and state_server != answer.served_by and answer.served_by != victim, what)
                if answer is not None:
                    explained.add(id(answer))
            for tool, answer in loop.calls[marks[id(loop)]:]:
                check(answer.ok or id(answer) in explained, f"{loop.client.name} {tool} failed, unexplained: {answer}")
            # A handle of the victim never works elsewhere: it gets the structured error.
            for answer, (issuer, _) in loop.handle_uses:
                if issuer == victim and answer.started > t_kill and answer.served_by != victim:
                    reason = ((answer.tool_error or {}).get("data") or {}).get("reason")
                    check(reason == "otherProcess" or answer.message is None, f"{loop.client.name}: a handle of {victim} on {answer.served_by}: {answer}")
            if loop.client.era == LEGACY and homes[loop.client.name] == victim:
                check("sessionLost" in {kind for kind, _, _, _ in loop.failures}, f"{loop.client.name} had its session on {victim}: {loop.failures}")
        check(kinds["otherProcess"] >= 1, f"no handle of {victim} was tried after the kill: {dict(kinds)}")

        # The survivors hold exactly the runtimes these calls explain: a
        # workspace's current replica and its legacy session's, a survivor
        # that answered one of its calls successfully before the DOWN mark
        # (it opened a runtime there); a survivor whose answer then was an
        # error (a handle or version from the victim) may or may not have.
        must: dict[str, set[str]] = defaultdict(set)
        may: dict[str, set[str]] = defaultdict(set)
        for loop in loops:
            must[loop.root].add(current[loop.root] if loop.client.era == MODERN else loop.client.session_home)
            must[loop.root] |= window_ok[loop.root] - {victim}
            may[loop.root] |= must[loop.root] | (window[loop.root] - {victim})
        where_after = runtimes(survivors, token)
        check(
            set(where_after) == set(must) and all(must[r] <= where_after[r] <= may[r] for r in must),
            f"runtimes after the failover {dict(where_after)}: expected at least {dict(must)} and at most {dict(may)}",
        )
        passed += 1
        detoured = {Path(r).name: sorted(window[r] - {victim} - final[r]) for r in moved if window[r] - {victim} - final[r]}
        print(
            f"ok: failover: {victim} killed; HAProxy marked it DOWN after {t_down - t_kill:.2f} s; its workspaces "
            f"{[Path(r).name for r in moved]} re-served by {sorted({current[r] for r in moved})} after "
            f"{', '.join(f'{reserved[r]:.2f} s' for r in moved)}; the others stayed; "
            f"served elsewhere before the DOWN mark: {detoured or 'none'}; failures, all explained: {dict(kinds)}; every other call succeeded",
            file=sys.stderr,
        )

        # ---- 3. draining --------------------------------------------------------
        # A survivor that holds a workspace: SIGTERM while a sync of the
        # sleeping file runs there.
        target = next(r for r in survivors if r.server in current.values())
        root = next(root for root, server in current.items() if server == target.server)
        other = next(r for r in survivors if r is not target)
        slow_client = rs.Client(balancer.port, MODERN, token, "slow")
        slow: dict[str, rs.Answer] = {}
        slow_thread = threading.Thread(target=lambda: slow.update(answer=slow_client.call("lean_sync", {"workspace": {"root": root}, "path": SLEEPY})))
        slow_thread.start()
        rs.wait_until(lambda: _in_flight(target, token, root), 30, "the slow sync to start on its replica")
        target.process.send_signal(signal.SIGTERM)
        rs.wait_until(lambda: _health(target) == 503, 30, f"{target.server} to turn unhealthy")
        fresh = rs.Client(balancer.port, MODERN, token, "fresh")
        moved_call = fresh.call("lean_sync", {"workspace": {"root": root}, "path": GOALS})
        check(moved_call.ok and moved_call.served_by == other.server, f"a new call while {target.server} drains: {moved_call}")
        slow_thread.join(120)
        answer = slow.get("answer")
        check(answer is not None and answer.ok and answer.served_by == target.server, f"the call in flight on the draining replica: {answer}")
        check(target.process.wait(60) == 0, f"{target.server} exit status {target.process.returncode}")
        check("drained in" in target.log_path.read_text(), "the draining replica did not log its drain")
        fresh.close()
        slow_client.close()
        passed += 1
        print(f"ok: draining: {target.server} finished its call in flight, HAProxy resent a new call to {other.server} (503 retried), and it exited cleanly", file=sys.stderr)
        for loop in loops:
            loop.client.close()
    except Failure as failure:
        print(f"replicas-lane: FAILED: {failure}\n(logs in {workdir})", file=sys.stderr)
        options.keep = True
        print(f"{passed} passed, 1 failed")
        return 1
    finally:
        if balancer is not None:
            rs.stop(balancer.process)
        for replica in replicas:
            rs.stop(replica.process, signal.SIGINT)
        if not options.keep:
            import shutil

            shutil.rmtree(workdir, ignore_errors=True)
    print(f"{passed} passed, 0 failed")
    return 0


def _health(replica: rs.Replica) -> int:
    import http.client

    connection = http.client.HTTPConnection("127.0.0.1", replica.port, timeout=5)
    try:
        connection.request("GET", "/health", headers={"Host": rs.REPLICA_HOST})
        return connection.getresponse().status
    except OSError:
        return 0
    finally:
        connection.close()


def _health_through(balancer: rs.Balancer) -> int:
    import http.client

    connection = http.client.HTTPConnection("127.0.0.1", balancer.port, timeout=5)
    try:
        connection.request("GET", "/health")
        return connection.getresponse().status
    finally:
        connection.close()


def _in_flight(replica: rs.Replica, token: str, root: str) -> bool:
    """The replica has a call in flight on `root`'s runtime (beam_stats)."""
    try:
        stats = rs.direct(replica, token, "beam_stats")
    except Failure:
        return False
    runtime = stats["workspaces"].get(root) or {}
    return runtime.get("callsInFlight", 0) > 0


if __name__ == "__main__":
    sys.exit(main())
