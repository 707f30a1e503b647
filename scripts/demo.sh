#!/usr/bin/env bash
# The main job on the lab, from a fresh machine: set up, start lab hosts ct129 and ct200,
# deploy ct129 (healthy) and ct200 with their host groups' envelopes, then deploy the field
# notes' first failure on ct129 and watch the fast verdict and the rollback.
set -euo pipefail
cd "$(dirname "$0")/.."
run_start=$SECONDS
step_times=()
# step NAME COMMAND...: runs it and keeps its seconds for the table at the end
step() {
  local name=$1 start=$SECONDS
  shift
  "$@"
  step_times+=("$(printf '%-58s %4d s' "$name" $((SECONDS - start)))")
  printf '\n[demo] %s: %d s\n' "$name" $((SECONDS - start))
}
banner() { printf '\n\033[1m#### %s\033[0m\n' "$*"; }

step "set-up: apt packages, .venv, collections, SSH key" env DDTREE_SETUP_SKIP_IMAGE=1 scripts/setup.sh
# the lab image (debootstrap) and the wheelhouse (downloads, wheel builds) need nothing of each other:
# side by side, each one's output kept in a log and its own time printed
lab_image_and_wheelhouse() {
  local logs
  logs=$(mktemp -d)
  (start=$SECONDS; lab/build-image.sh >"$logs/image.log" 2>&1; echo "$? $((SECONDS - start))" >"$logs/image.rc") &
  (start=$SECONDS; lab/build-wheelhouse.sh >"$logs/wheelhouse.log" 2>&1; echo "$? $((SECONDS - start))" >"$logs/wheelhouse.rc") &
  wait
  local part rc secs failed=0
  for part in image wheelhouse; do
    read -r rc secs <"$logs/$part.rc"
    printf '[demo]   lab %s: %d s (exit %d)\n' "$part" "$secs" "$rc"
    [ "$rc" -eq 0 ] || { cat "$logs/$part.log"; failed=1; }
  done
  rm -rf "$logs"
  return $failed
}
step "lab image beside the wheelhouse" lab_image_and_wheelhouse
step "start lab hosts ct129 and ct200" lab/up.sh ct129 ct200
# shellcheck disable=SC1091
. .venv/bin/activate

banner "Prepare the lab hosts (simulated GPUs, simulated model dirs, simulator wheel)"
step "prepare the lab hosts" ansible-playbook lab/prepare.yml

banner "1. ansible-playbook deploy.yml -l ct129   (2 x RTX A6000, the envelope that fits)"
step "1. deploy ct129 (release build, restart, verdict)" ansible-playbook deploy.yml -l ct129

banner "2. ansible-playbook deploy.yml -l ct200   (8 x RTX PRO 6000 Blackwell, its own envelope)"
step "2. deploy ct200" ansible-playbook deploy.yml -l ct200

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
step_times+=("$(printf '%-58s %4d s' "3. the field notes' failure, verdict and rollback" $((SECONDS - start)))")
banner "The deploy failed as expected in $((SECONDS - start)) s, including rollback."
echo "unit restored byte for byte: $([ "$before" = "$after" ] && echo yes || echo NO)"
echo "service now: $state"
podman exec ddtree-lab-ct129 python3 -c "import json,urllib.request as u;print('generation after rollback:', json.load(u.urlopen(u.Request('http://127.0.0.1:30000/generate',data=json.dumps({'text':'Hello','sampling_params':{'max_new_tokens':6}}).encode(),headers={'Content-Type':'application/json'}),timeout=10))['text'])"
[ "$before" = "$after" ] && [ "$state" = active ]
banner "Where the time went"
printf '%s\n' "${step_times[@]}"
printf '%-58s %4d s\n' "total" $((SECONDS - run_start))
echo
echo "Lab hosts keep running (podman ps); remove them with: lab/down.sh"
