#!/usr/bin/env bash
# A program from a Debian package, for a test lane: `promtool` (package
# prometheus) for the /metrics lane, `chromium` for the /status browser test,
# `buildah` for the container image.
#
#   scripts/install-apt.sh PROGRAM PACKAGE
#
# Uses PROGRAM when it is on PATH (or in /usr/bin, /usr/sbin); otherwise
# installs PACKAGE with apt-get (as root, or with sudo without a password).
# Stdout: only the program's path. Progress and reasons go to stderr.
#
# Exit status: 0 ready; 3 not available here (no apt-get, no root, or the
# package is not in the machine's sources: the caller skips its lane and says
# why); anything else an error.
set -euo pipefail

program="${1:?usage: install-apt.sh PROGRAM PACKAGE}"
package="${2:?usage: install-apt.sh PROGRAM PACKAGE}"
log() { printf 'install-apt: %s\n' "$*" >&2; }

found() {
  local path
  path="$(command -v "$program" 2>/dev/null || true)"
  for dir in /usr/bin /usr/sbin; do
    [[ -z "$path" && -x "$dir/$program" ]] && path="$dir/$program"
  done
  [[ -n "$path" ]] || return 1
  printf '%s\n' "$path"
}

if found; then
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  log "not run: $program is not installed and this machine has no apt-get; install $program (Debian's package $package) and run again"
  exit 3
fi
sudo=()
if [[ "$(id -u)" -ne 0 ]]; then
  if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    sudo=(sudo -n)
  else
    log "not run: $program is not installed, and installing it needs root (or sudo without a password): apt-get install $package"
    exit 3
  fi
fi

log "installing the $package package with apt-get (for $program)"
export DEBIAN_FRONTEND=noninteractive
if ! "${sudo[@]}" apt-get install -y --no-install-recommends "$package" >&2; then
  "${sudo[@]}" apt-get update >&2
  if ! "${sudo[@]}" apt-get install -y --no-install-recommends "$package" >&2; then
    log "not run: apt-get could not install $package (see above)"
    exit 3
  fi
fi
if found; then
  exit 0
fi
log "not run: the $package package installed no $program"
exit 3
