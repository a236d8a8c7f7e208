#!/usr/bin/env python3
"""What a conformance lane's run means, in a few lines.

The suite prints every check with a red cross when it fails and ends with a
total ("Total: 96 passed, 70 failed") that counts the failures its baseline
expects and the scenarios it runs but never scores. Its verdict is the baseline
check, a line among many. This summary, printed by scripts/conformance/run.sh
after each lane, splits the failures into expected (listed in the lane's
expected-failures file), not scored (the requirement set's `not_scored`
scenarios: extensions and pending ones, run for visibility) and unexpected
(the only ones that fail the lane).

    summary.py LANE RESULTS_DIR EXPECTED_FAILURES_YAML [REQUIREMENTS_YAML [NOTE]]

Reads the suite's checks.json files; prints to stdout; exits 0.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

FAILED = {"FAILURE", "WARNING"}


def baseline(path: Path) -> set[str]:
    """`scenario` and `scenario:check` entries of an expected-failures file."""
    entries = set()
    for line in path.read_text().splitlines():
        match = re.match(r"\s*-\s*([A-Za-z0-9_./:-]+)", line)
        if match:
            entries.add(match.group(1))
    return entries


def not_scored(path: Path | None) -> dict[str, str]:
    """Server-leg `not_scored` scenarios of a requirement set, with their reason."""
    if path is None or not path.is_file():
        return {}
    text = path.read_text()
    section = text.split("\nnot_scored:", 1)
    if len(section) < 2:
        return {}
    found = {}
    for entry in re.split(r"\n\s*-\s*(?=scenario:)", section[1]):
        scenario = re.search(r"scenario:\s*(\S+)", entry)
        leg = re.search(r"\bleg:\s*(\S+)", entry)
        reason = re.search(r"\breason:\s*(\S+)", entry)
        if scenario and leg and leg.group(1) == "server":
            found[scenario.group(1)] = reason.group(1) if reason else "not scored"
    return found


def runs(results: Path) -> dict[str, list[dict]]:
    """Scenario name → its checks, from `server-<scenario>-<timestamp>/checks.json`."""
    found = {}
    for checks in sorted(results.glob("*/checks.json")):
        name = re.sub(r"-\d{4}-\d{2}-\d{2}T[\d-]+Z$", "", checks.parent.name)
        name = name.removeprefix("server-")
        found[name] = json.loads(checks.read_text())
    return found


def main() -> int:
    lane, results, expected_file = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
    requirements = Path(sys.argv[4]) if len(sys.argv) > 4 else None
    note = sys.argv[5] if len(sys.argv) > 5 else ""
    expected = baseline(expected_file)
    unscored = not_scored(requirements)
    scenarios = runs(results)

    passed = 0
    expected_failures = []
    unexpected = []
    visible = []  # (scenario, reason, passed, failed)
    for scenario, checks in scenarios.items():
        ok = sum(1 for c in checks if c.get("status") == "SUCCESS")
        bad = [c for c in checks if c.get("status") in FAILED]
        if scenario in unscored:
            visible.append((scenario, unscored[scenario], ok, len(bad)))
            continue
        passed += ok
        for check in bad:
            key = f"{scenario}:{check.get('id')}"
            (expected_failures if scenario in expected or key in expected else unexpected).append(key)

    scored = len(scenarios) - len(visible)
    print(f"conformance lane {lane}, what the run means:")
    print(f"  scored: {scored} scenarios, {passed} checks passed", end="")
    if expected_failures:
        print(
            f"; {len(expected_failures)} checks failed as expected (in {expected_file.name}: "
            "they need the suite's reference fixtures or an optional feature Beam does not declare)"
        )
    else:
        print("; no failures")
    if unexpected:
        print(f"  UNEXPECTED failures ({len(unexpected)}), these fail the lane:")
        for key in unexpected:
            print(f"    {key}")
    if visible:
        failing = [v for v in visible if v[3] > 0]
        print(
            f"  not scored: {len(visible)} scenarios the requirement set runs for visibility only "
            f"({len(failing)} with failing checks); they never affect the verdict:"
        )
        for scenario, reason, ok, bad in visible:
            print(f"    {scenario} ({reason}): {ok} passed, {bad} failed")
    if note:
        print(f"  {note}")
    print(
        "  The suite's own \"Total: N passed, M failed\" counts all of the above; "
        + ("the lane fails on the unexpected failures." if unexpected else "the lane passes.")
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
