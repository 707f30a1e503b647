#!/usr/bin/env bash
# What the throughput gate costs a deploy in wall time (not a test; CI never runs it). On one lab host,
# reached over SSH as operators run it (inventory/lab.yml with inventory/lab_ssh.yml), RUNS pairs of
# deploys that each replace the unit (a new BENCH_RUN value in the unit's environment, so every deploy
# restarts and is judged): one with the gate off, one with it on at its default workload (one warm-up,
# then 3 rounds of 24 of the role's prose prompts, 4 at once, 128 output tokens each), alternating so
# that both arms see the same machine, each timed by this script's clock from the start of
# ansible-playbook to its end. min_ratio 0.5: the bench measures the
# cost, not a refusal. The gate's own seconds (gate_s) and numbers come from the host's results file.
# The server is the lab's SIMULATED SGLang (docs/dev/lab.md, "Throughput model"): its tokens/s are the
# model's, so the gate's seconds here are those of this workload at the model's speed.
# Raw records: bench/results/gate_cost/<arm>-<n>.log (ignored), summary bench/results/gate_cost.{md,json}.
# Usage: bench/gate_cost.sh   env BENCH_HOST (default ct200), BENCH_RUNS (3)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
HOST=${BENCH_HOST:-ct200}
RUNS=${BENCH_RUNS:-3}
OUT=bench/results/gate_cost
RESULTS=/var/lib/ddtree-sglang/gate/sglang-qwen.service.json
# shellcheck disable=SC1091
. .venv/bin/activate
# shellcheck source=bench/lib/deploy_runs.sh
. bench/lib/deploy_runs.sh
mkdir -p "$OUT"
lab/up.sh "$HOST" >/dev/null
INVENTORY="-i inventory/lab.yml -i inventory/lab_ssh.yml"
# shellcheck disable=SC2086
ansible-playbook $INVENTORY lab/prepare.yml -l "$HOST" >/dev/null
COLLECTIONS="$ROOT/.deps/tree:$ROOT/.deps"
declare -A ARGS=([off]="" [on]="-e sglang_service_gate=true -e sglang_service_gate_min_ratio=0.5")

# deploy ARM N: one deploy that replaces the unit; prints its wall seconds
deploy() {
  local seconds changed
  # shellcheck disable=SC2086
  read -r seconds _ changed < <(run "$1" "$ROOT" "$COLLECTIONS" "$INVENTORY" "$2" \
    -e "{\"sglang_service_environment\": {\"BENCH_RUN\": \"$1-$2\"}}" ${ARGS[$1]})
  [ "${changed:-0}" -gt 0 ] || { echo "deploy $1 $2 changed nothing: $OUT/$1-$2.log" >&2; exit 1; }
  echo "$seconds"
}

# the host's newest gate result: "gate_s outcome output_throughput ttft_p99_ms itl_p99_ms"
last_gate() {
  podman exec "ddtree-lab-$HOST" cat "$RESULTS" | python3 -c '
import json, sys
r = json.load(sys.stdin)["results"][-1]
m = r["measured"]
print(r["gate_s"], r["outcome"], m["output_throughput"], m["ttft_p99_ms"], m["itl_p99_ms"])'
}

deploy off 0 >/dev/null  # builds or reuses the release, starts from a healthy unit
declare -A TIMES
GATE_S="" OUTCOMES="" LAST=""
for n in $(seq 1 "$RUNS"); do
  for arm in off on; do
    seconds=$(deploy "$arm" "$n")
    TIMES[$arm]="${TIMES[$arm]:-} $seconds"
    if [ "$arm" = on ]; then
      read -r gate_s outcome tps ttft itl < <(last_gate)
      GATE_S="$GATE_S $gate_s"; OUTCOMES="$OUTCOMES $outcome"; LAST="$tps tok/s, TTFT p99 $ttft ms, ITL p99 $itl ms"
      echo "run $n gate on: $seconds s (gate $gate_s s, $outcome, $LAST)"
    else
      echo "run $n gate off: $seconds s"
    fi
  done
done
OFF=$(echo "${TIMES[off]}" | median); ON=$(echo "${TIMES[on]}" | median); GATE=$(echo "$GATE_S" | median)
OVERHEAD=$(echo "$ON - $OFF" | bc); RATIO=$(echo "scale=2; $ON / $OFF" | bc)
COMMIT=$(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo +changes)
{
  echo "# The throughput gate's cost: ansible-playbook deploy.yml -l $HOST, each deploy replacing the unit"
  echo
  echo "Run $(date -u +%Y-%m-%dT%H:%MZ) by bench/gate_cost.sh at $COMMIT, $RUNS deploys an arm (alternating), median seconds; SIMULATED server."
  echo
  echo "| gate | deploy s (median) | runs |"
  echo "|---|---|---|"
  echo "| off | $OFF | ${TIMES[off]# } |"
  echo "| on, default workload | $ON | ${TIMES[on]# } |"
  echo
  echo "Overhead: ${OVERHEAD} s a deploy (${RATIO}x); the gate task itself (gate_s, host clock): median $GATE s of$GATE_S; outcomes$OUTCOMES; last run $LAST"
} | tee bench/results/gate_cost.md
cat >bench/results/gate_cost.json <<JSON
{"host": "$HOST", "commit": "$COMMIT", "runs": $RUNS, "off_s": [$(nums "${TIMES[off]}")], "on_s": [$(nums "${TIMES[on]}")],
 "off_median_s": $OFF, "on_median_s": $ON, "overhead_s": $OVERHEAD, "ratio": $RATIO, "gate_s": [$(nums "$GATE_S")],
 "gate_median_s": $GATE, "outcomes": "${OUTCOMES# }", "load_average_1m_at_end": "$(cut -d' ' -f1 /proc/loadavg)"}
JSON
