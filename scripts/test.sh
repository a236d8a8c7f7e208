#!/usr/bin/env bash
# The test command: builds, installs the real-client test dependencies into
# target/ (PyPI only), runs every Rust test, then the official Python SDK test
# against the built binary. Safe to re-run; nothing outside the repository's
# target/ directory is changed.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
cd "$repo_root"

step() { printf '\n==> %s\n' "$*" >&2; }

step "cargo build"
cargo build --workspace --locked

step "real MCP clients (scripts/setup-test-clients.sh)"
python="$(scripts/setup-test-clients.sh)"

step "cargo test --workspace"
cargo test --workspace --locked

step "official Python SDK (mcp==2.3.0) over stdio"
LEAN_BEAM_MCP_BIN="$repo_root/target/debug/lean-beam-mcp" \
  "$python" -m pytest tests/clients/python -q -p no:cacheprovider
