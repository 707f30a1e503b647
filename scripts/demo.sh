#!/usr/bin/env bash
# The main job on the lab, from a fresh machine: set up, start lab hosts ct129 and ct200,
# deploy ct129 (healthy) and ct200 with their host groups' envelopes, then deploy the field
# notes' first failure on ct129 and watch the fast verdict and the rollback.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
lab/build-wheelhouse.sh >/dev/null
lab/up.sh ct129 ct200
# shellcheck disable=SC1091
. .venv/bin/activate

banner() { printf '\n\033[1m#### %s\033[0m\n' "$*"; }

banner "Prepare the lab hosts (simulated GPUs, simulated model dirs, simulator wheel)"
ansible-playbook lab/prepare.yml

banner "1. ansible-playbook deploy.yml -l ct129   (2 x RTX A6000, the envelope that fits)"
ansible-playbook deploy.yml -l ct129

banner "2. ansible-playbook deploy.yml -l ct200   (8 x RTX PRO 6000 Blackwell, its own envelope)"
ansible-playbook deploy.yml -l ct200

banner "3. The field notes' first failure on ct129: DDTree shadow-linear at 0.88 / 131072"
before=$(podman exec ddtree-lab-ct129 sha256sum /etc/systemd/system/sglang-qwen.service)
start=$SECONDS
# past the memory planner, which would refuse this envelope before the restart: the demo shows
# SGLang's own failure, the fast verdict and the rollback
if ansible-playbook deploy.yml -l ct129 -e @lab/scenarios/field-notes-attempt-1.yml -e sglang_service_memory_check=off; then
  echo "demo: the failing envelope deployed without error; that is a bug" >&2
  exit 1
fi
after=$(podman exec ddtree-lab-ct129 sha256sum /etc/systemd/system/sglang-qwen.service)
state=$(podman exec ddtree-lab-ct129 systemctl is-active sglang-qwen.service || true)
banner "The deploy failed as expected in $((SECONDS - start)) s, including rollback."
echo "unit restored byte for byte: $([ "$before" = "$after" ] && echo yes || echo NO)"
echo "service now: $state"
podman exec ddtree-lab-ct129 python3 -c "import json,urllib.request as u;print('generation after rollback:', json.load(u.urlopen(u.Request('http://127.0.0.1:30000/generate',data=json.dumps({'text':'Hello','sampling_params':{'max_new_tokens':6}}).encode(),headers={'Content-Type':'application/json'}),timeout=10))['text'])"
[ "$before" = "$after" ] && [ "$state" = active ]
echo
echo "Lab hosts keep running (podman ps); remove them with: lab/down.sh"
