#!/usr/bin/env bash
# Install the MCP hosts of the hosts lane (tests/hosts) at the exact versions of
# tests/hosts/package-lock.json, from npm only (npm ci):
#   - TypeScript SDK v1 @modelcontextprotocol/sdk 1.32.2, and 1.22.0 beside it
#     (the alias sdk-1-22);
#   - Inspector CLI 1.0.3 (@modelcontextprotocol/inspector-cli) and Inspector
#     2.12.0 (@modelcontextprotocol/inspector, for --cli);
#   - Gemini CLI 0.61.0 (@google/gemini-cli, Apache-2.0);
#   - Claude Code 2.1.332 (@anthropic-ai/claude-code; Anthropic's own terms,
#     not an open-source licence: its LICENSE.md);
#   - Codex 0.171.0 (@openai/codex, Apache-2.0);
#   - mcp-remote 0.15.1;
#   - Node 22 to run them (npm `node`: the machine's Node may be older).
# About 1.3 GB (Codex 0.42 GB and Claude Code 0.38 GB are native binaries, Node
# 0.19 GB); npm ci took 1-3 minutes on 2 busy cores.
#
# Idempotent: a copy of the lock file, written last, makes re-runs instant; a
# changed lock or a broken install is rebuilt. Nothing is written outside the
# repository: npm's cache and logs go to target/npm-cache.
#
# Stdout: only the install directory, at the end. Progress goes to stderr.
#
# Environment:
#   LEAN_BEAM_TEST_HOSTS_DIR  install directory (default <repo>/target/test-hosts)
set -euo pipefail

tool=setup-test-hosts
# shellcheck source=scripts/setup-common.sh
. "$(dirname "${BASH_SOURCE[0]}")/setup-common.sh"

dest="$(absolute "${LEAN_BEAM_TEST_HOSTS_DIR:-$repo_root/target/test-hosts}")"
source_dir="$repo_root/tests/hosts"
stamp="$dest/.stamp"
node="$dest/node_modules/node/bin/node"

use_repo_npm_cache

ready() {
  cmp -s "$source_dir/package-lock.json" "$stamp" \
    && "$node" --version >/dev/null 2>&1 \
    && [ -x "$dest/node_modules/@anthropic-ai/claude-code/bin/claude.exe" ] \
    && [ -x "$dest/node_modules/.bin/codex" ] \
    && [ -f "$dest/node_modules/@google/gemini-cli/bundle/gemini.js" ]
}

if ready; then
  log "up to date: $dest"
else
  command -v npm >/dev/null 2>&1 || die "npm is required (it installs the hosts and Node 22)"
  log "installing the hosts of tests/hosts/package-lock.json from npm into $dest (npm ci)"
  npm_ci "$source_dir" "$dest" "$node" tests/hosts
  # Claude Code's postinstall puts the platform's native binary in place.
  [ -x "$dest/node_modules/@anthropic-ai/claude-code/bin/claude.exe" ] \
    || die "Claude Code's native binary is missing (npm ci ran without install scripts?)"
  cp "$source_dir/package-lock.json" "$stamp"
  log "ready: $dest (Node $("$node" --version))"
fi
printf '%s\n' "$dest"
