# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The worker-management calls against a fake router that queues changes like smg 1.13 (its behaviour as observed on the
real gateway: lab/tests/test_smg.py drives the real one)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import tempfile
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from ansible.module_utils.testing import patch_module_args

from ansible_collections.ddtree.sglang.tests.unit.plugins.modules.utils import ExitJson, FailJson, exits  # noqa: F401 pylint: disable=unused-import

from ansible_collections.ddtree.sglang.plugins.module_utils.host_lock import Guard
from ansible_collections.ddtree.sglang.plugins.modules import sglang_router_workers as mod


def entry(url, healthy=True):
    return {'id': str(uuid.uuid4()), 'url': url, 'is_healthy': healthy, 'status': 'ready' if healthy else 'not_ready', 'load': 0}


class FakeRouter(object):
    """GET/POST/DELETE /workers as smg 1.13 answers them: a POSTed worker is listed after `delay` reads (its
    registration), ready unless its URL is in `unhealthy`; a POST of a URL listed or being added answers 409; a DELETEd
    worker is listed as draining for `drain_reads` reads, then gone. With `key`, every call needs it as bearer token."""

    def __init__(self, urls=(), delay=1, unhealthy=(), drain_reads=0, key=None):
        self.workers = [entry(u, u not in unhealthy) for u in urls]
        self.queued = []
        self.delay = delay
        self.drain_reads = drain_reads
        self.draining = {}
        self.unhealthy = set(unhealthy)
        self.key = key
        self.calls = []
        self.bodies = []

    def handler(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # pylint: disable=arguments-differ
                pass

            def reply(self, status, body):
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header('Content-Type', 'application/json')
                self.send_header('Content-Length', str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def refused(self):
                if fake.key and self.headers.get('Authorization') != 'Bearer %s' % fake.key:
                    self.reply(401, {'error': 'Missing or invalid Authorization header'})
                    return True
                return False

            def do_GET(self):  # pylint: disable=invalid-name
                fake.calls.append(('GET', self.path))
                if self.refused():
                    return
                for item in list(fake.queued):
                    item[1] -= 1
                    if item[1] < 0:
                        fake.queued.remove(item)
                        fake.workers.append(entry(item[0], item[0] not in fake.unhealthy))
                for wid in list(fake.draining):
                    fake.draining[wid] -= 1
                    if fake.draining[wid] < 0:
                        del fake.draining[wid]
                        fake.workers = [w for w in fake.workers if w['id'] != wid]
                self.reply(200, {'workers': fake.workers, 'total': len(fake.workers)})

            def do_POST(self):  # pylint: disable=invalid-name
                body = json.loads(self.rfile.read(int(self.headers['Content-Length'])))
                fake.calls.append(('POST', body['url']))
                if self.refused():
                    return
                fake.bodies.append(body)
                if body['url'] in [q[0] for q in fake.queued] + [w['url'] for w in fake.workers]:
                    self.reply(409, {'error': 'Worker already exists at URL %r' % body['url'], 'code': 'WORKER_ALREADY_EXISTS'})
                    return
                fake.queued.append([body['url'], fake.delay])
                self.reply(202, {'status': 'accepted'})

            def do_DELETE(self):  # pylint: disable=invalid-name
                wid = self.path.rsplit('/', 1)[1]
                fake.calls.append(('DELETE', wid))
                if self.refused():
                    return
                for worker in fake.workers:
                    if worker['id'] == wid:
                        worker.update(status='draining', is_healthy=False)
                        fake.draining[wid] = fake.drain_reads
                self.reply(202, {'status': 'accepted'})

        return Handler


@pytest.fixture(name='router')
def fixture_router():
    servers = []

    def start(*args, **kwargs):
        fake = FakeRouter(*args, **kwargs)
        server = ThreadingHTTPServer(('127.0.0.1', 0), fake.handler())
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        fake.url = 'http://127.0.0.1:%d' % server.server_address[1]
        return fake

    yield start
    for server in servers:
        server.shutdown()


LOCK = os.path.join(tempfile.gettempdir(), 'ddtree-test-router-workers-%d.lock' % os.getpid())


def run(args, check=False):
    args = dict({'lock_path': LOCK}, **args)
    if check:
        args = dict(args, _ansible_check_mode=True)
    with patch_module_args(dict({'poll_interval': 0.01}, **args)):
        with pytest.raises((ExitJson, FailJson)) as res:
            mod.main()
    return res.type, res.value.args[0]


A = 'http://10.0.0.1:30000'
B = 'http://10.0.0.2:30000'
C = 'http://10.0.0.3:30000'


def test_present_adds_the_missing_worker_and_waits_until_it_is_listed(router):
    fake = router([A])
    kind, res = run({'url': fake.url, 'workers': [A, B + '/'], 'state': 'present'})
    assert kind is ExitJson and res['changed'] and res['added'] == [B] and res['removed'] == []
    assert sorted(w['url'] for w in res['workers']) == [A, B] and res['pending'] == []
    kind, res = run({'url': fake.url, 'workers': [A, B], 'state': 'present'})
    assert kind is ExitJson and not res['changed']


def test_exact_removes_strays_and_adds_missing(router):
    fake = router([A, C])
    kind, res = run({'url': fake.url, 'workers': [A, B], 'state': 'exact'})
    assert kind is ExitJson and res['added'] == [B] and res['removed'] == [C]
    assert sorted(w['url'] for w in fake.workers) == [A, B]


def test_absent_removes_and_check_mode_changes_nothing(router):
    fake = router([A, B])
    kind, res = run({'url': fake.url, 'workers': [A], 'state': 'absent'}, check=True)
    assert kind is ExitJson and res['changed'] and res['removed'] == [A]
    assert len(fake.workers) == 2 and not [c for c in fake.calls if c[0] != 'GET']
    kind, res = run({'url': fake.url, 'workers': [A], 'state': 'absent'})
    assert kind is ExitJson and res['changed'] and [w['url'] for w in fake.workers] == [B]


def test_a_draining_worker_counts_as_removed_and_is_asked_for_again_once_gone(router, monkeypatch):
    """smg lists a removed worker as draining for a while (5 s) and answers 409 to a POST of its URL meanwhile."""
    monkeypatch.setattr(mod, 'READD_INTERVAL_S', 0.05)
    fake = router([A, B], drain_reads=30)
    kind, res = run({'url': fake.url, 'workers': [A], 'state': 'absent'})
    assert kind is ExitJson and [(w['url'], w['status']) for w in res['workers']] == [(A, 'draining'), (B, 'ready')]
    assert res['pending'] == []
    kind, res = run({'url': fake.url, 'workers': [A], 'state': 'present', 'timeout': 10})
    assert kind is ExitJson and res['added'] == [A] and res['pending'] == []
    assert [(w['url'], w['status']) for w in fake.workers] == [(B, 'ready'), (A, 'ready')]
    # the first POST met the draining entry (409), a later one registered the worker
    assert [c for c in fake.calls if c[0] == 'POST'][0] == ('POST', A) and len([c for c in fake.calls if c[0] == 'POST']) >= 2


def test_the_keys_come_from_the_routers_environment_file_and_stay_out_of_the_result(router, tmp_path):
    fake = router([A], key='control-secret')
    env = tmp_path / 'sglang-router.env'
    env.write_text("DDTREE_SMG_API_KEY='worker-secret'\nDDTREE_SMG_CONTROL_PLANE_API_KEY='control-secret'\n")
    kind, res = run({'url': fake.url, 'workers': [A, B], 'state': 'present', 'api_key_env_file': str(env)})
    assert kind is ExitJson and res['added'] == [B]
    # the worker gets the router's data-plane key (the fronted workers share it)
    assert fake.bodies == [{'url': B, 'api_key': 'worker-secret'}]
    assert 'secret' not in json.dumps(res)
    # without the file's keys the router refuses the control plane
    kind, res = run({'url': fake.url, 'workers': [A], 'state': 'present', 'timeout': 0.2})
    assert kind is FailJson and 'HTTP 401' in res['msg']
    # the data-plane key guards the control plane too when the router has no control-plane key
    fake.key = 'worker-secret'
    env.write_text("DDTREE_SMG_API_KEY='worker-secret'\n")
    kind, res = run({'url': fake.url, 'workers': [A, B], 'state': 'present', 'api_key_env_file': str(env)})
    assert kind is ExitJson and not res['changed']


def test_min_healthy_refuses_a_removal_that_leaves_too_few(router):
    fake = router([A, B, C], unhealthy=[C])
    kind, res = run({'url': fake.url, 'workers': [A], 'state': 'absent', 'min_healthy': 2})
    assert kind is FailJson and 'would leave 1 healthy worker(s), fewer than min_healthy=2' in res['msg']
    assert len(fake.workers) == 3
    # nothing to remove: nothing to refuse
    kind, res = run({'url': fake.url, 'workers': ['http://10.0.0.9:30000'], 'state': 'absent', 'min_healthy': 5})
    assert kind is ExitJson and not res['changed']


def test_a_worker_that_never_gets_healthy_times_out_naming_it(router):
    fake = router([A], unhealthy=[B])
    kind, res = run({'url': fake.url, 'workers': [A, B], 'state': 'present', 'timeout': 0.3})
    assert kind is FailJson and res['pending'] == [B]
    assert B in res['msg'] and 'unhealthy' in res['msg']


def test_no_wait_returns_after_queueing(router):
    fake = router([], delay=100)
    kind, res = run({'url': fake.url, 'workers': [A], 'wait': False})
    assert kind is ExitJson and res['added'] == [A] and res['pending'] == []


def test_a_router_that_does_not_answer_fails_by_the_timeout():
    kind, res = run({'url': 'http://127.0.0.1:9', 'workers': [A], 'timeout': 0.2})
    assert kind is FailJson and 'did not answer within 0.2 s' in res['msg']


def test_a_broken_unit_fails_at_once(router, monkeypatch):
    fake = router([A])
    monkeypatch.setattr(mod, 'unit_state', lambda module, unit: {'ActiveState': 'activating', 'SubState': 'auto-restart'})
    monkeypatch.setattr(mod, 'journal_tail', lambda module, unit: ['Error starting router: boom'])
    kind, res = run({'url': fake.url, 'workers': [A], 'unit': 'sglang-router.service', 'timeout': 30})
    assert kind is FailJson and 'auto-restart' in res['msg'] and 'boom' in res['msg'] and res['elapsed_s'] < 5


def test_two_drains_at_once_are_served_one_after_the_other(router, tmp_path):
    """The first drain holds the router's lock while it removes B; the second, started meanwhile, waits and
    then checks min_healthy against the list without B. Unlocked, it would read A, B, C, remove A and leave C alone."""
    fake = router([A, B, C])
    lock = str(tmp_path / 'router.lock')
    first = Guard(lock)
    first.__enter__()

    def first_drain():
        time.sleep(0.3)
        fake.workers = [w for w in fake.workers if w['url'] != B]
        first.__exit__(None, None, None)

    thread = threading.Thread(target=first_drain)
    thread.start()
    kind, res = run({'url': fake.url, 'workers': [A], 'state': 'absent', 'min_healthy': 2, 'lock_path': lock, 'timeout': 5})
    thread.join()
    assert kind is FailJson and res['msg'].startswith(
        'removing %s from the router at %s would leave 1 healthy worker(s), fewer than min_healthy=2' % (A, fake.url)
    )
    assert sorted(w['url'] for w in fake.workers) == [A, C]


def test_a_lock_held_past_the_timeout_changes_nothing(router, tmp_path):
    fake = router([A, B])
    lock = str(tmp_path / 'router.lock')
    with Guard(lock):
        kind, res = run({'url': fake.url, 'workers': [A], 'state': 'absent', 'lock_path': lock, 'timeout': 0.3})
    assert kind is FailJson and res['msg'] == (
        'another change of the router at %s did not end in time: %s.guard was held by another run for 0.3 s' % (fake.url, lock)
    )
    assert fake.calls == [] and len(fake.workers) == 2
