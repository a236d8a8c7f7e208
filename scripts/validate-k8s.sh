#!/usr/bin/env bash
# Validate the Kubernetes manifests of deploy/k8s/ offline, strictly (unknown
# fields are errors), against the OpenAPI schemas of Kubernetes 1.30 and 1.37
# that PyPI's kubernetes-validate ships (Apache-2.0), pinned below and
# installed into a private venv under target/ (nothing outside the clone).
# Also checks that the HAProxy ConfigMap is deploy/haproxy/haproxy.cfg verbatim.
set -euo pipefail

readonly REQUIREMENT="kubernetes-validate==1.37.0"

log() { printf 'validate-k8s: %s\n' "$*" >&2; }

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
venv="$repo_root/target/k8s-validate"
python="${PYTHON:-python3}"

if [[ ! -f "$venv/.stamp" || "$(cat "$venv/.stamp")" != "$REQUIREMENT" ]]; then
  log "installing $REQUIREMENT from PyPI into $venv"
  rm -rf "$venv"
  "$python" -m venv "$venv" >&2 || { log "python -m venv failed (on Debian/Ubuntu: apt-get install python3-venv)"; exit 1; }
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input --no-cache-dir "$REQUIREMENT" >&2
  printf '%s' "$REQUIREMENT" > "$venv/.stamp"
fi

"$python" "$repo_root/scripts/deploy-sync.py" --check
for version in 1.30.0 1.37.0; do
  "$venv/bin/kubernetes-validate" --strict --quiet -k "$version" "$repo_root"/deploy/k8s/*.yaml
  log "deploy/k8s/*.yaml valid against Kubernetes $version (strict)"
done
