# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The verdict's classifier against real logs of healthy SGLang servers: it must fail none of them.

fixtures/real_healthy/*.json hold start-up and serving logs of servers that went on to serve, verbatim from
public threads, documentation notebooks and repository log files (each record: url, the SGLang version where
stated, "served": the line of the log or its thread that shows it served, and "lines", stopped before any
later crash). They hold what a classifier must not call fatal: ignored import errors, deprecations and other
Python warnings, NCCL and Gloo notices, KV retractions, torch's and SGLang's WARNING lines. Each log is judged as the verdict judges a journal while the
process runs and the API answers: only a line that decides alone (sglang_signatures' rule) would fail it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import glob
import json
import os
import re

import pytest

from ansible_collections.ddtree.sglang.plugins.module_utils import sglang_signatures as sig

CORPUS = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'fixtures', 'real_healthy')
KEYS = set(('id', 'url', 'sglang_version', 'served', 'note', 'lines'))
READY = 'The server is fired up and ready to roll!'


def _records():
    records = []
    for path in sorted(glob.glob(os.path.join(CORPUS, '*.json'))):
        with open(path) as handle:
            records.extend(json.load(handle))
    return records


RECORDS = _records()


def test_the_corpus_is_there():
    assert len(RECORDS) >= 40
    assert len(set(sig.thread_of(r['url']) for r in RECORDS)) >= 25
    ids = [r['id'] for r in RECORDS]
    assert len(ids) == len(set(ids))


@pytest.mark.parametrize('record', RECORDS, ids=[r['id'] for r in RECORDS])
def test_record_shape(record):
    assert set(record) == KEYS
    assert record['url'].startswith('https://github.com/')
    assert record['served'].strip() and record['note'].strip()
    assert len(record['lines']) >= 8 and all(isinstance(line, str) for line in record['lines'])


@pytest.mark.parametrize('record', RECORDS, ids=[r['id'] for r in RECORDS])
def test_no_healthy_log_fails(record):
    decided = sig.deciding(record['lines'])
    assert decided is None, 'line %d decides %s: %s' % (decided['index'], decided['id'], decided['line'])


def test_the_corpus_holds_what_must_not_fail():
    lines = [line for r in RECORDS for line in r['lines']]
    notable = [n for r in RECORDS for n in sig.notable_lines(r['lines'])]
    # warning-level lines of each kind the rule names, and classed ones among them
    assert sum(1 for line in lines if 'Ignore import error when loading' in line) >= 3
    assert sum(1 for line in lines if re.search(r'KV cache pool is full\. Retract requests|Decode out of memory happened', line)) >= 3
    assert sum(1 for n in notable if n['class'] == 'kv_cache_oom_serving') >= 3
    assert sum(1 for r in RECORDS if any(READY in line for line in r['lines'])) >= 30
