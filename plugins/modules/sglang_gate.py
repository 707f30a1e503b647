#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, ddtree.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: sglang_gate
short_description: Promote an SGLang unit only if it is not, beyond noise, slower than the last known good one
version_added: "0.3.0"
description:
  - Runs a workload of text prompts (O(prompts)) in O(workload) rounds against a healthy SGLang server
    (native C(/generate), streamed) and measures output tokens/s, requests/s, time to first token and
    inter-token latency (p50, p99) as SGLang's own benchmark client (C(sglang.benchmark.serving)) defines them.
  - Compares each round's output throughput with the rounds recorded for the last known good unit on
    this host (the unit in O(baseline_unit_path), matched by its sha256) under the same workload and
    prompts. The ratio gets an interval from both sides' spread over rounds and O(noise_cv); the unit is
    refused only when the interval's upper end (one-sided O(confidence)) is below O(min_ratio), or a p99
    is over its limit, or a request failed.
  - With no record for the last known good unit (a first gate on this host, another workload) the
    outcome is C(baseline) - the unit passes and its numbers become the baseline - unless a request
    failed or a p99 limit is exceeded.
  - Every result, passed or refused, is appended to O(results_path) (JSON, root only, the newest 50
    kept, and the baseline it compared with whatever its age); a passed or baseline result is what a
    later gate compares with, once this unit is the last known good one.
  - In check mode nothing is sent and nothing is written.
author:
  - ddtree.sglang maintainers (@ddtree)
options:
  base_url:
    description: Base URL of the SGLang HTTP server, as seen from the managed host.
    type: str
    default: http://127.0.0.1:30000
  unit_path:
    description: The unit file of the candidate (the one serving now); its sha256 names the result.
    type: path
    required: true
  baseline_unit_path:
    description:
      - The last known good unit file; its sha256 picks the baseline among the results. A missing
        file means no baseline.
    type: path
  results_path:
    description: JSON file of this host's gate results.
    type: path
    required: true
  workload:
    description:
      - C(seed) (orders the prompts), C(requests) (a round's), C(concurrency) (in flight at once), C(rounds)
        and C(warmup_requests) (sent first, not counted).
      - Keys left out take these defaults - C(seed) 1, C(requests) 24, C(concurrency) 4, C(rounds) 3, C(warmup_requests) 1.
      - Bounds - C(requests) 1-1024, C(concurrency) 1-256, C(rounds) 1-10, C(warmup_requests) 0-64.
    type: dict
    default: {}
  prompts:
    description:
      - The prompts, each C(prompt) (text, at most 32768 characters) with C(output_tokens) (1-4096, forced with
        C(ignore_eos)); a round cycles through them in an order the seed shuffles. At most 10000.
    type: list
    elements: dict
    required: true
  min_ratio:
    description: Least output throughput of the candidate, as a multiple of the baseline's (V(1.0) is "no slower").
    type: float
    default: 1.0
  confidence:
    description:
      - One-sided confidence of the ratio's interval (above 0.5, below 1). An equal unit is refused about 1 - confidence of
        the time when O(noise_cv) is the real spread between two server processes.
    type: float
    default: 0.99
  noise_cv:
    description:
      - Spread (coefficient of variation, 0-0.5) of a server process's mean output throughput between restarts of the same
        unit, which rounds of one process cannot show. Added twice (candidate and baseline) to the ratio's variance.
    type: float
    default: 0.01
  max_p99_ttft_ms:
    description:
      - Largest p99 time to first token in milliseconds; V(0) sets no limit.
      - Needs at least 100 requests over the rounds (C(requests) x C(rounds)), so that the p99 is not the slowest request.
    type: float
    default: 0
  max_p99_itl_ms:
    description: Largest p99 inter-token latency in milliseconds; V(0) sets no limit.
    type: float
    default: 0
  request_timeout:
    description: Seconds one request may take.
    type: float
    default: 300
  release:
    description: The release the unit runs, kept in the result.
    type: str
    default: ''
  api_key_env_file:
    description:
      - The unit's C(EnvironmentFile=) holding the server's key in O(api_key_env_var), read on the host
        and sent as a bearer token; never returned.
    type: path
  api_key_env_var:
    description: Variable of O(api_key_env_file) that holds the key.
    type: str
    default: SGLANG_API_KEY
  fail_on_refused:
    description: Fail the task when the outcome is C(refused) (the caller's rescue rolls back).
    type: bool
    default: true
notes:
  - The workload runs on the host, against loopback, so the numbers are the server's and not the
    controller's network.
seealso:
  - module: ddtree.sglang.sglang_health
'''

EXAMPLES = r'''
- name: Promote only what is at least 10 % faster than the last known good unit
  ddtree.sglang.sglang_gate:
    base_url: http://127.0.0.1:30000
    unit_path: /etc/systemd/system/sglang-qwen.service
    baseline_unit_path: /var/lib/ddtree-sglang/last-known-good/sglang-qwen.service
    results_path: /var/lib/ddtree-sglang/gate/sglang-qwen.service.json
    workload: {requests: 64, concurrency: 8, rounds: 3}
    prompts: "{{ lookup('ansible.builtin.file', 'prompts.jsonl') | ddtree.sglang.gate_prompts }}"
    min_ratio: 1.1
    max_p99_itl_ms: 80
'''

RETURN = r'''
outcome:
  description: C(passed), C(refused) or C(baseline) (no numbers to compare with; promoted, and recorded).
  returned: always
  type: str
  sample: refused
passed:
  description: Whether the unit may be promoted.
  returned: always
  type: bool
ratio:
  description: Candidate output throughput over the baseline's (ratio of the rounds' geometric means); null without a baseline.
  returned: always
  type: float
  sample: 0.962
interval:
  description: The ratio's interval, low and high, at O(confidence) on each side; null without a baseline.
  returned: always
  type: list
  elements: float
  sample: [0.931, 0.994]
measured:
  description: The candidate's numbers over all rounds (completed, failed, duration_s, output_tokens, output_throughput
    in tok/s, request_throughput in req/s, ttft/itl/e2e p50 and p99 in ms, the first errors), C(rounds) (each round's
    output tok/s) and C(ttft_samples).
  returned: always
  type: dict
