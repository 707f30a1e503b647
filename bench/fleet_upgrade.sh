#!/usr/bin/env bash
# Fleet-upgrade benchmark (not a test; CI never runs it). Starts lab hosts lab-bench-01..NN
# (simulator-only releases, group lab_light), deploys them once, then times upgrade.yml on
# 2, 4, 8 and 16 of them with batches (canary + upgrade_serial) against the same hosts one at a
# time (upgrade_serial=1), then the largest size with forks 5 and with the free strategy.
# Each upgrade changes the unit (a new Environment= value), so every host restarts and is
# judged. Per host, Ansible's control-side overhead = deploy time minus the simulator's own
# start delay (its first journal line to "fired up and ready" in the same invocation).
# Removes only the containers it started. Results: bench/results/fleet_upgrade.{md,json}
# (rewritten after every run, so a stopped run leaves the runs it finished).
# Usage: bench/fleet_upgrade.sh [SIZES (default "2 4 8 16")]; env BENCH_SERIAL (default 50%),
# BENCH_VARIANT_HOSTS (default: the largest size; the fleet size of the forks 5 / free runs)
# On a shared controller run it under the lab lock: flock /tmp/ddtree-molecule.lock bench/fleet_upgrade.sh
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
SIZES=${1:-2 4 8 16}
BATCH_SERIAL=${BENCH_SERIAL:-50%}
IMAGE=${DDTREE_LAB_IMAGE:-localhost/ddtree-lab:bookworm}
MAX=0; for n in $SIZES; do [ "$n" -gt "$MAX" ] && MAX=$n; done
# fleet size of the forks / strategy runs (one of SIZES)
VARIANT=${BENCH_VARIANT_HOSTS:-$MAX}
scripts/setup.sh >/dev/null
lab/build-wheelhouse.sh >/dev/null
# shellcheck disable=SC1091
. .venv/bin/activate
export ANSIBLE_COLLECTIONS_PATH="$ROOT/.deps/tree:$ROOT/.deps"
WORK=$(mktemp -d /tmp/ddtree-bench-fleet.XXXXXX)
mkdir -p bench/results
# a run of some sizes keeps the earlier file's other sizes (marked as earlier in the table)
PREVIOUS=$WORK/previous.json
[ -f bench/results/fleet_upgrade.json ] && cp bench/results/fleet_upgrade.json "$PREVIOUS"
LOG=bench/results/fleet_upgrade.log
: >"$LOG"
HOSTS=()
for i in $(seq 1 "$MAX"); do HOSTS+=("lab-bench-$(printf %02d "$i")"); done

cleanup() {
  for host in "${HOSTS[@]}"; do podman rm -f "$host" >/dev/null 2>&1 || true; done
}
trap cleanup EXIT
trap 'exit 143' TERM INT

# the first N hosts as one serving group of the ct129 class
inventory() {
  local n=$1 file=$WORK/inventory-$1.yml
  {
    echo "all:"
    echo "  vars: {ansible_connection: containers.podman.podman, ansible_python_interpreter: /usr/bin/python3}"
    echo "  children:"
    for group in sglang_servers bench_fleet gpu_a6000_tp2 lab lab_light; do
      echo "    $group:"
      echo "      hosts:"
      for host in "${HOSTS[@]:0:$n}"; do echo "        $host:"; done
    done
  } >"$file"
  ln -sfn "$ROOT/inventory/group_vars" "$WORK/group_vars"
  echo "$file"
}

started=$(date +%s)
free_before=$(awk '/MemAvailable/ {print $2}' /proc/meminfo)
for host in "${HOSTS[@]}"; do
  podman rm -f "$host" >/dev/null 2>&1 || true
  # as lab/up.sh: runc (hybrid cgroups), ulimits, the wheelhouse read-only, SYS_PTRACE
  podman run -d --name "$host" --hostname "$host" --runtime=runc --systemd=always \
    --ulimit nofile=20000:20000 --ulimit nproc=20000:20000 \
    --volume "$ROOT/lab/wheelhouse:/var/cache/ddtree-lab/wheelhouse:ro" --cap-add SYS_PTRACE \
    "$IMAGE" /lib/systemd/systemd >/dev/null
done
for host in "${HOSTS[@]}"; do
  timeout 120 podman exec "$host" systemctl is-system-running --wait >/dev/null 2>&1 || true
