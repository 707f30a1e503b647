# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import multiprocessing
import os

from ansible_collections.ddtree.sglang.plugins.module_utils import host_lock

HELD = {'token': 'aaa', 'owner': 'ops@ctl', 'play': 'Deploy', 'started_at': 1000.0, 'expires_at': 4600.0}


def test_a_free_host_is_taken():
    got = host_lock.decide(None, 2000.0, '', 60, 'me@ctl', 'Upgrade', new_token='bbb')
    assert got == {
        'action': 'take',
        'broken': None,
        'holder': None,
        'lease': {'token': 'bbb', 'owner': 'me@ctl', 'play': 'Upgrade', 'started_at': 2000.0, 'expires_at': 2060.0},
    }


def test_the_holder_renews_and_keeps_its_start():
    got = host_lock.decide(HELD, 2000.0, 'aaa', 60, 'ignored', 'ignored')
    assert got['action'] == 'renew'
    assert got['lease'] == dict(HELD, expires_at=2060.0)


def test_another_run_is_refused_and_told_the_holder():
    got = host_lock.decide(HELD, 2000.0, '', 60, 'me@ctl', 'Upgrade')
    assert (got['action'], got['lease'], got['holder']) == ('refuse', None, HELD)
    # a token of an earlier lease does not open a newer one
    assert host_lock.decide(HELD, 2000.0, 'zzz', 60, 'me@ctl', 'Upgrade')['action'] == 'refuse'
    assert host_lock.describe(HELD) == "ops@ctl (play 'Deploy', since 1970-01-01T00:16:40Z, lease until 1970-01-01T01:16:40Z)"


def test_an_expired_or_unreadable_lease_is_broken():
    got = host_lock.decide(HELD, 4600.0, '', 60, 'me@ctl', 'Upgrade', new_token='ccc')
    assert (got['action'], got['broken'], got['lease']['token']) == ('break', HELD, 'ccc')
    assert host_lock.decide({'owner': 'x', 'expires_at': 'soon'}, 0.0, '', 60, 'me', 'p')['action'] == 'break'


def test_acquire_release_on_disk(tmp_path):
    path = str(tmp_path / 'run' / 'host.lock')
    first = host_lock.acquire(path, '', 60, 'a@ctl', 'Deploy')
    assert first['action'] == 'take'
    assert oct(os.stat(path).st_mode & 0o777) == '0o600'
    assert oct(os.stat(os.path.dirname(path)).st_mode & 0o777) == '0o700'
    assert host_lock.acquire(path, '', 60, 'b@ctl', 'Deploy')['holder']['owner'] == 'a@ctl'
    assert host_lock.release(path, 'not-mine') is None
    assert os.path.exists(path)
    assert host_lock.release(path, first['lease']['token'])['owner'] == 'a@ctl'
    assert not os.path.exists(path)
    # no temp file is left beside the lease
    assert sorted(os.listdir(os.path.dirname(path))) == ['host.lock.guard']


def test_a_half_written_lease_is_broken(tmp_path):
    path = str(tmp_path / 'host.lock')
    with open(path, 'w') as f:
        f.write('{"token": ')
    got = host_lock.acquire(path, '', 60, 'a@ctl', 'Deploy')
    assert (got['action'], got['broken']['owner']) == ('break', 'an unreadable lease file')
    with open(path) as f:
        assert json.load(f)['owner'] == 'a@ctl'


def _take(args):
    path, owner = args
    return host_lock.acquire(path, '', 60, owner, 'Deploy')['action']


def test_runs_that_arrive_at_once_get_one_lease(tmp_path):
    path = str(tmp_path / 'host.lock')
    pool = multiprocessing.get_context('fork').Pool(8)
    try:
        actions = pool.map(_take, [(path, 'run%d' % i) for i in range(32)])
    finally:
        pool.close()
        pool.join()
    assert sorted(set(actions)) == ['refuse', 'take']
    assert actions.count('take') == 1
