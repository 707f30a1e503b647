# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The gate's workload and numbers: seeded prompts, bench_serving's TTFT/ITL/throughput, the decision."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.ddtree.sglang.plugins.module_utils import sglang_bench as bench


def test_the_same_spec_gives_the_same_requests_and_another_seed_others():
    warmup, items = bench.requests_of({'seed': 7, 'requests': 5, 'input_tokens': 20, 'output_tokens': 10})
    again = bench.requests_of({'seed': 7, 'requests': 5, 'input_tokens': 20, 'output_tokens': 10})
    other = bench.requests_of({'seed': 8, 'requests': 5, 'input_tokens': 20, 'output_tokens': 10})
    assert (warmup, items) == again and items != other[1]
    assert len(warmup) == 1 and len(items) == 5
    # range_ratio 0.5: lengths from [10, 20] words and [5, 10] tokens
    assert all(10 <= len(prompt.split()) <= 20 and 5 <= out <= 10 for prompt, out in items)


def test_a_bad_workload_names_its_key_and_what_it_allows():
    with pytest.raises(ValueError) as err:
        bench.workload_spec({'concurency': 4})
    assert str(err.value) == ('unknown workload keys concurency; allowed: concurrency, input_tokens, output_tokens, '
                              'range_ratio, requests, seed, warmup_requests')
    with pytest.raises(ValueError) as err:
        bench.workload_spec({'requests': 0})
    assert str(err.value) == 'workload requests is 0; allowed: at least 1'
    with pytest.raises(ValueError) as err:
        bench.workload_spec({'range_ratio': 1.5})
    assert str(err.value) == 'workload range_ratio is 1.5; allowed: from 0 to 1'
    assert bench.fingerprint({}) == bench.fingerprint(dict(bench.WORKLOAD_DEFAULTS))
    assert bench.fingerprint({'requests': 25}) != bench.fingerprint({})


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
    lines = stream_of({'text': 'a b', 'meta_info': {'completion_tokens': 2}},
                      {'text': 'a b c d', 'meta_info': {'completion_tokens': 4}},
                      {'text': 'a b c d e f g h', 'meta_info': {'completion_tokens': 8}}, b'[DONE]')
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


def numbers(throughput, failed=0, ttft=100.0, itl=10.0):
    return {'output_throughput': throughput, 'failed': failed, 'completed': 24 - failed, 'errors': ['HTTP 500'] if failed else [],
            'ttft_p99_ms': ttft, 'itl_p99_ms': itl}


def test_decide_compares_throughput_with_the_baseline():
    assert bench.decide(numbers(124.0), numbers(100.0), 1.1) == ('passed', 1.24, [])
    assert bench.decide(numbers(96.0), numbers(100.0), 1.1) == (
        'refused', 0.96, ["output throughput 96.0 tok/s is 0.960 x the last known good unit's 100.0 tok/s, below min_ratio 1.1"])
    # exactly at the threshold passes
    assert bench.decide(numbers(110.0), numbers(100.0), 1.1)[0] == 'passed'
    assert bench.decide(numbers(96.0), None, 1.1) == ('baseline', None, [])


def test_decide_refuses_failed_requests_and_p99_over_limits_even_without_baseline():
    assert bench.decide(numbers(96.0, failed=2), None, 1.0) == ('refused', None, ['2 of 24 requests failed (HTTP 500)'])
    assert bench.decide(numbers(130.0, ttft=900.0, itl=45.5), numbers(100.0), 1.0, max_p99_ttft_ms=800, max_p99_itl_ms=40) == (
        'refused', 1.3, ['ttft_p99 900.0 ms is over its limit 800.0 ms', 'itl_p99 45.5 ms is over its limit 40.0 ms'])
    assert bench.decide(numbers(130.0, ttft=900.0), numbers(100.0), 1.0)[0] == 'passed'  # 0: no limit


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
