#!/usr/bin/env bash
# The publishable crates: `cargo package` of both (lean-beam-codegen, then
# lean-beam-mcp, which builds with it), their file lists checked (the sources,
# operations.toml, build.rs, the lockfile and the docs; no tests, fixtures,
# benchmarks, fuzz targets, scripts, deployment files or build outputs), and the
# packaged server built from its own tarball the way a user's
# `cargo install lean-beam-mcp` builds it: `cargo install --path` of the
# unpacked tarball, offline, from cargo's registry cache, the generator taken
# from its own tarball (it is not on crates.io until published). The build
# shares target/ with `cargo test` (a debug build: only the two crates
# compile). The installed binary must print the golden catalog.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
cd "$repo_root"
log() { printf 'package-lane: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

version="$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n1)"
start=$SECONDS

# Packaging without cargo's own verification build (a second full build in a
# separate target directory, 3 min 52 s here): the install below is that build.
cargo package --workspace --locked --no-verify >&2

check_list() {
  local crate="$1"; shift
  local list
  list="$(cargo package --locked --no-verify --list -p "$crate")"
  for required in "$@"; do
    grep -qx "$required" <<<"$list" || die "$crate's package lacks $required"
  done
  local unwanted
  unwanted="$(grep -E '^(tests|fuzz|benches|examples|deploy|scripts|plugin|target|\.ci)/|^\.|\.(olean|ilean|lean)$' <<<"$list" | grep -vx '.cargo_vcs_info.json' || true)"
  [[ -z "$unwanted" ]] || die "$crate's package holds files it does not need:"$'\n'"$unwanted"
  log "$crate: $(wc -l <<<"$list") files, $(du -h "target/package/$crate-$version.crate" | cut -f1) compressed"
}
check_list lean-beam-codegen Cargo.toml src/lib.rs
check_list lean-beam-mcp Cargo.toml Cargo.lock build.rs operations.toml README.md src/main.rs src/lib.rs

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
tar -C "$work" -xzf "target/package/lean-beam-mcp-$version.crate"
tar -C "$work" -xzf "target/package/lean-beam-codegen-$version.crate"
log "building lean-beam-mcp from its tarball (cargo install --path, offline)"
cargo install --path "$work/lean-beam-mcp-$version" --offline --locked --debug \
  --root "$work/install" --target-dir "$repo_root/target" \
  --config "patch.crates-io.lean-beam-codegen.path='$work/lean-beam-codegen-$version'" >&2
installed="$work/install/bin/lean-beam-mcp"
[[ "$("$installed" --version)" == "lean-beam-mcp $version" ]] || die "the installed binary's version"
"$installed" tools | diff -q - tests/golden/tools.json >/dev/null \
  || die "the packaged build's catalog differs from tests/golden/tools.json"
log "ok: both crates package, and the packaged server builds and serves the golden catalog ($((SECONDS - start)) s)"
