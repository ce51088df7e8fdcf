#!/usr/bin/env bash
# setup-podman.sh — make rootful Debian podman usable for toolctl's container tests.
#
# Idempotent; safe to run repeatedly. Needs root on Debian 12 (bookworm). It:
#   1. installs podman + runc + busybox-static from Debian if podman is missing;
#   2. writes a containers.conf (runc runtime, explicit ulimits) to
#      $TOOLCTL_CONTAINERS_CONF (default: $HOME/.config/toolctl/containers.conf);
#   3. builds localhost/toolctl-busybox:latest via `podman import` (no registry needed);
#   4. runs a smoke test that must print "hi".
# CONTAINERS_CONF is read by every podman invocation, so export it (hint on stderr).
set -euo pipefail

IMAGE=localhost/toolctl-busybox:latest
CONF=${TOOLCTL_CONTAINERS_CONF:-$HOME/.config/toolctl/containers.conf}

if ! command -v podman >/dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update
    apt-get install -y --no-install-recommends podman runc busybox-static
fi

mkdir -p "$(dirname "$CONF")"
cat >"$CONF" <<'CONF'
[containers]
default_ulimits = ["nofile=1024:1024", "nproc=1024:1024"]
[engine]
runtime = "runc"
CONF
export CONTAINERS_CONF=$CONF

if ! podman image exists "$IMAGE"; then
    rootfs=$(mktemp -d)
    trap 'rm -rf "$rootfs"' EXIT
    mkdir -p "$rootfs/bin" "$rootfs/tmp"
    cp /bin/busybox "$rootfs/bin/busybox"
    for applet in $("$rootfs/bin/busybox" --list); do
        [ "$applet" = busybox ] || ln -s busybox "$rootfs/bin/$applet"
    done
    tar -C "$rootfs" -cf - . | podman import --change 'CMD ["/bin/sh"]' - "$IMAGE" >/dev/null
fi

out=$(echo hi | podman run --rm -i --network none --read-only "$IMAGE" cat)
[ "$out" = hi ] || { echo "smoke test failed: got '$out'" >&2; exit 1; }
echo "$out"
echo "podman OK. For later podman calls run:" >&2
echo "  export CONTAINERS_CONF=$CONF" >&2
