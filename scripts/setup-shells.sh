#!/usr/bin/env bash
# setup-shells.sh — install zsh, whose completion the tests type into a real interactive
# shell (as they do bash's; fish's script is checked by its answers).
#
# Idempotent: does nothing when `zsh` is on PATH; otherwise installs the Debian package
# `zsh` (needs root and apt-get). Run by .ci/run; without it those tests skip.
set -euo pipefail

if command -v zsh >/dev/null 2>&1; then
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1 || [ "$(id -u)" != 0 ]; then
    echo "setup-shells.sh: needs root and apt-get; install the 'zsh' package by hand" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update >&2
apt-get install -y --no-install-recommends zsh >&2
command -v zsh >/dev/null
