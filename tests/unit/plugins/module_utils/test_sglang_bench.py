# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The gate's workload and numbers: seeded prompts, bench_serving's TTFT/ITL/throughput, the decision."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.ddtree.sglang.plugins.module_utils import sglang_bench as bench


PROMPTS = [('one two three', 8), ('four five', 16), ('six', 4)]


def test_the_same_spec_gives_the_same_requests_and_another_seed_another_order():
    warmup, items = bench.requests_of({'seed': 7, 'requests': 5}, PROMPTS)
    again = bench.requests_of({'seed': 7, 'requests': 5}, PROMPTS)
    other = bench.requests_of({'seed': 8, 'requests': 5}, PROMPTS)
    assert (warmup, items) == again and items != other[1]
    assert len(warmup) == 1 and len(items) == 5
    # the prompts cycle in the shuffled order: the warm-up is the first, the round goes on from there
    assert sorted(set(warmup + items[:2])) == sorted(PROMPTS) and items[2:5] == warmup + items[:2]


def test_a_bad_workload_names_its_key_and_what_it_allows():
    with pytest.raises(ValueError) as err:
        bench.workload_spec({'concurency': 4})
    assert str(err.value) == 'unknown workload keys concurency; allowed: concurrency, requests, rounds, seed, warmup_requests'
    with pytest.raises(ValueError) as err:
        bench.workload_spec({'requests': 0})
    assert str(err.value) == 'workload requests is 0; allowed: a whole number from 1 to 1024'
    # a typo cannot exhaust the host: each size has a bound
    with pytest.raises(ValueError) as err:
        bench.workload_spec({'concurrency': 4000})
    assert str(err.value) == 'workload concurrency is 4000; allowed: a whole number from 1 to 256'
    with pytest.raises(ValueError) as err:
        bench.workload_spec({'rounds': 2.5})
    assert str(err.value) == 'workload rounds is 2.5; allowed: a whole number from 1 to 10'
    assert bench.workload_spec({'rounds': '5'})['rounds'] == 5
    assert bench.fingerprint({}, PROMPTS) == bench.fingerprint(dict(bench.WORKLOAD_DEFAULTS), PROMPTS)
    assert bench.fingerprint({'requests': 25}, PROMPTS) != bench.fingerprint({}, PROMPTS)
    assert bench.fingerprint({}, PROMPTS[:2]) != bench.fingerprint({}, PROMPTS)
    # the rounds are not the workload's: a baseline of 5 rounds compares with 3
    assert bench.fingerprint({'rounds': 5}, PROMPTS) == bench.fingerprint({}, PROMPTS)


def test_prompts_are_json_lines_each_with_its_output_tokens():
    text = '{"prompt": "Alice was beginning", "output_tokens": 64}\n\n{"prompt": "to get very tired", "output_tokens": 4096}\n'
    assert bench.parse_prompts(text) == [('Alice was beginning', 64), ('to get very tired', 4096)]
    for bad, message in (
        ('{"prompt": "x"}', 'prompts line 1 is not {"prompt": text, "output_tokens": n}: {"prompt": "x"}'),
        ('{"prompt": "x", "output_tokens": 1}\nnot json', 'prompts line 2 is not {"prompt": text, "output_tokens": n}: not json'),
        ('{"prompt": "x", "output_tokens": 4097}', 'prompts line 1: output_tokens is 4097; allowed: a whole number from 1 to 4096'),
        ('{"prompt": "x", "output_tokens": true}', 'prompts line 1: output_tokens is True; allowed: a whole number from 1 to 4096'),
        ('{"prompt": " ", "output_tokens": 1}', 'prompts line 1: prompt must be text of 1 to 32768 characters'),
        ('\n', 'prompts holds no prompt'),
    ):
        with pytest.raises(ValueError) as err:
            bench.parse_prompts(bad)
        assert str(err.value) == message


def test_the_safety_margin_counts_every_round():
    # 1 warm-up wave + 3 rounds of 24 requests 4 at a time (6 waves each) = 19 waves of 60 s
    assert bench.worst_case_s({}, 60) == 19 * 60.0
    assert bench.worst_case_s({'rounds': 1, 'warmup_requests': 0}, 60) == 6 * 60.0


def test_percentile_interpolates_as_numpy():
    # numpy.percentile([1, 2, 3, 4], [50, 99]) == [2.5, 3.97]
    assert bench.percentile([4, 1, 3, 2], 50) == pytest.approx(2.5)
    assert bench.percentile([4, 1, 3, 2], 99) == pytest.approx(3.97)
    assert bench.percentile([], 50) is None


def stream_of(*events):
    lines = []
    for event in events:
        lines.append(b'data: ' + (event if isinstance(event, bytes) else __import__('json').dumps(event).encode()) + b'\n')
        lines.append(b'\n')
    return lines


