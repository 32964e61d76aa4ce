# Shell functions the hack/ scripts that copy files out of Go modules share. Source it
# after `set -euo pipefail`.

# begin_cache DIR: when an earlier run completed DIR, prints it and exits; else makes
# DIR and a directory $tmp inside it, removed on exit, to fill.
begin_cache() {
  cache_dir=$1
  if [[ -f "$cache_dir/.complete" ]]; then
    echo "$cache_dir"
    exit 0
  fi
  mkdir -p "$cache_dir"
  tmp=$(mktemp -d "$cache_dir/.copy.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
}

# module_dir MODULE@VERSION: the module's directory in the Go module cache (read-only),
# downloaded through the proxy outside any module, so that go.mod and go.sum stay as
# they are.
module_dir() {
  local src
  src=$(cd "$tmp" && GOFLAGS=-mod=mod go mod download -json "$1" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  if [[ -z "$src" ]]; then
    echo "go mod download $1 gave no directory" >&2
    exit 1
  fi
  echo "$src"
}

# end_cache: moves the YAML files of $tmp into the cache directory, marks it complete
# and prints it.
end_cache() {
  chmod u+w "$tmp"/*.yaml
  mv "$tmp"/*.yaml "$cache_dir/"
  touch "$cache_dir/.complete"
  echo "$cache_dir"
}
