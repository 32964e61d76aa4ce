#!/usr/bin/env bash
# Builds Tessera's two images and pushes them (make images):
#   $REGISTRY/tessera:$TAG             from Dockerfile
#   $REGISTRY/tessera-node-agent:$TAG  from Dockerfile.node-agent
# with the first of docker (its daemon must answer), podman and buildah (no daemon) that
# works here; BUILDER=podman picks one. TAG defaults to `git describe`. The builds pull
# the Dockerfiles' base images, so the builder must reach their registries (or a mirror
# configured for it).
set -euo pipefail
cd "$(dirname "$0")/.."

# fail LINE...: prints the lines, the first prefixed with "images: ", and exits 1.
fail() {
  printf 'images: %s\n' "$1" >&2
  shift
  [[ $# -eq 0 ]] || printf '%s\n' "$@" >&2
  exit 1
}

[[ -n "${REGISTRY:-}" ]] || fail "REGISTRY is not set: 'make images REGISTRY=registry.example.com/tessera'" \
  "pushes registry.example.com/tessera/tessera:TAG and registry.example.com/tessera/tessera-node-agent:TAG"
REGISTRY=${REGISTRY%/}
TAG=${TAG:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}
[[ "$TAG" =~ ^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$ ]] || fail "TAG '$TAG' is not a valid image tag (letters, digits, _ . -)"

builder=
why=()
for b in ${BUILDER:-docker podman buildah}; do
  if ! command -v "$b" >/dev/null; then
    why+=("  $b: not installed")
  elif err=$("$b" info 2>&1 >/dev/null); then
    builder=$b
    break
  else
    why+=("  $b: installed, but '$b info' fails: $(grep -m1 . <<<"$err" || true)")
  fi
done
[[ -n "$builder" ]] || fail "no container builder works here. Building the images needs one of" \
  "  - Docker, with its daemon running (docker info answers)," \
  "  - Podman or Buildah (no daemon)," \
  "able to pull the base images of Dockerfile and Dockerfile.node-agent and to push to $REGISTRY." \
  "Found:" "${why[@]}"

# The base images first, so that an unreachable registry is named as such.
for img in $(awk 'toupper($1) == "FROM" { from[$2] = 1; if (toupper($3) == "AS") stage[$4] = 1 }
    END { for (f in from) if (!(f in stage)) print f }' Dockerfile Dockerfile.node-agent | sort); do
  "$builder" pull "$img" >/dev/null ||
    fail "$builder cannot pull the base image $img: it needs to reach that image's registry, or a mirror configured for $builder"
done

for image in tessera:Dockerfile tessera-node-agent:Dockerfile.node-agent; do
  ref=$REGISTRY/${image%%:*}:$TAG
  echo "images: building $ref with $builder" >&2
  "$builder" build --build-arg VERSION="${VERSION:-$TAG}" -f "${image#*:}" -t "$ref" .
  "$builder" push "$ref" ||
    fail "pushing $ref failed: log in ($builder login ${REGISTRY%%/*}) with an account that may push there"
done

cat <<EOF
Pushed $REGISTRY/tessera:$TAG and $REGISTRY/tessera-node-agent:$TAG. Install with:
  helm install tessera deploy/helm/tessera -n tessera-system --create-namespace \\
    --set image.repository=$REGISTRY/tessera,nodeAgent.image.repository=$REGISTRY/tessera-node-agent \\
    --set-string image.tag=$TAG
EOF
