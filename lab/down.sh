#!/usr/bin/env bash
# Removes the lab hosts that lab/up.sh started (only those containers).
set -euo pipefail
HOSTS=${*:-ct129 ct200}
for host in $HOSTS; do
  if podman container exists "ddtree-lab-$host"; then
    podman rm -f "ddtree-lab-$host" >/dev/null && echo "removed ddtree-lab-$host"
  fi
done
