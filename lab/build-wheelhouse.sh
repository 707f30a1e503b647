#!/usr/bin/env bash
# Fills lab/wheelhouse, which lab hosts see read-only at /var/cache/ddtree-lab/wheelhouse:
# the locked downloads (lab/wheelhouse.lock: sglang 0.5.23, what its parser imports, torch
# 2.13.0+cpu and triton; lab/smg.lock: smg 1.13.0, the router, and
# what it imports), the SGLang
# simulator's wheel, the prebuilt patched wheel sglang-0.5.23+ddtree.1, the fork bundle and the
# negative fixtures; proves the locked set parses the lab envelopes; writes
# inventory/group_vars/lab/wheelhouse_pins.yml.
# Idempotent: what is present with the right hash (or stamp) is kept. The directory itself is
# never replaced, since running lab hosts have it bind-mounted.
set -euo pipefail
cd "$(dirname "$0")"
PY=../.venv/bin/python
mkdir -p wheelhouse .cache
# one build at a time: test.sh, demo.sh and a developer may start it together
exec 9>.cache/build.lock
flock 9
start=$SECONDS

missing=$("$PY" wheelhouse_build.py missing wheelhouse.lock)
if [ -n "$missing" ]; then
  echo "wheelhouse: downloading $(echo "$missing" | wc -l) locked wheel(s)"
  ../.venv/bin/pip download -q --no-deps --require-hashes -r wheelhouse.lock -d wheelhouse
fi
missing=$("$PY" wheelhouse_build.py missing smg.lock)
if [ -n "$missing" ]; then
  echo "wheelhouse: downloading $(echo "$missing" | wc -l) locked smg wheel(s)"
  ../.venv/bin/pip download -q --no-deps --require-hashes -r smg.lock -d wheelhouse
fi
missing=$("$PY" wheelhouse_build.py missing fixtures/wrong-abi.lock)
if [ -n "$missing" ]; then
  ../.venv/bin/pip download -q --no-deps --require-hashes --only-binary :all: --python-version 3.12 \
    --implementation cp --abi cp312 --platform manylinux2014_x86_64 \
    -r fixtures/wrong-abi.lock -d wheelhouse
fi

# SOURCE_DATE_EPOCH: the same sources give the same bytes, so the pin only moves on a change
sim=$(mktemp -d .cache/sim.XXXXXX)
SOURCE_DATE_EPOCH=1796000000 ../.venv/bin/pip wheel -q --no-deps --wheel-dir "$sim" ./sglang_sim
rm -rf sglang_sim/build sglang_sim/*.egg-info
for wheel in "$sim"/*.whl; do
  name=${wheel##*/}
  cmp -s "$wheel" "wheelhouse/$name" || mv "$wheel" "wheelhouse/$name"
  for old in wheelhouse/sglang_sim-*.whl; do [ "$old" = "wheelhouse/$name" ] || rm -f "$old"; done
done
rm -rf "$sim"

for step in prebuilt fork abi-fixture verify pins; do
  "$PY" wheelhouse_build.py "$step"
done
echo "wheelhouse: $(du -sh wheelhouse | cut -f1) in lab/wheelhouse, $((SECONDS - start)) s"
