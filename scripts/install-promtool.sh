#!/usr/bin/env bash
# install-promtool.sh — build Prometheus's promtool from its Go module (the Go module proxy),
# for the test that checks `serve`'s and `worker`'s /metrics with `promtool check metrics`.
# Idempotent: the binary is kept in ~/.cache/toolctl/bin and rebuilt only for another
# version (a first build takes ~5 minutes and ~2 GiB of module cache, kept beside it).
# Needs Go (1.24 or later). Prints where promtool is.
set -euo pipefail

VERSION="${PROMTOOL_VERSION:-v0.316.0}"   # the Go module version of Prometheus 3.16
CACHE="${TOOLCTL_TOOLS_CACHE:-$HOME/.cache/toolctl}"
BIN="$CACHE/bin/promtool"

if [ -x "$BIN" ] && command -v go >/dev/null 2>&1 \
    && go version -m "$BIN" 2>/dev/null | grep -q "github.com/prometheus/prometheus[[:space:]]*$VERSION"; then
    echo "$BIN"
    exit 0
fi
if ! command -v go >/dev/null 2>&1; then
    echo "install-promtool.sh: needs Go (https://go.dev) to build promtool $VERSION" >&2
    exit 1
fi
mkdir -p "$CACHE/bin"
GOPATH="$CACHE/go" GOCACHE="$CACHE/go-build" GOBIN="$CACHE/bin" GOFLAGS=-modcacherw \
    go install "github.com/prometheus/prometheus/cmd/promtool@$VERSION" >&2
echo "$BIN"
