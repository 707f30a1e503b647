#!/usr/bin/env bash
# The throughput gate's error rates at the role's default settings (not a test; CI never runs it):
# bench/gate_errors.py on this machine, SIMULATED servers on loopback, the gate module through
# ansible-playbook. About 25 minutes for 20 trials. Arguments go to bench/gate_errors.py, e.g.
# --trials 5 for a quick try, or --noise-process 0.02 --noise-request 0.05 --name gate_errors_noisy.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh >/dev/null
# shellcheck disable=SC1091
. .venv/bin/activate
export ANSIBLE_COLLECTIONS_PATH="$PWD/.deps/tree:$PWD/.deps"
exec python bench/gate_errors.py "$@"
