# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fuzz pass (hypothesis) over the flag renderer and the journal reader.

1. Any envelope either is refused (AnsibleFilterError) or renders to ONE ExecStart= line that
   splits back to exactly its words, with every '$' and '%' doubled. The split is checked
   against our model (systemd.exec_start_argv, shlex-based) and, where this machine
   has it, against systemd's own splitter: extract_first_word() of libsystemd-shared-252,
   with the flags config_parse_exec() uses.
2. Any journalctl output, bytes or JSON-ish records, parses without raising, and the
   verdict functions (classify, diagnose, phase_of, warnings) return their documented types.
3. server_args_from_argv / sizing_values never raise for any word list.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ctypes
import json
import os
import re

import pytest
from hypothesis import HealthCheck, example, given, settings, strategies as st

from ansible.errors import AnsibleFilterError
from ansible_collections.ddtree.sglang.plugins.filter.sglang_flags import sglang_argv, systemd_quote
from ansible_collections.ddtree.sglang.plugins.module_utils import systemd as jr
from ansible_collections.ddtree.sglang.plugins.module_utils import sglang_args
from ansible_collections.ddtree.sglang.plugins.module_utils import sglang_signatures as sg

FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
PREFIX = ['/venv/bin/python', '-m', 'sglang.launch_server']

# ---------------------------------------------------------------- systemd's own splitter
_LIBSYSTEMD_SHARED = '/usr/lib/x86_64-linux-gnu/systemd/libsystemd-shared-252.so'
# ExtractFlags of systemd 252 (src/basic/extract-word.h); other versions number them differently
_EXTRACT_CUNESCAPE = 1 << 1
_EXTRACT_UNQUOTE = 1 << 5


def _load_systemd_splitter():
    if not os.path.exists(_LIBSYSTEMD_SHARED):
        return None
    try:
        lib = ctypes.CDLL(_LIBSYSTEMD_SHARED)
        libc = ctypes.CDLL(None)
        extract = lib.extract_first_word
    except (OSError, AttributeError):
        return None
    extract.argtypes = [ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(ctypes.c_void_p), ctypes.c_char_p, ctypes.c_int]
    extract.restype = ctypes.c_int
    libc.free.argtypes = [ctypes.c_void_p]

    def split(command):
        """Words of an ExecStart= value as systemd 252 sees them after %-specifier and $-env expansion.

        config_parse_exec() splits with EXTRACT_UNQUOTE|EXTRACT_CUNESCAPE, then expands specifiers
        ('%%' -> '%') and, at exec time, environment variables ('$$' -> '$'); since every '%'
        and '$' we write is doubled, those expansions reduce to un-doubling.
        """
        buf = ctypes.create_string_buffer(command.encode('utf-8'))
        cursor = ctypes.c_char_p(ctypes.addressof(buf))
        words = []
        while True:
            word = ctypes.c_void_p()
            rc = extract(ctypes.byref(cursor), ctypes.byref(word), None, _EXTRACT_CUNESCAPE | _EXTRACT_UNQUOTE)
            if rc < 0:
                raise ValueError('systemd refused the line: %d' % rc)
            if rc == 0:
                return words
            text = ctypes.string_at(word.value).decode('utf-8')
            libc.free(word)
            words.append(text.replace('%%', '%').replace('$$', '$'))

    try:
        if split('/bin/x "a b" c\\\\d') != ['/bin/x', 'a b', 'c\\d']:
            return None
    except ValueError:
        return None
    return split


SYSTEMD_SPLIT = _load_systemd_splitter()

