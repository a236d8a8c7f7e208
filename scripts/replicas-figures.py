#!/usr/bin/env python3
"""Figures of the replica set (README, "Deployment: several replicas").

    scripts/replicas-figures.py [--binary PATH] [--lean LEAN] [--haproxy haproxy]
                                [--seconds 20] [--trials 3] [--json]

1. Throughput: the lane's client mix (12 clients over 6 workspaces, each
   workspace with a 2026-07-28 and a 2025-11-25 client, each looping
   sync → goals → probe → handle continuation) for --seconds against 1
   replica and against 3 replicas, both behind HAProxy; rounds and calls per
   second, call latency p50/p99.
2. Recovery: --trials times, a fresh 3-replica set, the replica holding the
   most workspaces killed mid-run: time until HAProxy marks it DOWN, until
   each of its workspaces answers a lean_sync on a survivor, and until every
   client has completed a whole round again.
3. Memory per workspace: resident memory of each replica's process tree
   (server + Lean servers + Lean workers, from /proc) over the workspace
   runtimes it holds, after the throughput run.
4. A paper estimate for 1,000 concurrent agents from these measurements.

A benchmark, not a test: it asserts nothing but that the calls succeed.
Standard library only; release build recommended (--binary target/release/lean-beam-mcp).
"""

from __future__ import annotations

import argparse
import json
import math
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
from replicaset import LEGACY, MODERN  # noqa: E402

GOALS = "Fix/Goals.lean"
PROBE = {"line": 33, "character": 2}
WORKSPACES = 6


def one_round(client: rs.Client, root: str, latencies: list[float]) -> bool:
    """sync → goals → probe → continuation; False when a call failed."""
    args = {"workspace": {"root": root}, "path": GOALS}
    steps = [("lean_sync", {})]
    answer = None
    for tool, extra in steps:
        answer = client.call(tool, {**args, **extra})
        latencies.append(answer.ended - answer.started)
        if not answer.ok:
            return False
    version = answer.structured["version"]
    for tool, extra in (
        ("lean_goals", {"version": version, "mode": "before", **PROBE}),
        ("lean_run_at_handle", {"version": version, "text": "intro h", **PROBE}),
    ):
        answer = client.call(tool, {**args, **extra})
        latencies.append(answer.ended - answer.started)
        if not answer.ok:
            return False
    handle = answer.structured.get("next_handle")
    answer = client.call("lean_run_with", {**args, "handle": handle, "text": "cases h"})
    latencies.append(answer.ended - answer.started)
    return answer.ok


def clients_for(port: int, token: str, roots: list[str]) -> list[tuple[rs.Client, str]]:
    out = []
    for i, root in enumerate(roots):
        out.append((rs.Client(port, MODERN, token, f"m{i}"), root))
        out.append((rs.Client(port, LEGACY, token, f"l{i}"), root))
    return out


def drive(clients, seconds: float, stop: threading.Event | None = None, per_client_rounds=None):
    """Run the loop on every client for `seconds` (or until `stop`); returns
    (rounds, failures, latencies)."""
    rounds = defaultdict(int)
    failures = defaultdict(int)
    latencies: list[float] = []
    deadline = time.monotonic() + seconds

    def run(index: int, client: rs.Client, root: str) -> None:
        while time.monotonic() < deadline and not (stop and stop.is_set()):
            try:
                ok = one_round(client, root, latencies)
            except rs.SessionLost:
                ok = False
            if ok:
                rounds[index] += 1
                if per_client_rounds is not None:
                    per_client_rounds(index, time.monotonic())
            else:
                failures[index] += 1

    threads = [threading.Thread(target=run, args=(i, c, r)) for i, (c, r) in enumerate(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sum(rounds.values()), sum(failures.values()), latencies


def percentile(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))]


def tree_rss_kib(pid: int) -> int:
    """Resident memory of `pid` and all its descendants."""
    children = defaultdict(list)
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    ppid = int(stat.read().rsplit(")", 1)[1].split()[1])
                children[ppid].append(int(entry))
            except (OSError, ValueError, IndexError):
                pass
    total, stack = 0, [pid]
    while stack:
        p = stack.pop()
        stack.extend(children.get(p, []))
        try:
            with open(f"/proc/{p}/status") as status:
                for line in status:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
        except OSError:
            pass
    return total


