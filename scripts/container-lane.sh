#!/usr/bin/env bash
# deploy/Containerfile built with Debian's buildah and smoke-tested: the image
# serves --http on loopback, answers /health (through its own HEALTHCHECK
# command) and one tools/list, as the non-root user beam.
#
#   LEAN_BEAM_MCP_BIN=target/debug/lean-beam-mcp scripts/container-lane.sh
#
# What this machine allows (README, "Container image"), and so what the lane
# does:
#   * No image registry is reachable (only package registries are), so the
#     recipe's default base, docker.io/library/debian:bookworm-slim, cannot be
#     pulled. The lane builds the recipe FROM a local base instead: with
#     LEAN_BEAM_CONTAINER_BASE=debootstrap a real Debian 12 minbase made by
#     debootstrap from Debian's packages (2 min 41 s measured), by default a
#     slice of this machine's own Debian 12 files: /bin/sh, groupadd, useradd,
#     the libraries they and the server link (ldd) and the account files.
#   * RUN steps need buildah's chroot isolation: under an OCI runtime crun
#     refuses ("cgroups in hybrid mode not supported").
#   * `podman run` cannot start a container here (crun: setrlimit RLIMIT_NPROC
#     and RLIMIT_NOFILE: Operation not permitted), so the image runs through
#     `buildah run --isolation chroot`: the image's filesystem, user and binary,
#     the host's network.
# Exit status 3 (the caller skips the lane, saying why): buildah cannot be had.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
cd "$repo_root"
log() { printf 'container-lane: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }
: "${LEAN_BEAM_MCP_BIN:?set LEAN_BEAM_MCP_BIN to the server binary to put in the image}"

status=0; buildah="$(scripts/install-apt.sh buildah buildah)" || status=$?
[[ $status -eq 0 ]] || exit $status
store=(--storage-driver vfs --root "$repo_root/target/container/storage" --runroot "$repo_root/target/container/run")
bah() { "$buildah" "${store[@]}" "$@"; }
start=$SECONDS
mkdir -p target/container

base=localhost/lean-beam-base:lane
if [[ "${LEAN_BEAM_CONTAINER_BASE:-slice}" == debootstrap ]]; then
  status=0; debootstrap="$(scripts/install-apt.sh debootstrap debootstrap)" || status=$?
  [[ $status -eq 0 ]] || exit $status
  rootfs="$repo_root/target/container/debian"
  [[ -x "$rootfs/bin/sh" ]] || "$debootstrap" --variant=minbase bookworm "$rootfs" http://deb.debian.org/debian >&2
else
  rootfs="$(mktemp -d)"
  trap 'rm -rf "$rootfs"' EXIT
  programs=(/bin/sh /usr/sbin/groupadd /usr/sbin/useradd "$LEAN_BEAM_MCP_BIN")
  for file in /bin/sh /usr/sbin/groupadd /usr/sbin/useradd /usr/sbin/nologin /etc/login.defs \
      $(ldd "${programs[@]}" | awk '$3 ~ /^\// {print $3} $1 ~ /^\// && $1 !~ /:$/ {print $1}' | sort -u); do
    mkdir -p "$rootfs$(dirname "$file")"
    cp -L "$file" "$rootfs$file"
  done
  mkdir -p "$rootfs/etc/skel" "$rootfs/home" "$rootfs/tmp" "$rootfs/usr/local/bin" "$rootfs/bin"
  printf 'root:x:0:0:root:/root:/bin/sh\n' >"$rootfs/etc/passwd"
  printf 'root:x:0:\n' >"$rootfs/etc/group"
  printf 'root:*:19000:0:99999:7:::\n' >"$rootfs/etc/shadow"
  printf 'root:*::\n' >"$rootfs/etc/gshadow"
fi
bah rmi -f "$base" >/dev/null 2>&1 || true
container="$(bah from scratch)"
bah copy "$container" "$rootfs" / >/dev/null
bah commit --quiet "$container" "$base" >/dev/null
bah rm "$container" >/dev/null
log "base image $base ready ($((SECONDS - start)) s)"

# The recipe, as it is, but for its base and the binary it copies.
context="$(realpath --relative-to="$repo_root" "$LEAN_BEAM_MCP_BIN")"
bah bud --isolation chroot --format docker --quiet \
  --build-arg BASE_IMAGE="$base" --build-arg BINARY="$context" \
  -f deploy/Containerfile -t localhost/lean-beam-mcp:lane . >&2
log "built localhost/lean-beam-mcp:lane from deploy/Containerfile ($((SECONDS - start)) s)"

inspect() { bah inspect --type image --format "$1" localhost/lean-beam-mcp:lane; }
[[ "$(inspect '{{.Docker.Config.User}}')" == "10001:10001" ]] || die "the image's user: $(inspect '{{.Docker.Config.User}}')"
[[ "$(inspect '{{index .Docker.Config.Labels "io.modelcontextprotocol.server.name"}}')" == \
   "$(python3 -c 'import json; print(json.load(open("server.json"))["name"])')" ]] || die "the registry label differs from server.json"
inspect '{{.Docker.Config.Healthcheck.Test}}' | grep -q 'lean-beam-mcp health 127.0.0.1:8765' \
  || die "the health check: $(inspect '{{.Docker.Config.Healthcheck.Test}}')"

running="$(bah from localhost/lean-beam-mcp:lane)"
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
bah run --isolation chroot --network host "$running" -- /usr/local/bin/lean-beam-mcp --http "127.0.0.1:$port" \
  </dev/null >/dev/null 2>target/container/server.log &
server=$!
# buildah run does not pass SIGINT on: stop the processes this lane started,
# the server inside the image first (SIGINT stops it at once).
descendants() { local child; for child in $(ps -o pid= --ppid "$1"); do descendants "$child"; echo "$child"; done; }
cleanup() {
  local pid
  for pid in $(descendants "$server") "$server"; do kill -INT "$pid" 2>/dev/null || true; done
  wait "$server" 2>/dev/null || true
  bah rm "$running" >/dev/null 2>&1 || true
  bah rmi --prune >/dev/null 2>&1 || true
  if [[ "${rootfs:-}" == /tmp/* ]]; then rm -rf "$rootfs"; fi
}
trap cleanup EXIT
for _ in $(seq 1 100); do
  grep -q 'listening on' target/container/server.log && break
  kill -0 "$server" 2>/dev/null || die "the server in the image exited: $(cat target/container/server.log)"
  sleep 0.1
done
grep -q 'listening on' target/container/server.log || die "the server in the image did not listen"
# The image's own health check command, run inside the image.
bah run --isolation chroot --network host "$running" -- /usr/local/bin/lean-beam-mcp health "127.0.0.1:$port" >&2
[[ "$(bah run --isolation chroot "$running" -- /usr/local/bin/lean-beam-mcp --version)" == "lean-beam-mcp "* ]] \
  || die "the image's binary does not run"
python3 - "$port" <<'PY'
import json, sys, urllib.request
port = sys.argv[1]
meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}
body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta}}).encode()
request = urllib.request.Request(f"http://127.0.0.1:{port}/mcp", body, {
    "content-type": "application/json", "accept": "application/json, text/event-stream",
    "mcp-protocol-version": "2026-07-28", "mcp-method": "tools/list"})
text = urllib.request.urlopen(request, timeout=30).read().decode()
message = json.loads(text) if text.startswith("{") else json.loads([l[5:] for l in text.splitlines() if l.startswith("data:")][-1])
tools = [t["name"] for t in message["result"]["tools"]]
assert "lean_sync" in tools and len(tools) >= 20, tools
print(f"container-lane: tools/list from the image: {len(tools)} tools", file=sys.stderr)
PY
log "ok: the image serves /health and tools/list as uid 10001 ($((SECONDS - start)) s)"
