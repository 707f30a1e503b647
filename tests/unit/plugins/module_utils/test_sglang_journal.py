# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

import pytest

from ansible_collections.ddtree.sglang.plugins.module_utils import sglang_journal as jr

INVOCATION = 'd702c87bd75b4c0d814920a15dab0820'

# `systemctl show` of a unit whose process exited 1 (lab host, systemd 252)
SHOW_FAILED = """MainPID=0
Result=exit-code
NRestarts=0
ExecMainStartTimestampMonotonic=123456789
ExecMainCode=1
ExecMainStatus=1
ActiveState=failed
SubState=failed
InvocationID=d702c87bd75b4c0d814920a15dab0820
LoadState=loaded
"""

SHOW_RUNNING = """MainPID=53
Result=success
NRestarts=0
ExecMainCode=0
ExecMainStatus=0
ActiveState=active
SubState=running
InvocationID=d702c87bd75b4c0d814920a15dab0820
LoadState=loaded
ExecMainStartTimestampMonotonic=123456789
"""


def _journal_line(message, cursor, pid=53, systemd=False, realtime=1795945048633054):
    obj = {'__CURSOR': cursor, '__REALTIME_TIMESTAMP': str(realtime), '_PID': str(pid), 'PRIORITY': '6', 'MESSAGE': message}
    if systemd:
        obj['INVOCATION_ID'] = INVOCATION
    else:
        obj['_SYSTEMD_INVOCATION_ID'] = INVOCATION
    return json.dumps(obj)


def test_parse_systemctl_show_types():
    state = jr.parse_systemctl_show(SHOW_FAILED)
    assert state['ActiveState'] == 'failed'
    assert state['MainPID'] == 0 and state['ExecMainStatus'] == 1 and state['NRestarts'] == 0
    assert state['InvocationID'] == INVOCATION
    assert state['ExecMainStartTimestampMonotonic'] == 123456789


def test_parse_systemctl_show_tolerates_missing_and_odd_lines():
    state = jr.parse_systemctl_show(b'ActiveState=active\nnot a property\nNRestarts=\nMainPID=abc\n')
    assert state['ActiveState'] == 'active'
    assert state['NRestarts'] == 0 and state['MainPID'] == 0
    assert state['InvocationID'] == ''


@pytest.mark.parametrize('text, baseline, first_pid, expected', [
    (SHOW_RUNNING, 0, 53, None),
    (SHOW_FAILED, 0, 53, 'process_exited'),
    (SHOW_RUNNING.replace('SubState=running', 'SubState=auto-restart').replace('ActiveState=active', 'ActiveState=activating'), 0, 53, 'restarted'),
    (SHOW_RUNNING.replace('NRestarts=0', 'NRestarts=3'), 2, 53, 'restarted'),
    (SHOW_RUNNING.replace('NRestarts=0', 'NRestarts=3'), 3, 53, None),
    (SHOW_RUNNING.replace('MainPID=53', 'MainPID=77'), 0, 53, 'restarted'),
    (SHOW_RUNNING.replace('ActiveState=active', 'ActiveState=inactive').replace('SubState=running', 'SubState=dead'), 0, 0, 'process_exited'),
    ('LoadState=not-found\nActiveState=inactive\n', 0, 0, 'unit_not_found'),
])
def test_unit_failure(text, baseline, first_pid, expected):
    verdict = jr.unit_failure(jr.parse_systemctl_show(text), baseline, first_pid)
    assert (verdict[0] if verdict else None) == expected


def test_describe_exit():
    assert jr.describe_exit({'ExecMainCode': 1, 'ExecMainStatus': 2}) == 'exited with status 2'
    assert jr.describe_exit({'ExecMainCode': 2, 'ExecMainStatus': 9}) == 'killed by SIGKILL'
    assert jr.describe_exit({'ExecMainCode': 3, 'ExecMainStatus': 6}) == 'dumped core on SIGABRT'
    assert jr.describe_exit({'ExecMainCode': 2, 'ExecMainStatus': 200}) == 'killed by signal 200'


def test_journal_argv():
    argv = jr.journal_argv(INVOCATION)
    assert argv[:4] == ['journalctl', '_SYSTEMD_INVOCATION_ID=' + INVOCATION, '+', 'INVOCATION_ID=' + INVOCATION]
    assert '-o' in argv and 'json' in argv and '--all' in argv and '--no-pager' in argv
    assert jr.journal_argv(INVOCATION, 's=abc;i=1')[-1] == '--after-cursor=s=abc;i=1'


@pytest.mark.parametrize('bad', ['', None, 'abc', INVOCATION + ' + _PID=1'])
def test_journal_argv_refuses_what_would_match_everything(bad):
    with pytest.raises(ValueError):
        jr.journal_argv(bad)


