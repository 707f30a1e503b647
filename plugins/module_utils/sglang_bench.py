# -*- coding: utf-8 -*-
# Copyright: (c) 2026, ddtree.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The throughput gate's load: a workload of text prompts sent to SGLang's native /generate in rounds,
measured the way SGLang's own benchmark client measures it, and a decision with a noise bound
against the last known good unit's rounds.

Over 400 lines with a reason: the workload, its measurement and the decision are one contract that the
module, the role's validation and the gate filter all ask (the same bounds, the same fingerprint).

Measured as sglang.benchmark.serving (SGLang 0.5.x, backend "sglang") does: every request streams
(``"stream": true``, ``ignore_eos``) and each event names the cumulative ``completion_tokens``;
TTFT is the time to the first event with text; the gap to each later event is split evenly over
the tokens it brought (its "adjusted ITL"); output throughput is all output tokens over the run's
wall time, request throughput completed requests over it; percentiles interpolate linearly (as
numpy.percentile). All requests of a round are queued at once and at most ``concurrency`` are in
flight (bench_serving's ``--request-rate inf --max-concurrency N``). Warm-up requests go first, not counted.

The prompts are text (one JSON line each, ``{"prompt": ..., "output_tokens": n}``): the role ships
natural prose, because a speculative decoder's acceptance, and so its speed-up, depends on the text
(docs/gate.md). The decision (``decide``): each round gives one output throughput; the log ratio of
the candidate's rounds to the baseline's has a standard error from both sides' spread over rounds
and from ``noise_cv``, the spread between two server processes that rounds of one process cannot
show; the unit is refused only when the upper bound of its one-sided ``confidence`` interval is
below ``min_ratio``, so an equal unit passes and one clearly slower does not.

Why not run bench_serving itself: it imports transformers and needs the model's tokenizer files to
build its prompts, which a deploy must not assume on the host (docs/gate.md).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import json
import math
import random
import threading
import time

# the workload's keys, their defaults and the bounds a typo cannot pass (docs/gate.md, the role's argument_specs)
WORKLOAD_DEFAULTS = {'seed': 1, 'requests': 24, 'concurrency': 4, 'rounds': 3, 'warmup_requests': 1}
WORKLOAD_BOUNDS = {'seed': (0, 2**31 - 1), 'requests': (1, 1024), 'concurrency': (1, 256), 'rounds': (1, 10), 'warmup_requests': (0, 64)}
# a prompt line's bounds: its output tokens (forced with ignore_eos) and its length in characters; lines in a file
PROMPT_OUTPUT_TOKENS = (1, 4096)
PROMPT_CHARS = 32768
PROMPT_LINES = 10000
# the numbers a result keeps, and the ones compared with a limit
METRICS = (
    'completed',
    'failed',
    'duration_s',
    'output_tokens',
    'output_throughput',
    'request_throughput',
    'ttft_p50_ms',
    'ttft_p99_ms',
    'itl_p50_ms',
    'itl_p99_ms',
    'e2e_p50_ms',
    'e2e_p99_ms',
)
# a p99 is judged only over this many samples at least: fewer, and the "p99" is the slowest one or two
P99_MIN_SAMPLES = 100


def confidence_ok(value):
    """The decision's one-sided confidence: above one half and below 1."""
    return 0.5 < value < 1


def noise_cv_ok(value):
    """The spread between two server processes of one unit, as a coefficient of variation: 0 to one half."""
    return 0 <= value <= 0.5


def workload_spec(spec):
    """The workload with its defaults, as ints; ValueError naming the key and its allowed values for a bad one."""
    spec = dict(spec or {})
    unknown = sorted(set(spec) - set(WORKLOAD_DEFAULTS))
    if unknown:
        raise ValueError('unknown workload keys %s; allowed: %s' % (', '.join(unknown), ', '.join(sorted(WORKLOAD_DEFAULTS))))
    out = {}
    for key, default in WORKLOAD_DEFAULTS.items():
        value = spec.get(key, default)
        low, high = WORKLOAD_BOUNDS[key]
        if isinstance(value, bool) or not (isinstance(value, int) or (isinstance(value, str) and value.strip().isdigit())):
            raise ValueError('workload %s is %r; allowed: a whole number from %d to %d' % (key, value, low, high))
        value = int(value)
        if not low <= value <= high:
            raise ValueError('workload %s is %r; allowed: a whole number from %d to %d' % (key, value, low, high))
        out[key] = value
    return out


def prompts_of(items, source='prompts'):
    """The prompts as (prompt, output_tokens), each item a ``{"prompt": str, "output_tokens": int}`` (None for one that is
    no JSON object); ValueError naming its line (1-based) and what it must be."""
    prompts = []
    for number, item, line in items:
        if not (isinstance(item, dict) and set(item) == {'prompt', 'output_tokens'}):
            raise ValueError('%s line %d is not {"prompt": text, "output_tokens": n}: %s' % (source, number, line[:80]))
        prompt, tokens = item['prompt'], item['output_tokens']
        if not (isinstance(prompt, str) and prompt.strip() and len(prompt) <= PROMPT_CHARS):
            raise ValueError('%s line %d: prompt must be text of 1 to %d characters' % (source, number, PROMPT_CHARS))
        if isinstance(tokens, bool) or not isinstance(tokens, int) or not PROMPT_OUTPUT_TOKENS[0] <= tokens <= PROMPT_OUTPUT_TOKENS[1]:
            raise ValueError(
                '%s line %d: output_tokens is %r; allowed: a whole number from %d to %d'
                % (source, number, tokens, PROMPT_OUTPUT_TOKENS[0], PROMPT_OUTPUT_TOKENS[1])
            )
        prompts.append((prompt, tokens))
        if len(prompts) > PROMPT_LINES:
            raise ValueError('%s holds more than %d prompts' % (source, PROMPT_LINES))
    if not prompts:
        raise ValueError('%s holds no prompt' % source)
    return prompts


def _json_or_none(line):
    try:
        return json.loads(line)
    except ValueError:
        return None


def parse_prompts(text, source='prompts'):
    """The prompts of a JSON-lines text, one ``{"prompt": str, "output_tokens": int}`` a line (blank lines skipped)."""
    return prompts_of(((number, _json_or_none(line), line) for number, line in enumerate((text or '').splitlines(), 1) if line.strip()), source)


def ttft_limit_problem(max_p99_ttft_ms, spec):
    """Why a TTFT p99 limit cannot be judged with this workload (too few requests over its rounds), or ''."""
    spec = workload_spec(spec)
    samples = spec['requests'] * spec['rounds']
    if not max_p99_ttft_ms or samples >= P99_MIN_SAMPLES:
        return ''
    return (
        'max_p99_ttft_ms needs at least %d requests over the rounds to judge a p99 (requests x rounds is %d x %d = %d): '
        'raise requests or rounds, or set no limit (0).' % (P99_MIN_SAMPLES, spec['requests'], spec['rounds'], samples)
    )


def decision_problems(min_ratio, confidence, noise_cv, max_p99_ttft_ms, spec):
    """What is wrong with the decision's settings, each naming its option and the allowed values (a list)."""
    problems = []
    if not min_ratio > 0:
        problems.append('min_ratio is %s; allowed: a number above 0 (1.0: no slower).' % min_ratio)
    if not confidence_ok(confidence):
        problems.append('confidence is %s; allowed: above 0.5 and below 1 (0.99: an equal unit is refused about 1 %% of the time).' % confidence)
    if not noise_cv_ok(noise_cv):
        problems.append('noise_cv is %s; allowed: 0 to 0.5 (0.01: 1 %% between two processes of the same unit).' % noise_cv)
    ttft = ttft_limit_problem(max_p99_ttft_ms, spec)
    if ttft:
        problems.append(ttft)
    return problems


def fingerprint(spec, prompts=()):
    """Names a workload and its prompts: results are compared only between runs of the same one. The
    rounds are left out: a baseline recorded with 5 rounds compares with a candidate's 3."""
    spec = dict(workload_spec(spec))
    spec.pop('rounds')
    doc = {'workload': spec, 'prompts': [list(item) for item in prompts]}
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode('utf-8')).hexdigest()[:16]


