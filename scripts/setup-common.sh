# Sourced (not run) by the scripts that install test tools into target/
# (install-test-lean.sh, setup-test-clients.sh, setup-test-hosts.sh): their
# log lines, the repository root, and an npm ci install of a pinned lock file.
# Before sourcing, set `tool` to the script's name (it starts each log line).

log() { printf '%s: %s\n' "$tool" "$*" >&2; }
die() { log "error: $*"; exit 1; }

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"

# absolute PATH: PATH, made absolute against the working directory.
absolute() {
  case "$1" in
    /*) printf '%s\n' "$1" ;;
    *) printf '%s\n' "$PWD/$1" ;;
  esac
}

# npm's cache and logs stay in the repository.
use_repo_npm_cache() {
  export npm_config_cache="$repo_root/target/npm-cache" npm_config_update_notifier=false \
    npm_config_fund=false npm_config_audit=false
}

# npm_ci SOURCE DEST NODE WHAT: a fresh DEST holding SOURCE's package.json and
# package-lock.json and what `npm ci` installs from them; NODE (npm's `node`
# in DEST) must then run. WHAT names the install in errors.
npm_ci() {
  local source="$1" dest="$2" node="$3" what="$4"
  rm -rf "$dest"
  mkdir -p "$dest"
  cp "$source/package.json" "$source/package-lock.json" "$dest/"
  (cd "$dest" && npm ci --no-audit --no-fund --loglevel=error >&2) \
    || die "npm ci of $what failed"
  "$node" --version >/dev/null || die "the installed Node ($node) does not run"
}
