#!/usr/bin/env bash
# Builds kube-scheduler from the Go module proxy (module test/tools, the same
# k8s.io/kubernetes version as kube-apiserver) for `make bench-scheduler`, and caches it
# under $HOME/.cache/tessera/k8s/<version>/. Prints the binary's path on stdout.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
version=$(awk '$1=="k8s.io/kubernetes" {print $2; exit}' "$root/test/tools/go.mod")
dir="${TESSERA_CACHE:-$HOME/.cache/tessera}/k8s/${version}"
if [[ -x "$dir/kube-scheduler" ]]; then
  echo "$dir/kube-scheduler"
  exit 0
fi
mkdir -p "$dir"
tmp=$(mktemp -d "$dir/.build.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
echo "building kube-scheduler ${version} into $dir (first time only)" >&2
(cd "$root/test/tools" && go build -trimpath -ldflags=-s -o "$tmp/" k8s.io/kubernetes/cmd/kube-scheduler >&2)
mv "$tmp/kube-scheduler" "$dir/"
echo "$dir/kube-scheduler"