def worst_case_s(spec, request_timeout):
    """The longest the gate's run can take: its warmup, then each round's requests, ``concurrency`` at a time,
    every request using its whole ``request_timeout`` (the safety timer's margin counts it)."""
    spec = workload_spec(spec)
    waves = -(-spec['warmup_requests'] // spec['concurrency']) + spec['rounds'] * -(-spec['requests'] // spec['concurrency'])
    return waves * float(request_timeout)


def requests_of(spec, prompts):
    """The warm-up requests and one round's: (prompt, output tokens) pairs, the prompts in an order
    shuffled by the seed (the same for the same spec), cycled when the round asks for more than there are."""
    spec = workload_spec(spec)
    order = list(range(len(prompts)))
    random.Random(spec['seed']).shuffle(order)
    items = [tuple(prompts[order[index % len(order)]]) for index in range(spec['warmup_requests'] + spec['requests'])]
    return items[: spec['warmup_requests']], items[spec['warmup_requests'] :]


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
    """bench_serving's headline numbers from the records of one round."""
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
        'completed': len(done),
        'failed': len(records) - len(done),
        'duration_s': round(duration_s, 3),
        'output_tokens': output_tokens,
        'output_throughput': round(output_tokens / duration_s, 2),
        'request_throughput': round(len(done) / duration_s, 3),
        'ttft_p50_ms': _ms(percentile(ttft, 50)),
        'ttft_p99_ms': _ms(percentile(ttft, 99)),
        'itl_p50_ms': _ms(percentile(itl, 50)),
        'itl_p99_ms': _ms(percentile(itl, 99)),
        'e2e_p50_ms': _ms(percentile(e2e, 50)),
        'e2e_p99_ms': _ms(percentile(e2e, 99)),
        'errors': errors[:3],
    }


