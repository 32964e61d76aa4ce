#!/usr/bin/env bash
# Copies Cluster API's Machine, MachineSet and MachineDeployment CRDs of the version in
# go.mod (sigs.k8s.io/cluster-api/api) from the Go module proxy into
# $HOME/.cache/tessera/capi-crds/<version>/, labelled with the contract labels
# (cluster.x-k8s.io/v1beta1, cluster.x-k8s.io/v1beta2) that Cluster API's kustomize build
# normally adds. Prints that directory on stdout; later calls return at once.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
version=$(awk '$1=="sigs.k8s.io/cluster-api/api" {print $2; exit}' "$root/go.mod")
dir="${TESSERA_CACHE:-$HOME/.cache/tessera}/capi-crds/${version}"
kinds=(machines machinesets machinedeployments)
if [[ -f "$dir/cluster.x-k8s.io_machinedeployments.yaml" ]]; then
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
for k in "${kinds[@]}"; do
  f="cluster.x-k8s.io_${k}.yaml"
  # The first top-level "metadata:" is the CRD's own.
  sed '0,/^metadata:$/s//metadata:\n  labels:\n    cluster.x-k8s.io\/v1beta1: v1beta1\n    cluster.x-k8s.io\/v1beta2: v1beta2/' \
    "$src/core/config/crd/bases/$f" > "$tmp/$f"
done
for k in "${kinds[@]}"; do
  mv "$tmp/cluster.x-k8s.io_${k}.yaml" "$dir/"
done
echo "$dir"
