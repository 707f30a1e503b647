#!/usr/bin/env bash
# Unchanged-deploy benchmark (not a test; CI never runs it): `ansible-playbook deploy.yml -l HOST`
# with nothing to change, for an earlier commit (a git worktree of REF) and for this tree, side by
# side on the same lab host. Each side first deploys once untimed (so that the host holds what
# that side renders), then RUNS timed deploys; every timed run must report changed=0. Prints the
# median time and task count ("TASK [" lines of the default output) of each side and the ratio.
# Then, per side, FAILED_RUNS deploys of the field notes' first failure (memory check off, so SGLang
# (simulated) really starts and dies): the play must fail and roll back healthy; its wall time and
# the verdict's own "after N s" (start to crash as the verdict saw it) are kept.
# Raw records: bench/results/deploy_noop/<side>-<n>.log (ignored), summary
# bench/results/deploy_noop.{md,json}.
# Usage: bench/deploy_noop.sh [REF (default: the merge base of HEAD and main)]
#        env BENCH_HOST (default ct129), BENCH_RUNS (default 3)
# The lab host must be up and deployed once (make demo, or lab/up.sh + lab/prepare.yml + deploy.yml).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
REF=${1:-$(git merge-base HEAD main)}
HOST=${BENCH_HOST:-ct129}
RUNS=${BENCH_RUNS:-3}
FAILED_RUNS=${BENCH_FAILED_RUNS:-1}
FAILED_ARGS=(-e @lab/scenarios/field-notes-attempt-1.yml -e sglang_service_memory_check=off)
# shellcheck disable=SC1091
. .venv/bin/activate
WORK=$(mktemp -d /tmp/ddtree-bench-noop.XXXXXX)
cleanup() { git worktree remove --force "$WORK/base" >/dev/null 2>&1 || true; rm -rf "$WORK"; }
trap cleanup EXIT
git worktree add --quiet --detach "$WORK/base" "$REF"
# the base tree is its own ddtree.sglang; the lab's generated pins and wheelhouse are shared
mkdir -p "$WORK/tree/ansible_collections/ddtree"
ln -s "$WORK/base" "$WORK/tree/ansible_collections/ddtree/sglang"
ln -s "$ROOT/lab/wheelhouse" "$WORK/base/lab/wheelhouse"
cp inventory/group_vars/lab/wheelhouse_pins.yml "$WORK/base/inventory/group_vars/lab/"
OUT=bench/results/deploy_noop
mkdir -p "$OUT"

# shellcheck source=bench/lib/deploy_runs.sh
. bench/lib/deploy_runs.sh

declare -A DIRS=([base]="$WORK/base" [head]="$ROOT")
declare -A COLLECTIONS=([base]="$WORK/tree:$ROOT/.deps" [head]="$ROOT/.deps/tree:$ROOT/.deps")
declare -A TIMES TASKS FAILED CRASH
for side in base head; do
  run "$side" "${DIRS[$side]}" "${COLLECTIONS[$side]}" "" 0 >/dev/null
  for n in $(seq 1 "$RUNS"); do
    read -r seconds tasks changed < <(run "$side" "${DIRS[$side]}" "${COLLECTIONS[$side]}" "" "$n")
    [ "$changed" = 0 ] || { echo "$side run $n changed $changed tasks: not an unchanged deploy ($OUT/$side-$n.log)" >&2; exit 1; }
    echo "$side run $n: $seconds s, $tasks tasks, changed=0"
    TIMES[$side]="${TIMES[$side]:-} $seconds"; TASKS[$side]=$tasks
  done
  for n in $(seq 1 "$FAILED_RUNS"); do
    read -r seconds crash < <(failed "$side" "${DIRS[$side]}" "${COLLECTIONS[$side]}" "" "$n")
    echo "$side failing deploy $n: $seconds s, crash seen after $crash s, rolled back healthy"
    FAILED[$side]="${FAILED[$side]:-} $seconds"; CRASH[$side]="${CRASH[$side]:-} $crash"
  done
done
BASE_S=$(echo "${TIMES[base]}" | median); HEAD_S=$(echo "${TIMES[head]}" | median)
RATIO=$(echo "scale=2; $BASE_S / $HEAD_S" | bc)
BASE_F=$(echo "${FAILED[base]}" | median); HEAD_F=$(echo "${FAILED[head]}" | median)
BASE_ID=$(git rev-parse --short "$REF"); HEAD_ID=$(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo +changes)
{
  echo "# Unchanged deploy: ansible-playbook deploy.yml -l $HOST"
  echo
  echo "Run $(date -u +%Y-%m-%dT%H:%MZ) by bench/deploy_noop.sh, $RUNS timed runs a side after one untimed; median seconds."
  echo
  echo "| side | commit | seconds (median) | runs | tasks |"
  echo "|---|---|---|---|---|"
  echo "| before | $BASE_ID | $BASE_S | ${TIMES[base]# } | ${TASKS[base]} |"
  echo "| this tree | $HEAD_ID | $HEAD_S | ${TIMES[head]# } | ${TASKS[head]} |"
  echo
  echo "Ratio (before / this tree): ${RATIO}x"
  echo
  echo "Failing deploy (field notes' attempt 1, memory check off), rolled back healthy: wall seconds, and the verdict's start-to-crash seconds"
  echo
  echo "| side | commit | wall s (median) | runs | crash seen after s | wall beyond crash s |"
  echo "|---|---|---|---|---|---|"
  echo "| before | $BASE_ID | $BASE_F | ${FAILED[base]# } | ${CRASH[base]# } | $(echo "$BASE_F - $(echo "${CRASH[base]}" | median)" | bc) |"
  echo "| this tree | $HEAD_ID | $HEAD_F | ${FAILED[head]# } | ${CRASH[head]# } | $(echo "$HEAD_F - $(echo "${CRASH[head]}" | median)" | bc) |"
} | tee bench/results/deploy_noop.md
cat >bench/results/deploy_noop.json <<JSON
{"host": "$HOST", "runs": $RUNS, "failed_runs": $FAILED_RUNS, "ratio": $RATIO,
 "base": {"commit": "$BASE_ID", "seconds": [$(nums "${TIMES[base]}")], "median_s": $BASE_S, "tasks": ${TASKS[base]},
          "failed_seconds": [$(nums "${FAILED[base]}")], "failed_crash_s": [$(nums "${CRASH[base]}")]},
 "head": {"commit": "$HEAD_ID", "seconds": [$(nums "${TIMES[head]}")], "median_s": $HEAD_S, "tasks": ${TASKS[head]},
          "failed_seconds": [$(nums "${FAILED[head]}")], "failed_crash_s": [$(nums "${CRASH[head]}")]},
 "load_average_1m_at_end": "$(cut -d' ' -f1 /proc/loadavg)"}
JSON
