#!/usr/bin/env bash
# Crash-to-verdict latency of sglang_health against a uri+until wait loop, on lab host ct129.
# Starts the lab if needed; prints the median over 5 runs and the ratio.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh >/dev/null
lab/build-wheelhouse.sh >/dev/null
lab/up.sh ct129
# shellcheck disable=SC1091
. .venv/bin/activate
ansible-playbook lab/prepare.yml -l ct129 >/dev/null
ansible-playbook deploy.yml -l ct129 >/dev/null
ansible-playbook bench/verdict_latency.yml "$@" | sed -n '/TASK \[Report\]/,/^$/p'
