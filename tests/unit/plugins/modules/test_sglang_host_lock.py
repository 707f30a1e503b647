# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The host lock module: only a broken stale lease is a change; a held lease refuses another run."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import time

import pytest

from ansible.module_utils.testing import patch_module_args

from ansible_collections.ddtree.sglang.tests.unit.plugins.modules.utils import ExitJson, FailJson, exits  # noqa: F401 pylint: disable=unused-import

from ansible_collections.ddtree.sglang.plugins.modules import sglang_host_lock as mod


def run(args):
    with patch_module_args(args):
        with pytest.raises((ExitJson, FailJson)) as res:
            mod.main()
    return res.type, res.value.args[0]


def test_take_renew_and_release_are_no_change(tmp_path):
    path = str(tmp_path / 'host.lock')
    kind, res = run({'path': path, 'owner': 'op@ctl', 'play': 'Deploy'})
    assert kind is ExitJson and res['action'] == 'take' and res['changed'] is False
    token = res['token']
    kind, res = run({'path': path, 'token': token, 'owner': 'op@ctl', 'play': 'Deploy'})
    assert kind is ExitJson and res['action'] == 'renew' and res['changed'] is False and res['token'] == token
    kind, res = run({'path': path, 'state': 'released', 'token': token})
    assert kind is ExitJson and res['action'] == 'release' and res['changed'] is False
    assert not (tmp_path / 'host.lock').exists()


def test_a_held_lease_refuses_and_a_stale_one_is_broken_as_a_change(tmp_path):
    path = tmp_path / 'host.lock'
    kind, res = run({'path': str(path), 'owner': 'first@ctl', 'play': 'Upgrade', 'lease_s': 600})
    kind, res = run({'path': str(path), 'owner': 'second@ctl', 'play': 'Deploy'})
    assert kind is FailJson and res['msg'].startswith("this host is locked by another run: first@ctl (play 'Upgrade', since ")
    lease = json.loads(path.read_text())
    path.write_text(json.dumps(dict(lease, expires_at=time.time() - 1)))
    kind, res = run({'path': str(path), 'owner': 'second@ctl', 'play': 'Deploy'})
    assert kind is ExitJson and res['action'] == 'break' and res['changed'] is True and res['broken']['owner'] == 'first@ctl'
