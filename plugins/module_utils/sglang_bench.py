# -*- coding: utf-8 -*-
# Copyright: (c) 2026, ddtree.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The throughput gate's load: a fixed, seeded workload sent to SGLang's native /generate, measured
the way SGLang's own benchmark client measures it, and compared with the last known good unit's.

Measured as sglang.benchmark.serving (SGLang 0.5.x, backend "sglang") does: every request streams
(``"stream": true``, ``ignore_eos``) and each event names the cumulative ``completion_tokens``;
TTFT is the time to the first event with text; the gap to each later event is split evenly over
the tokens it brought (its "adjusted ITL"); output throughput is all output tokens over the run's
wall time, request throughput completed requests over it; percentiles interpolate linearly (as
numpy.percentile). All requests are queued at once and at most ``concurrency`` are in flight
(bench_serving's ``--request-rate inf --max-concurrency N``). One request, not counted, warms up.

Why not run bench_serving itself: it imports transformers and needs the model's tokenizer files to
build its prompts, which a deploy must not assume on the host (docs/gate.md). The prompts here are
words, about one token each; the output length is forced by ``ignore_eos``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import json
import random
import threading
import time

WORDS = ('alpha', 'river', 'stone', 'cloud', 'green', 'paper', 'light', 'north', 'table', 'glass', 'music', 'field',
         'bread', 'chair', 'storm', 'plant', 'metal', 'sugar', 'ocean', 'train', 'voice', 'frame', 'honey', 'tiger')
# the workload's keys and their defaults: docs/gate.md, the role's argument_specs
WORKLOAD_DEFAULTS = {'seed': 1, 'requests': 24, 'concurrency': 4, 'input_tokens': 128, 'output_tokens': 128,
                     'range_ratio': 0.5, 'warmup_requests': 1}
# the numbers a result keeps, and the ones compared with a limit
METRICS = ('completed', 'failed', 'duration_s', 'output_tokens', 'output_throughput', 'request_throughput',
           'ttft_p50_ms', 'ttft_p99_ms', 'itl_p50_ms', 'itl_p99_ms', 'e2e_p50_ms', 'e2e_p99_ms')


def workload_spec(spec):
    """The workload with its defaults, as ints/floats; ValueError naming the key for a bad value."""
    spec = dict(spec or {})
    unknown = sorted(set(spec) - set(WORKLOAD_DEFAULTS))
    if unknown:
        raise ValueError('unknown workload keys %s; allowed: %s' % (', '.join(unknown), ', '.join(sorted(WORKLOAD_DEFAULTS))))
    out = {}
    for key, default in WORKLOAD_DEFAULTS.items():
        value = spec.get(key, default)
        kind = float if key == 'range_ratio' else int
        try:
            value = kind(value)
        except (TypeError, ValueError):
            raise ValueError('workload %s is %r; allowed: a number' % (key, value))
        low = 0 if key in ('seed', 'warmup_requests', 'range_ratio') else 1
        if value < low or (key == 'range_ratio' and value > 1):
            raise ValueError('workload %s is %r; allowed: %s' % (key, value, 'from 0 to 1' if key == 'range_ratio' else 'at least %d' % low))
        out[key] = value
    return out


def fingerprint(spec):
    """Names a workload: results are compared only between runs of the same one."""
    return hashlib.sha256(json.dumps(workload_spec(spec), sort_keys=True).encode('utf-8')).hexdigest()[:16]


def worst_case_s(spec, request_timeout):
    """The longest the gate's run can take: its warmup, then its requests, each ``concurrency`` at a time, every
    request using its whole ``request_timeout`` (the safety timer's margin counts it)."""
    spec = workload_spec(spec)
    waves = -(-spec['warmup_requests'] // spec['concurrency']) + -(-spec['requests'] // spec['concurrency'])
    return waves * float(request_timeout)


def requests_of(spec):
    """The seeded requests: (prompt, output tokens) pairs, the same for the same spec, lengths drawn
    uniformly from [length * range_ratio, length] as bench_serving's random dataset draws them."""
    spec = workload_spec(spec)
    rng = random.Random(spec['seed'])
    items = []
    for _index in range(spec['warmup_requests'] + spec['requests']):
        lengths = []
        for key in ('input_tokens', 'output_tokens'):
            high = spec[key]
            lengths.append(rng.randint(max(1, int(high * spec['range_ratio'])), high))
        items.append((' '.join(rng.choice(WORDS) for _word in range(lengths[0])), lengths[1]))
    return items[:spec['warmup_requests']], items[spec['warmup_requests']:]


def percentile(values, q):
    """numpy.percentile's default (linear) on a list; None for none."""
    values = sorted(values)
    if not values:
        return None
    rank = (len(values) - 1) * q / 100.0
    low = int(rank)
    high = min(low + 1, len(values) - 1)
    return values[low] + (values[high] - values[low]) * (rank - low)


def parse_event(line):
    """One line of SGLang's stream: None (blank or not data), 'done', or the event's dict."""
    line = line.strip()
    if not line:
        return None
    if line.startswith(b'data:'):
        line = line[5:].strip()
    if line == b'[DONE]':
        return 'done'
    try:
        event = json.loads(line.decode('utf-8'))
    except ValueError:
        return None
    return event if isinstance(event, dict) else None


def measure_stream(lines, started, clock):
    """A request's record from its stream's lines (an iterable of bytes, read as they arrive)."""
    record = {'ok': False, 'ttft_s': None, 'latency_s': None, 'output_tokens': 0, 'itl_s': [], 'error': ''}
    last_at, last_tokens = started, 0
    for line in lines:
        event = parse_event(line)
        if event is None:
            continue
        if event == 'done':
            break
        if event.get('error'):
            record['error'] = str(event.get('error'))[:200]
            break
        if not event.get('text'):
            continue
        now = clock()
        tokens = int((event.get('meta_info') or {}).get('completion_tokens') or 0)
        if record['ttft_s'] is None:
            record['ttft_s'] = now - started
        elif tokens > last_tokens:
            record['itl_s'].extend([(now - last_at) / (tokens - last_tokens)] * (tokens - last_tokens))
        else:
            continue
        last_at, last_tokens = now, tokens
    record['latency_s'] = clock() - started
    record['output_tokens'] = last_tokens
    record['ok'] = not record['error'] and record['ttft_s'] is not None
    if not record['ok'] and not record['error']:
        record['error'] = 'the stream ended without a token'
    return record


def run(send, items, concurrency, clock=time.monotonic):
    """Sends items through ``send(prompt, output_tokens) -> record``, at most ``concurrency`` at once;
    returns (records in item order, wall seconds from the first send to the last answer)."""
    records = [None] * len(items)
    lock = threading.Lock()
    pending = list(range(len(items)))

    def worker():
        while True:
            with lock:
                if not pending:
                    return
                index = pending.pop(0)
            try:
                records[index] = send(*items[index])
            except Exception as e:  # pylint: disable=broad-except
                records[index] = {'ok': False, 'error': '%s: %s' % (type(e).__name__, e), 'output_tokens': 0, 'itl_s': []}

    started = clock()
    threads = [threading.Thread(target=worker) for _slot in range(max(1, min(concurrency, len(items))))]
    for thread in threads:
        thread.daemon = True
        thread.start()
    for thread in threads:
        thread.join()
    return records, clock() - started


def _ms(value):
    return None if value is None else round(value * 1000.0, 1)


def summarize(records, duration_s):
    """bench_serving's headline numbers from the records of one run."""
    done = [r for r in records if r and r.get('ok')]
    output_tokens = sum(r['output_tokens'] for r in done)
    itl = [gap for r in done for gap in r['itl_s']]
    ttft = [r['ttft_s'] for r in done]
    e2e = [r['latency_s'] for r in done]
    duration_s = max(duration_s, 1e-9)
    errors = []
    for r in records:
        if r and not r.get('ok') and r.get('error') not in errors:
            errors.append(r.get('error'))
    return {
        'completed': len(done), 'failed': len(records) - len(done), 'duration_s': round(duration_s, 3),
        'output_tokens': output_tokens, 'output_throughput': round(output_tokens / duration_s, 2),
        'request_throughput': round(len(done) / duration_s, 3),
        'ttft_p50_ms': _ms(percentile(ttft, 50)), 'ttft_p99_ms': _ms(percentile(ttft, 99)),
        'itl_p50_ms': _ms(percentile(itl, 50)), 'itl_p99_ms': _ms(percentile(itl, 99)),
        'e2e_p50_ms': _ms(percentile(e2e, 50)), 'e2e_p99_ms': _ms(percentile(e2e, 99)),
        'errors': errors[:3],
    }


def baseline_of(results, unit_sha256, workload_fingerprint):
    """The newest result that promoted the unit ``unit_sha256`` with this workload, or None."""
    for result in reversed(results or []):
        if (isinstance(result, dict) and result.get('unit_sha256') == unit_sha256
                and result.get('workload') == workload_fingerprint and result.get('outcome') in ('passed', 'baseline')):
            return result
    return None


def decide(measured, baseline, min_ratio, max_p99_ttft_ms=0, max_p99_itl_ms=0):
    """(outcome, ratio, reasons). outcome: 'passed', 'refused', or 'baseline' (nothing to compare
    with: the unit is promoted and its numbers become the baseline). A failed request or a p99 over
    its limit refuses even without a baseline."""
    reasons = []
    if measured['failed']:
        errors = '; '.join(str(e) for e in measured.get('errors') or [])
        reasons.append('%d of %d requests failed (%s)' % (measured['failed'], measured['failed'] + measured['completed'], errors))
    for key, limit in (('ttft_p99_ms', max_p99_ttft_ms), ('itl_p99_ms', max_p99_itl_ms)):
        if limit and measured.get(key) is not None and measured[key] > limit:
            reasons.append('%s %.1f ms is over its limit %.1f ms' % (key.replace('_ms', ''), measured[key], float(limit)))
    ratio = None
    if baseline:
        ratio = round(measured['output_throughput'] / max(baseline['output_throughput'], 1e-9), 3)
        if ratio < min_ratio:
            reasons.append('output throughput %.1f tok/s is %.3f x the last known good unit\'s %.1f tok/s, below min_ratio %s'
                           % (measured['output_throughput'], ratio, baseline['output_throughput'], min_ratio))
    if reasons:
        return 'refused', ratio, reasons
    return ('passed' if baseline else 'baseline'), ratio, reasons


def append_result(results, result, keep=50):
    """The results list with ``result`` last, at most ``keep`` kept (the oldest go first)."""
    results = [r for r in (results or []) if isinstance(r, dict)] + [result]
    return results[-keep:]
