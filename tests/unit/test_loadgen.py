# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""bench/loadgen.py's numbers: percentiles that count failures, the seeded token draw, summaries."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import gzip
import importlib.util
import json
import os

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
SPEC = importlib.util.spec_from_file_location('loadgen', os.path.join(ROOT, 'bench', 'loadgen.py'))
loadgen = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(loadgen)


def record(i, phase, latency, ok=True, error=None):
    return {'i': i, 'phase': phase, 'sent': float(i), 'latency_s': latency, 'status': 200 if ok else 500, 'ok': ok, 'error': error}


def test_percentile_nearest_rank():
    assert loadgen.percentile([0.5, 0.1, 0.3, 0.2, 0.4], 50) == 0.3
    assert loadgen.percentile([float(v) for v in range(1, 101)], 99) == 99.0
    assert loadgen.percentile([], 99) is None


def test_percentile_ranks_a_failure_above_every_answer():
    # 99 answers and 1 failure: p99 is still an answer; 2 failures in 100: p99 lands on a failure
    answers = [0.5] * 98 + [0.9]
    assert loadgen.percentile(answers + [None], 99) == 0.9
    assert loadgen.percentile(answers[:-1] + [None, None], 99) is None


def test_summary_counts_failures_in_p99_all_but_not_in_p99():
    failed = [record(97 + i, 'during', 0.01, ok=False, error='HTTP 500') for i in range(3)]
    records = [record(i, 'during', 0.5) for i in range(97)] + failed
    during = loadgen.summarize(records)['phases']['during']
    assert (during['sent'], during['ok'], during['failed']) == (100, 97, 3)
    assert during['p99_s'] == 0.5
    assert during['p99_all_s'] is None
    assert during['errors'] == {'HTTP 500': 3}


def test_token_draw_is_seeded_and_bounded():
    first = loadgen.token_counts(500, 10, 90, seed=7)
    assert first == loadgen.token_counts(500, 10, 90, seed=7)
    assert first != loadgen.token_counts(500, 10, 90, seed=8)
    assert min(first) == 10 and max(first) == 90


@pytest.mark.parametrize('text, expected', [('8', (8, 8)), ('10-90', (10, 90))])
def test_token_range(text, expected):
    assert loadgen.token_range(text) == expected


@pytest.mark.parametrize('text', ['0', '90-10', 'many'])
def test_token_range_refuses(text):
    with pytest.raises(Exception):
        loadgen.token_range(text)


def test_summarize_reads_a_kept_gzip_record(tmp_path, capsys):
    path = tmp_path / 'requests.jsonl.gz'
    with gzip.open(str(path), 'wt', encoding='utf-8') as handle:
        for i in range(10):
            handle.write(json.dumps(record(i, 'before', 0.1 * (i + 1))) + '\n')
    assert loadgen.main(['--summarize', str(path), '--json']) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary['total']['p50_s'] == 0.5
    assert summary['total']['p99_all_s'] == 1.0
