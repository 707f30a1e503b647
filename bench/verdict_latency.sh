#!/usr/bin/env bash
# Verdict-latency benchmark on lab host ct129, reached over SSH as operators reach theirs (not a
# test; CI never runs it): for every fault the SGLang simulator can inject, fault-to-verdict of
# sglang_health, of an operator's until loop on systemctl is-active + /health_generate (delay 5 s
# and 1 s), of the same loop run on the host in one task, of a uri loop on /v1/models and of
# wait_for on the port (600 s deadline), 10 runs each (3 of what waits out a deadline). About 30
# minutes. Writes the raw records to bench/results/verdict_latency.json and the report, with the
# ratios' bootstrap intervals (bench/verdict_summary.py), to bench/results/verdict_latency.md, and
# prints it (the playbook's log: bench/results/verdict_latency.log).
# Extra arguments go to ansible-playbook, e.g. -e bench_runs=2 -e bench_long_runs=1 -e bench_deadline=60 for a quick try.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh >/dev/null
lab/build-wheelhouse.sh >/dev/null
lab/up.sh ct129
# shellcheck disable=SC1091
. .venv/bin/activate
ssh_inventory=(-i inventory/lab.yml -i inventory/lab_ssh.yml)
ansible-playbook "${ssh_inventory[@]}" lab/prepare.yml -l ct129 >/dev/null
ansible-playbook "${ssh_inventory[@]}" deploy.yml -l ct129 >/dev/null
mkdir -p bench/results
started=$(date +%s)
# one fork per worker of the long phase (every job that waits out a deadline runs at once)
ansible-playbook "${ssh_inventory[@]}" bench/verdict_latency.yml --forks 40 "$@" >bench/results/verdict_latency.log 2>&1 || {
  tail -n 40 bench/results/verdict_latency.log >&2
  exit 1
}
cat bench/results/verdict_latency.md
echo "bench run: $(($(date +%s) - started)) s (log: bench/results/verdict_latency.log)"
