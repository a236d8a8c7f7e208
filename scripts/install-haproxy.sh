#!/usr/bin/env bash
# HAProxy 2.6 or newer, for the multi-replica lane (scripts/replicas-lane.py)
# and the figures (scripts/replicas-figures.py).
#
# Finds or installs Debian's haproxy package through scripts/install-apt.sh
# (Debian 12 and Ubuntu 24.04 ship 2.6 and 2.8), then checks its version.
# Stdout: only the haproxy path. Progress and reasons go to stderr.
#
# Exit status: 0 ready; 3 not available here (no suitable haproxy and no way to
# install one: the caller skips the lane and says why); anything else an error.
set -euo pipefail

log() { printf 'install-haproxy: %s\n' "$*" >&2; }

# Whether $1 is HAProxy 2.6 or newer.
recent_enough() {
  local version major minor
  version="$("$1" -v 2>/dev/null | sed -n 's/^HA-\{0,1\}Proxy version \([0-9]*\)\.\([0-9]*\).*/\1 \2/p' | head -n1)"
  read -r major minor <<<"${version:-0 0}"
  [[ "$major" -gt 2 || ( "$major" -eq 2 && "$minor" -ge 6 ) ]]
}

path="$("$(dirname "$0")/install-apt.sh" haproxy haproxy)"
if recent_enough "$path"; then
  printf '%s\n' "$path"
  exit 0
fi
log "not run: $path is older than 2.6 ($("$path" -v 2>/dev/null | head -n1)); the lane needs 'balance hash' and 'retry-on' of 2.6"
exit 3
