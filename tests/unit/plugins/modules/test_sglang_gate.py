# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The gate module against a real streaming http.server on 127.0.0.1 (SGLang's native /generate
stream format: data: {text, meta_info.completion_tokens} events, then data: [DONE])."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from ansible.module_utils.testing import patch_module_args

from ansible_collections.ddtree.sglang.tests.unit.plugins.modules.utils import ExitJson, FailJson, exits  # noqa: F401 pylint: disable=unused-import

from ansible_collections.ddtree.sglang.plugins.modules import sglang_gate as mod


def serve(state):
    """Streams max_new_tokens in steps of 4 tokens, state['step_s'] apart; 401 without state['key']."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = 'HTTP/1.1'

        def log_message(self, *args):  # pylint: disable=arguments-differ
            pass

        def do_POST(self):  # pylint: disable=invalid-name
            body = json.loads(self.rfile.read(int(self.headers['Content-Length'])))
            state.setdefault('bodies', []).append(body)
            if state.get('key') and self.headers.get('Authorization') != 'Bearer %s' % state['key']:
                self.send_response(401)
                self.send_header('Content-Length', '0')
                self.end_headers()
                return
            self.send_response(200)
            self.send_header('Content-Type', 'text/event-stream')
            self.send_header('Transfer-Encoding', 'chunked')
            self.end_headers()
            total = body['sampling_params']['max_new_tokens']
            done = 0
            while done < total:
                time.sleep(state['step_s'])
                done = min(total, done + 4)
                self._chunk(b'data: ' + json.dumps({'text': 'w ' * done, 'meta_info': {'completion_tokens': done}}).encode() + b'\n\n')
            self._chunk(b'data: [DONE]\n\n')
            self._chunk(b'')

        def _chunk(self, data):
            self.wfile.write(b'%x\r\n%s\r\n' % (len(data), data))

    server = ThreadingHTTPServer(('127.0.0.1', 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, 'http://127.0.0.1:%d' % server.server_address[1]


def run(args):
    with patch_module_args(args):
        with pytest.raises((ExitJson, FailJson)) as res:
            mod.main()
    return res.type, res.value.args[0]


WORKLOAD = {'requests': 6, 'concurrency': 3, 'rounds': 2}
PROMPTS = [{'prompt': 'Alice was beginning to get very tired', 'output_tokens': 16}, {'prompt': 'of sitting by her sister on the bank', 'output_tokens': 16}]


def test_first_gate_records_a_baseline_then_a_slower_unit_is_refused_and_a_faster_one_passes(tmp_path):
    # steps long against what a loaded machine adds to each request (the suite runs beside the lab's scenarios): the
    # speeds below stay 4x apart in what is measured, not only in what the server sleeps
    state = {'step_s': 0.1, 'key': 'k-4711'}
    server, url = serve(state)
    env = tmp_path / 'sglang.env'
    env.write_text('SGLANG_API_KEY="k-4711"\n')
    lkg, unit, results = tmp_path / 'lkg.service', tmp_path / 'new.service', tmp_path / 'gate' / 'results.json'
    unit.write_text('[Service]\nExecStart=/bin/linear\n')
    args = {
        'base_url': url,
        'unit_path': str(unit),
        'baseline_unit_path': str(lkg),
        'results_path': str(results),
        'workload': WORKLOAD,
        'prompts': PROMPTS,
        'min_ratio': 1.1,
        'api_key_env_file': str(env),
        'release': 'r1',
    }
    try:
        # no last known good unit: the numbers become the baseline
        kind, res = run(args)
        assert kind is ExitJson and res['outcome'] == 'baseline' and res['passed'] and res['ratio'] is None
        # two rounds of six requests, each round's tokens/s kept for the decision
        assert res['measured']['completed'] == 12 and res['measured']['failed'] == 0 and res['measured']['output_tokens'] == 192
        assert len(res['measured']['rounds']) == 2 and res['interval'] is None
        # 4 tokens per 0.1 s step: an adjusted ITL of about 25 ms (bounded loosely, for a loaded machine)
        assert 20.0 <= res['measured']['itl_p50_ms'] <= 80.0
        assert 'k-4711' not in json.dumps(res)
        assert all(b['stream'] and b['sampling_params']['ignore_eos'] for b in state['bodies'])
        assert len(state['bodies']) == 13  # one warm-up request, not counted
        assert {b['text'] for b in state['bodies']} == {p['prompt'] for p in PROMPTS}
        linear = res['measured']['output_throughput']
        # the linear unit is now last known good; the candidate streams at a quarter of the speed
        lkg.write_text(unit.read_text())
        unit.write_text('[Service]\nExecStart=/bin/ddtree\n')
        state['step_s'] = 0.4
        kind, res = run(args)
        assert kind is FailJson and res['outcome'] == 'refused' and res['cause'] == 'gate_refused'
        assert res['baseline']['measured']['output_throughput'] == linear
        assert 0.1 < res['ratio'] < 0.6 and res['interval'][0] < res['ratio'] < res['interval'][1] < 1.1
        assert res['msg'].startswith('throughput gate refused the unit: output throughput ')
        assert '(interval %.3f-%.3f at 99 %% confidence a side), below min_ratio 1.1' % tuple(res['interval']) in res['msg']
        # the same candidate, faster than the baseline: passed
        state['step_s'] = 0.025
        kind, res = run(args)
        assert kind is ExitJson and res['outcome'] == 'passed' and res['ratio'] > 1.1
        doc = json.loads(results.read_text())
        assert [r['outcome'] for r in doc['results']] == ['baseline', 'refused', 'passed']
        assert oct(results.stat().st_mode & 0o777) == '0o600'
    finally:
        server.shutdown()


def test_a_bad_workload_or_ratio_fails_before_any_request(tmp_path):
    state = {'step_s': 0.0}
    server, url = serve(state)
    unit = tmp_path / 'u.service'
    unit.write_text('x')
    try:
        base = {'base_url': url, 'unit_path': str(unit), 'results_path': str(tmp_path / 'r.json'), 'prompts': PROMPTS}
        kind, res = run(dict(base, workload={'rate': 3}))
        assert kind is FailJson and res['msg'] == 'workload: unknown workload keys rate; allowed: concurrency, requests, rounds, seed, warmup_requests'
        kind, res = run(dict(base, min_ratio=0))
        assert kind is FailJson and res['msg'] == 'min_ratio is 0.0; allowed: a number above 0 (1.0: no slower).'
        kind, res = run(dict(base, max_p99_ttft_ms=200))
        assert kind is FailJson and res['msg'].startswith('max_p99_ttft_ms needs at least 100 requests over the rounds')
        kind, res = run(dict(base, prompts=[{'prompt': 'x', 'output_tokens': 5000}]))
        assert kind is FailJson and res['msg'] == 'prompts line 1: output_tokens is 5000; allowed: a whole number from 1 to 4096'
        assert 'bodies' not in state and not (tmp_path / 'r.json').exists()
    finally:
        server.shutdown()