def summarize_rounds(rounds):
    """The numbers of several rounds, each a list of records with its wall seconds: the pooled numbers
    (all requests' percentiles, all tokens over all rounds' seconds), ``rounds`` (each round's output
    tokens/s, what the decision compares) and ``ttft_samples`` (how many TTFTs the p99 is over)."""
    records = [r for round_records, _seconds in rounds for r in round_records]
    pooled = summarize(records, sum(seconds for _records, seconds in rounds))
    pooled['rounds'] = [summarize(round_records, seconds)['output_throughput'] for round_records, seconds in rounds]
    pooled['ttft_samples'] = pooled['completed']
    return pooled


def _betacf(a, b, x):
    """The continued fraction of the regularized incomplete beta function (modified Lentz)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        m2 = 2 * m
        for aa in (m * (b - m) * x / ((qam + m2) * (a + m2)), -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))):
            d = 1.0 + aa * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + aa / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-12:
            break
    return h


def _betainc(a, b, x):
    """The regularized incomplete beta function I_x(a, b)."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log(1 - x))
    if x < (a + 1) / (a + b + 2):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1 - x) / b


def t_quantile(p, df):
    """Student's t quantile for probability p (0.5 < p < 1) with df degrees of freedom (None or inf: the normal's)."""
    if df is None or df == float('inf') or df > 1e6:
        low, high = 0.0, 40.0

        def cdf(t):
            return 0.5 * (1 + math.erf(t / math.sqrt(2)))
    else:
        low, high = 0.0, 1e4

        def cdf(t):
            return 1 - 0.5 * _betainc(df / 2.0, 0.5, df / (df + t * t))

    for _step in range(200):
        mid = (low + high) / 2
        if cdf(mid) < p:
            low = mid
        else:
            high = mid
    return (low + high) / 2


def _mean_var(values):
    logs = [math.log(max(v, 1e-9)) for v in values]
    mean = sum(logs) / len(logs)
    var = sum((x - mean) ** 2 for x in logs) / (len(logs) - 1) if len(logs) > 1 else 0.0
    return mean, var, len(logs)


