#!/usr/bin/env bash
# Builds the SGLang simulator's wheel into lab/wheelhouse, which lab/prepare.yml pushes to lab hosts.
set -euo pipefail
cd "$(dirname "$0")"
rm -rf wheelhouse && mkdir -p wheelhouse
../.venv/bin/pip wheel -q --no-deps --wheel-dir wheelhouse ./sglang_sim
rm -rf sglang_sim/build sglang_sim/*.egg-info
ls wheelhouse
