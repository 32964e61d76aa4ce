#!/usr/bin/env bash
# Builds, from the Go module proxy, the programs an end-to-end test runs next to Tessera and
# caches them under ${TESSERA_CACHE:-$HOME/.cache/tessera}/e2e/<component>-<version>/:
#
#   KUBE_APISERVER, KUBE_CONTROLLER_MANAGER  module test/tools (k8s.io/kubernetes), with version
#                                            ldflags: Cluster API refuses a v0.0.0-master server
#   ETCD                                     from hack/k8s-binaries.sh's directory
#   KWOK                                     module test/e2e/tools/kwok
#   CAPI_MANAGER                             module test/e2e/tools/capi (the Cluster API core manager)
#   SOURCE_CONTROLLER, KUSTOMIZE_CONTROLLER  module test/e2e/tools/flux
#   FLUX_CRDS                                a directory with both Flux controllers' CRDs
#   JOBSET_CONTROLLER, KUBERAY_OPERATOR      module test/e2e/tools/workloads (sigs.k8s.io/jobset,
#                                            github.com/ray-project/kuberay/ray-operator), one build:
#                                            about 470 CPU-s, 4 to 10 minutes on 2 cores
#   WORKLOAD_CRDS                            a directory with JobSet's and KubeRay's CRDs
#
# Prints one NAME=/abs/path line per entry above on stdout (progress goes to stderr).
# When everything is cached it prints and returns at once. The first build takes about 22 minutes
# on 2 cores after hack/k8s-binaries.sh has run (30 from a cold Go build cache; downloading the
# modules is a small part of it: 20 s and 81 MB for JobSet and KubeRay); rebuilding from a warm
# build cache takes about a minute. With --cached-only it fails, naming what is missing, instead
# of building.
#
# Each wrapper module has its own go.mod, so Tessera's go.mod is never touched, and the builds
# run without the caller's GOFLAGS (flags meant for Tessera itself).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cache="${TESSERA_CACHE:-$HOME/.cache/tessera}/e2e"

cached_only=false
case "${1:-}" in
  "") ;;
  --cached-only) cached_only=true ;;
  *) echo "usage: $0 [--cached-only]" >&2; exit 2 ;;
esac

# modver FILE MODULE: the version FILE's go.mod requires of MODULE.
modver() {
  local v
  v=$(awk -v m="$2" '($1=="require" && $2==m) {print $3; exit} ($1==m && $2 ~ /^v/) {print $2; exit}' "$1")
  if [[ -z "$v" ]]; then
    echo "$1 does not require $2" >&2
    exit 1
  fi
  echo "$v"
}

k8s_mod="$root/test/tools"
kwok_mod="$root/test/e2e/tools/kwok"
capi_mod="$root/test/e2e/tools/capi"
flux_mod="$root/test/e2e/tools/flux"
workloads_mod="$root/test/e2e/tools/workloads"

k8s_v=$(modver "$k8s_mod/go.mod" k8s.io/kubernetes)
kwok_v=$(modver "$kwok_mod/go.mod" sigs.k8s.io/kwok)
capi_v=$(modver "$capi_mod/go.mod" sigs.k8s.io/cluster-api)
source_v=$(modver "$flux_mod/go.mod" github.com/fluxcd/source-controller)
kustomize_v=$(modver "$flux_mod/go.mod" github.com/fluxcd/kustomize-controller)
if [[ "$source_v" == "$kustomize_v" ]]; then
  flux_crds_v="$source_v"
else
  flux_crds_v="${source_v}-${kustomize_v}"
fi
jobset_v=$(modver "$workloads_mod/go.mod" sigs.k8s.io/jobset)
kuberay_v=$(modver "$workloads_mod/go.mod" github.com/ray-project/kuberay/ray-operator)

