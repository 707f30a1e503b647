"""The verdict-latency benchmark's report, from its raw records (bench/results/verdict_latency.json).

    python3 bench/verdict_summary.py bench/results/verdict_latency.json > bench/results/verdict_latency.md

Per case and arm: median (min-max) seconds from the fault's journal timestamp to the controller's
clock after the arm's task returned, the verdicts and whether they were right. Per case and
baseline arm: how many times sooner the module's verdict came (ratio of the medians), with a 95 %
percentile bootstrap interval (the runs of each arm resampled with replacement, 10000 times, a
fixed seed, so the same records always give the same report). The headline: the field notes'
crash against the strongest loop, the loop arm whose median there is the lowest.
Standard library only; bench/verdict_latency.yml runs it, and tests/unit/test_bench_figures.py
checks the report and the docs' figures against it.
"""

import json
import random
import sys

# arm, its column heading; the order of the report's columns
ARMS = (
    ("module", "module"),
    ("until_5s", "until loop, 5 s"),
    ("until_1s", "until loop, 1 s"),
    ("host_loop", "host loop, 1 s"),
    ("uri", "uri loop"),
    ("wait_for", "wait_for"),
)
# the loops an operator who knows systemd writes: the headline is against the fastest of them
LOOP_ARMS = ("until_5s", "until_1s", "host_loop")
HEADLINE_CASE = "field_notes_crash_33s"
RESAMPLES = 10000
LEVEL = 0.95
SEED = 20261205


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    if n == 0:
        raise ValueError("no runs")
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


def seconds(recs):
    return [float(r["fault_to_verdict_s"]) for r in recs]


def all_right(recs):
    return bool(recs) and all(r["right"] in (True, "True") for r in recs)


def bootstrap_ratio(base, module, resamples=RESAMPLES, level=LEVEL, seed=SEED):
    """(ratio of medians, low, high): base's median over module's, and the percentile interval of
    that ratio over resamples of each arm's runs drawn with replacement."""
    rng = random.Random(seed)
    ratios = []
    for dummy in range(resamples):
        b = median([rng.choice(base) for dummy in base])
        m = median([rng.choice(module) for dummy in module])
        ratios.append(b / m)
    ratios.sort()
    tail = (1 - level) / 2
    low = ratios[int(tail * resamples)]
    high = ratios[min(resamples - 1, int((1 - tail) * resamples))]
    return median(base) / median(module), low, high


def ratio_text(value):
    return ("%.0fx" if value >= 10 else "%.1fx") % value


def cell(recs):
    """One arm on one case: median (min-max) s, the verdicts seen, right or not, runs."""
    if not recs:
        return "not run"
    xs = seconds(recs)
    verdicts = []
    for r in recs:
        v = r["verdict"] + ((" " + r["cause"]) if r["cause"] else "")
        if v not in verdicts:
            verdicts.append(v)
    right = sum(1 for r in recs if r["right"] in (True, "True"))
    judged = "right" if right == len(recs) else ("**WRONG**" if right == 0 else "right %d/%d" % (right, len(recs)))
    return "%.2f s (%.2f-%.2f), %s, %s, %d runs" % (median(xs), min(xs), max(xs), " / ".join(verdicts), judged, len(recs))


def ratio_cell(base, module):
    """base's median over the module's (above 1: the module's verdict came sooner), with its interval."""
    if not base:
        return "-"
    if not all_right(base):
        return "n/a (wrong verdict)"
    if not all_right(module) or median(seconds(module)) <= 0:
        return "n/a"
    value, low, high = bootstrap_ratio(seconds(base), seconds(module))
    return "%s (%s-%s)" % (ratio_text(value), ratio_text(low), ratio_text(high))


def runs(records, case, method):
    return sorted((r for r in records if r["case"] == case and r["method"] == method), key=lambda r: int(r["run"]))


