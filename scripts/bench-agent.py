#!/usr/bin/env python3
"""A replayable scripted proving agent (issue 26, item 4): what an agent's
loop costs in calls and in result text, and whether every verdict is right.

The official Python MCP SDK drives lean-beam-mcp over stdio against the real
test toolchain, on tests/fixtures/basic/Bench/Agent.lean (15 prelude theorems
importing Fix.Basic, each `:= by exact sorry`; 14 provable) in a temporary copy of
the workspace. The loop, the same every run:

  lean_sync     the file: its version
  lean_todo     the whole file: one item per `sorry`, each with its probe
  lean_run_batch per theorem: its candidates (some close, some fail, some
                only progress, several nested multi-line) at the item's probe
  lean_sync     after writing each theorem's first closed candidate over its
                `sorry` (the copy only): the proof must hold

Printed per theorem: calls, result text bytes (the `text` of the result's
content, what an agent reads), the verdicts against the expected ones and
whether the theorem was proved; then the totals. Verdicts are also compared
with the expected table below, which is the truth for Lean 4.35.0.

Usage: scripts/bench-agent.py [--binary PATH] [--save FILE] [--compare FILE] [--check]
  --binary   the server (default target/debug/lean-beam-mcp; build it first)
  --save     write the per-candidate verdicts and byte counts as JSON
  --compare  a file --save wrote: print byte ratios and verdict changes
  --check    exit 1 when a verdict differs from the expected table
Needs the SDK: run it with the venv python of scripts/setup-test-clients.sh
($LEAN_BEAM_TEST_CLIENTS_DIR/venv/bin/python); re-executes itself with it
when `mcp` is not importable. The toolchain: $LEAN_BEAM_TEST_LEAN or $LEAN,
else scripts/install-test-lean.sh.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FIXTURE = REPO / "tests/fixtures/basic"
FILE = "Bench/Agent.lean"

C, F, P = "closed", "failed", "progressed"

# theorem → [(candidate text, expected outcome)], in the file's order.
THEOREMS: list[tuple[str, list[tuple[str, str]]]] = [
    ("bench_add_zero", [
        ("exact N.zero_add n", F),
        ("exact Eq.symm (N.zero_add n)", F),
        ("exact Eq.refl n", C),
        ("exact N.add_zero n", C),
    ]),
    ("bench_zero_add", [
        ("exact N.add_zero n", F),
        ("induction n with\n| zero => exact Eq.refl _\n| succ m ih =>\n  exact congrArg N.succ ih", C),
        ("induction n with\n| zero => exact Eq.refl _\n| succ m ih => exact congrArg N.succ ih", C),
        ("exact N.zero_add n", C),
    ]),
    ("bench_and_swap", [
        ("intro h\nexact h", F),
        ("intro h", P),
        ("intro h\ncases h with\n| intro hp hq =>\n  constructor\n  · exact hq\n  · exact hp", C),
        ("intro h\nexact And.intro h.right h.left", C),
        ("intro h\nexact And.intro h.left h.right", F),
    ]),
    ("bench_or_swap", [
        ("intro h\nexact h", F),
        ("intro h\ncases h with\n| inl hp => exact Or.inl hp\n| inr hq => exact Or.inr hq", F),
        ("intro h\ncases h with\n| inl hp => exact Or.inr hp\n| inr hq => exact Or.inl hq", C),
        ("intro h\ncases h with\n| inl hp =>\n  exact Or.inr hp\n| inr hq =>\n  exact Or.inl hq", C),
    ]),
    ("bench_succ_add", [
        ("exact N.add_succ n m", F),
        ("exact Eq.refl _", F),
        ("exact N.succ_add n m", C),
        ("induction m with\n| zero => exact Eq.refl _\n| succ k ih => exact congrArg N.succ ih", C),
    ]),
    ("bench_add_comm", [
        ("exact N.add_comm b a", F),
        ("exact Eq.refl _", F),
        ("exact Eq.symm (N.add_comm b a)", C),
        ("exact N.add_comm a b", C),
    ]),
    ("bench_two", [
        ("exact hx", F),
        ("exact Eq.refl x", F),
        ("exact Eq.symm hx", C),
        ("cases hx\nexact Eq.refl _", C),
    ]),
    ("bench_beq", [
        ("exact Eq.refl Bool.false", F),
        ("decide", C),
        ("exact Eq.refl _", C),
    ]),
    ("bench_imp_trans", [
        ("intro hp\nexact hpq hp", F),
        ("intro hp", P),
        ("intro hp\nexact hqr (hpq hp)", C),
        ("intro hp\napply hqr\napply hpq\nexact hp", C),
        ("exact fun hp => hqr (hpq hp)", C),
    ]),
    ("bench_and_nested", [
        ("exact And.intro hp hp", F),
        ("constructor\nexact hp", P),
        ("constructor\n· exact hp\n· constructor\n  · exact hq\n  · exact hp", C),
        ("exact And.intro hp (And.intro hq hp)", C),
    ]),
    ("bench_eq_trans", [
        ("exact Eq.trans h₁ h₂", F),
        ("exact Eq.trans h₂ h₁", F),
        ("exact Eq.trans h₁ (Eq.symm h₂)", C),
    ]),
    ("bench_mul_one", [
        ("exact Eq.refl n", F),
        ("show Eq (N.add N.zero n) n\nexact N.zero_add n", C),
        ("exact N.zero_add n", C),
    ]),
    ("bench_not_false", [
        ("exact True.intro", F),
        ("intro h\nexact h", C),
        ("exact fun h => h", C),
    ]),
    ("bench_case", [
        ("constructor\ncase left => exact hq\ncase right => exact hp", F),
        ("constructor\ncase left =>\n  exact hp\ncase right =>\n  exact hq", C),
        ("constructor\ncase left => exact hp\ncase right => exact hq", C),
        ("exact And.intro hp hq", C),
    ]),
    ("bench_one_add_one", [
        ("exact Eq.refl one", F),
        ("exact Eq.refl _", F),
        ("exact N.add_zero one", F),
    ]),
]


def ensure_sdk() -> None:
    try:
        import mcp  # noqa: F401
    except ImportError:
        clients = os.environ.get("LEAN_BEAM_TEST_CLIENTS_DIR", str(REPO / "target/test-clients"))
        python = Path(clients) / "venv/bin/python"
        if not python.exists() or Path(sys.prefix) == python.parent.parent:
            sys.exit(f"bench-agent: the MCP SDK is not importable; run scripts/setup-test-clients.sh ({python})")
        os.execv(str(python), [str(python), __file__, *sys.argv[1:]])


def toolchain() -> str:
    lean = os.environ.get("LEAN_BEAM_TEST_LEAN") or os.environ.get("LEAN")
    if not lean:
        out = subprocess.run([str(REPO / "scripts/install-test-lean.sh")], check=True, capture_output=True, text=True)
        lean = out.stdout.strip()
    subprocess.run([str(REPO / "scripts/build-fixtures.sh"), str(FIXTURE)], check=True,
                   env=dict(os.environ, LEAN=lean), stdout=subprocess.DEVNULL)
    return lean


def indent(text: str, column: int) -> str:
    """A candidate as it stands in the file at `column`: its continuation
    lines shifted by the column, as an agent writes it."""
    first, *rest = text.split("\n")
    return "\n".join([first] + [" " * column + line for line in rest])


def replace(source: str, edits: list[tuple[dict, str]]) -> str:
    """`source` with each LSP range replaced (ranges on distinct lines,
    ASCII text before them)."""
    lines = source.split("\n")
    for rng, text in sorted(edits, key=lambda e: -e[0]["start"]["line"]):
        s, e = rng["start"], rng["end"]
        head, tail = lines[s["line"]][: s["character"]], lines[e["line"]][e["character"]:]
        lines[s["line"]: e["line"] + 1] = (head + text + tail).split("\n")
    return "\n".join(lines)


class Agent:
    """The calls of one loop, with the bytes of each result's text."""

    def __init__(self, client) -> None:
        self.client = client
        self.calls: list[tuple[str, str, int]] = []  # (theorem or "", tool, bytes)

    async def call(self, owner: str, tool: str, args: dict) -> dict:
        result = await self.client.call_tool(tool, args)
        text = "".join(c.text for c in result.content if c.type == "text")
        self.calls.append((owner, tool, len(text.encode())))
        if os.environ.get("BENCH_AGENT_SHOW"):
            print(f"--- {tool} ({owner}): {text}")
        if result.is_error:
            raise RuntimeError(f"{tool} failed: {text}")
        return json.loads(text)