class ReplicaSet:
    def __init__(self, options, count: int) -> None:
        self.workdir = Path(tempfile.mkdtemp(prefix="lean-beam-figures-"))
        self.token = rs.new_token()
        self.roots = rs.copy_workspaces(WORKSPACES, self.workdir)
        self.replicas = [rs.start_replica(options.binary, options.lean, i, self.token, self.workdir) for i in range(1, count + 1)]
        self.balancer = rs.start_haproxy(options.haproxy, self.replicas, self.workdir)

    def close(self) -> None:
        rs.stop(self.balancer.process)
        for replica in self.replicas:
            rs.stop(replica.process, signal.SIGINT)
        subprocess.run(["rm", "-rf", str(self.workdir)], check=False)


def throughput(options, count: int) -> dict:
    s = ReplicaSet(options, count)
    try:
        clients = clients_for(s.balancer.port, s.token, s.roots)
        drive(clients, 3.0)  # warm-up: Lean servers started, files elaborated
        rounds, failures, latencies = drive(clients, options.seconds)
        memory = []
        for replica in s.replicas:
            stats = rs.direct(replica, s.token, "beam_stats")
            runtimes = len(stats["workspaces"])
            if runtimes:
                memory.append((tree_rss_kib(replica.process.pid), runtimes))
        probes = rounds * 2  # lean_run_at_handle + lean_run_with per round
        for client, _ in clients:
            client.close()
        return {
            "replicas": count,
            "seconds": options.seconds,
            "rounds": rounds,
            "failed_rounds": failures,
            "rounds_per_s": rounds / options.seconds,
            "calls_per_s": len(latencies) / options.seconds,
            "probes_per_s": probes / options.seconds,
            "latency_p50_ms": percentile(latencies, 50) * 1000,
            "latency_p99_ms": percentile(latencies, 99) * 1000,
            "replica_tree_mib": [round(kib / 1024, 1) for kib, _ in memory],
            "runtimes_per_replica": [n for _, n in memory],
            "mib_per_runtime": round(sum(kib for kib, _ in memory) / 1024 / max(1, sum(n for _, n in memory)), 1),
        }
    finally:
        s.close()


def recovery(options) -> dict:
    s = ReplicaSet(options, 3)
    try:
        clients = clients_for(s.balancer.port, s.token, s.roots)
        drive(clients, 3.0)
        owners = {}
        for client, root in clients:
            if client.era == MODERN:
                owners[root] = client.call("lean_sync", {"workspace": {"root": root}, "path": GOALS}).served_by
        load = defaultdict(int)
        for server in owners.values():
            load[server] += 1
        victim_name = max(sorted(load), key=lambda x: load[x])
        victim = next(r for r in s.replicas if r.server == victim_name)
        moved = [root for root, server in owners.items() if server == victim_name]
        stop = threading.Event()
        t = {}
        last_round = {}
        background = threading.Thread(target=lambda: t.update(result=drive(clients, 120, stop, lambda i, when: last_round.__setitem__(i, when))))
        background.start()
        rs.wait_until(lambda: len(last_round) == len(clients), 60, "every client to complete a round")
        t_kill = time.monotonic()
        os.kill(victim.process.pid, signal.SIGKILL)
        t_down = rs.wait_until(lambda: s.balancer.server_states().get(victim_name, "").startswith("DOWN") and time.monotonic(), 30, "DOWN", every=0.005)
        # Each moved workspace answers a sync on a survivor.
        reserved = {}
        probe = rs.Client(s.balancer.port, MODERN, s.token, "probe")
        for root in moved:
            answer = rs.wait_until(lambda: (lambda a: a if a.ok else None)(probe.call("lean_sync", {"workspace": {"root": root}, "path": GOALS})), 60, "re-served")
            reserved[root] = answer.ended - t_kill
        rs.wait_until(lambda: all(when > t_kill for when in last_round.values()), 60, "every client to complete a round after the kill")
        all_rounds = max(last_round.values()) - t_kill
        stop.set()
        background.join()
        probe.close()
        for client, _ in clients:
            client.close()
        return {
            "victim_workspaces": len(moved),
            "down_s": t_down - t_kill,
            "reserved_s": max(reserved.values()) if reserved else 0.0,
            "all_clients_round_s": all_rounds,
            "failed_rounds": t["result"][1],
        }
    finally:
        s.close()


