#!/usr/bin/env bash
# Copies the CRDs of the workload controllers whose gangs Tessera discovers (JobSet,
# KubeRay, LeaderWorkerSet, the Kubeflow training operator and mpi-operator, the
# scheduler-plugins coscheduling PodGroup), at the released versions below, from the Go
# module proxy into $HOME/.cache/tessera/workload-crds/<versions hash>/. The
# integration tests install them into a real API server. Prints that directory on
# stdout; later calls return at once.
set -euo pipefail
# module@version  path of a CRD file inside the module
crds=(
  "sigs.k8s.io/jobset@v0.11.1 config/components/crd/bases/jobset.x-k8s.io_jobsets.yaml"
  "github.com/ray-project/kuberay/ray-operator@v1.5.0 config/crd/bases/ray.io_rayclusters.yaml"
  "github.com/ray-project/kuberay/ray-operator@v1.5.0 config/crd/bases/ray.io_rayjobs.yaml"
  "sigs.k8s.io/lws@v0.7.0 config/crd/bases/leaderworkerset.x-k8s.io_leaderworkersets.yaml"
  "github.com/kubeflow/training-operator@v1.8.1 manifests/base/crds/kubeflow.org_pytorchjobs.yaml"
  "github.com/kubeflow/mpi-operator@v0.6.0 manifests/base/kubeflow.org_mpijobs.yaml"
  "sigs.k8s.io/scheduler-plugins@v0.33.5 config/crd/bases/scheduling.x-k8s.io_podgroups.yaml"
)
tag=$(printf '%s\n' "${crds[@]}" | sha256sum | cut -c1-12)
dir="${TESSERA_CACHE:-$HOME/.cache/tessera}/workload-crds/${tag}"
if [[ -f "$dir/.complete" ]]; then
  echo "$dir"
  exit 0
fi
mkdir -p "$dir"
tmp=$(mktemp -d "$dir/.copy.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
for entry in "${crds[@]}"; do
  read -r mod file <<<"$entry"
  # Outside any module, so that go.mod and go.sum stay as they are.
  src=$(cd "$tmp" && GOFLAGS=-mod=mod go mod download -json "$mod" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  if [[ -z "$src" || ! -f "$src/$file" ]]; then
    echo "go mod download $mod gave no $file" >&2
    exit 1
  fi
  cp "$src/$file" "$tmp/$(basename "$file")"
  chmod u+w "$tmp/$(basename "$file")"
done
mv "$tmp"/*.yaml "$dir/"
touch "$dir/.complete"
echo "$dir"