# ---------------------------------------------------------------- strategies
NASTY_CHARS = '"\'\\$%;# \t\n\r\x00\x0b\x0c\x1c\x1e\x85\u2028\u2029\xa0{}`|&<>*?~='
NASTY = list(NASTY_CHARS) + ['$$', '%%', '${X}', '$X', '%n', '\\;', '"\\"']
TEXT = st.text(alphabet=st.one_of(st.sampled_from(NASTY_CHARS), st.characters(codec='utf-8')), max_size=30)
TEXT_NASTY_HEAVY = st.lists(st.one_of(st.sampled_from(NASTY), TEXT), max_size=6).map(''.join)
VALID_KEY = st.from_regex(r'\A[a-z][a-z0-9_]{0,20}\Z')
KEY = st.one_of(VALID_KEY, VALID_KEY, TEXT, st.integers(), st.none())
SCALAR = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), TEXT, TEXT_NASTY_HEAVY)
VALUE = st.recursive(
    SCALAR, lambda inner: st.one_of(st.lists(inner, max_size=4), st.tuples(inner, inner), st.dictionaries(TEXT, inner, max_size=3)), max_leaves=8
)
ENVELOPE = st.one_of(st.dictionaries(KEY, VALUE, max_size=8), VALUE)
SAFE_VALUE = st.one_of(
    st.booleans(), st.integers(), st.floats(), TEXT_NASTY_HEAVY, st.lists(st.one_of(st.integers(), st.floats(), TEXT_NASTY_HEAVY), max_size=3)
)
# envelopes whose values carry no line break / NUL, so rendering must succeed
CLEAN_ENVELOPE = st.dictionaries(VALID_KEY, SAFE_VALUE, max_size=8).filter(lambda env: not any(c in repr(env) for c in ('\\n', '\\r', '\\x00')))


def _runs_are_even(line, char):
    return all(len(run) % 2 == 0 for run in re.findall(re.escape(char) + '+', line))


def _check_line(words):
    """The ExecStart= contract for argv words that contain no line break or NUL."""
    line = systemd_quote(PREFIX + words)
    assert not any(c in line for c in '\n\r\x00'), line
    # a trailing backslash would continue the unit file's line; a bare ';' would end the command
    assert not line.endswith('\\')
    assert ';' not in line.split(' ')
    assert _runs_are_even(line, '$') and _runs_are_even(line, '%'), line
    # exec_start_argv (shlex) is our model of systemd's splitting; it must round-trip exactly
    assert jr.exec_start_argv('[Unit]\nDescription=x\n[Service]\nExecStart=' + line + '\nRestart=no\n') == PREFIX + words
    if SYSTEMD_SPLIT is not None:
        assert SYSTEMD_SPLIT(line) == PREFIX + words
    return line


# ---------------------------------------------------------------- 1. flag renderer
@FUZZ
@given(ENVELOPE)
def test_any_envelope_is_refused_or_renders_one_exact_line(envelope):
    try:
        words = sglang_argv(envelope)
    except AnsibleFilterError:
        return
    assert isinstance(words, list) and all(isinstance(w, str) for w in words)
    # sglang_argv already refuses line breaks and NUL, so quoting must not fail
    _check_line(words)


@FUZZ
@given(CLEAN_ENVELOPE)
def test_clean_envelope_always_renders(envelope):
    words = sglang_argv(envelope)
    _check_line(words)


@FUZZ
@given(st.lists(TEXT_NASTY_HEAVY, max_size=6))
def test_systemd_quote_refuses_only_line_breaks_and_nul(words):
    if any(c in w for w in words for c in '\n\r\x00'):
        with pytest.raises(AnsibleFilterError):
            systemd_quote(PREFIX + words)
    else:
        _check_line(words)


def test_systemd_splitter_availability_is_known():
    # not an assertion about the lab: a record in the test log of which splitter checked the round trip
    if SYSTEMD_SPLIT is None:
        pytest.skip('libsystemd-shared-252 not here: round trip checked against the shlex model only')
    assert SYSTEMD_SPLIT('/bin/x "a\\"b" "%%" "$$X"') == ['/bin/x', 'a"b', '%', '$X']


