#!/usr/bin/env bash
# The zero-downtime upgrade under load, drained and not, with the router's retries at their default and off
# (not a test; CI never runs it). Brings up the zero_downtime scenario's lab (smg 1.13 on lab-router with its
# default retries, four serving lab hosts), then runs molecule/zero_downtime/load_upgrade.yml four times:
# a full upgrade.yml while bench/loadgen.py sends 8 /generate requests a second through the router
# (10-90 new tokens each, the same seed in every arm: 0.1-0.9 s generations),
#   drain                 with drain and rejoin (release 2), router retries at their default (5 attempts)
#   no-drain              without (release 3, sglang_router_routers=[]), router retries at their default
#   drain-retries-off     with, after the router is redeployed with --disable-retries (release 4)
#   no-drain-retries-off  without, retries off (release 5)
# In each, lab-zd3's new version fails and is rolled back. Every arm's clock is the controller's, from the same
# event: the load's phase turning to "during" just before upgrade.yml starts. Prints requests sent, failed, p50 and
# p99 before and during each upgrade (and p99 counting failures), the upgrade's wall time, writes
# bench/results/zero_downtime.{md,json} and keeps every request's record, compressed, in
# bench/results/zero_downtime-requests-<run>.jsonl.gz (bench/loadgen.py --summarize FILE --json
# recomputes the figures from one). About 25 minutes on an idle 2-core machine. Other molecule runs
# on the machine: wrap it in their lock,
#   flock /tmp/ddtree-molecule.lock bench/zero_downtime.sh
# Usage: bench/zero_downtime.sh [--keep]  (--keep: leave the hosts up)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
scripts/setup.sh >/dev/null
lab/build-wheelhouse.sh >/dev/null
# shellcheck disable=SC1091
. .venv/bin/activate
export ANSIBLE_COLLECTIONS_PATH="$ROOT/.deps/tree:$ROOT/.deps"
OUT=$ROOT/bench/results/zero_downtime
rm -rf "$OUT" && mkdir -p "$OUT"
start=$SECONDS

molecule destroy -s zero_downtime >/dev/null
molecule create -s zero_downtime >/dev/null
ZD_ROUTER_RETRIES=default molecule converge -s zero_downtime >"$OUT/converge.log" 2>&1
echo "zero_downtime: lab up and deployed in $((SECONDS - start)) s (router retries at their default)"
run() {  # label drain release
  ZD_ROUTER_RETRIES=${RETRIES} ZD_OUT=$OUT ZD_ASSERT=false ZD_LABEL=$1 ZD_DRAIN=$2 ZD_RELEASE=$3 \
    molecule verify -s zero_downtime >"$OUT/run-$1.log" 2>&1
  echo "zero_downtime: run $1 done at $((SECONDS - start)) s"
}
RETRIES=default run drain true 2
RETRIES=default run no-drain false 3
# the router again, with --disable-retries (converge also puts the serving hosts back on release 1)
ZD_ROUTER_RETRIES=off molecule converge -s zero_downtime >"$OUT/converge-retries-off.log" 2>&1
echo "zero_downtime: router redeployed with retries off at $((SECONDS - start)) s"
RETRIES=off run drain-retries-off true 4
RETRIES=off run no-drain-retries-off false 5
[ "${1:-}" = "--keep" ] || molecule destroy -s zero_downtime >/dev/null
for label in drain no-drain drain-retries-off no-drain-retries-off; do
  cp "$OUT/requests-$label.jsonl.gz" "$ROOT/bench/results/zero_downtime-requests-$label.jsonl.gz"
done

python3 - "$OUT" "$((SECONDS - start))" <<'PY'
import datetime, json, os, sys
out, wall = sys.argv[1], sys.argv[2]
when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
load = open("/proc/loadavg").read().split()[:3]
runs = [("drain", "default", "drained (upgrade.yml)", 2), ("no-drain", "default", "not drained", 3),
        ("drain-retries-off", "off", "drained, router retries off", 4), ("no-drain-retries-off", "off", "not drained, router retries off", 5)]
doc = {"command": "bench/zero_downtime.sh", "date": when, "wall_s": int(wall), "loadavg_at_end": load,
       "tokens_per_request": "10-90", "rate_per_s": 8, "runs": {}}
reports = sorted(f for f in os.listdir(os.path.join(out, "reports")) if f.endswith(".json"))
rows = []
def ms(v):
    return "none (over 1 % failed)" if v is None else f"{v * 1000:.0f}"
for n, (label, retries, title, release) in enumerate(runs):
    s = json.load(open(os.path.join(out, f"summary-{label}.json")))
    s.pop("capacity", None)
    s["router_retries"], s["release"], s["records"] = retries, release, f"bench/results/zero_downtime-requests-{label}.jsonl.gz"
    s["upgrade"] = None
    if len(reports) == len(runs):
        r = json.load(open(os.path.join(out, "reports", reports[n])))
        s["upgrade"] = {"wall_s": r["wall_s"], "outcomes": {h["host"]: h["outcome"] for h in r["hosts"]}}
    doc["runs"][label] = s
    b, d = s["phases"].get("before", {}), s["phases"].get("during", {})
    errors = ", ".join(f"{c} x {e}" for e, c in sorted(s["total"]["errors"].items())) or "none"
    upgrade_s = f"{s['upgrade']['wall_s']:.1f}" if s["upgrade"] else "-"
    rows.append(f"| {label} | {retries} | {s['total']['sent']} | {s['total']['failed']} | {d.get('failed', '-')} | "
                f"{ms(b.get('p50_s'))} / {ms(b.get('p99_s'))} | {ms(d.get('p50_s'))} / {ms(d.get('p99_s'))} | "
                f"{ms(d.get('p99_all_s'))} | {ms(d.get('max_s'))} | {s['total'].get('min_healthy_workers')} | {upgrade_s} | {errors} |")
table = "\n".join(["| run | router retries | sent | failed | failed during | p50 / p99 before ms | p50 / p99 during ms "
                   "| p99 during, failures counted, ms | max during ms | fewest healthy workers | upgrade s | errors |",
                   "|---|---|---|---|---|---|---|---|---|---|---|---|"] + rows)
print(table)
head = (f"# Zero-downtime upgrade under load (bench/zero_downtime.sh)\n\n{when}, {wall} s wall, load average at the end "
        f"{' '.join(load)}. drain: upgrade.yml with drain and rejoin (release 2); no-drain: the same upgrade with "
        "sglang_router_routers=[] (release 3); drain-retries-off and no-drain-retries-off: the same two after the router "
        "was redeployed with --disable-retries (releases 4 and 5); on the same hosts, one after another. All: 8 /generate "
        "requests a second through smg 1.13.0 (the same seed), 10-90 new tokens a request (0.1-0.9 s generations), "
        "lab-zd3's new version fails and is rolled back. p50/p99 are of the answered requests; the failures-counted p99 "
        "ranks a failed request above every answer; upgrade s: upgrade.yml's own wall time (its report). Per-request "
        "records: bench/results/zero_downtime-requests-<run>.jsonl.gz.\n\n")
open(os.path.join(out, "..", "zero_downtime.md"), "w").write(head + table + "\n")
json.dump(doc, open(os.path.join(out, "..", "zero_downtime.json"), "w"), indent=1)
PY
echo "zero_downtime: $((SECONDS - start)) s; records, upgrade logs and reports in $OUT"