def headline(records):
    """The module against the strongest loop on the field notes' crash: (arm, module s, loop s, ratio, low, high)."""
    module = runs(records, HEADLINE_CASE, "module")
    candidates = [(median(seconds(runs(records, HEADLINE_CASE, arm))), arm) for arm in LOOP_ARMS if all_right(runs(records, HEADLINE_CASE, arm))]
    loop_s, arm = min(candidates)
    value, low, high = bootstrap_ratio(seconds(runs(records, HEADLINE_CASE, arm)), seconds(module))
    return arm, median(seconds(module)), loop_s, value, low, high


def report(data):
    plan, records = data["plan"], data["records"]
    heading = dict(ARMS)
    out = ["# Verdict latency: sglang_health against the loops an operator writes", ""]
    out += [
        "Lab host ct129 reached over SSH as `deploy` with become and pipelining (podman container with systemd;",
        "SGLang **simulated** by `sglang_sim`), run finished %s UTC, took %.0f s." % (plan["finished_at"], float(plan["wall_s"])),
        "Seconds from the fault's journal timestamp to the controller's clock right after the arm's task",
        "returned (one clock for every arm): median (min-max) over the runs. Quiet phase: one worker per arm,",
        "the arms side by side, %s runs of every case that ends within seconds, one job after another." % plan["runs"],
        "Long phase, after it: the jobs that wait out a deadline, %s runs each, side by side, started %s s apart."
        % (plan["long_runs"], plan["long_stagger_s"]),
        "\"not run\": that arm waits out its deadline there too. Deadline %s s for every arm. Loading the weights" % plan["deadline"],
        "takes up to %s s more at random (SGLANG_SIM_LOAD_JITTER_S), so a crash lands anywhere in a loop's cycle." % plan["load_jitter_s"],
        "The field notes' crash runs at simulator time scale %s (dies %.1f-%.1f s after start; the field notes: 33 s)."
        % ((plan["field_notes_scale"],) + _spread([float(r["start_to_fault_s"]) for r in records if r["case"] == HEADLINE_CASE])),
        "",
        "| case (fault event) | expected | " + " | ".join(h for dummy, h in ARMS) + " |",
        "|---|---|" + "---|" * len(ARMS),
    ]
    for case in plan["cases"]:
        cells = [cell(runs(records, case["name"], arm)) for arm, dummy in ARMS]
        out.append("| %s (%s) | %s | %s |" % (case["name"], case["event_label"], case["expect"], " | ".join(cells)))
    out += [
        "",
        "Each loop's median over the module's (above 1x the module's verdict came sooner, below 1x later; in brackets the 95 % bootstrap interval):",
        "",
        "| case | " + " | ".join(heading[arm] + " / module" for arm, dummy in ARMS[1:]) + " |",
        "|---|" + "---|" * (len(ARMS) - 1),
    ]
    for case in plan["cases"]:
        module = runs(records, case["name"], "module")
        out.append("| %s | %s |" % (case["name"], " | ".join(ratio_cell(runs(records, case["name"], arm), module) for arm, dummy in ARMS[1:])))
    arm, module_s, loop_s, value, low, high = headline(records)
    out += [
        "",
        "Headline: on %s the strongest loop (%s) took %.2f s and the module %.2f s (medians); the loop's time over the"
        " module's is %s, 95 %% bootstrap interval %s-%s."
        % (HEADLINE_CASE, heading[arm], loop_s, module_s, ratio_text(value), ratio_text(low), ratio_text(high)),
        "",
        "Runs, fault to verdict (s):",
    ]
    for case in plan["cases"]:
        for arm, dummy in ARMS:
            recs = runs(records, case["name"], arm)
            if recs:
                out.append("- %s, %s: %s" % (case["name"], arm, ", ".join("%.2f" % x for x in seconds(recs))))
    return "\n".join(out) + "\n"


def _spread(xs):
    return (min(xs), max(xs)) if xs else (0.0, 0.0)


def main(argv):
    with open(argv[1], encoding="utf-8") as handle:
        sys.stdout.write(report(json.load(handle)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