async def loop(binary: str, lean: str, root: Path) -> dict:
    from mcp import Client, StdioServerParameters

    env = {k: v for k, v in os.environ.items() if not k.startswith("LEAN_BEAM_")}
    env.update(LEAN_BEAM_LEAN=lean, LEAN_BEAM_LOG="warn")
    server = StdioServerParameters(command=binary, args=[], env=env, cwd=str(root))
    ws = {"root": str(root)}
    async with Client(server, read_timeout_seconds=300) as client:
        agent = Agent(client)
        synced = await agent.call("", "lean_sync", {"workspace": ws, "path": FILE})
        version = synced["version"]
        last = len((root / FILE).read_text().split("\n")) - 1
        todo = await agent.call("", "lean_todo", {
            "workspace": ws, "path": FILE, "version": version,
            "start_line": 0, "start_character": 0, "end_line": last, "end_character": 0,
        })
        sorries = [i for i in todo["items"] if i["kind"] == "sorry"]
        if len(sorries) != len(THEOREMS):
            raise RuntimeError(f"{len(sorries)} sorry items for {len(THEOREMS)} theorems: {todo}")
        theorems, edits = [], []
        for (name, candidates), item in zip(THEOREMS, sorries):
            batch = await agent.call(name, "lean_run_batch", dict(
                item["probe"], workspace=ws, texts=[t for t, _ in candidates]))
            outcomes = [c["outcome"] for c in batch["candidates"]]
            winner = batch.get("first_closed")
            theorems.append({"name": name, "outcomes": outcomes, "expected": [e for _, e in candidates],
                             "winner": winner})
            if winner is not None:
                # From the probe's place to the end of the `sorry`: the
                # whole `exact sorry` the candidate replaces.
                start = {"line": item["probe"]["line"], "character": item["probe"]["character"]}
                rng = {"start": start, "end": item["range"]["end"]}
                edits.append((rng, indent(candidates[winner][0], start["character"])))
        source = (root / FILE).read_text()
        (root / FILE).write_text(replace(source, edits))
        final = await agent.call("", "lean_sync", {"workspace": ws, "path": FILE, "diagnostics_in_result": True})
        counts = final["diagnostics"]["counts"]
    by_owner: dict[str, list[int]] = {}
    for owner, _, size in agent.calls:
        by_owner.setdefault(owner, []).append(size)
    for t in theorems:
        t["calls"], t["bytes"] = len(by_owner[t["name"]]), sum(by_owner[t["name"]])
        t["proved"] = t["winner"] is not None
        t["right"] = t["outcomes"] == t["expected"]
    return {
        "theorems": theorems,
        "shared": {"calls": len(by_owner[""]), "bytes": sum(by_owner[""])},
        "calls": len(agent.calls),
        "bytes": sum(size for _, _, size in agent.calls),
        "per_tool": {tool: sum(s for _, t, s in agent.calls if t == tool)
                     for tool in dict.fromkeys(t for _, t, _ in agent.calls)},
        "final": {"errors": counts["error"], "warnings": counts["warning"]},
    }


