# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Waiting for a drained server's requests: /v1/loads, the older /get_load, a server that is gone."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from ansible.module_utils.testing import patch_module_args

from ansible_collections.ddtree.sglang.tests.unit.plugins.modules.utils import ExitJson, FailJson, exits  # noqa: F401 pylint: disable=unused-import

from ansible_collections.ddtree.sglang.plugins.module_utils import sglang_load as mod_load
from ansible_collections.ddtree.sglang.plugins.modules import sglang_idle as mod


def serve(loads, legacy=False, key=None):
    """A server whose load endpoint answers the next value of `loads` (running, waiting) each read."""
    seen = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):  # pylint: disable=arguments-differ
            pass

        def do_GET(self):  # pylint: disable=invalid-name
            seen.append((self.path, self.headers.get('Authorization')))
            if key and self.headers.get('Authorization') != 'Bearer %s' % key:
                status, body = 401, {'error': 'Unauthorized'}
            elif self.path.startswith('/v1/loads') and not legacy:
                running, waiting = loads.pop(0) if len(loads) > 1 else loads[0]
                status, body = 200, {'loads': [{'dp_rank': 0, 'num_running_reqs': running, 'num_waiting_reqs': waiting}]}
            elif self.path == '/get_load' and legacy is True:
                running, waiting = loads.pop(0) if len(loads) > 1 else loads[0]
                status, body = 200, [{'dp_rank': 0, 'num_reqs': running, 'num_waiting_reqs': waiting, 'num_tokens': 9}]
            else:
                status, body = 404, {'detail': 'Not Found'}
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header('Content-Length', str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(('127.0.0.1', 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, 'http://127.0.0.1:%d' % server.server_address[1], seen


def run(args):
    with patch_module_args(dict({'poll_interval': 0.01, 'quiet_s': 0.05}, **args)):
        with pytest.raises((ExitJson, FailJson)) as res:
            mod.main()
    return res.type, res.value.args[0]


def test_waits_until_nothing_runs_or_waits():
    server, url, seen = serve([(3, 2), (2, 0), (1, 0), (0, 0)])
    try:
        kind, res = run({'base_url': url})
    finally:
        server.shutdown()
    assert kind is ExitJson and res['idle'] and res['answering'] and res['in_flight'] == 0
    assert res['peak_in_flight'] == 5 and res['endpoint'] == '/v1/loads' and res['samples'] >= 4
    assert seen[0][0] == '/v1/loads?include=core'


def test_older_servers_answer_get_load():
    server, url, dummy = serve([(1, 1), (0, 0)], legacy=True)
    try:
        kind, res = run({'base_url': url})
    finally:
        server.shutdown()
    assert kind is ExitJson and res['idle'] and res['endpoint'] == '/get_load' and res['peak_in_flight'] == 2


def test_busy_past_the_timeout_fails_or_reports():
    server, url, dummy = serve([(1, 0)])
    try:
        kind, res = run({'base_url': url, 'timeout': 0.2})
        assert kind is FailJson and 'still had 1 request(s) in flight after 0.2 s' in res['msg']
        kind, res = run({'base_url': url, 'timeout': 0.2, 'fail_on_timeout': False})
        assert kind is ExitJson and not res['idle'] and res['in_flight'] == 1
    finally:
        server.shutdown()


def test_a_server_that_is_gone_has_nothing_in_flight():
    kind, res = run({'base_url': 'http://127.0.0.1:9'})
    assert kind is ExitJson and res['idle'] and not res['answering'] and res['in_flight'] is None


def test_key_from_the_env_file_is_sent_and_kept_out_of_the_result(tmp_path):
    env = tmp_path / 'sglang.env'
    env.write_text('HF_TOKEN=x\nSGLANG_API_KEY="k-4711"\n')
    server, url, seen = serve([(0, 0)], key='k-4711')
    try:
        kind, res = run({'base_url': url, 'api_key_env_file': str(env)})
        assert kind is ExitJson and res['idle'] and seen[0][1] == 'Bearer k-4711'
        assert 'k-4711' not in json.dumps(res)
        # no key file yet (a host without a service): no key, no failure of its own; the 401 is no load,
        # so the wait ends failed, even with fail_on_timeout off
        kind, res = run({'base_url': url, 'api_key_env_file': str(tmp_path / 'missing.env'), 'timeout': 0.1, 'fail_on_timeout': False})
        assert kind is FailJson and not res['idle'] and not res['answering']
        assert res['msg'].startswith('%s gave no load to read for 0.1 s (last: HTTP 401 from %s/v1/loads?include=core)' % (url, url))
    finally:
        server.shutdown()


def test_neither_endpoint_is_a_failure():
    server, url, dummy = serve([(0, 0)], legacy='neither')
    try:
        kind, res = run({'base_url': url})
    finally:
        server.shutdown()
    assert kind is FailJson and 'serves neither /v1/loads nor /get_load' in res['msg']


def silent_server(answer):
    """A listener that accepts and then answers `answer` bytes (b'': never answers, an overloaded server)."""
    listener = socket.socket()
    listener.bind(('127.0.0.1', 0))
    listener.listen(8)
    stop = threading.Event()

    def loop():
        conns = []
        listener.settimeout(0.05)
        while not stop.is_set():
            try:
                conn, dummy = listener.accept()
            except socket.timeout:
                continue
            conns.append(conn)
            if answer:
                conn.recv(65536)
                conn.sendall(answer)
                conn.close()
        for conn in conns:
            conn.close()
        listener.close()

    threading.Thread(target=loop, daemon=True).start()
    return stop, 'http://127.0.0.1:%d' % listener.getsockname()[1]


@pytest.mark.parametrize(
    'answer, problem',
    [
        (b'', 'timed out'),
        (b'HTTP/1.0 200 OK\r\nContent-Length: 9\r\n\r\nnot json!', 'answered no load'),
        (b'HTTP/1.0 200 OK\r\nContent-Length: 14\r\n\r\n{"loads": "x"}', 'answered no load'),
    ],
)
def test_no_answer_or_a_bad_one_is_never_idle(monkeypatch, answer, problem):
    monkeypatch.setattr(mod_load, 'REQUEST_TIMEOUT_S', 0.2)
    stop, url = silent_server(answer)
    try:
        for fail_on_timeout in (True, False):
            kind, res = run({'base_url': url, 'timeout': 0.5, 'fail_on_timeout': fail_on_timeout})
            assert kind is FailJson and res['idle'] is False and res['answering'] is False and res['in_flight'] is None
            assert res['msg'].startswith('%s gave no load to read for 0.5 s (last: ' % url)
            assert problem in res['msg']
    finally:
        stop.set()
