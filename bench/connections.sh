#!/usr/bin/env bash
# The same deploys over the two connections (not a test; CI never runs it): through `podman exec`
# as root (inventory/lab.yml) and as operators run it, by SSH as the user deploy with become,
# pipelining and ControlPersist (-i inventory/lab.yml -i inventory/lab_ssh.yml), on one lab host,
# from this tree. Both sides first deploy once untimed; then RUNS unchanged deploys a side,
# alternating podman and SSH so that both see the same machine; each must report changed=0. Then
# FAILED_RUNS deploys a side of the field notes' first failure (memory check off): the play must fail
# and roll back healthy. For those, besides the wall time, the host's own clock gives the time from
# the crash (systemd's "Main process exited" of the new unit) to the old unit's process start, read
# from its journal and `systemctl show` after the run.
# Raw records: bench/results/connections/<side>-<n>.log (ignored), summary bench/results/connections.{md,json}.
# Usage: bench/connections.sh   env BENCH_HOST (default ct129), BENCH_RUNS (5), BENCH_FAILED_RUNS (3)
# Starts the lab host if needed (lab/up.sh) and prepares it.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
HOST=${BENCH_HOST:-ct129}
RUNS=${BENCH_RUNS:-5}
FAILED_RUNS=${BENCH_FAILED_RUNS:-3}
FAILED_ARGS=(-e @lab/scenarios/field-notes-attempt-1.yml -e sglang_service_memory_check=off)
OUT=bench/results/connections
UNIT=sglang-qwen.service
# shellcheck disable=SC1091
. .venv/bin/activate
# shellcheck source=bench/lib/deploy_runs.sh
. bench/lib/deploy_runs.sh
mkdir -p "$OUT"
lab/up.sh "$HOST" >/dev/null
ansible-playbook -i inventory/lab.yml -i inventory/lab_ssh.yml lab/prepare.yml -l "$HOST" >/dev/null
COLLECTIONS="$ROOT/.deps/tree:$ROOT/.deps"
declare -A INVENTORY=([podman]="-i inventory/lab.yml" [ssh]="-i inventory/lab.yml -i inventory/lab_ssh.yml")
CONTAINER=ddtree-lab-$HOST

# crash_to_restart SINCE: seconds from the first exit of the unit's main process after SINCE (epoch s)
# to the start of the process running now, both on the host's monotonic clock
crash_to_restart() {
  podman exec "$CONTAINER" bash -c "journalctl -u $UNIT -o json --no-pager --since @$1;
    echo \"RESTARTED \$(systemctl show -P ExecMainStartTimestampMonotonic $UNIT)\"" | python3 -c '
import json, sys
crash = restarted = None
for line in sys.stdin:
    if line.startswith("RESTARTED "):
        restarted = int(line.split()[1])
        continue
    entry = json.loads(line)
    if crash is None and "Main process exited" in str(entry.get("MESSAGE", "")):
        crash = int(entry["__MONOTONIC_TIMESTAMP"])
print("%.2f" % ((restarted - crash) / 1e6) if crash and restarted and restarted > crash else "none")'
}

declare -A TIMES TASKS FAILED RESTART BEYOND
for side in podman ssh; do
  run "$side" "$ROOT" "$COLLECTIONS" "${INVENTORY[$side]}" 0 >/dev/null
done
for n in $(seq 1 "$RUNS"); do
  for side in podman ssh; do
    read -r seconds tasks changed < <(run "$side" "$ROOT" "$COLLECTIONS" "${INVENTORY[$side]}" "$n")
    [ "$changed" = 0 ] || { echo "$side run $n changed $changed tasks: not an unchanged deploy ($OUT/$side-$n.log)" >&2; exit 1; }
    echo "$side run $n: $seconds s, $tasks tasks, changed=0"
    TIMES[$side]="${TIMES[$side]:-} $seconds"; TASKS[$side]=$tasks
  done
