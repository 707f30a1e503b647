#!/usr/bin/env bash
# The real-GPU check of the ml-env probe: runs bench/real_gpu_check.yml (gpu_facts and the ml-env probe, local
# connection) on a machine with a real NVIDIA GPU and leaves real_gpu_check.json and the log in
# REAL_GPU_CHECK_OUT (default bench/results). docs/dev/real-gpu-check.md holds what it gave on an H200.
#
# Usage: bench/real_gpu_check.sh [python]     python: the interpreter with the CUDA torch
#                                             (default: python3 on PATH)
# Such a machine has no network: where Python lacks ansible-core, it is installed from wheels
# in bench/.carry/ (ansible-core and the dependencies the machine lacks; fetch them beforehand on
# a machine with pip access:
#   pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#     --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
#     -d bench/.carry ansible-core==2.19.14 resolvelib cryptography cffi pycparser
# ) into a scratch directory, never into the interpreter's own site-packages.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
PY=$(command -v "${1:-python3}")
OUT=${REAL_GPU_CHECK_OUT:-$ROOT/bench/results}
CARRY=${REAL_GPU_CHECK_CARRY:-$ROOT/bench/.carry}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$OUT"

if ! "$PY" -c 'import ansible' 2>/dev/null; then
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --disable-pip-version-check \
    --target "$WORK/site" "$CARRY"/*.whl
  export PYTHONPATH="$WORK/site${PYTHONPATH:+:$PYTHONPATH}"
fi
mkdir -p "$WORK/collections/ansible_collections/ddtree"
ln -s "$ROOT" "$WORK/collections/ansible_collections/ddtree/sglang"
# the repository's ansible.cfg is the lab's (podman inventory); this run needs none of it
printf '[defaults]\ncollections_path = %s\nstdout_callback = default\ncallback_result_format = yaml\n' \
  "$WORK/collections" >"$WORK/ansible.cfg"
export ANSIBLE_CONFIG="$WORK/ansible.cfg" ANSIBLE_HOME="$WORK/ansible-home" ANSIBLE_LOCAL_TEMP="$WORK/tmp"
export LANG=C.UTF-8 LC_ALL=C.UTF-8

{
  echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) bench/real_gpu_check.sh $PY"
  echo "# $("$PY" --version 2>&1), ansible-core $("$PY" -c 'import ansible.release as r; print(r.__version__)')"
  nvidia-smi --query-gpu=index,name,memory.total,driver_version,compute_cap --format=csv
} 2>&1 | tee "$OUT/real_gpu_check.log"
set +e
"$PY" -m ansible playbook -i localhost, -c local \
  -e "ansible_python_interpreter=$PY" -e "real_gpu_check_python=$PY" -e "real_gpu_check_out=$OUT" \
  "$ROOT/bench/real_gpu_check.yml" 2>&1 | tee -a "$OUT/real_gpu_check.log"
rc=${PIPESTATUS[0]}
echo "# ansible-playbook rc=$rc" | tee -a "$OUT/real_gpu_check.log"
exit "$rc"
