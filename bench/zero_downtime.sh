#!/usr/bin/env bash
# The zero-downtime upgrade under load, drained and not (not a test; CI never runs it).
# Brings up the zero_downtime scenario's lab (sglang-router 0.3.2 with retries off on lab-router,
# four serving lab hosts), then runs molecule/zero_downtime/load_upgrade.yml twice: a full
# upgrade.yml while bench/loadgen.py sends 8 /generate requests a second through the router,
# first with drain and rejoin (release 2), then without (release 3, sglang_router_routers=[]).
# In both, lab-zd3's new version fails and is rolled back. Prints requests sent, failed, p50 and
# p99 before and during the upgrade for both runs, and writes bench/results/zero_downtime.{md,json}.
# About 12 minutes on an idle 2-core machine (733 s on 2026-11-29: lab 196 s, then two upgrades of about
# 4 minutes each under the load). Other molecule runs on the machine: wrap it in their lock,
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
molecule converge -s zero_downtime >/dev/null
echo "zero_downtime: lab up and deployed in $((SECONDS - start)) s"
ZD_OUT=$OUT ZD_ASSERT=false ZD_DRAIN=true ZD_RELEASE=2 molecule verify -s zero_downtime >"$OUT/run-drain.log" 2>&1
echo "zero_downtime: drained run done at $((SECONDS - start)) s"
ZD_OUT=$OUT ZD_ASSERT=false ZD_DRAIN=false ZD_RELEASE=3 molecule verify -s zero_downtime >"$OUT/run-no-drain.log" 2>&1
echo "zero_downtime: undrained run done at $((SECONDS - start)) s"
[ "${1:-}" = "--keep" ] || molecule destroy -s zero_downtime >/dev/null

python3 - "$OUT" "$((SECONDS - start))" <<'PY'
import datetime, json, os, sys
out, wall = sys.argv[1], sys.argv[2]
when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
load = open("/proc/loadavg").read().split()[:3]
rows, doc = [], {"command": "bench/zero_downtime.sh", "date": when, "wall_s": int(wall), "loadavg_at_end": load, "runs": {}}
for label in ("drain", "no-drain"):
    s = json.load(open(os.path.join(out, f"summary-{label}.json")))
    s.pop("capacity", None)
    reports = sorted(f for f in os.listdir(os.path.join(out, "reports")) if f.endswith(".json"))
    s["upgrade"] = None
    if len(reports) == 2:
        # the drained run's report first (release 2), then the undrained one (release 3)
        r = json.load(open(os.path.join(out, "reports", reports[0 if label == "drain" else 1])))
        s["upgrade"] = {"wall_s": r["wall_s"], "outcomes": {h["host"]: h["outcome"] for h in r["hosts"]}}
    doc["runs"][label] = s
    ph = s["phases"]
    def ms(v):
        return "-" if v is None else f"{v * 1000:.0f}"
    b, d = ph.get("before", {}), ph.get("during", {})
    errors = ", ".join(f"{n} x {e}" for e, n in sorted(s["total"]["errors"].items())) or "none"
    rows.append(f"| {label} | {s['total']['sent']} | {s['total']['failed']} | {d.get('failed', '-')} | {ms(b.get('p50_s'))} | "
                f"{ms(b.get('p99_s'))} | {ms(d.get('p50_s'))} | {ms(d.get('p99_s'))} | {ms(d.get('max_s'))} | "
                f"{s['total'].get('min_healthy_workers')} | {errors} |")
table = "\n".join(["| upgrade | sent | failed | failed during | p50 before ms | p99 before ms | p50 during ms | p99 during ms "
                   "| max during ms | fewest healthy workers | errors |", "|---|---|---|---|---|---|---|---|---|---|---|"] + rows)
print(table)
head = (f"# Zero-downtime upgrade under load (bench/zero_downtime.sh)\n\n{when}, {wall} s wall, load average at the end "
        f"{' '.join(load)}. drain: upgrade.yml with drain and rejoin (release 2); no-drain: the same upgrade with "
        "sglang_router_routers=[] (release 3), on the same hosts right after. Both: 8 /generate requests a second through "
        "sglang-router 0.3.2 (retries off), 0.5 s generations, lab-zd3's new version fails and is rolled back.\n\n")
open(os.path.join(out, "..", "zero_downtime.md"), "w").write(head + table + "\n")
json.dump(doc, open(os.path.join(out, "..", "zero_downtime.json"), "w"), indent=1)
PY
echo "zero_downtime: $((SECONDS - start)) s; records, upgrade logs and reports in $OUT"