done
containers_s=$(($(date +%s) - started))
INV_ALL=$(inventory "$MAX")
echo "== prepare and first deploy of $MAX hosts" | tee -a "$LOG"
prepare_start=$(date +%s)
ansible-playbook -i "$INV_ALL" lab/prepare.yml -f "$MAX" >>"$LOG" 2>&1
prepare_s=$(($(date +%s) - prepare_start))
deploy_start=$(date +%s)
ansible-playbook -i "$INV_ALL" deploy.yml -f "$MAX" >>"$LOG" 2>&1
first_deploy_s=$(($(date +%s) - deploy_start))
# memory with every host serving: the containers' own accounting and the machine's
podman stats --no-stream --format json "${HOSTS[@]}" >"$WORK/memory.json"
free_after=$(awk '/MemAvailable/ {print $2}' /proc/meminfo)
echo "{\"date\": \"$(date -u '+%Y-%m-%d %H:%M UTC')\", \"hosts\": $MAX, \"mem_available_before_kib\": $free_before, \"mem_available_after_kib\": $free_after, \"containers_s\": $containers_s, \"prepare_s\": $prepare_s, \"first_deploy_s\": $first_deploy_s, \"cpus\": $(nproc)}" >"$WORK/machine.json"

run=0
RUNS=()
bench_run() {  # name size serial forks strategy
  local name=$1 n=$2 serial=$3 forks=$4 strategy=$5 inv t0 t1 rc
  run=$((run + 1))
  inv=$(inventory "$n")
  echo "== run $run: $name, $n hosts, serial $serial, forks $forks, $strategy" | tee -a "$LOG"
  t0=$(date +%s.%N)
  rc=0
  ansible-playbook -i "$inv" upgrade.yml -f "$forks" \
    -e "{\"upgrade_serial\": \"$serial\", \"upgrade_strategy\": \"$strategy\", \"upgrade_report_dir\": \"$WORK/run-$run\",
         \"sglang_service_environment\": {\"BENCH_RUN\": \"$run-$RANDOM\"}}" >>"$LOG" 2>&1 || rc=$?
  t1=$(date +%s.%N)
  mkdir -p "$WORK/run-$run"
  sim_delays "$n" >"$WORK/run-$run/sim.json"
  echo "{\"run\": $run, \"name\": \"$name\", \"hosts\": $n, \"serial\": \"$serial\", \"forks\": $forks, \"strategy\": \"$strategy\",
         \"rc\": $rc, \"wall_s\": $(python3 -c "print(round($t1 - $t0, 1))"), \"dir\": \"$WORK/run-$run\"}" >"$WORK/run-$run.json"
  RUNS+=("$WORK/run-$run.json")
  report
}

# per host, the simulator's own start delay in the invocation the upgrade judged: its first
# journal line to "The server is fired up and ready to roll!" (read with podman exec, not a play,
# to keep the benchmark's own overhead out of the runs)
sim_delays() {
  local host out
  for host in "${HOSTS[@]:0:$1}"; do
    out=$(podman exec "$host" bash -c 'id=$(systemctl show -p InvocationID --value sglang-qwen.service);
      journalctl _SYSTEMD_INVOCATION_ID="$id" -o json --output-fields=MESSAGE,__REALTIME_TIMESTAMP' \
      | python3 -c 'import json, sys
rows = [json.loads(line) for line in sys.stdin if line.strip()]
ready = [r for r in rows if "fired up and ready" in str(r.get("MESSAGE"))]
print(json.dumps({"first_us": int(rows[0]["__REALTIME_TIMESTAMP"]) if rows else None,
                  "ready_us": int(ready[0]["__REALTIME_TIMESTAMP"]) if ready else None}))') || out='{}'
    printf '%s\t%s\n' "$host" "$out"
  done | python3 -c 'import json, sys; print(json.dumps({h: json.loads(d) for h, d in (l.rstrip("\n").split("\t", 1) for l in sys.stdin)}, indent=1))'
}

report() {
  python3 bench/fleet_upgrade.py --machine "$WORK/machine.json" --memory "$WORK/memory.json" \
    --batch-serial "$BATCH_SERIAL" --previous "$PREVIOUS" --md bench/results/fleet_upgrade.md --json bench/results/fleet_upgrade.json "${RUNS[@]}"
}

for n in $SIZES; do
  bench_run batched "$n" "$BATCH_SERIAL" 10 linear
  bench_run one_at_a_time "$n" 1 10 linear
done
# settings, on VARIANT hosts (the batched run of that size, forks 10, linear, is the baseline);
# forks above the fleet size change nothing, so only fewer forks and the free strategy are tried
bench_run "batched, forks 5" "$VARIANT" "$BATCH_SERIAL" 5 linear
bench_run "batched, free" "$VARIANT" "$BATCH_SERIAL" 10 free

total_s=$(($(date +%s) - started))
python3 - "$WORK/machine.json" "$total_s" <<'PY'
import json, sys
path, total = sys.argv[1], int(sys.argv[2])
machine = json.load(open(path))
machine['bench_total_s'] = total
json.dump(machine, open(path, 'w'))
PY
report
cat bench/results/fleet_upgrade.md
echo "bench run: $total_s s (log: $LOG, work: $WORK)"
