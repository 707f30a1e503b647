# -*- coding: utf-8 -*-
# Copyright: (c) 2026, ddtree.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one systemd reader: a unit's properties (``systemctl show``), its journal (``journalctl``),
its ExecStart= words, and what the unit state says about the service's death.

Parsing is pure (text in, data out) and separate from running commands, so the tests can
feed it journal output captured from lab hosts, bad bytes included. Commands go through
a ``runner(argv) -> (rc, stdout_bytes, stderr_bytes)`` callable: the module passes one
built on AnsibleModule.run_command, tests pass a fake.

Why _SYSTEMD_INVOCATION_ID: it names exactly one start of the unit, so lines left over from
an earlier (failed) start can never be taken for this one, and no clock comparison is
needed. Checked on the lab host (systemd 252 in a podman container, runc, cgroup v1
hybrid): the service's stdout/stderr lines, including those of its child processes, carry
_SYSTEMD_INVOCATION_ID, while PID 1's own messages about the unit ("Main process exited,
code=exited, status=1/FAILURE") carry INVOCATION_ID instead. The match ORs the two (``+``)
so both kinds are read.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re
import signal

UNIT_PROPERTIES = (
    'LoadState',
    'ActiveState',
    'SubState',
    'Result',
    'NRestarts',
    'ExecMainStatus',
    'ExecMainCode',
    'MainPID',
    'InvocationID',
    'ExecMainStartTimestampMonotonic',
    'ControlGroup',
    'FragmentPath',
)

_INT_PROPERTIES = ('NRestarts', 'ExecMainStatus', 'ExecMainCode', 'MainPID', 'ExecMainStartTimestampMonotonic')

# journalctl treats an empty value ("_SYSTEMD_INVOCATION_ID=") as matching every entry of
# the journal (seen on the lab host), so an id is checked before it goes on a command line.
_INVOCATION_ID = re.compile(r'^[0-9a-f]{32}$')

# colour codes some loggers write even when stdout is not a terminal
_ANSI = re.compile(r'\x1b\[[0-9;?]*[ -/]*[@-~]')

# siginfo codes systemd reports in ExecMainCode
_CLD_EXITED, _CLD_KILLED, _CLD_DUMPED = 1, 2, 3

# what systemd and shlex count as blanks between words (systemd's WHITESPACE)
_BLANKS = ' \t\n\r'


def exec_start_argv(unit_text):
    """The words of a unit file's (last non-empty) ExecStart=, as systemd splits them; [] if none.

    Only the quoting ddtree.sglang.systemd_quote writes needs to round-trip: double quotes,
    backslash escapes, and doubled '%' / '$'.
    """
    import shlex  # only this helper needs it

    command = ''
    # systemd ends a unit file's line only at \n, \r or NUL and strips only these blanks;
    # str.splitlines()/strip() would also break at \x0b, \x1c, U+2028 ... inside a quoted word
    for line in re.split('[\n\r\x00]', unit_text):
        line = line.strip(_BLANKS)
        if line.startswith('ExecStart='):
            command = line[len('ExecStart=') :].strip(_BLANKS) or command
    # systemd prefixes ("-", "@", "+", "!") change how it runs the command, not the words
    command = command.lstrip('-@+!:')
    try:
        words = shlex.split(command.replace('$$', '$').replace('%%', '%'))
    except ValueError:
        return []
    return words


def systemctl_show_argv(unit, properties=UNIT_PROPERTIES):
    return ['systemctl', 'show', unit, '--no-pager', '-p', ','.join(properties)]


def parse_systemctl_show(text, properties=UNIT_PROPERTIES):
    """``Key=Value`` lines -> dict; the numeric properties become ints (0 when empty).

    Every one of ``properties`` is in the result ('' or 0 when systemctl did not name it).
    """
    if isinstance(text, bytes):
        text = text.decode('utf-8', 'replace')
    state = {}
    for line in text.splitlines():
        key, sep, value = line.partition('=')
        if not sep or not key or key != key.strip():
            continue
        state[key] = value.strip()
    for key in _INT_PROPERTIES:
        if key in properties:
            try:
                state[key] = int(state.get(key) or 0)
            except ValueError:
                state[key] = 0
    for key in properties:
        state.setdefault(key, '')
    return state


def show(runner, unit, properties=UNIT_PROPERTIES):
    """The unit's properties (parse_systemctl_show), or None when systemctl fails."""
    rc, out, err = runner(systemctl_show_argv(unit, properties))
    if rc != 0:
        return None
    return parse_systemctl_show(out, properties)


def journal_tail_argv(unit, lines):
    """The last ``lines`` messages of a unit, whatever its invocation, as plain text."""
    return ['journalctl', '-u', unit, '-n', str(int(lines)), '--no-pager', '-o', 'cat']


def journal_tail(runner, unit, lines=15):
    dummy, out, dummy = runner(journal_tail_argv(unit, lines))
    if isinstance(out, bytes):
        out = out.decode('utf-8', 'replace')
    return out.splitlines()


def describe_exit(state):
    """How the main process ended, in words ("exited with status 1", "killed by SIGKILL")."""
    code = state.get('ExecMainCode') or 0
    status = state.get('ExecMainStatus') or 0
    if code == _CLD_EXITED:
        return 'exited with status %d' % status
    if code in (_CLD_KILLED, _CLD_DUMPED):
        try:
            name = signal.Signals(status).name
        except ValueError:
            name = 'signal %d' % status
        return ('killed by %s' if code == _CLD_KILLED else 'dumped core on %s') % name
    return 'stopped'


