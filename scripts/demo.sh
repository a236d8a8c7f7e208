#!/usr/bin/env bash
# The server's main job on the embedded example workspace (examples/demo):
# sync a file and read its diagnostics, ask for goals, try a tactic
# speculatively and list what is left to do, all through `lean-beam-mcp call`.
# Installs the Lean 4.35.0 test toolchain into target/ on first use.
#
# Progress goes to stderr; the structured results go to stdout.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

LEAN_BEAM_LEAN="$(scripts/install-test-lean.sh)"
export LEAN_BEAM_LEAN
scripts/build-fixtures.sh examples/demo
cargo build --release --locked --quiet --bin lean-beam-mcp

ws='"workspace":{"root":"examples/demo"},"path":"Demo.lean"'
exec target/release/lean-beam-mcp call \
  lean_sync "{$ws,\"diagnostic_scope\":\"all\",\"diagnostics_in_result\":true}" \
  lean_goals "{$ws,\"version\":1,\"line\":11,\"character\":17,\"mode\":\"before\"}" \
  lean_run_at "{$ws,\"version\":1,\"line\":11,\"character\":17,\"text\":\"exact congrArg P.succ ih\"}" \
  lean_todo "{$ws,\"version\":1,\"start_line\":0,\"start_character\":0,\"end_line\":20,\"end_character\":0}"
