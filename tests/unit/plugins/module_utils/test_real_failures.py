# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The signature table against real failure logs.

fixtures/real_failures/*.json hold failure logs that users pasted into public issue trackers,
verbatim (paths, models and numbers are theirs): each record names the cause the verdict should
give ("class"; ``unclassified`` for a real failure no class of the catalogue covers, whose verdict must quote
the exception rather than name a cause). A record whose stored excerpt lost its decisive line says so in "cut_off"; it is
listed in KNOWN_MISSES with what diagnose() names today, so that any change shows. Recall per
class is over all records, a cut-off that is missed counting as a miss; docs/verdict-and-failures.md
shows the same figures (scripts/failure_catalogue.py writes them).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import collections
import glob
import json
import os
import re

import pytest

from ansible_collections.ddtree.sglang.plugins.module_utils import sglang_signatures as sig

CORPUS = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'fixtures', 'real_failures')
KEYS = set(('id', 'url', 'sglang_version', 'class', 'cause', 'fix', 'cut_off', 'lines'))
OVERALL_FLOOR = 0.90
CLASS_FLOOR = 0.75

# Every cut-off record: (what diagnose() names today, why). Where the decisive line survived the
# cut the record is named right anyway; the rest are the misses.
KNOWN_MISSES = {
    'sglang-12496-kv-pool-create-buffers-oom': (
        None,
        'the torch.OutOfMemoryError line under init_memory_pool / _create_buffers is cut: frames alone name no error',
    ),
    'sglang-5285-capture-oom-deepep-2node': (
        None,
        'the "Capture cuda graph failed: CUDA out of memory" line is cut, and with it the Traceback line: frames only',
    ),
    'sglang-pr1498-eagle-triton-graph-state-alloc': (None, 'the excerpt ends at "torch.O", before the exception line: frames only'),
    'sglang-4689-unsupported-decilm': (
        'child_process_died',
        'the excerpt ends inside the scheduler traceback, before the "Model architectures [...] are '
        'not supported" ValueError: only "Scheduler hit an exception" names the scheduler\'s death',
    ),
    'sglang-12789-tokenizer-chat-template-dict': (None, 'the excerpt ends inside a quoted traceback (no Traceback line), before the TypeError'),
    'sglang-14107-tokenizer-chat-template-dict-hermes': (None, 'only the reporter\'s summary and one log line survive; the traceback is in an attachment'),
    'deepseek-vl2-90-dmesg-oom-killer': ('host_oom_killed', 'named right: only the progress bar above the kernel\'s "Out of memory: Killed process" is cut'),
    'scalellm-38-entrypoint-killed-137': (None, 'docker\'s "exited with code 137" is the only sign of the kill, and no journal of a systemd unit holds it'),
    'vllm-586-ray-actor-dead-oom-killer': (None, 'Ray\'s actor-death message is the only sign of the kill, and no journal of a systemd unit holds it'),
    'sglang-4094-warmup-503-squid': ('warmup_failed', 'named right: the "Initialization failed. warmup error" line survives the cut AssertionError'),
    'sglang-9155-warmup-proxy-403': ('warmup_failed', 'named right: urllib3\'s line of the warmup request answered 403 by the proxy survives'),
    'sglang-19408-config-keyerror-glm-moe-dsa': (
        'model_config_error',
        'named right: transformers\' CONFIG_MAPPING[model_type] frame above the KeyError survives',
    ),
    'glm5-22-config-keyerror-sglang-image': ('model_config_error', 'named right: the same CONFIG_MAPPING[model_type] frame survives'),
}

# Complete records the verdict names otherwise by design ({id: {names, why}}): their decisive line may not name a
# cause (a warning-level line, sglang_signatures' rule), or names no failure phase. scripts/failure_catalogue.py shows
# the same reasons.
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), 'fixtures', 'real_failures_ruled_out.json')) as _handle:
    RULED_OUT = json.load(_handle)

# Classes whose floor no signature can reach with this corpus: their cut-off misses alone keep them
# below CLASS_FLOOR even with every complete record named right. test_recall checks that this is
# still so (re-cut or added records make the entry fail, so it is removed) and that every complete
# record of them is named right.
FLOOR_UNREACHABLE = {
    'cuda_oom_graph_capture': 'two of three records lost their OOM line to the cut',
    'cuda_oom_sizing_pools': 'one record lost its OOM line to the cut, and torch_memory_saver\'s is ruled out',
    'host_oom_killed': 'four of eight records show the kill only in docker\'s, Ray\'s or Slurm\'s words or a script\'s own guard, which no unit journal holds',
    'startup_check_refused': 'four of five records are ruled out: two are lone exception lines, without traceback or death line, '
    'one is ModelRunner\'s backend choice and one vLLM\'s own config check, which SGLang\'s frames do not name',
    'tokenizer_load_error': 'two of ten records lost their traceback to the cut, and one is a lone exception line',
}


def _records():
    records = []
    for path in sorted(glob.glob(os.path.join(CORPUS, '*.json'))):
        with open(path) as handle:
            for record in json.load(handle):
                records.append((os.path.basename(path), record))
    return records


RECORDS = _records()
COMPLETE = [r for _f, r in RECORDS if not r['cut_off'] and r['id'] not in RULED_OUT]
CUT_OFF = [r for _f, r in RECORDS if r['cut_off']]


def test_the_corpus_is_there():
    assert len(RECORDS) >= 90
    ids = [r['id'] for _f, r in RECORDS]
    assert len(ids) == len(set(ids)), 'record ids are unique across the files'


@pytest.mark.parametrize('filename, record', RECORDS, ids=[r['id'] for _f, r in RECORDS])
def test_record_shape(filename, record):
    assert set(record) == KEYS, filename
    assert record['url'].startswith(('https://', 'http://'))  # a page's own address
    if record['class'] != sig.UNCLASSIFIED:  # a real failure no class of the catalogue covers: naming one would be wrong
        assert sig.signature(record['class']) is not None, 'class %s is no signature id' % record['class']
        assert sig.signature(record['class'])['fatal'], 'a failure log names a fatal cause'
    for key in KEYS - set(['lines']):
        assert isinstance(record[key], str)
    assert record['lines'] and all(isinstance(line, str) for line in record['lines'])


@pytest.mark.parametrize('record', COMPLETE, ids=[r['id'] for r in COMPLETE])
def test_complete_record_is_named_right(record):
    cause, diagnosis, advice, fatal_lines = sig.diagnose(record['lines'])
    assert cause == record['class']
    assert fatal_lines
    # a placeholder ({name}) left in; a quoted exception may hold braces of its own (a set of weight names)
    assert not re.search(r'\{[a-z_]+\}', diagnosis + advice), 'template left unfilled'


@pytest.mark.parametrize('record', [r for _f, r in RECORDS if r['id'] in RULED_OUT], ids=[r['id'] for _f, r in RECORDS if r['id'] in RULED_OUT])
def test_ruled_out_record_gets_its_known_outcome(record):
    assert not record['cut_off']
    assert sig.diagnose(record['lines'])[0] == RULED_OUT[record['id']]['names']


@pytest.mark.parametrize('record', CUT_OFF, ids=[r['id'] for r in CUT_OFF])
def test_cut_off_record_gets_its_known_outcome(record):
    assert record['id'] in KNOWN_MISSES, 'a cut-off record is listed with its outcome and why'
    assert sig.diagnose(record['lines'])[0] == KNOWN_MISSES[record['id']][0]


def test_known_misses_are_cut_off_records():
    assert set(KNOWN_MISSES) == set(r['id'] for r in CUT_OFF)


def test_unclassified_never_quotes_a_caret_line():
    for _f, record in RECORDS:
        cause, diagnosis, _advice, _lines = sig.diagnose(record['lines'])
        if cause == sig.UNCLASSIFIED:
            assert not diagnosis.rstrip().endswith(('^', '~')), record['id']


def _recall():
    total = collections.Counter()
    named = collections.Counter()
    for _f, record in RECORDS:
        total[record['class']] += 1
        if sig.diagnose(record['lines'])[0] == record['class']:
            named[record['class']] += 1
    return total, named


def test_recall():
    total, named = _recall()
    overall = float(sum(named.values())) / sum(total.values())
    assert overall >= OVERALL_FLOOR, 'overall recall %.3f' % overall
    misses = dict((r['id'], r['class']) for r in CUT_OFF if KNOWN_MISSES[r['id']][0] != r['class'])
    misses.update((r['id'], r['class']) for _f, r in RECORDS if r['id'] in RULED_OUT)
    for cls in total:
        recall = float(named[cls]) / total[cls]
        if cls in FLOOR_UNREACHABLE:
            reachable = total[cls] - sum(1 for c in misses.values() if c == cls)
            assert reachable < CLASS_FLOOR * total[cls], '%s can reach the floor now: drop it from FLOOR_UNREACHABLE' % cls
            assert named[cls] == reachable, '%s: a complete record is missed' % cls
        else:
            assert recall >= CLASS_FLOOR, '%s: recall %.2f (%d of %d)' % (cls, recall, named[cls], total[cls])
    assert set(FLOOR_UNREACHABLE) <= set(total)


HEALTHY = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'fixtures', 'real_healthy')


def _healthy_logs():
    logs = []
    for path in sorted(glob.glob(os.path.join(HEALTHY, '*.json'))):
        with open(path) as handle:
            logs.extend((r['url'], r['lines']) for r in json.load(handle))
    return logs


def test_every_pattern_has_two_threads_or_its_source():
    threads = sig.pattern_support([(r['class'], r['url'], r['lines']) for _f, r in RECORDS], _healthy_logs())
    unsupported = []
    for entry in sig.SIGNATURES:
        for index, pattern in enumerate(entry['patterns']):
            if len(threads[(entry['id'], index)]) < 2 and not sig.pattern_source(pattern):
                unsupported.append('%s #%d %s' % (entry['id'], index, sig.compile_pattern(pattern)[0].pattern))
    assert unsupported == []


def test_support_counts_threads_of_the_class_and_every_log_for_warnings():
    line = '[2026-11-29 10:00:00] KV cache pool is full. Retract requests. #retracted_reqs: 3, #new_token_ratio: 0.5 -> 1.0'
    oom = 'torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB'
    threads = sig.pattern_support(
        [
            ('cuda_oom_serving', 'https://github.com/o/r/issues/1', ['Uvicorn running on http://x', oom]),
            ('triton_error', 'https://github.com/o/r/issues/2', ['Uvicorn running on http://x', oom]),
        ],
        [('https://github.com/o/r/blob/abc/x.log', [line]), ('https://github.com/o/r/blob/def/x.log', [line])],
    )
    assert threads[('cuda_oom_serving', 0)] == set(['https://github.com/o/r/issues/1'])
    retraction = [i for i, p in enumerate(sig.signature('kv_cache_oom_serving')['patterns']) if isinstance(p, dict) and 'fatal_with' in p]
    assert threads[('kv_cache_oom_serving', retraction[0])] == set(['https://github.com/o/r/blob/-/x.log'])


BATCHES = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'fixtures', 'real_failures_batches.json')


def test_each_batch_mined_here_has_its_score_before_tuning():
    """Every batch added by mining is scored before any signature changes for it; its record says what the
    table named then, so the figure stands beside today's (docs/verdict-and-failures.md)."""
    with open(BATCHES) as handle:
        batches = json.load(handle)
    by_file = collections.defaultdict(list)
    for filename, record in RECORDS:
        by_file[filename].append(record)
    for batch in batches:
        records = by_file[batch['file']]
        assert batch['records'] == len(records) > 0, batch['file']
        before = batch['before_tuning']
        assert before['named_right'] + len(before['missed']) == len(records), batch['file']
        assert set(before['missed']) <= set(r['id'] for r in records), batch['file']