def unit_failure(state, baseline_restarts, first_pid):
    """Whether the unit shows the service has died or been restarted.

    Returns None while it still looks alive, else (cause, reason) with cause
    ``unit_not_found``, ``restarted`` or ``process_exited``. ``active`` alone proves
    nothing (field notes: it said active while the server was dying), so only evidence of
    death counts here; health is decided elsewhere.
    """
    if state.get('LoadState') == 'not-found':
        return 'unit_not_found', 'the unit is not loaded (LoadState=not-found)'
    active = state.get('ActiveState')
    sub = state.get('SubState')
    pid = state.get('MainPID') or 0
    restarts = state.get('NRestarts') or 0
    if sub == 'auto-restart':
        return 'restarted', 'the main process %s and systemd is restarting the unit (SubState=auto-restart)' % describe_exit(state)
    if restarts > baseline_restarts:
        return 'restarted', 'systemd restarted the unit %d time(s) since the check began (NRestarts=%d)' % (restarts - baseline_restarts, restarts)
    if first_pid and pid and pid != first_pid:
        return 'restarted', 'the main PID changed from %d to %d' % (first_pid, pid)
    if active in ('failed', 'inactive', 'deactivating'):
        return 'process_exited', 'the main process %s (ActiveState=%s, Result=%s)' % (describe_exit(state), active, state.get('Result') or '?')
    return None


def journal_argv(invocation_id, cursor=None):
    """journalctl for the lines of one invocation, after ``cursor`` when given."""
    if not _INVOCATION_ID.match(invocation_id or ''):
        raise ValueError('not a systemd invocation id: %r' % (invocation_id,))
    argv = [
        'journalctl',
        '_SYSTEMD_INVOCATION_ID=%s' % invocation_id,
        '+',
        'INVOCATION_ID=%s' % invocation_id,
        # --all: without it journalctl writes fields over 4096 bytes as null
        '-o',
        'json',
        '--all',
        '--no-pager',
        '--quiet',
    ]
    if cursor:
        argv.append('--after-cursor=%s' % cursor)
    return argv


def message_text(value):
    """MESSAGE as text. journalctl writes non-UTF-8 values as arrays of byte values."""
    if value is None:
        return ''
    if isinstance(value, list):
        if value and all(isinstance(v, int) for v in value):
            return bytes(bytearray(v & 0xFF for v in value)).decode('utf-8', 'replace')
        # a field that occurs more than once in an entry comes as a list of its values
        return '\n'.join(message_text(v) for v in value)
    if isinstance(value, bytes):
        return value.decode('utf-8', 'replace')
    if not isinstance(value, str):
        return str(value)
    return value


def message_lines(text):
    """Split a message into display lines: no colour codes, no progress-bar carriage returns."""
    text = _ANSI.sub('', text)
    lines = []
    for part in text.split('\n'):
        # tqdm redraws with \r; what is left after the last one is what a terminal shows
        part = part.rstrip('\r').split('\r')[-1].rstrip()
        if part:
            lines.append(part)
    return lines


def _int_or_none(value):
    try:
        return int(value)
    except (TypeError, ValueError, OverflowError):  # OverflowError: JSON's Infinity
        return None


def parse_journal_json(data):
    """Parse ``journalctl -o json`` output.

    Returns (entries, last_cursor, bad_lines). Each entry: cursor, realtime_us, pid,
    priority, from_systemd (PID 1's message about the unit), message, lines. Lines that are
    not JSON objects (a truncated last line, noise) are counted and skipped, never fatal.
    """
    if isinstance(data, bytes):
        data = data.decode('utf-8', 'replace')
    entries = []
    cursor = None
    bad = 0
    # one object per '\n'-ended line; str.splitlines() would also cut at U+2028, U+0085 ... which
    # journalctl writes unescaped inside a MESSAGE
    for raw in data.split('\n'):
        raw = raw.strip()
        if not raw:
            continue
        try:
            obj = json.loads(raw)
            if not isinstance(obj, dict):
                raise ValueError('not a JSON object')
            text = message_text(obj.get('MESSAGE'))
        except (ValueError, RecursionError):  # RecursionError: absurdly nested garbage
            bad += 1
            continue
        cursor_field = obj.get('__CURSOR')
        entry = {
            # journalctl's cursors are strings; anything else cannot be handed back to --after-cursor
            'cursor': cursor_field if isinstance(cursor_field, str) else None,
            'realtime_us': _int_or_none(obj.get('__REALTIME_TIMESTAMP')),
            'pid': _int_or_none(obj.get('_PID')),
            'priority': _int_or_none(obj.get('PRIORITY')),
            'from_systemd': 'INVOCATION_ID' in obj and '_SYSTEMD_INVOCATION_ID' not in obj,
            'message': text,
            'lines': message_lines(text),
        }
        entries.append(entry)
        if entry['cursor']:
            cursor = entry['cursor']
    return entries, cursor, bad


class JournalReader:
    """Reads one invocation's journal incrementally (a cursor between calls)."""

    def __init__(self, runner, invocation_id):
        self.runner = runner
        self.invocation_id = invocation_id
        self.cursor = None
        # (realtime_us, line) per line; the time serves "stuck in <phase> for N s"
        self.timed_lines = []
        self.last_error = None

    @property
    def lines(self):
        return [line for _realtime_us, line in self.timed_lines]

    def poll(self):
        """New entries since the last call ([] on a journalctl error, which is kept in last_error)."""
        rc, out, err = self.runner(journal_argv(self.invocation_id, self.cursor))
        if rc != 0:
            if isinstance(err, bytes):
                err = err.decode('utf-8', 'replace')
            self.last_error = 'journalctl exited %d: %s' % (rc, (err or '').strip())
            return []
        self.last_error = None
        entries, cursor, _bad = parse_journal_json(out)
        if cursor:
            self.cursor = cursor
        for entry in entries:
            for line in entry['lines']:
                self.timed_lines.append((entry['realtime_us'], line))
        return entries