def test_ttft_and_itl_as_bench_serving_splits_a_chunk_over_its_tokens():
    ticks = iter([0.25, 0.45, 0.85, 1.0])  # the clock at each event with text, then at the end
    lines = stream_of(
        {'text': 'a b', 'meta_info': {'completion_tokens': 2}},
        {'text': 'a b c d', 'meta_info': {'completion_tokens': 4}},
        {'text': 'a b c d e f g h', 'meta_info': {'completion_tokens': 8}},
        b'[DONE]',
    )
    record = bench.measure_stream(lines, 0.0, lambda: next(ticks))
    assert record['ok'] and record['ttft_s'] == 0.25 and record['output_tokens'] == 8 and record['latency_s'] == 1.0
    assert record['itl_s'] == pytest.approx([0.1, 0.1, 0.1, 0.1, 0.1, 0.1])


def test_a_stream_without_tokens_or_with_an_error_is_a_failed_request():
    record = bench.measure_stream(stream_of(b'[DONE]'), 0.0, lambda: 1.0)
    assert not record['ok'] and record['error'] == 'the stream ended without a token'
    record = bench.measure_stream(stream_of({'error': {'message': 'boom'}}), 0.0, lambda: 1.0)
    assert not record['ok'] and record['error'] == "{'message': 'boom'}"


def test_run_keeps_order_and_at_most_concurrency_in_flight():
    import threading
    import time

    lock, state = threading.Lock(), {'now': 0, 'most': 0}

    def send(prompt, out):
        with lock:
            state['now'] += 1
            state['most'] = max(state['most'], state['now'])
        time.sleep(0.02)
        with lock:
            state['now'] -= 1
        if prompt == 'bad':
            raise RuntimeError('reset')
        return {'ok': True, 'output_tokens': out, 'itl_s': [], 'ttft_s': 0.01, 'latency_s': 0.02}

    records, duration = bench.run(send, [('p', 1), ('bad', 2), ('p', 3), ('p', 4), ('p', 5)], 2)
    assert state['most'] == 2 and duration > 0
    assert [r['output_tokens'] for r in records] == [1, 0, 3, 4, 5]
    assert records[1] == {'ok': False, 'error': 'RuntimeError: reset', 'output_tokens': 0, 'itl_s': []}
    summary = bench.summarize(records, 2.0)
    assert (summary['completed'], summary['failed'], summary['output_tokens']) == (4, 1, 13)
    assert summary['output_throughput'] == 6.5 and summary['request_throughput'] == 2.0
    assert summary['errors'] == ['RuntimeError: reset']


def numbers(throughput, failed=0, ttft=100.0, itl=10.0, rounds=None):
    return {
        'output_throughput': throughput,
        'failed': failed,
        'completed': 24 - failed,
        'errors': ['HTTP 500'] if failed else [],
        'ttft_p99_ms': ttft,
        'itl_p99_ms': itl,
        'rounds': rounds or [throughput],
    }


def test_t_quantiles_are_the_tables():
    # Student's t tables (and the normal's for no degrees of freedom)
    for p, df, value in ((0.975, 4, 2.776), (0.99, 10, 2.764), (0.95, 2, 2.920), (0.995, 1, 63.657), (0.99, None, 2.326)):
        assert bench.t_quantile(p, df) == pytest.approx(value, abs=1e-3)


def test_an_equal_unit_passes_and_a_slower_one_is_refused_with_its_interval():
    base = numbers(100.0, rounds=[100.0, 101.0, 99.0])
    # equal within the rounds' spread: passed, the interval holds 1
    outcome, interval, reasons = bench.decide(numbers(99.5, rounds=[99.0, 100.5, 99.0]), base, 1.0)
    assert outcome == 'passed' and interval[1] < 1.0 < interval[2] and reasons == []
    # 20 % slower: refused, the message gives the interval
    outcome, interval, reasons = bench.decide(numbers(80.0, rounds=[80.0, 80.5, 79.5]), base, 1.0)
    assert (outcome, interval) == ('refused', (0.8, 0.771, 0.83))
    assert reasons == [
        "output throughput 80.0 tok/s is 0.800 x the last known good unit's 100.0 tok/s (interval 0.771-0.830 at 99 % confidence a side), below min_ratio 1.0"
    ]
    # 3 % slower is within the noise of two server processes (noise_cv 0.01): not refused at min_ratio 1.0 ...
    assert bench.decide(numbers(97.0, rounds=[97.0, 97.2, 96.8]), base, 1.0)[0] == 'passed'
    # ... but refused with no process noise assumed, the rounds' spread alone
    tight = numbers(100.0, rounds=[100.0, 100.2, 99.8])
    assert bench.decide(numbers(97.0, rounds=[97.0, 97.2, 96.8]), tight, 1.0)[0] == 'passed'
    assert bench.decide(numbers(97.0, rounds=[97.0, 97.2, 96.8]), tight, 1.0, noise_cv=0.0)[0] == 'refused'
    # a speed-up asked for: 1.24 x passes min_ratio 1.1; 1.04 x, whose interval ends below 1.1, is refused
    assert bench.decide(numbers(124.0, rounds=[124.0, 123.0, 125.0]), base, 1.1)[0] == 'passed'
    assert bench.decide(numbers(104.0, rounds=[104.0, 104.5, 103.5]), base, 1.1)[0] == 'refused'
    # a baseline recorded before rounds (one number) still compares
    assert bench.decide(numbers(80.0), {'output_throughput': 100.0}, 1.0)[1][0] == 0.8
    assert bench.decide(numbers(96.0), None, 1.1) == ('baseline', None, [])


