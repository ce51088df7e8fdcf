#!/usr/bin/env bash
# setup-podman.sh — make rootful Debian podman usable for toolctl's container tests.
#
# Idempotent; run as root on Debian 12 (bookworm), as often as you like. It:
#   1. installs podman, runc, busybox-static and catatonit (for `podman run --init`)
#      from Debian if any of them is missing;
#   2. writes a containers.conf (runc runtime, explicit ulimits, never pull) to
#      $TOOLCTL_CONTAINERS_CONF (default: $HOME/.config/toolctl/containers.conf);
#   3. builds localhost/toolctl-busybox:latest with `podman import` (no registry);
#   4. runs a smoke test that must print "hi".
# podman reads CONTAINERS_CONF on every invocation: export it (hint printed on stderr).
# Without it, `podman run` fails here: exit 126, "error setting rlimit type 7".
set -euo pipefail

IMAGE=localhost/toolctl-busybox:latest
CONF=${TOOLCTL_CONTAINERS_CONF:-${HOME:-/root}/.config/toolctl/containers.conf}
PACKAGES=(podman runc busybox-static catatonit)

if ! dpkg -s "${PACKAGES[@]}" >/dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update >&2
    apt-get install -y --no-install-recommends "${PACKAGES[@]}" >&2
fi

mkdir -p "$(dirname "$CONF")"
cat >"$CONF" <<'CONF'
[containers]
default_ulimits = ["nofile=1024:1024", "nproc=1024:1024"]
[engine]
runtime = "runc"
pull_policy = "never"
CONF
export CONTAINERS_CONF=$CONF

if ! podman image exists "$IMAGE"; then
    rootfs=$(mktemp -d)
    trap 'rm -rf "$rootfs"' EXIT
    mkdir -p "$rootfs/bin" "$rootfs/tmp"
    cp /bin/busybox "$rootfs/bin/busybox"   # static build from busybox-static
    for applet in $("$rootfs/bin/busybox" --list); do
        [ "$applet" = busybox ] || ln -s busybox "$rootfs/bin/$applet"
    done
    tar -C "$rootfs" -cf - . | podman import -q --change 'CMD ["/bin/sh"]' - "$IMAGE" >/dev/null
fi

out=$(echo hi | podman run --rm -i --network none --read-only "$IMAGE" cat)
[ "$out" = hi ] || { echo "setup-podman: smoke test failed, got '$out'" >&2; exit 1; }
echo "$out"
echo "setup-podman: OK. Before calling podman, run:" >&2
echo "  export CONTAINERS_CONF=$CONF" >&2