done
for n in $(seq 1 "$FAILED_RUNS"); do
  for side in podman ssh; do
    since=$(date +%s)
    read -r seconds crash < <(failed "$side" "$ROOT" "$COLLECTIONS" "${INVENTORY[$side]}" "$n")
    restart=$(crash_to_restart "$since")
    echo "$side failing deploy $n: $seconds s, crash seen by the verdict after $crash s, old unit restarted $restart s after the crash"
    FAILED[$side]="${FAILED[$side]:-} $seconds"; RESTART[$side]="${RESTART[$side]:-} $restart"
    BEYOND[$side]="${BEYOND[$side]:-} $(echo "$seconds - $crash" | bc)"
  done
done
declare -A MED FMED RMED BMED
for side in podman ssh; do
  MED[$side]=$(echo "${TIMES[$side]}" | median); FMED[$side]=$(echo "${FAILED[$side]}" | median)
  RMED[$side]=$(echo "${RESTART[$side]}" | median); BMED[$side]=$(echo "${BEYOND[$side]}" | median)
done
RATIO=$(echo "scale=2; ${MED[podman]} / ${MED[ssh]}" | bc)
COMMIT=$(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo +changes)
{
  echo "# Over SSH and through podman exec: ansible-playbook deploy.yml -l $HOST"
  echo
  echo "Run $(date -u +%Y-%m-%dT%H:%MZ) by bench/connections.sh at $COMMIT, $RUNS timed unchanged deploys a side (alternating) after one untimed; median seconds."
  echo
  echo "| connection | seconds (median) | runs | tasks |"
  echo "|---|---|---|---|"
  echo "| podman exec, root | ${MED[podman]} | ${TIMES[podman]# } | ${TASKS[podman]} |"
  echo "| SSH as deploy + become, pipelining, ControlPersist | ${MED[ssh]} | ${TIMES[ssh]# } | ${TASKS[ssh]} |"
  echo
  echo "Ratio (podman / SSH): ${RATIO}x"
  echo
  echo "Failing deploy (field notes' attempt 1, memory check off), rolled back healthy: wall seconds; wall beyond the crash (wall minus the verdict's start-to-crash seconds); seconds from the crash to the old unit's restart (host clock)"
  echo
  echo "| connection | wall s (median) | runs | beyond the crash s (median) | runs | crash to old unit restarted s (median) | runs |"
  echo "|---|---|---|---|---|---|---|"
  echo "| podman exec, root | ${FMED[podman]} | ${FAILED[podman]# } | ${BMED[podman]} | ${BEYOND[podman]# } | ${RMED[podman]} | ${RESTART[podman]# } |"
  echo "| SSH as deploy + become | ${FMED[ssh]} | ${FAILED[ssh]# } | ${BMED[ssh]} | ${BEYOND[ssh]# } | ${RMED[ssh]} | ${RESTART[ssh]# } |"
} | tee bench/results/connections.md
cat >bench/results/connections.json <<JSON
{"host": "$HOST", "commit": "$COMMIT", "runs": $RUNS, "failed_runs": $FAILED_RUNS, "ratio": $RATIO,
 "podman": {"seconds": [$(nums "${TIMES[podman]}")], "median_s": ${MED[podman]}, "tasks": ${TASKS[podman]},
            "failed_seconds": [$(nums "${FAILED[podman]}")], "beyond_crash_s": [$(nums "${BEYOND[podman]}")],
            "crash_to_restart_s": [$(nums "${RESTART[podman]}")]},
 "ssh": {"seconds": [$(nums "${TIMES[ssh]}")], "median_s": ${MED[ssh]}, "tasks": ${TASKS[ssh]},
         "failed_seconds": [$(nums "${FAILED[ssh]}")], "beyond_crash_s": [$(nums "${BEYOND[ssh]}")],
         "crash_to_restart_s": [$(nums "${RESTART[ssh]}")]},
 "load_average_1m_at_end": "$(cut -d' ' -f1 /proc/loadavg)"}
JSON
