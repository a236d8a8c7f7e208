#!/usr/bin/env bash
# Fuzz the protocol edge with cargo fuzz (libFuzzer) on the stable toolchain.
#
#   scripts/fuzz.sh                 bounded run: every target for $FUZZ_SECONDS (60) s
#   scripts/fuzz.sh 3600            longer run: every target for an hour
#   scripts/fuzz.sh 600 era_gate    one target
#
# cargo-fuzz passes nightly-only flags to rustc (-Z...); RUSTC_BOOTSTRAP=1 lets
# the stable compiler accept them, and `-s none` asks for no sanitizer (ASan
# needs a nightly std). Coverage instrumentation (sancov) and libFuzzer itself
# work on stable. cargo-fuzz is installed from crates.io into target/tools by
# scripts/install-cargo-fuzz.sh. The working corpus (fuzz/corpus/<target>,
# gitignored) starts from the committed seeds in fuzz/seeds/<target>; a crash
# is written to fuzz/artifacts/<target>/ and fails this script.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
cd "$repo_root"

seconds="${1:-${FUZZ_SECONDS:-60}}"
shift || true
targets=("$@")
if [[ ${#targets[@]} -eq 0 ]]; then
  targets=(jsonrpc_decode era_gate tool_arguments dispatcher_lines)
fi

cargo_fuzz="$(scripts/install-cargo-fuzz.sh)"
export RUSTC_BOOTSTRAP=1

status=0
for target in "${targets[@]}"; do
  corpus="fuzz/corpus/$target"
  mkdir -p "$corpus" "fuzz/artifacts/$target"
  cp -n fuzz/seeds/"$target"/* "$corpus"/ 2>/dev/null || true
  # `cargo fuzz run` builds first (with the flags it runs with).
  printf '==> fuzz %s for %s s\n' "$target" "$seconds" >&2
  log="fuzz/artifacts/$target/last-run.log"
  if "$cargo_fuzz" run --fuzz-dir fuzz -s none -O "$target" "$corpus" -- \
      -max_total_time="$seconds" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
      -print_final_stats=1 >"$log" 2>&1; then
    runs="$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || true)"
    cov="$(grep -o 'cov: [0-9]*' "$log" | tail -1 || true)"
    printf 'fuzz %s: ok, %s runs in %s s, %s, corpus %s files\n' \
      "$target" "${runs:-?}" "$seconds" "${cov:-cov: ?}" "$(ls "$corpus" | wc -l)"
  else
    status=1
    printf 'fuzz %s: FAILED (see %s)\n' "$target" "$log"
    grep -E 'panicked|ERROR|SUMMARY|artifact' "$log" | head -20 || true
  fi
done
exit "$status"
