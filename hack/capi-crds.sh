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
source "$root/hack/lib.sh"
begin_cache "$dir"
src=$(module_dir "sigs.k8s.io/cluster-api@${version}")
bases="$src/core/config/crd/bases"
if [[ ${#files[@]} -eq 0 ]]; then
  mapfile -t files < <(cd "$bases" && ls ./*.yaml | sed 's|^\./||')
fi
for f in "${files[@]}"; do
  # The first top-level "metadata:" is the CRD's own.
  sed '0,/^metadata:$/s//metadata:\n  labels:\n    cluster.x-k8s.io\/v1beta1: v1beta1\n    cluster.x-k8s.io\/v1beta2: v1beta2/' \
    "$bases/$f" > "$tmp/$f"
done
end_cache