baseline:
  description: The result the candidate was compared with (unit_sha256, measured, recorded_at), or null.
  returned: always
  type: dict
reasons:
  description: Why the unit was refused, each with its numbers.
  returned: always
  type: list
  elements: str
cause:
  description: C(gate_refused) when refused, else empty (the name a fleet report shows).
  returned: always
  type: str
diagnosis:
  description: One line with the numbers.
  returned: always
  type: str
advice:
  description: What to look at when refused.
  returned: always
  type: str
workload:
  description: The workload as run, defaults filled in, and its fingerprint (of the workload and the prompts).
  returned: always
  type: dict
gate_s:
  description: Seconds the gate took, warm-up included.
  returned: always
  type: float
'''

import hashlib
import json
import os
import time
from datetime import datetime

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.ddtree.sglang.plugins.module_utils import http_client
from ansible_collections.ddtree.sglang.plugins.module_utils import sglang_bench as bench
from ansible_collections.ddtree.sglang.plugins.module_utils.atomic_file import write_atomically
from ansible_collections.ddtree.sglang.plugins.module_utils.env_file import read_env_value


def sha256_of(path):
    if not path or not os.path.isfile(path):
        return None
    with open(path, 'rb') as handle:
        return hashlib.sha256(handle.read()).hexdigest()


def read_results(path):
    try:
        with open(path, 'rb') as handle:
            doc = json.loads(handle.read().decode('utf-8'))
    except (IOError, OSError, ValueError):
        return []
    return doc.get('results', []) if isinstance(doc, dict) else []


def write_results(path, results):
    directory = os.path.dirname(path)
    if not os.path.isdir(directory):
        os.makedirs(directory, 0o700)
    write_atomically(path, json.dumps({'results': results}, indent=2, sort_keys=True) + '\n', 0o600, '.gate-')


def sender(base_url, headers, timeout):
    url = base_url.rstrip('/') + '/generate'

    def send(prompt, output_tokens):
        body = {'text': prompt, 'stream': True, 'sampling_params': {'temperature': 0, 'max_new_tokens': output_tokens, 'ignore_eos': True}}
        started = time.monotonic()
        status, value = http_client.stream(url, body, lambda lines: bench.measure_stream(lines, started, time.monotonic), headers=headers, timeout=timeout)
        if status // 100 != 2:
            return {'ok': False, 'error': 'HTTP %s' % status, 'output_tokens': 0, 'itl_s': []}
        return value

    return send


def main():
    module = AnsibleModule(
        argument_spec=dict(
            base_url=dict(type='str', default='http://127.0.0.1:30000'),
            unit_path=dict(type='path', required=True),
            baseline_unit_path=dict(type='path'),
            results_path=dict(type='path', required=True),
            workload=dict(type='dict', default={}),
            prompts=dict(type='list', elements='dict', required=True),
            min_ratio=dict(type='float', default=1.0),
            confidence=dict(type='float', default=0.99),
            noise_cv=dict(type='float', default=0.01),
            max_p99_ttft_ms=dict(type='float', default=0),
            max_p99_itl_ms=dict(type='float', default=0),
            request_timeout=dict(type='float', default=300),
            release=dict(type='str', default=''),
            api_key_env_file=dict(type='path', no_log=False),
            api_key_env_var=dict(type='str', default='SGLANG_API_KEY', no_log=False),
            fail_on_refused=dict(type='bool', default=True),
        ),
        supports_check_mode=True,
    )
    params = module.params
    try:
        workload = bench.workload_spec(params['workload'])
    except ValueError as e:
        module.fail_json(msg='workload: %s' % e)
    try:
        prompts = bench.prompts_of((number, item, json.dumps(item)) for number, item in enumerate(params['prompts'], 1))
    except ValueError as e:
        module.fail_json(msg=str(e))
    problems = bench.decision_problems(params['min_ratio'], params['confidence'], params['noise_cv'], params['max_p99_ttft_ms'], workload)
    if problems:
        module.fail_json(msg=' '.join(problems))
    workload_id = bench.fingerprint(workload, prompts)
    result = dict(
        changed=False,
        outcome='',
        passed=False,
        ratio=None,
        interval=None,
        measured={},
        baseline=None,
        reasons=[],
        cause='',
        diagnosis='',
        advice='',
        workload=dict(workload, fingerprint=workload_id),
        gate_s=0.0,
    )
    if module.check_mode:
        result.update(outcome='skipped', passed=True, diagnosis='check mode: no load sent')
        module.exit_json(**result)

    headers = {}
    if params['api_key_env_file']:
        try:
            key = read_env_value(params['api_key_env_file'], params['api_key_env_var'])
        except (IOError, OSError) as e:
            module.fail_json(msg='cannot read api_key_env_file %s: %s' % (params['api_key_env_file'], e.strerror or e))
        if key:
            module.no_log_values.add(key)
            headers['Authorization'] = 'Bearer %s' % key

    unit_sha = sha256_of(params['unit_path'])
    if unit_sha is None:
        module.fail_json(msg='unit_path %s is not a file' % params['unit_path'], **result)
    baseline_sha = sha256_of(params['baseline_unit_path'])
    results = read_results(params['results_path'])
    baseline = bench.baseline_of(results, baseline_sha, workload_id) if baseline_sha and baseline_sha != unit_sha else None

    started = time.monotonic()
    send = sender(params['base_url'], headers, params['request_timeout'])
    warmup, items = bench.requests_of(workload, prompts)
    bench.run(send, warmup, workload['concurrency'])
    rounds = [bench.run(send, items, workload['concurrency']) for _round in range(workload['rounds'])]
    measured = bench.summarize_rounds(rounds)
    outcome, interval, reasons = bench.decide(
        measured,
        baseline['measured'] if baseline else None,
        params['min_ratio'],
        params['confidence'],
        params['noise_cv'],
        params['max_p99_ttft_ms'],
        params['max_p99_itl_ms'],
    )
    ratio = interval[0] if interval else None
    result.update(
        outcome=outcome,
        passed=outcome != 'refused',
        ratio=ratio,
        interval=list(interval[1:]) if interval else None,
        measured=measured,
        reasons=reasons,
        baseline=baseline,
        gate_s=round(time.monotonic() - started, 2),
        changed=True,
    )
    numbers = '%.1f tok/s output (rounds %s), %.2f req/s, TTFT p99 %s ms, ITL p99 %s ms over %d requests' % (
        measured['output_throughput'],
        ', '.join('%.1f' % r for r in measured['rounds']),
        measured['request_throughput'],
        measured['ttft_p99_ms'],
        measured['itl_p99_ms'],
        measured['completed'] + measured['failed'],
    )
    if baseline and interval:
        numbers += '; last known good unit %.1f tok/s (ratio %.3f, interval %.3f-%.3f, min_ratio %s)' % (
            baseline['measured']['output_throughput'],
            interval[0],
            interval[1],
            interval[2],
            params['min_ratio'],
        )
    else:
        numbers += '; no numbers of the last known good unit for this workload: these become the baseline'
    result['diagnosis'] = numbers
    if outcome == 'refused':
        result['cause'] = 'gate_refused'
        result['advice'] = (
            'The unit is healthy but slower than required: keep the last known good unit, or compare the '
            'envelopes on this hardware (speculative algorithm, budget) before promoting; '
            'lower sglang_service_gate_min_ratio only if the slowdown is accepted.'
        )
    record = {
        'unit_sha256': unit_sha,
        'baseline_unit_sha256': baseline_sha if baseline else None,
        'workload': workload_id,
        'outcome': outcome,
        'ratio': ratio,
        'interval': result['interval'],
        'confidence': params['confidence'],
        'noise_cv': params['noise_cv'],
        'measured': measured,
        'release': params['release'],
        'gate_s': result['gate_s'],
        'recorded_at': datetime.utcnow().replace(microsecond=0).isoformat() + 'Z',
    }
    write_results(params['results_path'], bench.append_result(results, record, pinned=baseline))
    if outcome == 'refused' and params['fail_on_refused']:
        module.fail_json(msg='throughput gate refused the unit: %s. %s' % ('; '.join(reasons), numbers), **result)
    result['msg'] = 'throughput gate %s: %s' % (outcome, numbers)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
