#!/usr/bin/env bash
# setup-graphviz.sh — install Graphviz (`dot`), which `toolctl graph --format svg|png` runs.
#
# Idempotent: does nothing when `dot` is on PATH; otherwise installs the Debian package
# `graphviz` (needs root and apt-get). Run by .ci/run; run it by hand on a new machine.
set -euo pipefail

if command -v dot >/dev/null 2>&1; then
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1 || [ "$(id -u)" != 0 ]; then
    echo "setup-graphviz.sh: needs root and apt-get; install the 'graphviz' package by hand" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update >&2
apt-get install -y --no-install-recommends graphviz >&2
command -v dot >/dev/null
