#!/usr/bin/env bash
# Removes the lab hosts that lab/up.sh started (only those containers).
set -euo pipefail
HOSTS=${*:-ct129 ct200}
for host in $HOSTS; do podman rm -f "ddtree-lab-$host" >/dev/null 2>&1 && echo "removed ddtree-lab-$host" || true; done
