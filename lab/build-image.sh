#!/usr/bin/env bash
# Builds the lab host image: Debian 12 booting systemd (journald included), made offline
# with debootstrap from Debian's packages and imported into podman. Skips the build when
# the image exists and was built from this script's package list.
set -euo pipefail
IMAGE=${DDTREE_LAB_IMAGE:-localhost/ddtree-lab:bookworm}
# python3-venv/pip: the ml-env venv; patch: the DDTree patch series; git: the fork source (a bundle
# or mirror cloned on the host); curl: operators' habit; openssh-server, sudo: the lab reached as
# operators reach their hosts, by SSH as the unprivileged user deploy with become; prometheus,
# prometheus-node-exporter, prometheus-exporter-exporter: the fleet's metrics (docs/observability.md),
# installed but not enabled: the roles that use them enable them (the containers cannot reach a mirror)
PACKAGES=systemd,systemd-sysv,dbus,python3,python3-venv,python3-pip,iproute2,procps,patch,git,curl,ca-certificates,openssh-server,sudo,prometheus,prometheus-node-exporter,prometheus-exporter-exporter
# bump when the image's own set-up below changes
SETUP=ssh-deploy-1,metrics-off-1
LABEL=ddtree.lab.packages

if podman image exists "$IMAGE" &&
   [ "$(podman image inspect --format "{{ index .Labels \"$LABEL\" }}" "$IMAGE" 2>/dev/null)" = "$PACKAGES;$SETUP" ]; then
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
# SSH: each container makes its own host keys at boot (lab/up.sh and molecule's prepare record
# them in lab/.ssh/known_hosts); only the user deploy logs in, by the key lab/up.sh mounts at
# /etc/ssh/lab-authorized-keys/deploy (made by scripts/setup.sh), and becomes root with sudo
rm -f "$rootfs"/etc/ssh/ssh_host_*
mkdir -p "$rootfs/etc/systemd/system/ssh.service.d"
printf '%s\n' '[Service]' 'ExecStartPre=' 'ExecStartPre=/usr/bin/ssh-keygen -A' 'ExecStartPre=/usr/sbin/sshd -t' \
  >"$rootfs/etc/systemd/system/ssh.service.d/lab-host-keys.conf"
printf '%s\n' 'PermitRootLogin no' 'PasswordAuthentication no' 'KbdInteractiveAuthentication no' \
  'AuthorizedKeysFile /etc/ssh/lab-authorized-keys/%u' >"$rootfs/etc/ssh/sshd_config.d/lab.conf"
# the packages' postinst enabled their services: a lab host runs none until a role asks for it
rm -f "$rootfs"/etc/systemd/system/multi-user.target.wants/prometheus*.service
chroot "$rootfs" useradd --create-home --shell /bin/bash deploy
echo 'deploy ALL=(ALL) NOPASSWD: ALL' >"$rootfs/etc/sudoers.d/deploy"
chmod 0440 "$rootfs/etc/sudoers.d/deploy"
tar -C "$rootfs" -c . | podman import \
  --change 'CMD ["/lib/systemd/systemd"]' \
  --change 'STOPSIGNAL SIGRTMIN+3' \
  --change "LABEL $LABEL=$PACKAGES;$SETUP" - "$IMAGE" >/dev/null
echo "built lab image $IMAGE"