def ratio_interval(candidate_rounds, baseline_rounds, confidence, noise_cv):
    """(ratio, low, high): the candidate's throughput over the baseline's, as the ratio of the rounds'
    geometric means, and its interval at one-sided ``confidence`` on each side. Its standard error
    on the log scale adds both sides' spread over rounds (Welch) and 2 x noise_cv squared, the
    spread between two server processes' means that rounds of one process cannot show; the
    t quantile takes the Welch-Satterthwaite degrees of freedom of the rounds' part (the noise
    term counts as known)."""
    mean_c, var_c, n_c = _mean_var(candidate_rounds)
    mean_b, var_b, n_b = _mean_var(baseline_rounds)
    part_c, part_b = var_c / n_c, var_b / n_b
    se2 = part_c + part_b + 2 * noise_cv**2
    spread = (part_c**2 / (n_c - 1) if n_c > 1 else 0.0) + (part_b**2 / (n_b - 1) if n_b > 1 else 0.0)
    df = se2**2 / spread if spread > 0 else None
    margin = t_quantile(confidence, df) * math.sqrt(se2)
    diff = mean_c - mean_b
    return round(math.exp(diff), 3), round(math.exp(diff - margin), 3), round(math.exp(diff + margin), 3)


def baseline_of(results, unit_sha256, workload_fingerprint):
    """The newest result that promoted the unit ``unit_sha256`` with this workload, or None."""
    for result in reversed(results or []):
        if (
            isinstance(result, dict)
            and result.get('unit_sha256') == unit_sha256
            and result.get('workload') == workload_fingerprint
            and result.get('outcome') in ('passed', 'baseline')
        ):
            return result
    return None


def decide(measured, baseline, min_ratio, confidence=0.99, noise_cv=0.01, max_p99_ttft_ms=0, max_p99_itl_ms=0):
    # pylint: disable=too-many-arguments,too-many-positional-arguments
    """(outcome, interval, reasons). outcome: 'passed', 'refused', or 'baseline' (nothing to compare
    with: the unit is promoted and its numbers become the baseline); interval: (ratio, low, high) or
    None (ratio_interval). Throughput refuses only when the interval's upper end is below min_ratio.
    A failed request or a p99 over its limit refuses even without a baseline; a TTFT p99 over fewer
    than P99_MIN_SAMPLES requests is not judged (the caller's validation refuses such a limit)."""
    reasons = []
    if measured['failed']:
        errors = '; '.join(str(e) for e in measured.get('errors') or [])
        reasons.append('%d of %d requests failed (%s)' % (measured['failed'], measured['failed'] + measured['completed'], errors))
    for key, limit in (('ttft_p99_ms', max_p99_ttft_ms), ('itl_p99_ms', max_p99_itl_ms)):
        if limit and measured.get(key) is not None and measured[key] > limit:
            reasons.append('%s %.1f ms is over its limit %.1f ms' % (key.replace('_ms', ''), measured[key], float(limit)))
    interval = None
    if baseline:
        candidate_rounds = measured.get('rounds') or [measured['output_throughput']]
        baseline_rounds = baseline.get('rounds') or [baseline['output_throughput']]
        interval = ratio_interval(candidate_rounds, baseline_rounds, confidence, noise_cv)
        if interval[2] < min_ratio:
            reasons.append(
                'output throughput %.1f tok/s is %.3f x the last known good unit\'s %.1f tok/s (interval %.3f-%.3f at '
                '%s %% confidence a side), below min_ratio %s'
                % (measured['output_throughput'], interval[0], baseline['output_throughput'], interval[1], interval[2], _pct(confidence), min_ratio)
            )
    if reasons:
        return 'refused', interval, reasons
    return ('passed' if baseline else 'baseline'), interval, reasons


def _pct(confidence):
    return ('%.1f' % (confidence * 100)).rstrip('0').rstrip('.')


def append_result(results, result, keep=50, pinned=None):
    """The results list with ``result`` last, at most ``keep`` kept (the oldest go first), and ``pinned``
    (the baseline the gate compared with) kept whatever its age: refusals never push it out."""
    results = [r for r in (results or []) if isinstance(r, dict)] + [result]
    kept = results[-keep:]
    if pinned is not None and pinned in results and pinned not in kept:
        kept = [pinned] + kept[1:]
    return kept