def test_decide_refuses_failed_requests_and_p99_over_limits_even_without_baseline():
    assert bench.decide(numbers(96.0, failed=2), None, 1.0) == ('refused', None, ['2 of 24 requests failed (HTTP 500)'])
    outcome, interval, reasons = bench.decide(numbers(130.0, ttft=900.0, itl=45.5), numbers(100.0), 1.0, max_p99_ttft_ms=800, max_p99_itl_ms=40)
    assert (outcome, interval[0]) == ('refused', 1.3)
    assert reasons == ['ttft_p99 900.0 ms is over its limit 800.0 ms', 'itl_p99 45.5 ms is over its limit 40.0 ms']
    assert bench.decide(numbers(130.0, ttft=900.0), numbers(100.0), 1.0)[0] == 'passed'  # 0: no limit


def test_decision_settings_name_their_option_and_a_p99_needs_its_samples():
    assert bench.decision_problems(1.0, 0.99, 0.01, 0, {}) == []
    assert bench.decision_problems(0, 1.0, 0.6, 0, {}) == [
        'min_ratio is 0; allowed: a number above 0 (1.0: no slower).',
        'confidence is 1.0; allowed: above 0.5 and below 1 (0.99: an equal unit is refused about 1 % of the time).',
        'noise_cv is 0.6; allowed: 0 to 0.5 (0.01: 1 % between two processes of the same unit).',
    ]
    assert bench.decision_problems(1.0, 0.99, 0.01, 500, {}) == [
        'max_p99_ttft_ms needs at least 100 requests over the rounds to judge a p99 (requests x rounds is 24 x 3 = 72): '
        'raise requests or rounds, or set no limit (0).'
    ]
    assert bench.decision_problems(1.0, 0.99, 0.01, 500, {'requests': 34}) == []


def test_summarize_rounds_pools_requests_and_keeps_each_rounds_throughput():
    def rec(tokens):
        return {'ok': True, 'output_tokens': tokens, 'itl_s': [0.01], 'ttft_s': 0.1, 'latency_s': 0.2}

    pooled = bench.summarize_rounds([([rec(10), rec(10)], 1.0), ([rec(10), rec(30)], 2.0)])
    assert pooled['rounds'] == [20.0, 20.0] and pooled['output_throughput'] == pytest.approx(20.0)
    assert (pooled['completed'], pooled['ttft_samples'], pooled['output_tokens']) == (4, 4, 60)


def test_the_baseline_is_the_newest_promoted_result_of_that_unit_and_workload():
    results = [
        {'unit_sha256': 'a', 'workload': 'w', 'outcome': 'baseline', 'measured': {'output_throughput': 1}},
        {'unit_sha256': 'a', 'workload': 'w', 'outcome': 'passed', 'measured': {'output_throughput': 2}},
        {'unit_sha256': 'a', 'workload': 'w', 'outcome': 'refused', 'measured': {'output_throughput': 3}},
        {'unit_sha256': 'a', 'workload': 'x', 'outcome': 'passed', 'measured': {'output_throughput': 4}},
        {'unit_sha256': 'b', 'workload': 'w', 'outcome': 'passed', 'measured': {'output_throughput': 5}},
    ]
    assert bench.baseline_of(results, 'a', 'w')['measured']['output_throughput'] == 2
    assert bench.baseline_of(results, 'c', 'w') is None
    kept = bench.append_result(results, {'unit_sha256': 'c'}, keep=3)
    assert [r['unit_sha256'] for r in kept] == ['a', 'b', 'c']


def test_refusals_never_push_the_baseline_out():
    baseline = {'unit_sha256': 'lkg', 'workload': 'w', 'outcome': 'baseline', 'measured': {'output_throughput': 100}}
    results = [baseline]
    for number in range(60):
        results = bench.append_result(results, {'unit_sha256': 'slow-%d' % number, 'outcome': 'refused'}, keep=50, pinned=baseline)
    assert len(results) == 50 and results[0] is baseline and results[-1]['unit_sha256'] == 'slow-59'
    assert bench.baseline_of(results, 'lkg', 'w') is baseline
    # without the pin (as before) the 51st refusal evicts it
    assert bench.append_result(results, {'outcome': 'refused'}, keep=50)[0] is not baseline
