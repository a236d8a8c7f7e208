#!/usr/bin/env bash
# HAProxy 2.6 or newer, for the multi-replica lane (scripts/replicas-lane.py)
# and the figures (scripts/replicas-figures.py).
#
# Uses the haproxy on PATH when it is 2.6 or newer; otherwise installs the
# distribution's package with apt-get (Debian 12 and Ubuntu 24.04 ship 2.6 and
# 2.8; run as root, or with sudo). Stdout: only the haproxy path. Progress and
# reasons go to stderr.
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

found() {
  local path
  path="$(command -v haproxy 2>/dev/null || true)"
  [[ -z "$path" && -x /usr/sbin/haproxy ]] && path=/usr/sbin/haproxy
  if [[ -n "$path" ]] && recent_enough "$path"; then
    printf '%s\n' "$path"
    return 0
  fi
  return 1
}

if found; then
  exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
  log "not run: HAProxy 2.6+ is not installed and this machine has no apt-get; install haproxy >= 2.6 (e.g. your distribution's package) and run scripts/test.sh again"
  exit 3
fi
sudo=()
if [[ "$(id -u)" -ne 0 ]]; then
  if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    sudo=(sudo -n)
  else
    log "not run: HAProxy 2.6+ is not installed, and installing it with apt-get needs root (or sudo without a password): apt-get install haproxy"
    exit 3
  fi
fi

log "installing the haproxy package with apt-get"
export DEBIAN_FRONTEND=noninteractive
if ! "${sudo[@]}" apt-get install -y --no-install-recommends haproxy >&2; then
  "${sudo[@]}" apt-get update >&2
  "${sudo[@]}" apt-get install -y --no-install-recommends haproxy >&2
fi
if found; then
  exit 0
fi
log "not run: the installed haproxy is older than 2.6 ($(haproxy -v 2>/dev/null | head -n1)); the lane needs 'balance hash' and 'retry-on' of 2.6"
exit 3
