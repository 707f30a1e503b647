"""Bounded load through the router (smg), for the lab only (stdlib).

Sends a fixed number of /generate requests at a fixed rate (open loop: one thread per request,
so a slow answer does not slow the sender), then stops by itself. Each request asks for a
number of new tokens drawn from --max-new-tokens LOW-HIGH with a fixed seed, so generation
times vary the same way in every run (the lab's simulator takes 10 ms a token). Every request is recorded
with the phase it was sent in, its outcome and latency; the phase comes from a control file
that another process rewrites (before, during, after; `stop` ends sending early). While it runs
it samples the router's GET /workers and records how many workers are listed healthy.

Keys come from the environment, never from the command line: DDTREE_SMG_API_KEY is sent with every request
and DDTREE_SMG_CONTROL_PLANE_API_KEY (else the former) with the reads of /workers, as role sglang_router's
root-only EnvironmentFile names them (the lab starts this generator with that file).

Traffic goes only to the lab: the router's address must be loopback or inside --lab-net (podman's
default network). Output: one JSON line per request (--out), a JSON summary (--summary) and a
table on stdout: sent, ok, failed, p50/p99 per phase, and the fewest healthy workers seen.
p50/p99 are of the answered requests; p99_all counts a failed or dropped request as slower than
every answer, so more than 1 % failed leaves no p99_all (None) and a latency check on it fails.

  python3 loadgen.py --url http://127.0.0.1:30080 --requests 1200 --rate 8 \\
      --phase-file /run/zd/phase --out /run/zd/requests.jsonl --summary /run/zd/summary.json
  python3 loadgen.py --summarize /run/zd/requests.jsonl     # the table again, from a record
  python3 loadgen.py --summarize requests.jsonl.gz --json   # the summary's JSON, from a kept record
"""

import argparse
import gzip
import ipaddress
import json
import os
import random
import socket
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

LAB_NET = "10.88.0.0/16"
# the router's keys, from the environment (never an argument: ps shows arguments)
API_KEY = os.environ.get("DDTREE_SMG_API_KEY", "")
CONTROL_PLANE_KEY = os.environ.get("DDTREE_SMG_CONTROL_PLANE_API_KEY", "") or API_KEY


def bearer(key):
    return {"Authorization": f"Bearer {key}"} if key else {}


PHASES = ("before", "during", "after")
OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def lab_only(url, nets):
    """The router's host resolved: refuses anything but loopback and the lab networks."""
    host = urllib.parse.urlsplit(url).hostname
    if not host:
        raise SystemExit(f"loadgen: no host in {url!r}")
    addresses = {info[4][0] for info in socket.getaddrinfo(host, None)}
    for address in addresses:
        ip = ipaddress.ip_address(address)
        if not (ip.is_loopback or any(ip in net for net in nets)):
            raise SystemExit(
                f"loadgen: {host} is {address}, outside loopback and the lab networks ({', '.join(map(str, nets))}): this generator only loads lab hosts"
            )
    return host