def estimate(one: dict, three: dict, memory_mib: float) -> dict:
    """Replicas and machines for 1,000 concurrent agents, each in its own
    workspace, from the measured probe rate per core and memory per runtime."""
    cores = os.cpu_count() or 1
    probe_s_per_core = three["probes_per_s"] / cores
    agents = 1000
    # An agent thinks between calls (its model): one probe per 5 s each is a
    # busy proof search; the calls per round scale it (5 calls, 2 of them probes).
    agent_probes_per_s = 0.2
    cores_needed = agents * agent_probes_per_s / probe_s_per_core
    mib = agents * memory_mib
    machine = {"cores": 16, "mib": 64 * 1024}
    per_machine_agents = min(machine["cores"] * probe_s_per_core / agent_probes_per_s, machine["mib"] * 0.8 / memory_mib)
    return {
        "agents": agents,
        "assumed_agent_probes_per_s": agent_probes_per_s,
        "measured_probes_per_s_per_core": round(probe_s_per_core, 1),
        "mib_per_workspace": memory_mib,
        "cores_needed": math.ceil(cores_needed),
        "memory_gib_needed": round(mib / 1024, 1),
        "machine": "16 cores, 64 GiB (80% for Lean)",
        "agents_per_machine": int(per_machine_agents),
        "machines": math.ceil(agents / per_machine_agents),
        "replicas": f"one replica per machine (LEAN_BEAM_MAX_RUNTIMES >= {math.ceil(agents / math.ceil(agents / per_machine_agents))})",
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--binary", default=str(rs.REPO / "target" / "release" / "lean-beam-mcp"))
    parser.add_argument("--lean", default=os.environ.get("LEAN_BEAM_TEST_LEAN"))
    parser.add_argument("--haproxy", default="haproxy")
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument(
        "--heavy-workspace-mib",
        type=float,
        default=3072,
        help="memory per workspace of a Mathlib-sized project, for a second estimate (assumed, not measured here)",
    )
    parser.add_argument("--json", action="store_true")
    options = parser.parse_args()
    if not options.lean:
        sys.exit("--lean or LEAN_BEAM_TEST_LEAN: the test toolchain's lean")
    subprocess.run([str(rs.REPO / "scripts" / "build-fixtures.sh"), "tests/fixtures/basic"], check=True, env={**os.environ, "LEAN": options.lean}, stdout=subprocess.DEVNULL)
    one = throughput(options, 1)
    three = throughput(options, 3)
    trials = [recovery(options) for _ in range(options.trials)]
    memory = max(one["mib_per_runtime"], three["mib_per_runtime"])
    figures = {
        "machine_cores": os.cpu_count(),
        "throughput_1_replica": one,
        "throughput_3_replicas": three,
        "recovery": trials,
        "estimate_1000_agents": estimate(one, three, memory),
        "estimate_1000_agents_heavy": estimate(one, three, options.heavy_workspace_mib),
    }
    if options.json:
        print(json.dumps(figures, indent=2))
        return 0
    print(f"machine: {os.cpu_count()} cores")
    for t in (one, three):
        print(
            f"{t['replicas']} replica(s): {t['rounds_per_s']:.2f} rounds/s, {t['calls_per_s']:.1f} calls/s, {t['probes_per_s']:.1f} probes/s, "
            f"latency p50 {t['latency_p50_ms']:.0f} ms p99 {t['latency_p99_ms']:.0f} ms, failed rounds {t['failed_rounds']}, "
            f"{t['mib_per_runtime']} MiB per workspace runtime (trees {t['replica_tree_mib']} MiB for {t['runtimes_per_replica']} runtimes)"
        )
    print(f"3 vs 1 replica: {three['rounds_per_s'] / one['rounds_per_s']:.2f}x rounds/s")
    for i, r in enumerate(trials, 1):
        print(
            f"recovery {i}: {r['victim_workspaces']} workspaces on the killed replica; DOWN after {r['down_s']:.2f} s; "
            f"all re-served after {r['reserved_s']:.2f} s; every client through a whole round after {r['all_clients_round_s']:.2f} s"
        )
    for label, key in (("estimate (measured workspaces)", "estimate_1000_agents"), ("estimate (assumed Mathlib-sized workspaces)", "estimate_1000_agents_heavy")):
        e = figures[key]
        print(
            f"{label}: 1,000 agents at {e['assumed_agent_probes_per_s']} probes/s each need ~{e['cores_needed']} cores and ~{e['memory_gib_needed']} GiB "
            f"({e['measured_probes_per_s_per_core']} probes/s per core measured, {e['mib_per_workspace']} MiB per workspace); "
            f"{e['machine']}: {e['agents_per_machine']} agents each, {e['machines']} machines, {e['replicas']}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
