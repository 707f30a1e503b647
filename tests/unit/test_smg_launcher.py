# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""roles/sglang_router/files/ddtree-smg-launch.py: the keys of the unit's environment become smg's flags inside the
process, and leave the environment."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import importlib.util
import os

LAUNCHER = os.path.join(os.path.dirname(__file__), '..', '..', 'roles', 'sglang_router', 'files', 'ddtree-smg-launch.py')
SPEC = importlib.util.spec_from_file_location('ddtree_smg_launch', LAUNCHER)
launch = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(launch)

ARGS = ['--host', '127.0.0.1', '--port', '30080']


def test_both_keys_become_flags_and_leave_the_environment():
    environ = {'DDTREE_SMG_API_KEY': 'data-key', 'DDTREE_SMG_CONTROL_PLANE_API_KEY': 'control-key', 'PATH': '/usr/bin'}
    assert launch.with_keys(ARGS, environ) == ARGS + [
        '--api-key',
        'data-key',
        '--control-plane-api-keys',
        'ddtree-sglang:ddtree-sglang:admin:control-key',
    ]
    assert environ == {'PATH': '/usr/bin'}


def test_no_key_no_flag():
    environ = {'DDTREE_SMG_API_KEY': '', 'PATH': '/usr/bin'}
    assert launch.with_keys(ARGS, environ) == ARGS
    assert launch.with_keys(ARGS, {}) == ARGS
    assert environ == {'PATH': '/usr/bin'}


def test_a_control_plane_key_alone():
    assert launch.with_keys(ARGS, {'DDTREE_SMG_CONTROL_PLANE_API_KEY': 'c'}) == ARGS + ['--control-plane-api-keys', 'ddtree-sglang:ddtree-sglang:admin:c']
