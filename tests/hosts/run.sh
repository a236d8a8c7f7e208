#!/usr/bin/env bash
# Run the hosts lane (every tests/hosts/*.test.mjs) on the Node the lane
# installed. Where the kernel allows it, the lane runs in a private network
# namespace with only loopback (`unshare -rn`, lo brought up), so that no host
# can reach the network however it is configured: every model API is a
# scripted server on 127.0.0.1. Elsewhere it runs with the hosts' telemetry,
# update checks and auto-updates switched off by their settings and
# environment variables only, and says so.
#
#   tests/hosts/run.sh HOSTS_DIR [node --test options...]
#
# Environment: LEAN_BEAM_MCP_BIN (the server), LEAN_BEAM_LEAN (the test lean).
set -euo pipefail

hosts_dir="$1"
shift
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
node="$hosts_dir/node_modules/node/bin/node"
export LEAN_BEAM_TEST_HOSTS_DIR="$hosts_dir"
lane=("$node" --test --test-concurrency=2 "$@" "$here"/*.test.mjs)

if command -v ip >/dev/null 2>&1 && unshare -rn ip link set lo up 2>/dev/null; then
  printf 'hosts lane: in a private network namespace (loopback only)\n' >&2
  exec unshare -rn sh -c 'ip link set lo up && exec "$@"' sh "${lane[@]}"
fi
printf 'hosts lane: NOTE no private network namespace here (unshare -rn failed); the hosts run with their network traffic switched off by settings only\n' >&2
exec "${lane[@]}"
