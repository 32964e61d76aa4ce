#!/usr/bin/env bash
# Builds kube-apiserver and etcd from the Go module proxy (module test/tools) and caches
# them under $HOME/.cache/tessera/k8s/<version>/. Prints that directory on stdout.
# The first build takes about 10 minutes on 2 cores; later calls return at once.
# With --cached-only it only prints the directory, failing when nothing is built yet.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
version=$(awk '$1=="k8s.io/kubernetes" {print $2; exit}' "$root/test/tools/go.mod")
dir="${TESSERA_CACHE:-$HOME/.cache/tessera}/k8s/${version}"
if [[ -x "$dir/kube-apiserver" && -x "$dir/etcd" ]]; then
  echo "$dir"
  exit 0
fi
if [[ "${1:-}" == "--cached-only" ]]; then
  echo "kube-apiserver and etcd ${version} are not in $dir; run make k8s-binaries" >&2
  exit 1
fi
mkdir -p "$dir"
tmp=$(mktemp -d "$dir/.build.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
echo "building kube-apiserver and etcd ${version} into $dir (first time only, ~10 min)" >&2
(cd "$root/test/tools" && go build -trimpath -ldflags=-s -o "$tmp/" k8s.io/kubernetes/cmd/kube-apiserver go.etcd.io/etcd/server/v3 >&2)
mv "$tmp/server" "$tmp/etcd"   # go names the etcd binary after .../server/v3
mv "$tmp/kube-apiserver" "$tmp/etcd" "$dir/"
echo "$dir"
