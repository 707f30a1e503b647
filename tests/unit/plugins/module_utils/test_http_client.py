# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The HTTP client against a real http.server on 127.0.0.1."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from ansible_collections.ddtree.sglang.plugins.module_utils import http_client


class Server:
    """Routes path -> (status, headers, body, delay_s); records what each request carried."""

    def __init__(self):
        self.routes = {}
        self.seen = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self):
                length = int(self.headers.get('Content-Length') or 0)
                body_in = self.rfile.read(length) if length else b''
                server.seen.append((self.command, self.path, self.headers.get('Authorization'), body_in))
                status, headers, body, delay = server.routes.get(self.path, (404, {}, b'no such path', 0))
                if delay:
                    time.sleep(delay)
                self.send_response(status)
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header('Content-Length', str(len(body)))
                self.end_headers()
                try:
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up first (the timeout test)

            do_GET = do_POST = do_DELETE = _answer

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(('127.0.0.1', 0), Handler)
        self.httpd.daemon_threads = True
        self.url = 'http://127.0.0.1:%d' % self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)


@pytest.fixture
def server():
    s = Server()
    s.thread.start()
    yield s
    s.httpd.shutdown()
    s.httpd.server_close()


def test_a_2xx_answer_comes_back_with_its_body_and_json_goes_out_as_json(server):
    server.routes['/generate'] = (200, {}, b'{"text": "ok"}', 0)
    status, body = http_client.call('POST', server.url + '/generate', {'text': 'hi'}, {'Authorization': 'Bearer k'})
    assert (status, body) == (200, b'{"text": "ok"}')
    assert server.seen == [('POST', '/generate', 'Bearer k', b'{"text": "hi"}')]


def test_a_5xx_is_an_answer_not_unreachable(server):
    server.routes['/v1/models'] = (503, {}, b'loading', 0)
    assert http_client.call('GET', server.url + '/v1/models') == (503, b'loading')


def test_connection_refused_is_unreachable():
    sock = socket.socket()
    sock.bind(('127.0.0.1', 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens there now
    with pytest.raises(http_client.Unreachable) as caught:
        http_client.call('GET', 'http://127.0.0.1:%d/health' % port)
    assert 'refused' in caught.value.reason.lower()


def test_a_redirect_is_not_followed_and_the_key_does_not_travel(server):
    target = Server()
    target.routes['/v1/models'] = (200, {}, b'{"data": []}', 0)
    target.thread.start()
    try:
        server.routes['/v1/models'] = (302, {'Location': target.url + '/v1/models'}, b'', 0)
        status, body = http_client.call('GET', server.url + '/v1/models', headers={'Authorization': 'Bearer secret-key'})
        assert (status, body) == (302, b'')
        assert target.seen == []
        assert server.seen == [('GET', '/v1/models', 'Bearer secret-key', b'')]
    finally:
        target.httpd.shutdown()
        target.httpd.server_close()


def test_a_body_over_the_cap_is_an_error_not_a_truncation(server):
    server.routes['/big'] = (200, {}, b'x' * 2049, 0)
    server.routes['/exact'] = (200, {}, b'y' * 2048, 0)
    server.routes['/big-error'] = (500, {}, b'z' * 2049, 0)
    with pytest.raises(http_client.TooLarge):
        http_client.call('GET', server.url + '/big', max_bytes=2048)
    with pytest.raises(http_client.TooLarge):
        http_client.call('GET', server.url + '/big-error', max_bytes=2048)
    assert http_client.call('GET', server.url + '/exact', max_bytes=2048) == (200, b'y' * 2048)


def test_a_server_slower_than_the_timeout_is_unreachable_in_time(server):
    server.routes['/slow'] = (200, {}, b'late', 2.0)
    started = time.monotonic()
    with pytest.raises(http_client.Unreachable) as caught:
        http_client.call('GET', server.url + '/slow', timeout=0.3)
    assert time.monotonic() - started < 1.5
    assert 'timed out' in caught.value.reason


@pytest.mark.parametrize('given, used', [(0, 0.1), (-5, 0.1), (2.5, 2.5), (10**6, 300.0), (float('nan'), 300.0), ('x', 300.0), (None, 300.0)])
def test_timeouts_are_clamped(given, used):
    assert http_client.clamp_timeout(given) == used


def test_proxy_settings_of_the_environment_are_ignored(server, monkeypatch):
    server.routes['/health'] = (200, {}, b'', 0)
    # a proxy that nothing listens on: used, it would refuse the connection
    monkeypatch.setenv('http_proxy', 'http://127.0.0.1:9')
    monkeypatch.setenv('HTTP_PROXY', 'http://127.0.0.1:9')
    monkeypatch.delenv('no_proxy', raising=False)
    monkeypatch.delenv('NO_PROXY', raising=False)
    assert http_client.call('GET', server.url + '/health') == (200, b'')


def test_a_netrc_entry_adds_no_credentials(server, tmp_path, monkeypatch):
    server.routes['/health'] = (200, {}, b'', 0)
    netrc = tmp_path / 'netrc'
    netrc.write_text('machine 127.0.0.1 login someone password hunter2\n')
    netrc.chmod(0o600)
    monkeypatch.setenv('NETRC', str(netrc))
    assert http_client.call('GET', server.url + '/health') == (200, b'')
    assert server.seen == [('GET', '/health', None, b'')]


def test_https_verifies_and_http_pays_for_no_ca_store():
    import ssl

    secure = http_client.tls_context('HTTPS://router.example:443')
    assert secure.verify_mode == ssl.CERT_REQUIRED and secure.check_hostname is True
    assert http_client.tls_context('https://other:8443') is secure
    plain = http_client.tls_context('http://127.0.0.1:30000')
    assert plain is not secure and plain.cert_store_stats()['x509_ca'] == 0
