#!/usr/bin/env bash
# Copies Cluster API's CRDs of the version in go.mod (sigs.k8s.io/cluster-api/api) from
# the Go module proxy into $HOME/.cache/tessera/capi-crds/<version>/, labelled with the
# contract labels (cluster.x-k8s.io/v1beta1, cluster.x-k8s.io/v1beta2) that Cluster API's
# kustomize build normally adds. By default only Machine, MachineSet and
# MachineDeployment (what the autoscaler reads and writes); with --all every CRD the core
# controllers watch, into <version>-all/ (for the end-to-end test, which runs them).
# Prints that directory on stdout; later calls return at once.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
version=$(awk '$1=="sigs.k8s.io/cluster-api/api" {print $2; exit}' "$root/go.mod")
dir="${TESSERA_CACHE:-$HOME/.cache/tessera}/capi-crds/${version}"
files=(cluster.x-k8s.io_machines.yaml cluster.x-k8s.io_machinesets.yaml cluster.x-k8s.io_machinedeployments.yaml)
if [[ "${1:-}" == "--all" ]]; then
  dir="${dir}-all"
  files=()
fi
if [[ -f "$dir/.complete" ]]; then
  echo "$dir"
  exit 0
fi
mkdir -p "$dir"
tmp=$(mktemp -d "$dir/.copy.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# Outside any module, so that go.mod and go.sum stay as they are.
src=$(cd "$tmp" && GOFLAGS=-mod=mod go mod download -json "sigs.k8s.io/cluster-api@${version}" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
if [[ -z "$src" ]]; then
  echo "go mod download sigs.k8s.io/cluster-api@${version} gave no directory" >&2
  exit 1
fi
bases="$src/core/config/crd/bases"
if [[ ${#files[@]} -eq 0 ]]; then
  mapfile -t files < <(cd "$bases" && ls ./*.yaml | sed 's|^\./||')
fi
for f in "${files[@]}"; do
  # The first top-level "metadata:" is the CRD's own.
  sed '0,/^metadata:$/s//metadata:\n  labels:\n    cluster.x-k8s.io\/v1beta1: v1beta1\n    cluster.x-k8s.io\/v1beta2: v1beta2/' \
    "$bases/$f" > "$tmp/$f"
done
mv "$tmp"/*.yaml "$dir/"
touch "$dir/.complete"
echo "$dir"
