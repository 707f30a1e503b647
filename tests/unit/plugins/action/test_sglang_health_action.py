# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from unittest.mock import MagicMock

import pytest

from ansible.errors import AnsibleActionFail

from ansible_collections.ddtree.sglang.plugins.action import sglang_health as action_plugin


def pending(n, phase='loading_weights'):
    return {
        'changed': False,
        'verdict': 'pending',
        'healthy': False,
        'phase': phase,
        'progress': 'sglang-qwen.service: %s, %d s since start (pid 1234), API not answering yet' % (phase, 5 * n),
        'resume': {'slices': n, 'baseline_restarts': 0, 'first_pid': 1234, 'invocation_id': 'a' * 32},
    }


FAILED = {
    'changed': False,
    'failed': True,
    'verdict': 'failed',
    'healthy': False,
    'cause': 'mem_pool_too_small',
    'msg': 'sglang-qwen.service is not healthy [mem_pool_too_small] ...',
    'diagnosis': 'memory-pool sizing failed',
    'advice': 'Raise --mem-fraction-static',
    'fatal_lines': ['RuntimeError: Not enough memory.'],
    'unit_state': {'ActiveState': 'failed'},
    'decided_at': 1795945051.912,
    'invocation': {'module_args': {'unit': 'sglang-qwen.service', 'slice_s': 5.0, '_resume': {'slices': 2}}},
}


def make_action(args, results, check_mode=False):
    task = MagicMock()
    task.args = dict(args)
    task.async_val = 0
    task.check_mode = check_mode
    task.action = 'ddtree.sglang.sglang_health'
    connection = MagicMock()
    connection._shell.tmpdir = None
    action = action_plugin.ActionModule(task, connection, MagicMock(), loader=None, templar=None, shared_loader_obj=None)
    calls = []

    def execute_module(module_name=None, module_args=None, task_vars=None, **kwargs):
        calls.append((module_name, dict(module_args)))
        return dict(results.pop(0))

    action._execute_module = execute_module
    action._remove_tmp_path = MagicMock()
    return action, calls


@pytest.fixture
def shown(monkeypatch):
    lines = []
    monkeypatch.setattr(action_plugin.display, 'display', lambda msg, *a, **k: lines.append(msg))
    return lines


def test_slices_until_the_verdict_with_a_progress_line_each(shown):
    action, calls = make_action({'unit': 'sglang-qwen.service', 'timeout': 900}, [pending(1), pending(2, 'sizing_pools'), FAILED])
    action.run(task_vars={'inventory_hostname': 'ct129'})
    assert shown == [
        '[ct129] sglang-qwen.service: loading_weights, 5 s since start (pid 1234), API not answering yet',
        '[ct129] sglang-qwen.service: sizing_pools, 10 s since start (pid 1234), API not answering yet',
    ]
    assert [c[0] for c in calls] == ['ddtree.sglang.sglang_health'] * 3
    # default slice for the action, state handed on from slice to slice
    assert calls[0][1] == {'unit': 'sglang-qwen.service', 'timeout': 900, 'slice_s': 5.0}
    assert calls[1][1]['_resume'] == pending(1)['resume']
    assert calls[2][1]['_resume'] == pending(2)['resume']
    action._remove_tmp_path.assert_called_once()


def test_the_result_is_the_modules_final_result(shown):
    action, _calls = make_action({'unit': 'sglang-qwen.service'}, [pending(1), FAILED])
    result = action.run(task_vars={'inventory_hostname': 'ct129'})
    # what a rescue reads as ansible_failed_result
    for key in ('failed', 'msg', 'cause', 'diagnosis', 'advice', 'fatal_lines', 'unit_state', 'decided_at', 'verdict'):
        assert result[key] == FAILED[key]
    assert 'resume' not in result and 'progress' not in result
    assert '_resume' not in result['invocation']['module_args']


def test_healthy_at_once_prints_nothing(shown):
    healthy = {'changed': False, 'verdict': 'healthy', 'healthy': True, 'settled_s': 5.1}
    action, calls = make_action({'unit': 'u.service', 'slice_s': 2}, [healthy])
    result = action.run(task_vars={})
    assert result['healthy'] is True and result['settled_s'] == 5.1
    assert shown == [] and len(calls) == 1 and calls[0][1]['slice_s'] == 2


def test_slice_zero_is_one_call(shown):
    healthy = {'changed': False, 'verdict': 'healthy', 'healthy': True}
    action, calls = make_action({'unit': 'u.service', 'slice_s': 0}, [healthy])
    action.run(task_vars={})
    assert calls[0][1]['slice_s'] == 0


def test_module_error_ends_the_loop(shown):
    broken = {'failed': True, 'msg': 'systemctl show x failed (rc=1)'}
    action, calls = make_action({'unit': 'u.service'}, [pending(1), broken])
    result = action.run(task_vars={'inventory_hostname': 'h'})
    assert result['failed'] is True and result['msg'].startswith('systemctl show') and len(calls) == 2


def test_resume_cannot_be_set_by_a_task(shown):
    action, calls = make_action({'unit': 'u.service', '_resume': {}}, [])
    with pytest.raises(AnsibleActionFail, match='internal'):
        action.run(task_vars={})
    assert calls == []


def test_check_mode_runs_the_same_slices(shown):
    action, calls = make_action({'unit': 'u.service'}, [pending(1), {'verdict': 'healthy', 'healthy': True, 'changed': False}], check_mode=True)
    result = action.run(task_vars={'inventory_hostname': 'h'})
    assert result['healthy'] is True and len(calls) == 2 and len(shown) == 1


def test_a_module_that_never_decides_is_stopped(shown, monkeypatch):
    clock = iter(range(0, 100000, 400))
    monkeypatch.setattr(action_plugin.time, 'monotonic', lambda: next(clock))
    action, calls = make_action({'unit': 'u.service', 'timeout': 10}, [pending(i) for i in range(1, 20)])
    with pytest.raises(AnsibleActionFail, match='pending past its timeout'):
        action.run(task_vars={})
    assert 1 < len(calls) < 19
