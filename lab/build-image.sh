#!/usr/bin/env bash
# Builds the lab host image: Debian 12 booting systemd (journald included), made offline
# with debootstrap from Debian's packages and imported into podman. Skips the build when
# the image exists and was built from this script's package list.
set -euo pipefail
IMAGE=${DDTREE_LAB_IMAGE:-localhost/ddtree-lab:bookworm}
# python3-venv/pip: the ml-env venv; patch: the DDTree patch series; git: the fork source (a bundle
# or mirror cloned on the host); curl: operators' habit
PACKAGES=systemd,systemd-sysv,dbus,python3,python3-venv,python3-pip,iproute2,procps,patch,git,curl,ca-certificates
LABEL=ddtree.lab.packages

if podman image exists "$IMAGE" &&
   [ "$(podman image inspect --format "{{ index .Labels \"$LABEL\" }}" "$IMAGE" 2>/dev/null)" = "$PACKAGES" ]; then
  echo "lab image $IMAGE is up to date"
  exit 0
fi

rootfs=$(mktemp -d /var/tmp/ddtree-lab-rootfs.XXXXXX)
trap 'rm -rf "$rootfs"' EXIT
debootstrap --variant=minbase --include="$PACKAGES" bookworm "$rootfs" >/dev/null
rm -f "$rootfs"/var/cache/apt/archives/*.deb
rm -rf "$rootfs"/var/lib/apt/lists/*
# every container must get its own machine-id at boot
: > "$rootfs/etc/machine-id"
rm -f "$rootfs/var/lib/dbus/machine-id"
tar -C "$rootfs" -c . | podman import \
  --change 'CMD ["/lib/systemd/systemd"]' \
  --change 'STOPSIGNAL SIGRTMIN+3' \
  --change "LABEL $LABEL=$PACKAGES" - "$IMAGE" >/dev/null
echo "built lab image $IMAGE"
