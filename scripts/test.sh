#!/usr/bin/env bash
# Runs every test of the collection: unit tests (plugins and lab simulator), ansible-lint
# (production profile), ansible-test sanity, changelog lint, build (tarball contents, docs, versions), and the
# molecule scenarios on lab hosts. Each stage runs even when an earlier one failed; the last
# line counts them. Usage: scripts/test.sh [stage ...]   (stages: see STAGES below)
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
ROOT=$PWD
scripts/setup.sh || exit 1
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

# The lab's wheelhouse (lab/build-wheelhouse.sh: about 2 minutes on a fresh clone, seconds when up to
# date, one build at a time under its lock), built by the first stage that needs it: the checks
# without lab hosts run meanwhile in the other lane.
wheelhouse() { lab/build-wheelhouse.sh >/dev/null ; }
stage_units() { copy_collection && (cd "$COLLECTION" && ansible-test units --python 3.11 --local --requirements-mode skip 2>&1 | grep -v '^WARNING: Skipping'; exit "${PIPESTATUS[0]}") ; }
# two workers, one file each: the module fixtures (a venv from the wheelhouse) are built once
stage_lab_units() { wheelhouse && python -m pytest -q -p no:cacheprovider -n 2 --dist loadfile lab/tests ; }
# the alert rules as the lab's Prometheus (Debian's 2.42) reads them, and their tests (tests/prometheus/)
stage_lint() {
  ansible-lint --profile production && ruff check --quiet . && ruff format --check --quiet . &&
  .deps/bin/promtool check rules roles/prometheus_scrape/files/ddtree_sglang_alerts.yml >/dev/null &&
  .deps/bin/promtool test rules tests/prometheus/ddtree_sglang_alerts_test.yml
}
# behaviour playbooks that need no lab host: they run the role's own task files on the controller
stage_playbooks() { local p; for p in tests/playbooks/*.yml; do ansible-playbook -i localhost, "$p" || return 1; done ; }
stage_sanity() { copy_collection && (cd "$COLLECTION" && ansible-test sanity --python 3.11) ; }
stage_changelog() { antsibull-changelog lint && python tests/changelog_fragments.py ; }
stage_docs() { scripts/role_docs.sh --check && python tests/docs_links.py && python scripts/house_picture.py --check ; }
# The collection as users get it, built once: every path in the tarball against
# tests/collection_contents.txt, the docs of every module, filter and role as ansible-doc reads them
# from the installed copy, version numbers (galaxy.yml, version_added, changelog) in agreement, and
# the shipped playbooks parsing as collection playbooks (ddtree.sglang.deploy, ...).
stage_build() {
  local out; out=$(mktemp -d)
  local installed="$out/installed"
  ansible-galaxy collection build --force --output-path "$out" >/dev/null &&
  ANSIBLE_COLLECTIONS_PATH="$installed" ansible-galaxy collection install --no-deps --force -p "$installed" "$out"/ddtree-sglang-*.tar.gz >/dev/null &&
  # run from $out: the checkout's ansible.cfg would put ./roles and .deps/tree (this working tree) first
  (cd "$out" && ANSIBLE_COLLECTIONS_PATH="$installed" ansible-doc --metadata-dump ddtree.sglang >"$out/docs.json") &&
  python tests/collection_contents.py "$out"/ddtree-sglang-*.tar.gz "$out/docs.json" &&
  (cd "$out" && ANSIBLE_COLLECTIONS_PATH="$installed:$ROOT/.deps" ansible-playbook --syntax-check -i localhost, \
    ddtree.sglang.deploy ddtree.sglang.upgrade ddtree.sglang.rollback ddtree.sglang.router ddtree.sglang.monitoring 2>&1 | grep -v 'Could not match supplied host pattern'; exit "${PIPESTATUS[0]}")
  local rc=$?; rm -rf "$out"; return $rc
}
stage_molecule_default() { wheelhouse && molecule test -s default ; }
stage_molecule_hardening() { wheelhouse && molecule test -s hardening ; }
stage_molecule_installed() { wheelhouse && molecule test -s installed ; }
stage_molecule_ladder() { wheelhouse && molecule test -s ladder ; }
stage_molecule_bad_input() { wheelhouse && molecule test -s bad_input ; }
stage_molecule_fleet() { wheelhouse && molecule test -s fleet ; }
stage_molecule_safety_net() { wheelhouse && molecule test -s safety_net ; }
stage_molecule_zero_downtime() { wheelhouse && molecule test -s zero_downtime ; }
# The same scenario in two stages, as make test runs it: its hosts deployed and the router set up
# (nothing timed), then verify, whose load phase compares latencies, and the destroy. (The router's
# untimed checks stay in verify: run as a side effect beside molecule_default they took 180 s of
# lane 2 and saved the last stage 5 s, measured on 8ded836.)
stage_molecule_zero_downtime_hosts() { wheelhouse && molecule destroy -s zero_downtime && molecule converge -s zero_downtime ; }
stage_molecule_zero_downtime_load() { molecule verify -s zero_downtime; local rc=$?; molecule destroy -s zero_downtime; return $rc ; }

# ladder runs by name only (scripts/test.sh molecule_ladder): with it the list outgrows CI's 90 minutes.
# A+B runs A and B at the same time, A,B one after the other inside such a lane; each lane prints
# its stages' output when they end. The machine (2 CPUs) is busy while full releases are built and the
# bad-input matrix runs, and idle while safety timers and verdicts wait: so three lanes, the waiting kind
# beside the building kind. Lane 1: default, which builds the wheelhouse first (the other lanes' lab stages
# wait for it under its lock). Lane 2: the checks without lab hosts (while the wheelhouse builds),
# lab_units, bad_input, fleet. Lane 3: safety_net (about nine minutes of timer windows), zero_downtime's
# hosts, hardening, installed (the collection as users install and run it): the three lanes end within minutes of
# each other (docs/dev/testing.md, stage times).
# None of them times anything the load on the others could upset (default's and
# safety_net's bounds, the verdict within 5 s of the fatal line and the timer's windows, have seconds
# to spare); zero_downtime's load phase compares latencies: it runs alone.
STAGES=("molecule_default+units,lint,sanity,changelog,docs,build,playbooks,lab_units,molecule_bad_input,molecule_fleet+molecule_safety_net,molecule_zero_downtime_hosts,molecule_hardening,molecule_installed"
        molecule_zero_downtime_load)
full_run=true
[ $# -gt 0 ] && STAGES=("$@") && full_run=false
passed=0; failed=0; failed_names=(); stage_times=()
run_start=$SECONDS
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
record() {  # record STAGE RC SECONDS
  local result=ok
  if [ "$2" -eq 0 ]; then passed=$((passed + 1)); else failed=$((failed + 1)); failed_names+=("$1"); result=FAILED; fi
  stage_times+=("$1 $2 $3")
  printf '======== %s: %s in %ss\n' "$1" "$result" "$3"
}
for stage in "${STAGES[@]}"; do
  IFS=+ read -r -a lanes <<<"$stage"
  if [ "$stage" = "${stage//[+,]/}" ]; then
    printf '\n======== %s\n' "$stage"
    start=$SECONDS
    "stage_$stage" 2>&1 | tee "$logs/$stage.log"; record "$stage" "${PIPESTATUS[0]}" $((SECONDS - start))
    continue
  fi
  lane_pids=()
  for lane in "${lanes[@]}"; do
    (
      IFS=, read -r -a parts <<<"$lane"
      for part in "${parts[@]}"; do
        start=$SECONDS; "stage_$part" >"$logs/$part.log" 2>&1; echo "$? $((SECONDS - start))" >"$logs/$part.rc"
      done
    ) &
    lane_pids+=($!)
  done
  for index in "${!lanes[@]}"; do
    wait "${lane_pids[$index]}"
    IFS=, read -r -a parts <<<"${lanes[$index]}"
    for part in "${parts[@]}"; do
      printf '\n======== %s (lane %s of %s)\n' "$part" "$((index + 1))" "$stage"
      cat "$logs/$part.log"
      rc=1; seconds=0
      [ -s "$logs/$part.rc" ] && read -r rc seconds <"$logs/$part.rc"
      record "$part" "$rc" "$seconds"
    done
  done
done
# the stage times, printed, and for a full run kept in bench/results/make_test.json (the last full run's record;
# docs/dev/testing.md reads its figures there, not from a table of its own)
printf '%s\n' "${stage_times[@]}" | python scripts/stage_times.py "$((SECONDS - run_start))" \
  "$( $full_run && echo bench/results/make_test.json )" "${STAGES[*]}"
# CI shows only the end of this output: each failed stage's last error lines and the disk's free space go last
if [ $failed -gt 0 ]; then
  for name in "${failed_names[@]}"; do
    python scripts/failure_digest.py "$name" "$logs/$name.log"
  done
  # where the lab writes: the checkout (wheelhouse, venvs), temporary files, podman's storage (the lab hosts' releases)
  for dir in "$ROOT" /tmp /var/tmp /var/lib/containers; do
    [ -d "$dir" ] && printf 'disk free under %s: %s\n' "$dir" "$(df -h --output=avail "$dir" | tail -1 | tr -d ' ')"
  done
  echo "failed stages: ${failed_names[*]}"
fi
echo "stages: $passed passed, $failed failed"
[ $failed -eq 0 ]
