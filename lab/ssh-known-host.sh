#!/usr/bin/env bash
# Records a lab host's SSH host key in lab/.ssh/known_hosts as [127.0.0.1]:PORT, replacing what an
# earlier container on that port left: each container makes its own host keys at boot (lab image),
# and the SSH inventory checks them strictly. Waits up to 60 s for sshd's key to exist.
# Usage: lab/ssh-known-host.sh CONTAINER PORT
set -euo pipefail
container=$1 port=$2
dir=$(cd "$(dirname "$0")" && pwd)/.ssh
key=
for _ in $(seq 60); do
  key=$(podman exec "$container" cat /etc/ssh/ssh_host_ed25519_key.pub 2>/dev/null) && [ -n "$key" ] && break
  sleep 1
done
[ -n "$key" ] || { echo "no SSH host key in $container after 60 s" >&2; exit 1; }
# hosts start side by side (molecule's forks): one writer at a time
exec 9>"$dir/known_hosts.lock"
flock 9
touch "$dir/known_hosts"
ssh-keygen -q -R "[127.0.0.1]:$port" -f "$dir/known_hosts" >/dev/null 2>&1 || true
rm -f "$dir/known_hosts.old"
echo "[127.0.0.1]:$port ${key% *}" >>"$dir/known_hosts"
