#!/usr/bin/env bash
# Compile the foundation modules of the Lean fixture workspaces to .olean/.ilean
# (Lake's build layout: <root>/.lake/build/lib/lean/<Module path>.olean), so that the
# other fixture files can `import` them with
#   LEAN_PATH=<root>/.lake/build/lib/lean  LEAN_SRC_PATH=<root>
#
# Usage: scripts/build-fixtures.sh [ROOT...]
#   With no arguments every fixture workspace of the repository is built. ROOT is a
#   workspace directory (absolute, or relative to the current directory / repository
#   root) containing a BUILD-MODULES file.
# Uses $LEAN if set, else the toolchain from scripts/install-test-lean.sh.
# Idempotent: a module is recompiled only when its source (or one of the modules it
# imports, or the lean binary) is newer than its .olean. Progress goes to stderr;
# stdout stays empty.
set -euo pipefail

log() { printf 'build-fixtures: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

script_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
repo_root="$(cd "$script_dir/.." && pwd -P)"

if [[ -z "${LEAN:-}" ]]; then
  LEAN="$("$script_dir/install-test-lean.sh")"
fi
[[ -x "$LEAN" ]] || die "LEAN=$LEAN is not executable"

# Modules to compile: listed one per line (dot-separated, dependency order) in the
# workspace's BUILD-MODULES file, so a copy of a fixture workspace elsewhere (e.g. a
# test's temp dir) can be built with `scripts/build-fixtures.sh /tmp/copy`.
modules_for() {
  [[ -f "$1/BUILD-MODULES" ]] || die "$1 has no BUILD-MODULES file (list of modules to compile)"
  grep -v '^[[:space:]]*\(#\|$\)' "$1/BUILD-MODULES"
}

resolve_root() {
  local r="$1"
  if [[ -d "$r" ]]; then (cd "$r" && pwd -P)
  elif [[ -d "$repo_root/$r" ]]; then (cd "$repo_root/$r" && pwd -P)
  else die "no such fixture workspace: $r"
  fi
}

if [[ $# -eq 0 ]]; then
  set -- "$repo_root/tests/fixtures/basic" "$repo_root/tests/fixtures/second" \
         "$repo_root/tests/fixtures/long" "$repo_root/examples/demo"
fi

for arg in "$@"; do
  root="$(resolve_root "$arg")"
  mods="$(modules_for "$root")"
  out="$root/.lake/build/lib/lean"
  mkdir -p "$out"
  prev_olean=""
  for mod in $mods; do
    rel="${mod//.//}"
    src="$root/$rel.lean"
    olean="$out/$rel.olean"
    ilean="$out/$rel.ilean"
    [[ -f "$src" ]] || die "missing source $src"
    if [[ -f "$olean" && -f "$ilean" && "$olean" -nt "$src" && "$olean" -nt "$LEAN" \
          && ( -z "$prev_olean" || "$olean" -nt "$prev_olean" ) ]]; then
      log "up to date: $root ($mod)"
    else
      log "compiling $root ($mod)"
      mkdir -p "$(dirname "$olean")"
      # Write next to the target first, then rename, so an interrupted build never
      # leaves a truncated .olean that looks up to date.
      tmp_olean="$olean.tmp.$$"
      tmp_ilean="$ilean.tmp.$$"
      if ! (cd "$root" && LEAN_PATH="$out" LEAN_SRC_PATH="$root" \
              "$LEAN" -o "$tmp_olean" -i "$tmp_ilean" "$rel.lean" >&2); then
        rm -f "$tmp_olean" "$tmp_ilean"
        die "lean failed on $src"
      fi
      mv -f "$tmp_ilean" "$ilean"
      mv -f "$tmp_olean" "$olean"
    fi
    prev_olean="$olean"
  done
done