@pytest.mark.parametrize('char', ['\x0b', '\x0c', '\x1c', '\x85', '\u2028', '\u2029'])
def test_exec_start_argv_keeps_a_quoted_word_with_a_non_newline_line_separator(char):
    # regression: str.splitlines() cut the ExecStart= line at these, systemd does not
    words = ['--served-model-name', 'a' + char + 'b']
    line = systemd_quote(PREFIX + words)
    assert jr.exec_start_argv('[Service]\nExecStart=' + line + '\n') == PREFIX + words


# ---------------------------------------------------------------- 2. journal reader
JSONISH = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), TEXT),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(TEXT, inner, max_size=3)),
    max_leaves=10,
)
MESSAGE = st.one_of(
    TEXT_NASTY_HEAVY,
    st.lists(st.integers(min_value=-300, max_value=300), max_size=40),
    st.lists(st.integers(0, 255), max_size=40).map(lambda b: b + [0xFF, 0xC3]),
    JSONISH,
    st.just("x" * 3000),
    st.sampled_from(
        [
            'torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB',
            'Traceback (most recent call last):',
            'ValueError: boom',
            '\x1b[31mRuntimeError: x\x1b[0m',
            'Load weight begin.',
            'Capture cuda graph begin.',
            'The server is fired up and ready to roll!',
            'Loading 50%|#####     | 5/10\rLoading 100%|##########| 10/10',
        ]
    ),
)
FIELD = st.one_of(TEXT, st.integers(), st.floats(), st.none(), JSONISH)
RECORD = st.fixed_dictionaries(
    {},
    optional={
        'MESSAGE': MESSAGE,
        '__CURSOR': FIELD,
        '__REALTIME_TIMESTAMP': FIELD,
        '_PID': FIELD,
        'PRIORITY': FIELD,
        'INVOCATION_ID': FIELD,
        '_SYSTEMD_INVOCATION_ID': FIELD,
    },
)


@st.composite
def journal_output(draw):
    lines = []
    for kind, record in draw(st.lists(st.tuples(st.integers(0, 5), RECORD), max_size=8)):
        if kind == 0:
            lines.append(draw(st.binary(max_size=60)))
        elif kind == 1:  # truncated last line
            text = json.dumps(record)
            lines.append(text[: draw(st.integers(0, len(text)))].encode('utf-8'))
        elif kind == 2:
            lines.append(json.dumps(draw(JSONISH)).encode('utf-8'))
        else:
            lines.append(json.dumps(record, ensure_ascii=kind == 3).encode('utf-8', 'surrogatepass'))
    return draw(st.sampled_from([b'\n', b'\r\n'])).join(lines)


def _check_verdict(lines, server_args=None):
    assert sg.phase_of(lines) in sg.PHASES
    matches = sg.classify(lines, server_args)
    assert isinstance(matches, list)
    for match in matches:
        assert isinstance(match['diagnosis'], str) and isinstance(match['advice'], str)
        assert 0 <= match['index'] < len(lines)
    found = sg.warnings(lines)
    assert isinstance(found, list) and all(isinstance(w, str) for w in found)
    cause, diagnosis, advice, fatal_lines = sg.diagnose(lines, server_args)
    assert (cause is None) == (diagnosis is None) == (advice is None)
    assert cause is None or isinstance(cause, str) and isinstance(diagnosis, str) and isinstance(advice, str)
    assert isinstance(fatal_lines, list) and all(isinstance(x, str) for x in fatal_lines)


def _check_entries(entries, bad):
    assert isinstance(bad, int) and bad >= 0
    for entry in entries:
        assert isinstance(entry['message'], str)
        assert isinstance(entry['from_systemd'], bool)
        for key in ('realtime_us', 'pid', 'priority'):
            assert entry[key] is None or isinstance(entry[key], int)
        assert all(isinstance(x, str) and x and '\n' not in x and '\r' not in x for x in entry['lines'])


