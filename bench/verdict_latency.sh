#!/usr/bin/env bash
# Verdict-latency benchmark on lab host ct129 (not a test; CI never runs it): for every fault
# the SGLang simulator can inject, fault-to-verdict of sglang_health, of an operator's loop on
# systemctl is-active + /health_generate, of a uri + until loop on /v1/models (each delay 5 s,
# 600 s deadline) and of wait_for on the port, 5 runs each. About 20 minutes. Prints the table and
# writes it to bench/results/verdict_latency.{md,json} (the playbook's log: bench/results/verdict_latency.log).
# Extra arguments go to ansible-playbook, e.g. -e bench_runs=3 -e bench_deadline=60 for a quick try.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh >/dev/null
lab/build-wheelhouse.sh >/dev/null
lab/up.sh ct129
# shellcheck disable=SC1091
. .venv/bin/activate
ansible-playbook lab/prepare.yml -l ct129 >/dev/null
ansible-playbook deploy.yml -l ct129 >/dev/null
mkdir -p bench/results
started=$(date +%s)
# one fork per worker of the long phase (every job that waits out a deadline runs at once)
ansible-playbook bench/verdict_latency.yml --forks 40 "$@" >bench/results/verdict_latency.log 2>&1 || {
  tail -n 40 bench/results/verdict_latency.log >&2
  exit 1
}
cat bench/results/verdict_latency.md
echo "bench run: $(($(date +%s) - started)) s (log: bench/results/verdict_latency.log)"
