# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

import pytest

from ansible_collections.ddtree.sglang.plugins.module_utils import systemd as jr

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


@pytest.mark.parametrize(
    'text, baseline, first_pid, expected',
    [
        (SHOW_RUNNING, 0, 53, None),
        (SHOW_FAILED, 0, 53, 'process_exited'),
        (SHOW_RUNNING.replace('SubState=running', 'SubState=auto-restart').replace('ActiveState=active', 'ActiveState=activating'), 0, 53, 'restarted'),
        (SHOW_RUNNING.replace('NRestarts=0', 'NRestarts=3'), 2, 53, 'restarted'),
        (SHOW_RUNNING.replace('NRestarts=0', 'NRestarts=3'), 3, 53, None),
        (SHOW_RUNNING.replace('MainPID=53', 'MainPID=77'), 0, 53, 'restarted'),
        (SHOW_RUNNING.replace('ActiveState=active', 'ActiveState=inactive').replace('SubState=running', 'SubState=dead'), 0, 0, 'process_exited'),
        ('LoadState=not-found\nActiveState=inactive\n', 0, 0, 'unit_not_found'),
    ],
)
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
    data = (
        '\n'.join(
            [
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
            ]
        ).encode('utf-8')
        + b'\n\xff\xfe garbage bytes\n'
    )
    entries, cursor, bad = jr.parse_journal_json(data)
    assert cursor == 's=6'
    assert bad == 4
    assert entries[0]['from_systemd'] is True and entries[1]['from_systemd'] is False
    assert entries[1]['message'] == 'bad \ufffd\ufffd bytes'
    assert entries[2]['lines'] == ['line with color']
    assert entries[3]['lines'] == ['progress 100%']
    assert entries[4]['lines'] == []
    assert entries[5]['lines'] == ['two', 'lines']
    assert entries[1]['pid'] == 53 and entries[1]['realtime_us'] == 1795945048633054


def test_message_text_variants():
    assert jr.message_text(['a', 'b']) == 'a\nb'
    assert jr.message_text([[104, 105], 'x']) == 'hi\nx'
    assert jr.message_text(b'\xffok') == '\ufffdok'
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


def test_show_asks_for_the_properties_and_returns_only_those():
    calls = []

    def runner(argv):
        calls.append(argv)
        return 0, 'ActiveState=activating\nSubState=auto-restart\nLoadState=loaded\n', ''

    state = jr.show(runner, 'sglang-router.service', ('ActiveState', 'SubState', 'LoadState'))
    assert state == {'ActiveState': 'activating', 'SubState': 'auto-restart', 'LoadState': 'loaded'}
    assert calls == [['systemctl', 'show', 'sglang-router.service', '--no-pager', '-p', 'ActiveState,SubState,LoadState']]
    assert jr.show(lambda argv: (1, '', 'Failed to connect to bus'), 'x.service') is None
    full = jr.show(lambda argv: (0, SHOW_FAILED, ''), 'x.service')
    assert full['MainPID'] == 0 and full['Result'] == 'exit-code' and set(full) == set(jr.UNIT_PROPERTIES)


def test_journal_tail_of_a_unit():
    calls = []

    def runner(argv):
        calls.append(argv)
        return 0, b'Error starting router: boom\nbye\n', b''

    assert jr.journal_tail(runner, 'r.service', 2) == ['Error starting router: boom', 'bye']
    assert calls == [['journalctl', '-u', 'r.service', '-n', '2', '--no-pager', '-o', 'cat']]
