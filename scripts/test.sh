#!/usr/bin/env bash
# Runs every test of the collection: unit tests (plugins and lab simulator), ansible-lint
# (production profile), ansible-test sanity, changelog lint, build + ansible-doc, and the
# molecule scenarios on lab hosts. Each stage runs even when an earlier one failed; the last
# line counts them. Usage: scripts/test.sh [stage ...]   (stages: see STAGES below)
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
ROOT=$PWD
scripts/setup.sh || exit 1
lab/build-wheelhouse.sh >/dev/null || exit 1
# shellcheck disable=SC1091
. .venv/bin/activate
export ANSIBLE_COLLECTIONS_PATH="$ROOT/.deps/tree:$ROOT/.deps"
export PYTHONDONTWRITEBYTECODE=1
# ansible-test resolves the real path and insists on .../ansible_collections/ddtree/sglang,
# so units and sanity run on a copy of the files git knows (tracked and new, not ignored)
COLLECTION="$ROOT/.deps/copy/ansible_collections/ddtree/sglang"
copy_collection() {
  rm -rf "$ROOT/.deps/copy" && mkdir -p "$COLLECTION" &&
  git ls-files -z --cached --others --exclude-standard |
    tar --null --files-from=- --ignore-failed-read -cf - 2>/dev/null | tar -C "$COLLECTION" -xf - &&
  (cd "$COLLECTION" && git init -q && git add -A)  # ansible-test lists a collection's files through git
}

stage_units() { copy_collection && (cd "$COLLECTION" && ansible-test units --python 3.11 --local --requirements-mode skip 2>&1 | grep -v '^WARNING: Skipping'; exit "${PIPESTATUS[0]}") ; }
stage_lab_units() { python -m pytest -q -p no:cacheprovider lab/tests ; }
stage_lint() { ansible-lint --profile production ; }
stage_sanity() { copy_collection && (cd "$COLLECTION" && ansible-test sanity --python 3.11) ; }
stage_changelog() { antsibull-changelog lint ; }
stage_docs() { scripts/role_docs.sh --check ; }
stage_build_doc() {
  local out; out=$(mktemp -d)
  ansible-galaxy collection build --force --output-path "$out" >/dev/null &&
  ansible-galaxy collection install --no-deps --force -p "$out/installed" "$out"/ddtree-sglang-*.tar.gz >/dev/null &&
  for plugin in sglang_health gpu_facts ml_env_probe ml_env_release sglang_flag_check sglang_port_check sglang_router_workers sglang_idle; do
    ANSIBLE_COLLECTIONS_PATH="$out/installed" ansible-doc -t module "ddtree.sglang.$plugin" | head -3 || return 1
  done &&
  ANSIBLE_COLLECTIONS_PATH="$out/installed" ansible-doc -t filter ddtree.sglang.sglang_argv | head -3 &&
  for filter in cuda_overlay_match ml_env_requirements ml_env_release_id upgrade_plan upgrade_gate upgrade_release upgrade_report sglang_router_worker_urls sglang_router_routers sglang_router_local_url; do
    ANSIBLE_COLLECTIONS_PATH="$out/installed" ansible-doc -t filter "ddtree.sglang.$filter" | head -3 || return 1
  done &&
  ANSIBLE_COLLECTIONS_PATH="$out/installed" ansible-doc -t role ddtree.sglang.cuda_overlay | head -3 &&
  ANSIBLE_COLLECTIONS_PATH="$out/installed" ansible-doc -t role ddtree.sglang.sglang_service | head -3 &&
  ANSIBLE_COLLECTIONS_PATH="$out/installed" ansible-doc -t role ddtree.sglang.sglang_router | head -3
  local rc=$?; rm -rf "$out"; return $rc
}
stage_molecule_default() { molecule test -s default ; }
stage_molecule_rollback() { molecule test -s rollback ; }
stage_molecule_safety_timer() { molecule test -s safety_timer ; }
stage_molecule_faults() { molecule test -s faults ; }
stage_molecule_ml_env() { molecule test -s ml_env ; }
stage_molecule_hardening() { molecule test -s hardening ; }
stage_molecule_ladder() { molecule test -s ladder ; }
stage_molecule_bad_input() { molecule test -s bad_input ; }
stage_molecule_fleet() { molecule test -s fleet ; }
stage_molecule_zero_downtime() { molecule test -s zero_downtime ; }

# ladder runs by name only (scripts/test.sh molecule_ladder): with it the list outgrows CI's 90 minutes
STAGES=(units lab_units lint sanity changelog docs build_doc molecule_default molecule_rollback molecule_faults molecule_safety_timer molecule_ml_env molecule_hardening molecule_bad_input molecule_fleet molecule_zero_downtime)
[ $# -gt 0 ] && STAGES=("$@")
passed=0; failed=0; failed_names=()
for stage in "${STAGES[@]}"; do
  printf '\n======== %s\n' "$stage"
  start=$SECONDS
  if "stage_$stage"; then passed=$((passed + 1)); result=ok; else failed=$((failed + 1)); failed_names+=("$stage"); result=FAILED; fi
  printf '======== %s: %s in %ss\n' "$stage" "$result" "$((SECONDS - start))"
done
[ $failed -gt 0 ] && echo "failed stages: ${failed_names[*]}"
echo "stages: $passed passed, $failed failed"
[ $failed -eq 0 ]