k8s_dir="$cache/kubernetes-$k8s_v"
kwok_dir="$cache/kwok-$kwok_v"
capi_dir="$cache/cluster-api-$capi_v"
source_dir="$cache/source-controller-$source_v"
kustomize_dir="$cache/kustomize-controller-$kustomize_v"
jobset_dir="$cache/jobset-$jobset_v"
kuberay_dir="$cache/kuberay-$kuberay_v"

names=(KUBE_APISERVER KUBE_CONTROLLER_MANAGER KWOK CAPI_MANAGER SOURCE_CONTROLLER KUSTOMIZE_CONTROLLER
  JOBSET_CONTROLLER KUBERAY_OPERATOR)
paths=("$k8s_dir/kube-apiserver" "$k8s_dir/kube-controller-manager" "$kwok_dir/kwok"
  "$capi_dir/cluster-api-manager" "$source_dir/source-controller" "$kustomize_dir/kustomize-controller"
  "$jobset_dir/jobset-controller" "$kuberay_dir/kuberay-operator")
# Directories of CRDs, each complete once it holds .complete.
crd_names=(FLUX_CRDS WORKLOAD_CRDS)
crd_dirs=("$cache/flux-crds-$flux_crds_v" "$cache/workload-crds-jobset-$jobset_v-kuberay-$kuberay_v")

# missing: the entries not cached yet, one per line (etcd through hack/k8s-binaries.sh).
missing() {
  local i
  for i in "${!names[@]}"; do
    [[ -x "${paths[$i]}" ]] || echo "${names[$i]} (${paths[$i]})"
  done
  for i in "${!crd_names[@]}"; do
    [[ -f "${crd_dirs[$i]}/.complete" ]] || echo "${crd_names[$i]} (${crd_dirs[$i]})"
  done
  "$root/hack/k8s-binaries.sh" --cached-only >/dev/null 2>&1 || echo "ETCD (make k8s-binaries)"
}

print() {
  local i etcd_dir
  etcd_dir=$("$root/hack/k8s-binaries.sh" --cached-only)
  for i in "${!names[@]}"; do
    echo "${names[$i]}=${paths[$i]}"
  done
  echo "ETCD=$etcd_dir/etcd"
  for i in "${!crd_names[@]}"; do
    echo "${crd_names[$i]}=${crd_dirs[$i]}"
  done
}

if [[ -z "$(missing)" ]]; then
  print
  exit 0
fi
if $cached_only; then
  {
    echo "end-to-end binaries missing from $cache (build them with make e2e-binaries):"
    missing | sed 's/^/  /'
  } >&2
  exit 1
fi

mkdir -p "$cache"
# One build at a time; a second caller waits and then finds the binaries cached.
exec 9>"$cache/.lock"
flock 9