@FUZZ
@given(st.one_of(st.binary(max_size=400), journal_output()))
@example(b'{"__CURSOR":NaN}')  # found by this test: a non-string cursor reached --after-cursor
def test_any_journal_output_parses_and_gives_a_verdict(data):
    entries, cursor, bad = jr.parse_journal_json(data)
    _check_entries(entries, bad)
    reader = jr.JournalReader(lambda argv: (0, data, b''), 'd702c87bd75b4c0d814920a15dab0820')
    assert reader.poll() == entries
    assert all(isinstance(t, tuple) and isinstance(t[1], str) for t in reader.timed_lines)
    _check_verdict(reader.lines, sglang_args.server_args_from_argv(['--context-length', 'nan', '--mem-fraction-static', 'inf']))
    if cursor is not None:
        assert cursor == [e['cursor'] for e in entries if e['cursor']][-1]


@FUZZ
@given(st.lists(st.fixed_dictionaries({'MESSAGE': TEXT_NASTY_HEAVY, '__CURSOR': TEXT}), max_size=6), st.booleans())
def test_every_well_formed_record_survives_parsing(records, ascii_only):
    # journalctl writes one object per '\n'-ended line, non-ASCII (U+2028 included) unescaped
    data = ''.join(json.dumps(r, ensure_ascii=ascii_only) + '\n' for r in records).encode('utf-8')
    entries, cursor, bad = jr.parse_journal_json(data)
    assert bad == 0
    assert [e['message'] for e in entries] == [r['MESSAGE'] for r in records]


@settings(FUZZ, max_examples=40)
@given(st.lists(st.one_of(TEXT_NASTY_HEAVY, MESSAGE.map(jr.message_text)), max_size=10))
def test_any_lines_give_a_verdict(lines):
    _check_verdict(lines)


@pytest.mark.parametrize(
    'line',
    [
        '{"__REALTIME_TIMESTAMP": Infinity, "MESSAGE": "x"}',  # int(inf): OverflowError
        '{"_PID": -Infinity, "PRIORITY": NaN, "MESSAGE": "x"}',
        '[' * 100000,  # json.loads: RecursionError
        '{"MESSAGE": ' + '[' * 5000 + ']' * 5000 + '}',
    ],
)
def test_journal_garbage_regressions_do_not_crash(line):
    entries, cursor, bad = jr.parse_journal_json(line.encode('ascii') + b'\n{"MESSAGE": "ok", "__CURSOR": "c1"}\n')
    assert entries[-1]['message'] == 'ok' and cursor == 'c1'
    assert bad + len(entries) == 2


def test_journal_record_with_line_separator_in_message_is_kept():
    # regression: str.splitlines() cut this record in two and both halves were counted bad
    entries, cursor, bad = jr.parse_journal_json('{"MESSAGE": "a\u2028b", "__CURSOR": "c"}\n'.encode('utf-8'))
    assert (len(entries), cursor, bad) == (1, 'c', 0)


# ---------------------------------------------------------------- 3. unit flags -> sizing
WORD = st.one_of(
    TEXT,
    st.sampled_from(
        [
            '--context-length',
            '--mem-fraction-static',
            '--max-running-requests',
            '--context-length=',
            '--',
            'inf',
            '-inf',
            'nan',
            '1e400',
            '-1e400',
            '0',
            '-5',
            '1e308',
            '0x10',
            '1_000',
            '4096',
        ]
    ),
)


@FUZZ
@given(st.lists(WORD, max_size=20))
def test_server_args_and_sizing_never_raise(argv):
    args = sglang_args.server_args_from_argv(argv)
    assert isinstance(args, dict)
    assert all(v is True or isinstance(v, str) for v in args.values())
    values = sg.sizing_values(args)
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in values.items())
    _check_verdict(['torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB'], args)


@pytest.mark.parametrize('value', ['inf', '-inf', 'nan', '1e400'])
def test_sizing_values_with_non_finite_flags_regression(value):
    # regression: int(float('inf')) raised OverflowError and took diagnose() down with it
    values = sg.sizing_values({'context_length': value, 'max_running_requests': value, 'mem_fraction_static': value})
    assert values['context_length_down'] == 'a smaller value'
    assert values['max_running_requests_down'] == '4'
    assert 'mem_fraction_static_up' not in values
