# shellcheck shell=bash
# Timed deploys shared by bench/deploy_noop.sh and bench/connections.sh (sourced). Callers set ROOT,
# OUT (records directory under ROOT), HOST and FAILED_ARGS; each side passes its directory, its
# collections path and its inventory arguments (one string, split on spaces; empty: ansible.cfg's).

# run SIDE DIR COLLECTIONS INVENTORY_ARGS N [ARG...]: one deploy (the ARGs added to its command line), its
# log under $OUT, prints "seconds tasks changed"
run() {
  local side=$1 dir=$2 collections=$3 inventory=$4 n=$5 log start end
  shift 5
  log=$ROOT/$OUT/$side-$n.log
  start=$(date +%s.%N)
  # shellcheck disable=SC2086
  (cd "$dir" && ANSIBLE_COLLECTIONS_PATH=$collections ANSIBLE_FORCE_COLOR=0 \
     ansible-playbook $inventory deploy.yml -l "$HOST" "$@") >"$log" 2>&1 || { echo "deploy of $side failed: $log" >&2; exit 1; }
  end=$(date +%s.%N)
  printf '%.1f %s %s\n' "$(echo "$end - $start" | bc)" "$(grep -c '^TASK \[' "$log")" \
    "$(sed -n "s/^$HOST *: .*changed=\([0-9]*\).*/\1/p" "$log")"
}

# failed SIDE DIR COLLECTIONS INVENTORY_ARGS N: the failing deploy; prints "seconds crash_s" (crash_s: the
# verdict's "after N s" of the failed unit)
failed() {
  local side=$1 dir=$2 collections=$3 inventory=$4 n=$5 log start end
  log=$ROOT/$OUT/$side-failed-$n.log
  start=$(date +%s.%N)
  # shellcheck disable=SC2086
  if (cd "$dir" && ANSIBLE_COLLECTIONS_PATH=$collections ANSIBLE_FORCE_COLOR=0 \
        ansible-playbook $inventory deploy.yml -l "$HOST" "${FAILED_ARGS[@]}") >"$log" 2>&1; then
    echo "the failing deploy of $side passed: $log" >&2; exit 1
  fi
  end=$(date +%s.%N)
  grep -q 'restored and healthy' "$log" || { echo "$side did not roll back healthy: $log" >&2; exit 1; }
  printf '%.1f %s\n' "$(echo "$end - $start" | bc)" "$(grep -o 'in phase [a-z_]* after [0-9.]* s' "$log" | head -1 | awk '{print $5}')"
}

median() { tr ' ' '\n' | grep . | sort -g | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
nums() { echo "$1" | tr ' ' '\n' | grep . | paste -sd, -; }
