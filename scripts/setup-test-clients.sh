#!/usr/bin/env bash
# Install the real MCP clients used by the client tests:
#   - the official Python SDK (PyPI mcp==2.3.0) and pytest, in a private venv;
#   - the official TypeScript client (npm @modelcontextprotocol/client 2.4.0) and
#     Node 22 to run it (npm `node`, as the conformance lane does: the machine's
#     Node may be older), at the exact versions of
#     tests/clients/typescript/package-lock.json.
#
# Idempotent: a stamp naming the pinned requirements (Python) and a copy of the
# lock file (TypeScript) make re-runs instant; a changed pin or a broken install
# is rebuilt. Only PyPI (pip) and npm (npm ci) are used. Nothing is written
# outside the repository: pip runs without its cache, npm's cache and logs go to
# target/npm-cache.
#
# Layout (default ${LEAN_BEAM_TEST_CLIENTS_DIR:-<repo>/target/test-clients}):
#   venv/                the virtual environment (venv/bin/python, venv/bin/pytest)
#   venv/.stamp          written last, holds the requirements it was built from
#   typescript/          node_modules/@modelcontextprotocol/client and
#                        node_modules/node/bin/node; package-lock.json written last
#
# Stdout: only the venv's python path, at the end (PY=$(scripts/setup-test-clients.sh)).
# Progress goes to stderr.
#
# Environment:
#   LEAN_BEAM_TEST_CLIENTS_DIR  install directory
#   PYTHON                      interpreter to create the venv with (default python3; >= 3.10)
set -euo pipefail

readonly REQUIREMENTS="mcp==2.3.0 pytest==8.4.2"

tool=setup-test-clients
# shellcheck source=scripts/setup-common.sh
. "$(dirname "${BASH_SOURCE[0]}")/setup-common.sh"

dest="$(absolute "${LEAN_BEAM_TEST_CLIENTS_DIR:-$repo_root/target/test-clients}")"
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

# ---- TypeScript client and Node 22 (npm) --------------------------------------------
ts_source="$repo_root/tests/clients/typescript"
ts_dest="$dest/typescript"
ts_stamp="$ts_dest/.stamp"
ts_node="$ts_dest/node_modules/node/bin/node"
use_repo_npm_cache
if cmp -s "$ts_source/package-lock.json" "$ts_stamp" && "$ts_node" --version >/dev/null 2>&1; then
  log "up to date: $ts_dest (@modelcontextprotocol/client 2.4.0, Node $("$ts_node" --version))"
else
  command -v npm >/dev/null 2>&1 || die "npm is required (it installs the TypeScript client and Node 22)"
  log "installing @modelcontextprotocol/client 2.4.0 and Node 22 from npm into $ts_dest (npm ci)"
  npm_ci "$ts_source" "$ts_dest" "$ts_node" tests/clients/typescript
  cp "$ts_source/package-lock.json" "$ts_stamp"
  log "ready: $ts_dest (Node $("$ts_node" --version))"
fi

# ---- Python SDK (PyPI) ----------------------------------------------------------------
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
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input --no-cache-dir $REQUIREMENTS >&2 \
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
