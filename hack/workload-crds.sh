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
source "$(dirname "$0")/lib.sh"
tag=$(printf '%s\n' "${crds[@]}" | sha256sum | cut -c1-12)
begin_cache "${TESSERA_CACHE:-$HOME/.cache/tessera}/workload-crds/${tag}"
for entry in "${crds[@]}"; do
  read -r mod file <<<"$entry"
  src=$(module_dir "$mod")
  if [[ ! -f "$src/$file" ]]; then
    echo "module $mod has no $file" >&2
    exit 1
  fi
  cp "$src/$file" "$tmp/$(basename "$file")"
done
end_cache
