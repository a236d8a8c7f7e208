#!/usr/bin/env bash
# The operator's lane: /metrics through Prometheus's `promtool check metrics`
# and /status in Debian's headless Chromium (tests/observe/observe.test.mjs),
# against a real `lean-beam-mcp --http` and the Lean test toolchain.
#
#   LEAN_BEAM_MCP_BIN=target/debug/lean-beam-mcp LEAN_BEAM_TEST_LEAN=/path/to/lean \
#     scripts/observe-lane.sh
#
# Installs what it needs: promtool (Debian's package prometheus) and chromium
# with apt-get (scripts/install-apt.sh), playwright-core (npm, locked; it
# drives /usr/bin/chromium and downloads no browser) into target/observe. A
# part whose program cannot be installed here is skipped, saying why.
# The screenshot is kept at target/observe/status.png (a CI artefact).
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
cd "$repo_root"
log() { printf 'observe-lane: %s\n' "$*" >&2; }

: "${LEAN_BEAM_MCP_BIN:?set LEAN_BEAM_MCP_BIN to the server binary}"
: "${LEAN_BEAM_TEST_LEAN:?set LEAN_BEAM_TEST_LEAN to the lean binary}"

promtool="" chromium=""
status=0; promtool="$(scripts/install-apt.sh promtool prometheus)" || status=$?
if [[ $status -eq 3 ]]; then log "NOT RUN: promtool check metrics (install-apt.sh said why above)"; elif [[ $status -ne 0 ]]; then exit $status; fi
status=0; chromium="$(scripts/install-apt.sh chromium chromium)" || status=$?
if [[ $status -eq 3 ]]; then log "NOT RUN: the /status browser test (install-apt.sh said why above)"; elif [[ $status -ne 0 ]]; then exit $status; fi

dest="$repo_root/target/observe"
source_dir="$repo_root/tests/observe"
export npm_config_cache="$repo_root/target/npm-cache" npm_config_update_notifier=false \
  npm_config_fund=false npm_config_audit=false
if [[ -n "$chromium" ]] && ! cmp -s "$source_dir/package-lock.json" "$dest/.stamp"; then
  command -v npm >/dev/null 2>&1 || { log "npm is required (it installs playwright-core)"; exit 1; }
  log "installing playwright-core from npm into $dest (npm ci)"
  rm -rf "$dest/node_modules"
  mkdir -p "$dest"
  cp "$source_dir/package.json" "$source_dir/package-lock.json" "$dest/"
  (cd "$dest" && npm ci --no-audit --no-fund --loglevel=error >&2)
  cp "$source_dir/package-lock.json" "$dest/.stamp"
fi
mkdir -p "$dest"
cp "$source_dir/observe.test.mjs" "$dest/"

# Node 18 or newer (fetch, node:test): the machine's, else the one the
# TypeScript client lane installed.
node="$(command -v node || true)"
clients_node="${LEAN_BEAM_TEST_CLIENTS_DIR:-$repo_root/target/test-clients}/typescript/node_modules/node/bin/node"
if [[ -z "$node" ]] || [[ "$("$node" -p 'process.versions.node.split(".")[0]')" -lt 18 ]]; then
  node="$clients_node"
fi

PROMTOOL="$promtool" CHROMIUM="$chromium" \
  LEAN_BEAM_LEAN="$LEAN_BEAM_TEST_LEAN" \
  LEAN_BEAM_FIXTURE="$repo_root/tests/fixtures/basic" \
  LEAN_BEAM_STATUS_SHOT="$dest/status.png" \
  "$node" --test "$dest/observe.test.mjs"