def report(run: dict, before: dict | None) -> bool:
    old = {t["name"]: t for t in before["theorems"]} if before else {}
    print(f"{'theorem':<20} {'calls':>5} {'bytes':>7} {'was':>7}  proved  verdicts")
    all_right = True
    for t in run["theorems"]:
        was = old.get(t["name"], {}).get("bytes")
        marks = " ".join(o[0] + ("" if o == e else f"!{e[0]}") for o, e in zip(t["outcomes"], t["expected"]))
        changed = t["name"] in old and old[t["name"]]["outcomes"] != t["outcomes"]
        all_right &= t["right"]
        print(f"{t['name']:<20} {t['calls']:>5} {t['bytes']:>7} {was if was else '':>7}  "
              f"{'yes' if t['proved'] else 'no':<6}  {marks}{'  (changed)' if changed else ''}")
    s = run["shared"]
    print(f"{'(sync, todo, sync)':<20} {s['calls']:>5} {s['bytes']:>7} "
          f"{before['shared']['bytes'] if before else '':>7}")
    proved = sum(t["proved"] for t in run["theorems"])
    right = sum(o == e for t in run["theorems"] for o, e in zip(t["outcomes"], t["expected"]))
    total = sum(len(t["outcomes"]) for t in run["theorems"])
    print(f"total: {run['calls']} calls, {run['bytes']} text bytes, proved {proved} of {len(run['theorems'])}, "
          f"verdicts right {right} of {total}; final sync: {run['final']['errors']} errors, "
          f"{run['final']['warnings']} warnings (the unproved theorem's sorry)")
    print("bytes by tool: " + ", ".join(f"{k} {v}" for k, v in run["per_tool"].items()))
    if before:
        changed = [t["name"] for t in run["theorems"]
                   if t["name"] in old and old[t["name"]]["outcomes"] != t["outcomes"]]
        print(f"against the saved run: bytes {run['bytes']} / {before['bytes']} = "
              f"{run['bytes'] / before['bytes']:.3f}; calls {run['calls']} / {before['calls']}; "
              f"verdicts changed: {', '.join(changed) if changed else 'none'}")
    return all_right


def main() -> None:
    ensure_sdk()
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--binary", default=str(REPO / "target/debug/lean-beam-mcp"))
    parser.add_argument("--save")
    parser.add_argument("--compare")
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    lean = toolchain()
    with tempfile.TemporaryDirectory(prefix="bench-agent-") as tmp:
        root = Path(tmp) / "basic"
        shutil.copytree(FIXTURE, root, symlinks=True)
        run = asyncio.run(loop(os.path.realpath(args.binary), lean, root.resolve()))
    before = json.loads(Path(args.compare).read_text()) if args.compare else None
    right = report(run, before)
    if args.save:
        Path(args.save).write_text(json.dumps(run, indent=1) + "\n")
    if args.check and not right:
        sys.exit(1)


if __name__ == "__main__":
    main()
