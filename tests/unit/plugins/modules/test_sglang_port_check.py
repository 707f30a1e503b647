# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest

from ansible.module_utils.testing import patch_module_args

from ansible_collections.ddtree.sglang.tests.unit.plugins.modules.utils import ExitJson, FailJson, exits  # noqa: F401 pylint: disable=unused-import

from ansible_collections.ddtree.sglang.plugins.modules import sglang_port_check

HEADER = '  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n'


def tcp_line(port, inode, state='0A'):
    return '   0: 0100007F:%04X 00000000:0000 %s 00000000:00000000 00:00000000 00000000   999        0 %s 1 0 0 10 0\n' % (port, state, inode)


def fake_proc(tmp_path, tcp, processes):
    """A /proc with net/tcp, and per PID: comm, cgroup and fd links to socket inodes."""
    proc = tmp_path / 'proc'
    (proc / 'net').mkdir(parents=True)
    (proc / 'net' / 'tcp').write_text(HEADER + ''.join(tcp))
    (proc / 'net' / 'tcp6').write_text(HEADER)
    for pid, (comm, cgroup, inodes) in processes.items():
        base = proc / str(pid)
        (base / 'fd').mkdir(parents=True)
        (base / 'comm').write_text(comm + '\n')
        (base / 'cgroup').write_text(cgroup)
        for fd, inode in enumerate(inodes):
            os.symlink('socket:[%s]' % inode, str(base / 'fd' / str(fd)))
    return str(proc)


def test_nothing_listens(tmp_path):
    proc = fake_proc(tmp_path, [tcp_line(30000, 111, state='01')], {})
    result = sglang_port_check.proc_net.port_check(30000, set(), 'sglang-qwen.service', proc)
    assert result['in_use'] is False and result['listening'] is False and 'nothing listens' in result['msg']


def test_own_unit_holds_the_port(tmp_path):
    proc = fake_proc(
        tmp_path,
        [tcp_line(30000, 111)],
        {
            10: ('python3', '0::/system.slice/sglang-qwen.service\n', [111]),
        },
    )
    result = sglang_port_check.proc_net.port_check(30000, {10}, 'sglang-qwen.service', proc)
    assert result['in_use'] is False and result['unit_holds'] is True and result['holders'] == []


def test_another_unit_holds_the_port(tmp_path):
    proc = fake_proc(
        tmp_path,
        [tcp_line(30000, 111), tcp_line(30001, 222)],
        {
            10: ('python3', '12:pids:/system.slice/sglang-qwen.service\n1:name=systemd:/system.slice/sglang-qwen.service\n', [111]),
            11: ('sshd', '0::/system.slice/ssh.service\n', [222]),
        },
    )
    result = sglang_port_check.proc_net.port_check(30000, set(), 'sglang-other.service', proc)
    assert result['in_use'] is True
    assert result['holders'] == [{'pid': 10, 'name': 'python3', 'unit': 'sglang-qwen.service'}]
    assert result['msg'] == 'PID 10 (python3, sglang-qwen.service) listens on port 30000, not sglang-other.service'


def test_a_stranger_next_to_the_unit(tmp_path):
    proc = fake_proc(
        tmp_path,
        [tcp_line(30000, 111), tcp_line(30000, 333)],
        {
            10: ('python3', '0::/system.slice/sglang-qwen.service\n', [111]),
            20: ('nc', '0::/user.slice/session-1.scope\n', [333]),
        },
    )
    result = sglang_port_check.proc_net.port_check(30000, {10}, 'sglang-qwen.service', proc)
    assert result['in_use'] is True and result['unit_holds'] is True
    assert result['holders'] == [{'pid': 20, 'name': 'nc', 'unit': 'session-1.scope'}]


def test_unreadable_holder_without_a_running_unit_is_in_use(tmp_path, monkeypatch):
    proc = fake_proc(tmp_path, [tcp_line(30000, 111)], {10: ('python3', '', [111])})

    def denied(pid, proc='/proc'):
        raise PermissionError(13, 'Permission denied')

    monkeypatch.setattr(sglang_port_check.proc_net, 'pid_socket_inodes', denied)
    assert sglang_port_check.proc_net.port_check(30000, set(), 'sglang-qwen.service', proc)['in_use'] is True
    running = sglang_port_check.proc_net.port_check(30000, {10}, 'sglang-qwen.service', proc)
    assert running['in_use'] is False and running['unreadable'] == 1 and 'cannot tell' in running['msg']


def test_module_refuses_a_port_out_of_range():
    with patch_module_args({'port': 70000}):
        with pytest.raises(FailJson) as failed:
            sglang_port_check.main()
    assert '1-65535' in failed.value.args[0]['msg']


def test_module_asks_systemd_for_the_unit(monkeypatch):
    calls = []

    def run_command(self, argv, **kwargs):
        calls.append(argv)
        return 0, 'MainPID=10\nActiveState=active\nControlGroup=/system.slice/sglang-qwen.service\n', ''

    seen = {}

    def port_check(port, unit_pids, unit='', proc='/proc'):
        seen.update(port=port, unit_pids=unit_pids, unit=unit)
        return {'in_use': False, 'listening': False, 'unit_holds': False, 'holders': [], 'unreadable': 0, 'msg': 'x'}

    monkeypatch.setattr(sglang_port_check.AnsibleModule, 'run_command', run_command)
    monkeypatch.setattr(sglang_port_check.proc_net, 'port_check', port_check)
    monkeypatch.setattr(sglang_port_check.proc_net, 'unit_pids', lambda cg, pid: {pid})
    with patch_module_args({'port': 30000, 'unit': 'sglang-qwen.service'}):
        with pytest.raises(ExitJson) as exited:
            sglang_port_check.main()
    assert exited.value.args[0]['changed'] is False
    assert calls[0][:3] == ['systemctl', 'show', 'sglang-qwen.service']
    assert seen == {'port': 30000, 'unit_pids': {10}, 'unit': 'sglang-qwen.service'}
