#!/usr/bin/env bash
# Starts the lab hosts (podman containers booting systemd) named in inventory/lab.yml and
# waits until systemd inside each has finished booting. Re-running keeps running hosts. Each
# publishes its sshd on 127.0.0.1 only (inventory/lab_ssh.yml reaches the hosts that way).
set -euo pipefail
IMAGE=${DDTREE_LAB_IMAGE:-localhost/ddtree-lab:bookworm}
HOSTS=${*:-ct129 ct200}
# lab/build-wheelhouse.sh's output, seen read-only by the hosts instead of copied into each
WHEELHOUSE=$(cd "$(dirname "$0")" && pwd)/wheelhouse
HOST_WHEELHOUSE=/var/cache/ddtree-lab/wheelhouse
[ -d "$WHEELHOUSE" ] || { echo "no $WHEELHOUSE: run lab/build-wheelhouse.sh first" >&2; exit 1; }
# the SSH inventory's key (scripts/setup.sh makes it): the user deploy's one authorized key
SSH_KEY=$(cd "$(dirname "$0")" && pwd)/.ssh/id_ed25519.pub
[ -f "$SSH_KEY" ] || { echo "no $SSH_KEY: run scripts/setup.sh first" >&2; exit 1; }
# each host's SSH port on 127.0.0.1 (lab_ssh_port in inventory/lab.yml, the one place it is written)
ssh_port() {
  "$(dirname "$0")/../.venv/bin/ansible-inventory" -i "$(dirname "$0")/../inventory/lab.yml" --host "$1" |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["lab_ssh_port"])'
}
for host in $HOSTS; do
  name=ddtree-lab-$host
  port=$(ssh_port "$host")
  # a host started before the wheelhouse was mounted is started anew (SYS_PTRACE: root reads a
  # non-root service's sockets in /proc only with it, for the verdict's port check)
  if [ "$(podman container inspect --format '{{.State.Running}}' "$name" 2>/dev/null)" != true ] ||
     ! podman container inspect --format '{{range .Mounts}}{{.Destination}} {{end}}' "$name" | tr ' ' '\n' | grep -qx "$HOST_WHEELHOUSE" ||
     ! podman port "$name" 22/tcp 2>/dev/null | grep -qx "127.0.0.1:$port"; then
    podman rm -f "$name" >/dev/null 2>&1 || true
    # runc: crun refuses this machine's hybrid cgroups; ulimits: podman's default exceeds the hard limit
    podman run -d --name "$name" --hostname "$host" --runtime=runc --systemd=always \
      --ulimit nofile=20000:20000 --ulimit nproc=20000:20000 \
      --volume "$WHEELHOUSE:$HOST_WHEELHOUSE:ro" \
      --volume "$SSH_KEY:/etc/ssh/lab-authorized-keys/deploy:ro" \
      --publish "127.0.0.1:$port:22" \
      --cap-add SYS_PTRACE \
      "$IMAGE" /lib/systemd/systemd >/dev/null
  fi
done
for host in $HOSTS; do
  # podman exec fails outright (no output) while a just-started container is not ready for it yet:
  # ask again until systemd answers, for at most 60 s
  state=
  for _ in $(seq 60); do
    state=$(timeout 60 podman exec "ddtree-lab-$host" systemctl is-system-running --wait 2>/dev/null || true)
    [ -n "$state" ] && break
    sleep 1
  done
  echo "lab host $host (container ddtree-lab-$host): systemd $state"
  case $state in running|degraded) ;; *) echo "lab host $host did not boot" >&2; exit 1 ;; esac
  "$(dirname "$0")/ssh-known-host.sh" "ddtree-lab-$host" "$(ssh_port "$host")"
done