unset GOFLAGS
export GOWORK=off
tmp=$(mktemp -d "$cache/.build.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# build NAME MODULE_DIR LDFLAGS PACKAGE...: go build into $tmp/NAME/, timed.
build() {
  local name=$1 mod=$2 ldflags=$3 start=$SECONDS
  shift 3
  echo "building $name ($*) (first time only)" >&2
  mkdir -p "$tmp/$name"
  (cd "$mod" && go build -trimpath -ldflags="-s $ldflags" -o "$tmp/$name/" "$@" >&2)
  echo "built $name in $((SECONDS - start))s" >&2
}

# place SRC DEST: move SRC into place as DEST atomically (rename within the cache's filesystem).
place() {
  mkdir -p "$(dirname "$2")"
  mv -f "$1" "$2"
}

# copy_crds DEST MODULE_DIR MODULE:DIR...: the CRD files of each MODULE's DIR, as the
# version MODULE_DIR's go.mod requires, into the directory DEST, marked complete.
copy_crds() {
  local dest=$1 mod=$2 entry m d src
  shift 2
  [[ -f "$dest/.complete" ]] && return
  mkdir -p "$tmp/crds"
  for entry in "$@"; do
    m=${entry%%:*}
    d=${entry#*:}
    src=$(cd "$mod" && go mod download -json "$m" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
    if [[ -z "$src" || ! -d "$src/$d" ]]; then
      echo "go mod download $m gave no directory $d" >&2
      exit 1
    fi
    cp "$src/$d"/*.yaml "$tmp/crds/"
  done
  chmod u+w "$tmp"/crds/*.yaml   # the module cache is read-only
  touch "$tmp/crds/.complete"
  rm -rf "$dest"
  mv "$tmp/crds" "$dest"
}

if [[ ! -x "$k8s_dir/kube-apiserver" || ! -x "$k8s_dir/kube-controller-manager" ]]; then
  minor=${k8s_v#v*.}
  minor=${minor%%.*}
  major=${k8s_v#v}
  major=${major%%.*}
  build kubernetes "$k8s_mod" "-X k8s.io/component-base/version.gitVersion=$k8s_v -X k8s.io/component-base/version.gitMajor=$major -X k8s.io/component-base/version.gitMinor=$minor" \
    k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager
  got=$("$tmp/kubernetes/kube-apiserver" --version)
  if [[ "$got" != "Kubernetes $k8s_v" ]]; then
    echo "kube-apiserver --version printed \"$got\", want \"Kubernetes $k8s_v\"" >&2
    exit 1
  fi
  place "$tmp/kubernetes/kube-apiserver" "$k8s_dir/kube-apiserver"
  place "$tmp/kubernetes/kube-controller-manager" "$k8s_dir/kube-controller-manager"
fi

if [[ ! -x "$kwok_dir/kwok" ]]; then
  build kwok "$kwok_mod" "" sigs.k8s.io/kwok/cmd/kwok
  place "$tmp/kwok/kwok" "$kwok_dir/kwok"
fi

if [[ ! -x "$capi_dir/cluster-api-manager" ]]; then
  minor=${capi_v#v*.}
  minor=${minor%%.*}
  major=${capi_v#v}
  major=${major%%.*}
  build cluster-api "$capi_mod" "-X sigs.k8s.io/cluster-api/version.gitVersion=$capi_v -X sigs.k8s.io/cluster-api/version.gitMajor=$major -X sigs.k8s.io/cluster-api/version.gitMinor=$minor" \
    sigs.k8s.io/cluster-api/core
  place "$tmp/cluster-api/core" "$capi_dir/cluster-api-manager"
fi

if [[ ! -x "$source_dir/source-controller" || ! -x "$kustomize_dir/kustomize-controller" ]]; then
  # One invocation, so that the packages both controllers share compile once.
  build flux "$flux_mod" "" github.com/fluxcd/source-controller github.com/fluxcd/kustomize-controller
  place "$tmp/flux/source-controller" "$source_dir/source-controller"
  place "$tmp/flux/kustomize-controller" "$kustomize_dir/kustomize-controller"
fi

if [[ ! -x "$jobset_dir/jobset-controller" || ! -x "$kuberay_dir/kuberay-operator" ]]; then
  # One invocation: their dependencies agree (k8s.io v0.35, controller-runtime v0.22).
  build workloads "$workloads_mod" "" sigs.k8s.io/jobset github.com/ray-project/kuberay/ray-operator
  place "$tmp/workloads/jobset" "$jobset_dir/jobset-controller"
  place "$tmp/workloads/ray-operator" "$kuberay_dir/kuberay-operator"
fi

copy_crds "${crd_dirs[0]}" "$flux_mod" \
  github.com/fluxcd/source-controller:config/crd/bases github.com/fluxcd/kustomize-controller:config/crd/bases
copy_crds "${crd_dirs[1]}" "$workloads_mod" \
  sigs.k8s.io/jobset:config/components/crd/bases github.com/ray-project/kuberay/ray-operator:config/crd/bases

"$root/hack/k8s-binaries.sh" >&2   # etcd; builds it (and the plain kube-apiserver) when missing
print
