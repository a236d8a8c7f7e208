#!/usr/bin/env bash
# The official MCP conformance suites against `lean-beam-mcp --http`, each run
# judged by the suite itself (its exit code) under an expected-failures baseline.
#
#   scripts/conformance/run.sh [all|2025-11-25|2026-07-28]
#
# Installs, from the npm registry only and at exact versions locked in
# scripts/conformance/<name>/package-lock.json, into target/conformance/:
#   node                                    22.23.3 (the suites need fs.globSync;
#                                           the machine's Node may be older)
#   @modelcontextprotocol/conformance       0.1.16          2025-11-25 lane
#   @modelcontextprotocol/conformance       0.2.0-alpha.12  2026-07-28 lane
#                                           (--requirements 2026-07-28)
# then builds the server (or takes LEAN_BEAM_MCP_BIN), starts it on a free
# loopback port and runs the lanes.
# Results (checks.json per scenario) land in target/conformance/results/<lane>/.
#
# The suite marks every failing check with a cross, the expected ones included,
# and its "Total: N passed, M failed" also counts scenarios it runs but never
# scores. After the lanes, summary.py says what the run means: how many failures
# the baseline expects, which scenarios are not scored (and why), and whether any
# failure is unexpected (only those fail a lane).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
WORK="$TARGET/conformance"
LANES="${1:-all}"
case "$LANES" in
  all) LANES="2025-11-25 2026-07-28" ;;
  2025-11-25 | 2026-07-28) ;;
  *) echo "usage: $0 [all|2025-11-25|2026-07-28]" >&2; exit 2 ;;
esac

# The 2025-11-25 scenarios that run against a server without the suite's
# reference fixtures (0.1.16 baselines whole scenarios only; see
# expected-failures-2025-11-25.yaml for the others and why).
LANE_2025=(server-initialize ping logging-set-level tools-list server-sse-multiple-streams dns-rebinding-protection)

command -v npm >/dev/null 2>&1 || { echo "conformance: npm is required (it installs the pinned suites and Node 22)" >&2; exit 1; }

export NO_COLOR=1 FORCE_COLOR=0 npm_config_update_notifier=false npm_config_fund=false npm_config_audit=false
# npm's cache and logs stay in the clone (npm would otherwise fill ~/.npm).
export npm_config_cache="${npm_config_cache:-$TARGET/npm-cache}"

# Install one locked package set into $WORK/<name> unless already there.
install() {
  local name="$1" dest="$WORK/$1"
  if [[ -d "$dest/node_modules" ]] && cmp -s "$HERE/$name/package-lock.json" "$dest/package-lock.json"; then
    return
  fi
  echo "conformance: installing $name into $dest (npm ci)"
  rm -rf "$dest"
  mkdir -p "$dest"
  cp "$HERE/$name/package.json" "$HERE/$name/package-lock.json" "$dest/"
  (cd "$dest" && npm ci --no-audit --no-fund --loglevel=error)
}

install node
NODE="$WORK/node/node_modules/node/bin/node"
if [[ "$("$NODE" --version 2>/dev/null)" != "v22.23.3" ]]; then
  echo "conformance: $NODE is not Node v22.23.3" >&2
  exit 1
fi
for lane in $LANES; do install "$lane"; done

# LEAN_BEAM_MCP_BIN: a server already built (scripts/test.sh passes the one
# `cargo test` built; a `cargo build` here would compile the crate again under
# the binary's own feature set, about 50 s on two cores).
if [[ -n "${LEAN_BEAM_MCP_BIN:-}" ]]; then
  BIN="$LEAN_BEAM_MCP_BIN"
  [[ -x "$BIN" ]] || { echo "conformance: LEAN_BEAM_MCP_BIN=$BIN is not an executable" >&2; exit 1; }
else
  echo "conformance: building lean-beam-mcp (cargo build)"
  (cd "$ROOT" && cargo build --locked --bin lean-beam-mcp)
  BIN="$TARGET/debug/lean-beam-mcp"
fi

LOG="$WORK/server.log"
SERVER_PID=""
stop_server() {
  if [[ -n "$SERVER_PID" ]] && kill -0 "$SERVER_PID" 2>/dev/null; then
    kill -TERM "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
  fi
  SERVER_PID=""
}
trap stop_server EXIT

start_server() {
  : >"$LOG"
  "$BIN" --http 127.0.0.1:0 2>"$LOG" &
  SERVER_PID=$!
  local port=""
  for _ in $(seq 1 200); do
    port="$(sed -n 's#.*listening on http://127\.0\.0\.1:\([0-9]*\)/mcp.*#\1#p' "$LOG" | head -n1)"
    [[ -n "$port" ]] && break
    kill -0 "$SERVER_PID" 2>/dev/null || { cat "$LOG" >&2; echo "conformance: the server exited" >&2; exit 1; }
    sleep 0.05
  done
  [[ -n "$port" ]] || { echo "conformance: the server did not announce its port" >&2; exit 1; }
  URL="http://127.0.0.1:$port/mcp"
}

suite() {
  local lane="$1"
  shift
  "$NODE" "$WORK/$lane/node_modules/@modelcontextprotocol/conformance/dist/index.js" server --url "$URL" \
    --expected-failures "$HERE/expected-failures-$lane.yaml" "$@"
}

declare -A VERDICT SUMMARY
for lane in $LANES; do
  out="$WORK/results/$lane"
  rm -rf "$out"
  mkdir -p "$out"
  start_server
  echo
  echo "=== conformance lane $lane against $URL ==="
  status=0
  if [[ "$lane" == 2025-11-25 ]]; then
    for scenario in "${LANE_2025[@]}"; do
      suite "$lane" --scenario "$scenario" -o "$out" || status=1
    done
  else
    suite "$lane" --requirements 2026-07-28 -o "$out" || status=1
  fi
  stop_server
  requirements="$WORK/$lane/node_modules/@modelcontextprotocol/conformance/requirements/$lane.yaml"
  note=""
  if [[ "$lane" == 2025-11-25 ]]; then
    note="not run: the 0.1.16 scenarios that only drive the suite's reference fixtures or optional features (listed in expected-failures-2025-11-25.yaml)"
  fi
  SUMMARY[$lane]="$(python3 "$HERE/summary.py" "$lane" "$out" "$HERE/expected-failures-$lane.yaml" "$requirements" "$note")"
  if grep -q "ERROR" "$LOG"; then
    echo "conformance: the server logged errors during lane $lane:" >&2
    grep "ERROR" "$LOG" >&2
    status=1
  fi
  VERDICT[$lane]=$status
done

echo
for lane in $LANES; do
  printf '%s\n' "${SUMMARY[$lane]}"
done
echo
failed=0
for lane in $LANES; do
  if [[ "${VERDICT[$lane]}" == 0 ]]; then
    echo "conformance lane $lane: passed (suite verdict under scripts/conformance/expected-failures-$lane.yaml)"
  else
    echo "conformance lane $lane: FAILED"
    failed=1
  fi
done
exit "$failed"
