#!/usr/bin/env bash
# install-wrk.sh — install wrk (Debian's package), the HTTP load generator bench/serve.py
# uses for its headline REST figure: compiled, so it leaves the cores to the server.
# Idempotent; needs root and apt-get. Prints where wrk is.
set -euo pipefail

if ! command -v wrk >/dev/null 2>&1; then
    if ! command -v apt-get >/dev/null 2>&1 || [ "$(id -u)" != 0 ]; then
        echo "install-wrk.sh: needs root and apt-get; install the 'wrk' package by hand" >&2
        exit 1
    fi
    export DEBIAN_FRONTEND=noninteractive
    apt-get update >&2
    apt-get install -y --no-install-recommends wrk >&2
fi
command -v wrk
