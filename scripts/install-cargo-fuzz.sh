#!/usr/bin/env bash
# Install cargo-fuzz from crates.io into target/tools (idempotent; nothing outside
# the repository's target/ is touched). Prints the path of the cargo-fuzz binary
# on stdout; progress goes to stderr.
set -euo pipefail

readonly VERSION="0.13.2"
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
root="$repo_root/target/tools"
bin="$root/bin/cargo-fuzz"

if [[ -x "$bin" ]] && "$bin" --version 2>/dev/null | grep -q " $VERSION\$"; then
  printf '%s\n' "$bin"
  exit 0
fi
printf 'install-cargo-fuzz: cargo install cargo-fuzz@%s into %s\n' "$VERSION" "$root" >&2
cargo install --locked --root "$root" "cargo-fuzz@$VERSION" >&2
printf '%s\n' "$bin"
