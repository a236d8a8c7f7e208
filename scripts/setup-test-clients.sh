#!/usr/bin/env bash
# Install the real MCP clients used by the client tests into a private virtual
# environment: the official Python SDK (PyPI mcp==2.3.0) and pytest.
#
# Idempotent: a stamp naming the pinned requirements makes re-runs instant; a
# changed pin or a broken venv is rebuilt. Only PyPI is used, through pip.
#
# Layout (default ${LEAN_BEAM_TEST_CLIENTS_DIR:-<repo>/target/test-clients}):
#   venv/            the virtual environment (venv/bin/python, venv/bin/pytest)
#   venv/.stamp      written last, holds the requirements it was built from
#
# Stdout: only the venv's python path, at the end (PY=$(scripts/setup-test-clients.sh)).
# Progress goes to stderr.
#
# Environment:
#   LEAN_BEAM_TEST_CLIENTS_DIR  install directory
#   PYTHON                      interpreter to create the venv with (default python3; >= 3.10)
set -euo pipefail

readonly REQUIREMENTS="mcp==2.3.0 pytest==8.4.2"

log() { printf 'setup-test-clients: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

script_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
repo_root="$(cd "$script_dir/.." && pwd -P)"
dest="${LEAN_BEAM_TEST_CLIENTS_DIR:-$repo_root/target/test-clients}"
case "$dest" in
  /*) ;;
  *) dest="$PWD/$dest" ;;
esac
venv="$dest/venv"
stamp="$venv/.stamp"
python="${PYTHON:-python3}"

is_ready() {
  [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$REQUIREMENTS" ] \
    && "$venv/bin/python" -c '
import importlib.metadata as m
assert m.version("mcp") == "2.3.0"
m.version("pytest")' >/dev/null 2>&1
}

if is_ready; then
  log "up to date: $venv ($REQUIREMENTS)"
  printf '%s\n' "$venv/bin/python"
  exit 0
fi

command -v "$python" >/dev/null 2>&1 || die "no $python on PATH (set PYTHON)"
"$python" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else 1)' \
  || die "$python is $("$python" --version 2>&1); mcp 2.3.0 needs Python >= 3.10"

log "creating $venv with $("$python" --version 2>&1)"
rm -rf "$venv"
mkdir -p "$dest"
if ! "$python" -m venv "$venv" >&2; then
  die "python -m venv failed (on Debian/Ubuntu: apt-get install python3-venv)"
fi

log "installing $REQUIREMENTS from PyPI"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input $REQUIREMENTS >&2 \
  || die "pip install $REQUIREMENTS failed"

"$venv/bin/python" - <<'PY' >&2 || die "the installed packages do not match the pins"
import importlib.metadata as m
assert m.version("mcp") == "2.3.0", m.version("mcp")
from mcp import Client, StdioServerParameters  # the API the tests use
print("setup-test-clients: mcp", m.version("mcp"), "pytest", m.version("pytest"))
PY

printf '%s' "$REQUIREMENTS" > "$stamp"
log "ready: $venv"
printf '%s\n' "$venv/bin/python"