def percentile(values, pct):
    """Nearest rank: the smallest value with at least pct % of the values at or below it.
    None stands for a failed request: it ranks above every number, and a rank landing on one gives None."""
    if not values:
        return None
    ordered = sorted(values, key=lambda v: (v is None, v or 0))
    rank = max(1, -(-len(ordered) * pct // 100))
    return ordered[int(rank) - 1]


def token_counts(requests, low, high, seed=0):
    """The new tokens each request asks for: the same sequence for the same seed and range."""
    draw = random.Random(seed)
    return [draw.randint(low, high) for index in range(requests)]


def token_range(text):
    """LOW-HIGH (or one number) for --max-new-tokens."""
    low, sep, high = text.partition("-")
    low, high = int(low), int(high if sep else low)
    if not 1 <= low <= high:
        raise argparse.ArgumentTypeError(f"--max-new-tokens {text!r}: want LOW-HIGH with 1 <= LOW <= HIGH")
    return low, high


class Recorder:
    """Request records and capacity samples, written as they come."""

    def __init__(self, out_path):
        self.lock = threading.Lock()
        self.records = []
        self.capacity = []
        self.out = open(out_path, "w", encoding="utf-8") if out_path else None  # pylint: disable=consider-using-with

    def add(self, record):
        with self.lock:
            self.records.append(record)
            if self.out:
                self.out.write(json.dumps(record) + "\n")
                self.out.flush()

    def close(self):
        if self.out:
            self.out.close()


def read_phase(path, last):
    if not path:
        return last
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read().strip() or last
    except OSError:
        return last


def one_request(args, index, phase, recorder, max_new_tokens):
    body = json.dumps({"text": f"zero downtime request {index}", "sampling_params": {"max_new_tokens": max_new_tokens}}).encode()
    req = urllib.request.Request(args.url.rstrip("/") + "/generate", data=body, headers={"Content-Type": "application/json", **bearer(API_KEY)})
    sent = time.time()
    start = time.monotonic()
    status, error = None, None
    try:
        with OPENER.open(req, timeout=args.timeout) as resp:
            status = resp.status
            answer = json.loads(resp.read().decode("utf-8"))
            if not isinstance(answer, dict) or not str(answer.get("text", "")).strip():
                error = "empty generation"
    except urllib.error.HTTPError as exc:
        status, error = exc.code, f"HTTP {exc.code}"
    except (urllib.error.URLError, OSError, ValueError) as exc:
        error = f"{type(exc).__name__}: {getattr(exc, 'reason', None) or exc}"
    recorder.add(
        {
            "i": index,
            "phase": phase,
            "sent": round(sent, 4),
            "latency_s": round(time.monotonic() - start, 4),
            "tokens": max_new_tokens,
            "status": status,
            "ok": status == 200 and error is None,
            "error": error,
        }
    )


def sample_capacity(args, recorder, phase_ref, stop):
    """Healthy workers the router lists, every --sample-s, tagged with the phase."""
    while not stop.is_set():
        healthy, listed, error = None, None, None
        try:
            request = urllib.request.Request(args.url.rstrip("/") + "/workers", headers=bearer(CONTROL_PLANE_KEY))
            with OPENER.open(request, timeout=5) as resp:
                workers = json.loads(resp.read().decode("utf-8")).get("workers", [])
            listed = len(workers)
            healthy = sum(1 for w in workers if w.get("is_healthy"))
        except (urllib.error.URLError, OSError, ValueError, AttributeError) as exc:
            error = str(exc)
        with recorder.lock:
            recorder.capacity.append({"t": round(time.time(), 3), "phase": phase_ref[0], "healthy": healthy, "listed": listed, "error": error})
        stop.wait(args.sample_s)


def summarize(records, capacity=None):
    phases = [p for p in PHASES if any(r["phase"] == p for r in records)]
    phases += sorted({r["phase"] for r in records} - set(phases))
    summary = {"phases": {}, "total": None}
    for name, subset in [(p, [r for r in records if r["phase"] == p]) for p in phases] + [("total", records)]:
        ok = [r["latency_s"] for r in subset if r["ok"]]
        errors = {}
        for record in subset:
            if not record["ok"]:
                errors[record["error"] or f"HTTP {record['status']}"] = errors.get(record["error"] or f"HTTP {record['status']}", 0) + 1
        every = ok + [None] * (len(subset) - len(ok))
        entry = {
            "sent": len(subset),
            "ok": len(ok),
            "failed": len(subset) - len(ok),
            "p50_s": percentile(ok, 50),
            "p99_s": percentile(ok, 99),
            "max_s": max(ok) if ok else None,
            "p99_all_s": percentile(every, 99),
            "errors": errors,
        }
        if capacity is not None:
            seen = [c["healthy"] for c in capacity if (name == "total" or c["phase"] == name) and c["healthy"] is not None]
            entry["min_healthy_workers"] = min(seen) if seen else None
            entry["capacity_samples"] = len(seen)
        if name == "total":
            summary["total"] = entry
        else:
            summary["phases"][name] = entry
    return summary


def table(summary):
    def ms(value):
        return "-" if value is None else f"{value * 1000:.0f} ms"

    lines = [f"{'phase':<8} {'sent':>6} {'ok':>6} {'failed':>6} {'p50':>9} {'p99':>9} {'max':>9} {'p99 all':>9} {'min healthy':>12}"]
    for name, entry in list(summary["phases"].items()) + [("total", summary["total"])]:
        lines.append(
            f"{name:<8} {entry['sent']:>6} {entry['ok']:>6} {entry['failed']:>6} {ms(entry['p50_s']):>9} "
            f"{ms(entry['p99_s']):>9} {ms(entry['max_s']):>9} {ms(entry['p99_all_s']):>9} "
            f"{str(entry.get('min_healthy_workers', '-')):>12}"
        )
        for error, count in sorted(entry["errors"].items()):
            if name != "total":
                lines.append(f"         {count} x {error}")
    return "\n".join(lines)


def run(args):
    nets = [ipaddress.ip_network(n) for n in args.lab_net]
    lab_only(args.url, nets)
    recorder = Recorder(args.out)
    phase_ref = [read_phase(args.phase_file, "before")]
    stop = threading.Event()
    sampler = threading.Thread(target=sample_capacity, args=(args, recorder, phase_ref, stop), daemon=True)
    sampler.start()
    threads = []
    tokens = token_counts(args.requests, *args.max_new_tokens, seed=args.seed)
    started = time.monotonic()
    stopped_early = False
    for index in range(args.requests):
        # fixed schedule: request i leaves at start + i / rate, however long earlier ones take
        delay = started + index / args.rate - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        phase_ref[0] = read_phase(args.phase_file, phase_ref[0])
        if phase_ref[0] == "stop":
            stopped_early = True
            break
        thread = threading.Thread(target=one_request, args=(args, index, phase_ref[0], recorder, tokens[index]), daemon=True)
        thread.start()
        threads.append(thread)
    deadline = time.monotonic() + args.timeout + 5
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    stop.set()
    sampler.join(10)
    with recorder.lock:
        records = list(recorder.records)
        capacity = list(recorder.capacity)
    # a request still open after its timeout is one the client never got an answer to
    answered = {r["i"] for r in records}
    for index in range(len(threads)):
        if index not in answered:
            records.append({"i": index, "phase": "unknown", "sent": None, "latency_s": None, "status": None, "ok": False, "error": "no answer (dropped)"})
    recorder.close()
    summary = summarize(records, capacity)
    summary.update(
        {
            "url": args.url,
            "rate": args.rate,
            "requested": args.requests,
            "sent": len(threads),
            "stopped_early": stopped_early,
            "wall_s": round(time.monotonic() - started, 1),
            "capacity": capacity if args.keep_samples else None,
        }
    )
    if args.summary:
        with open(args.summary + ".part", "w", encoding="utf-8") as handle:
            json.dump(summary, handle, indent=1)
        os.replace(args.summary + ".part", args.summary)
    print(table(summary))
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--url", default="http://127.0.0.1:30080", help="the router's base URL (loopback or lab network)")
    parser.add_argument("--requests", type=int, default=600, help="requests to send at most")
    parser.add_argument("--rate", type=float, default=8.0, help="requests per second")
    parser.add_argument("--max-new-tokens", type=token_range, default=(8, 8), metavar="LOW-HIGH", help="new tokens per request, drawn uniformly (default 8)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the token draw")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds one request may take")
    parser.add_argument("--phase-file", help="file holding the current phase (before, during, after; stop ends early)")
    parser.add_argument("--sample-s", type=float, default=0.5, help="seconds between two reads of the router's workers")
    parser.add_argument("--lab-net", action="append", default=None, help=f"lab network besides loopback (default {LAB_NET})")
    parser.add_argument("--out", help="JSON lines, one per request")
    parser.add_argument("--summary", help="JSON summary")
    parser.add_argument("--keep-samples", action="store_true", help="put every capacity sample into the summary")
    parser.add_argument("--summarize", metavar="JSONL", help="print the table of a recorded run (.jsonl or .jsonl.gz) and exit")
    parser.add_argument("--json", action="store_true", help="with --summarize: print the summary as JSON")
    args = parser.parse_args(argv)
    args.lab_net = args.lab_net or [LAB_NET]
    if args.summarize:
        opener = gzip.open if args.summarize.endswith(".gz") else open
        with opener(args.summarize, "rt", encoding="utf-8") as handle:
            summary = summarize([json.loads(line) for line in handle if line.strip()])
        print(json.dumps(summary, indent=1) if args.json else table(summary))
        return 0
    if args.requests < 1 or args.rate <= 0:
        parser.error("--requests must be at least 1 and --rate above 0")
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
