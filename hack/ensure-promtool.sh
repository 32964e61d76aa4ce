#!/usr/bin/env bash
# Makes sure promtool (Debian package prometheus) is installed, for Prometheus rule tests.
set -euo pipefail
if command -v promtool >/dev/null 2>&1; then
  exit 0
fi
if [[ $(id -u) -ne 0 ]]; then
  echo "promtool is missing: install the Debian package 'prometheus' (apt-get install prometheus)" >&2
  exit 1
fi
echo "installing promtool (Debian package prometheus)" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
apt-get install -y -qq --no-install-recommends prometheus >/dev/null
command -v promtool >/dev/null
