#!/usr/bin/env bash
# Fuzz the protocol edge with libFuzzer on the stable toolchain (fuzz/README.md).
#
#   scripts/fuzz.sh                 bounded run: every target for $FUZZ_SECONDS (60) s
#   scripts/fuzz.sh 3600            longer run: every target for an hour
#   scripts/fuzz.sh 600 era_gate    one target
#
# The targets are ordinary `cargo fuzz` targets. By default this script builds
# them the way `cargo fuzz build -s none` does (the same SanitizerCoverage
# RUSTFLAGS and --cfg fuzzing, all stable flags; no sanitizer, since ASan needs
# a nightly std), plus debug assertions and overflow checks, and runs the
# libFuzzer binaries directly: no cargo-fuzz install, no nightly. With
# FUZZ_WITH_CARGO_FUZZ=1 it runs `cargo fuzz run` instead (installed from
# crates.io into target/tools by scripts/install-cargo-fuzz.sh, and run on
# stable with RUSTC_BOOTSTRAP=1).
#
# The working corpus (fuzz/corpus/<target>, gitignored) starts from the
# committed seeds in fuzz/seeds/<target>; a crash is written to
# fuzz/artifacts/<target>/ and fails this script.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
cd "$repo_root"

seconds="${1:-${FUZZ_SECONDS:-60}}"
shift || true
targets=("$@")
if [[ ${#targets[@]} -eq 0 ]]; then
  targets=(jsonrpc_decode era_gate tool_arguments dispatcher_lines)
fi
libfuzzer_args=(-max_total_time="$seconds" -max_len=65536 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1)

if [[ "${FUZZ_WITH_CARGO_FUZZ:-0}" == 1 ]]; then
  cargo_fuzz="$(scripts/install-cargo-fuzz.sh)"
  export RUSTC_BOOTSTRAP=1
  run_target() {
    "$cargo_fuzz" run --fuzz-dir fuzz -s none -O -a "$1" "fuzz/corpus/$1" -- \
      -artifact_prefix="fuzz/artifacts/$1/" "${libfuzzer_args[@]}"
  }
else
  triple="$(rustc -vV | sed -n 's/^host: //p')"
  printf '==> building the fuzz targets (%s)\n' "$triple" >&2
  RUSTFLAGS="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing \
-Cllvm-args=-simplifycfg-branch-fold-threshold=0 -Cllvm-args=-sanitizer-coverage-stack-depth \
-Cdebug-assertions -Coverflow-checks" \
    cargo build --manifest-path fuzz/Cargo.toml --target "$triple" --profile fuzz --bins >&2
  bin_dir="fuzz/target/$triple/fuzz"
  run_target() {
    "$bin_dir/$1" -artifact_prefix="fuzz/artifacts/$1/" "${libfuzzer_args[@]}" "fuzz/corpus/$1"
  }
fi

status=0
for target in "${targets[@]}"; do
  corpus="fuzz/corpus/$target"
  mkdir -p "$corpus" "fuzz/artifacts/$target"
  cp -n fuzz/seeds/"$target"/* "$corpus"/ 2>/dev/null || true
  printf '==> fuzz %s for %s s\n' "$target" "$seconds" >&2
  log="fuzz/artifacts/$target/last-run.log"
  if run_target "$target" >"$log" 2>&1; then
    runs="$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || true)"
    cov="$(grep -o 'cov: [0-9]*' "$log" | tail -1 || true)"
    printf 'fuzz %s: ok, %s runs in %s s, %s, corpus %s files\n' \
      "$target" "${runs:-?}" "$seconds" "${cov:-cov: ?}" "$(ls "$corpus" | wc -l)"
  else
    status=1
    printf 'fuzz %s: FAILED (see %s)\n' "$target" "$log"
    grep -E 'panicked|ERROR|SUMMARY|artifact|error' "$log" | head -20 || true
  fi
done
exit "$status"