def test_parse_journal_json_with_bad_bytes_and_garbage():
    data = '\n'.join([
        _journal_line('Started x.service - x.', 's=1', pid=1, systemd=True),
        # journalctl writes a non-UTF-8 MESSAGE as an array of byte values
        _journal_line(list(b'bad \xff\xfe bytes'), 's=2'),
        _journal_line(list(b'line with \x1b[31mcolor\x1b[0m'), 's=3'),
        _journal_line(list(b'progress 10%\rprogress 50%\rprogress 100%'), 's=4'),
        'this is not json',
        '[1, 2, 3]',
        _journal_line(None, 's=5'),
        _journal_line('two\nlines', 's=6'),
        '{"__CURSOR": "s=7", "MESSAGE": "trunc',
    ]).encode('utf-8') + b'\n\xff\xfe garbage bytes\n'
    entries, cursor, bad = jr.parse_journal_json(data)
    assert cursor == 's=6'
    assert bad == 4
    assert entries[0]['from_systemd'] is True and entries[1]['from_systemd'] is False
    assert entries[1]['message'] == u'bad \ufffd\ufffd bytes'
    assert entries[2]['lines'] == ['line with color']
    assert entries[3]['lines'] == ['progress 100%']
    assert entries[4]['lines'] == []
    assert entries[5]['lines'] == ['two', 'lines']
    assert entries[1]['pid'] == 53 and entries[1]['realtime_us'] == 1795945048633054


def test_message_text_variants():
    assert jr.message_text(['a', 'b']) == 'a\nb'
    assert jr.message_text([[104, 105], 'x']) == 'hi\nx'
    assert jr.message_text(b'\xffok') == u'\ufffdok'
    assert jr.message_text(7) == '7'


def test_reader_follows_the_cursor():
    calls = []
    outputs = [
        (0, (_journal_line('Load weight begin.', 's=1') + '\n').encode(), b''),
        (0, b'', b''),
        (1, b'', b'Failed to get journal access'),
        (0, (_journal_line('Load weight end.', 's=2') + '\n').encode(), b''),
    ]

    def runner(argv):
        calls.append(argv)
        return outputs.pop(0)

    reader = jr.JournalReader(runner, INVOCATION)
    assert len(reader.poll()) == 1
    assert reader.poll() == []
    assert reader.poll() == [] and 'journal access' in reader.last_error
    assert len(reader.poll()) == 1 and reader.last_error is None
    assert not any(a.startswith('--after-cursor') for a in calls[0])
    assert calls[1][-1] == '--after-cursor=s=1' and calls[3][-1] == '--after-cursor=s=1'
    assert reader.lines == ['Load weight begin.', 'Load weight end.']
    assert reader.cursor == 's=2'


PROC_NET_TCP = """  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:7530 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 5551 1 0000000000000000 100 0 0 10 0
   1: 0100007F:7530 0100007F:A1B2 01 00000000:00000000 00:00000000 00000000     0        0 5552 1 0000000000000000 20 4 30 10 -1
   2: 00000000:0016 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 5553 1 0000000000000000 100 0 0 10 0
garbage
"""


def test_parse_proc_net_tcp_only_listeners_on_the_port():
    assert jr.parse_proc_net_tcp(PROC_NET_TCP, 30000) == set(['5551'])
    assert jr.parse_proc_net_tcp(PROC_NET_TCP, 22) == set(['5553'])
    assert jr.parse_proc_net_tcp(PROC_NET_TCP, 8080) == set()


def test_socket_inode():
    assert jr.socket_inode('socket:[5551]') == '5551'
    assert jr.socket_inode('/dev/null') is None
    assert jr.socket_inode('pipe:[12]') is None


def _fake_proc(root, sockets_by_pid):
    (root / 'net').mkdir(parents=True)
    (root / 'net' / 'tcp').write_text(PROC_NET_TCP)
    for pid, inodes in sockets_by_pid.items():
        fd_dir = root / str(pid) / 'fd'
        fd_dir.mkdir(parents=True)
        (root / str(pid) / 'comm').write_text('python3\n')
        for n, inode in enumerate(inodes):
            os.symlink('socket:[%s]' % inode, str(fd_dir / str(n)))
    return str(root)


def test_port_owner(tmp_path):
    proc = _fake_proc(tmp_path / 'proc', {100: ['5551'], 200: ['9999']})
    assert jr.port_owner(30000, '', 100, proc) == (True, [])
    assert jr.port_owner(30000, '', 200, proc) == (False, [100])
    assert jr.process_name(100, proc) == 'python3'
    # nothing listens on the port, or the unit's processes cannot be read: no opinion
    assert jr.port_owner(8080, '', 100, proc) == (None, [])
    assert jr.port_owner(30000, '', 424242, proc) == (None, [])


def test_port_owner_of_a_process_whose_links_are_unreadable(tmp_path, monkeypatch):
    proc = _fake_proc(tmp_path / 'proc', {100: ['5551']})
    real_readlink = os.readlink

    def readlink(path):
        if os.sep + '100' + os.sep in path:
            raise PermissionError(13, 'Permission denied', path)
        return real_readlink(path)
    monkeypatch.setattr(jr.os, 'readlink', readlink)
    # the service runs as another user and this one lacks CAP_SYS_PTRACE: no opinion, not "foreign"
    assert jr.port_owner(30000, '', 100, proc) == (None, [])


def test_unit_pids_never_reads_the_root_cgroup():
    assert jr.unit_pids('', 7) == set([7])
    assert jr.unit_pids('/', 0) == set()
