# -*- coding: utf-8 -*-
# Copyright: (c) 2026, ddtree.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The verdict's classifier: which journal line of a failing SGLang server is the cause, in which start-up phase.

The wording itself, cause by cause, is the table in sglang_signature_table (SIGNATURES, re-exported
here); this file holds the rules over it: start-up phases, prefixes and warning levels, the
traceback a death follows, and diagnose(). Everything here is pure (no I/O) so that it can be
unit-tested with journal lines copied from real failures.

Over 400 lines with a reason: the rules read one another (the phase a frame shows decides which
table entries may match; the cause traceback depends on what matched), so one file keeps them
in the order diagnose() applies them.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math
import re
import string

from ansible_collections.ddtree.sglang.plugins.module_utils.sglang_signature_table import SIGNATURES

# Start-up phases in the order SGLang goes through them. ``starting`` covers argument
# parsing, imports and distributed init, which print nothing we can key on reliably.
PHASES = (
    'starting',
    'loading_weights',
    'sizing_pools',
    'pools_sized',
    'capturing_cuda_graph',
    'binding',
    'ready',
)

# Wording SGLang prints when it enters a phase (see docs/dev/INTERFACES.md). Each TP rank
# prints its own copy and ranks interleave, so phase_of() keeps the furthest phase seen
# rather than the last line's.
_PHASE_MARKERS = (
    (re.compile(r'Load weight begin\b'), 'loading_weights'),
    (re.compile(r'Load weight end\b'), 'sizing_pools'),
    (re.compile(r'KV Cache is allocated\b'), 'pools_sized'),
    (re.compile(r'Memory pool end\b'), 'pools_sized'),
    # older builds: "Capture cuda graph begin."; 0.5.23 names the graph: "Capture target decode CUDA graph
    # begin." (model_runner_components/cuda_graph_setup.py), then prefill / draft captures follow in turn
    # on Ascend the graph runner says "Capture npu graph begin."
    (re.compile(r'Capture (?:[\w-]+ ){0,3}(?:cuda|npu) graph begin\b', re.IGNORECASE), 'capturing_cuda_graph'),
    # the failure line itself says where it was: a log that starts at it (no begin line) was capturing
    (re.compile(r'Capture (?:[\w-]+ ){0,3}cuda graph failed\b', re.IGNORECASE), 'capturing_cuda_graph'),
    # after capture the server still has to start its tokenizer manager and bind the port
    (re.compile(r'Capture (?:[\w-]+ ){0,3}cuda graph end\b', re.IGNORECASE), 'binding'),
    (re.compile(r'Uvicorn running on '), 'binding'),
    (re.compile(r'The server is fired up and ready to roll'), 'ready'),
)

_PHASE_RANK = dict((name, rank) for rank, name in enumerate(PHASES))


# With no phase line yet (a journal that starts mid-way, a build that prints none), the frames of the traceback
# being printed tell the phase: SGLang's own function names (model_runner.py, memory_pool.py, cuda_graph_runner.py,
# scheduler.py, tp_worker_overlap_thread.py), vLLM's CacheEngine._allocate_kv_cache and torch's
# CUDAGraph.capture_begin/_end. A start-up frame wins over a forward frame (capture and warmup run the model's
# forward too).
_FRAME_LINE = re.compile(r'(?:\bFile (?:"[^"]*", line \d+|\[[^\]]*\]\([^)]*\))|^\s*line \d+), in (?:[\w<>]+\.)*(?P<func>[\w<>]+)')
_FRAME_PHASES = (
    (
        re.compile(
            r'^(?:capture|capture_one_batch_size|init_cuda_graphs|init_device_graphs|init_piecewise_cuda_graphs|'
            r'init_cuda_graph_state|_dummy_run|_flashinfer_autotune|capture_begin|capture_end)$'
        ),
        'capturing_cuda_graph',
    ),
    (
        re.compile(
            r'^(?:init_memory_pool|_create_buffers|init_kv_cache_configurator|profile_max_num_token|_allocate_kv_cache|'
            r'_?init_\w*_pool)$'
        ),
        'sizing_pools',
    ),
    # after the pools, before the graphs: the attention backend's workspace (ModelRunner.initialize)
    (re.compile(r'^init_attention_backend$'), 'pools_sized'),
    (re.compile(r'^(?:load_model|load_weights|load_weights_and_postprocess|_initialize_model)$'), 'loading_weights'),
    (re.compile(r'^(?:forward_thread_func|event_loop\w*|run_batch|forward\w*|\w+_forward)$'), 'ready'),
)


UNCLASSIFIED = 'unclassified'

_TRACEBACK_START = re.compile(r'Traceback \(most recent call last\):')
# the exception line that ends a traceback: "pkg.mod.SomeError: text" or a bare name
_EXCEPTION_LINE = re.compile(r'^(?:\[[^\]]*\]\s*)?(?:[A-Za-z_][\w.]*\.)?(?:[A-Za-z_]\w*)?(?:Error|Exception|Exit|Interrupt)\b(?::.*)?$')
_ARGPARSE_USAGE = re.compile(r'^usage: ')
# a line made only of ^ and ~ (Python 3.11's markers under the blamed code) or nothing, after a log prefix such
# as "[rank1]:", "(WorkerDict pid=1)", "name  |" or "[date] ERROR:"
_FILLER_LINE = re.compile(r'^(?:\[[^\]]*\]:?(?:\s*ERROR:)?|\([^)]*\)|[\w.-]+\s+\|)?[\s^~]*$')

# ---- When one journal line decides the verdict on its own: the rule, in this one place --------------------------------
# (docs/verdict-and-failures.md#when-a-line-decides-alone says it in words)
# 1. A warning-level line never fails a server and never names its cause. Its level says warning (_LEVEL_WARNING, read
#    from the log prefix: vLLM's "WARNING 09-04 04:55:04 file.py:180]", Python logging's "WARNING:" and "- WARNING -",
#    torch's "[W1203 ...]", glog's "W1203", NCCL's "NCCL WARN", the warnings module's "file.py:12: FooWarning:"), or it
#    is one of the messages SGLang prints and goes on (_GOES_ON). It comes back in notable_lines() with its class.
#    The one exception is a pattern's fatal_with: a retraction is the cause once the server died with it.
# 2. A line of a fatal cause decides at once, while the process runs and the API may answer, only when it is an error
#    that ends SGLang: the exception line that closes a traceback (_EXCEPTION_LINE), or a message printed as the
#    server goes down (an entry's or pattern's 'ends': argparse's error, "Received sigquit", "Not enough memory",
#    the watchdog, systemd's OOM-kill line).
# 3. Any other line of a fatal cause is evidence: it names the cause once the unit died or the API failed, and is
#    reported with the warnings while the server serves.
# log prefixes before the message: "(WorkerDict pid=12)", "[2025-03-07 21:49:33 TP13]", "[rank0]:"
_PREFIX_GROUP = re.compile(r'^\s*(?:\((?P<paren>[^)]*)\)|\[(?P<bracket>[^\]]*)\]):?\s*')
# torch's c10 logging "[W1203 12:00:00.123 socket.cpp:...]" ("[W socket.cpp:...]" before torch 2.4)
_BRACKET_WARNING = re.compile(r'^W(?:\d{4})?(?: |$)')
_LEVEL_WARNING = re.compile(
    r'^(?:'
    # vLLM "WARNING 09-04 04:55:04 ...", Python logging "WARNING:root:..." / "WARNING ...", "WARN ..."
    r'WARN(?:ING)?\b'
    # glog "W1203 12:00:00.123456 ..."
    r'|W\d{4} \d\d:\d\d'
    # Python logging and loguru with a time first: "2025-01-01 12:00:00,123 - name - WARNING - ...", "... | WARNING | ..."
    r'|\d{4}-\d\d-\d\d[ T][\d:.,]+\s*(?:[-|]\s*(?:[\w.]+\s*[-|]\s*)?)?WARN(?:ING)?\b'
    # NVIDIA/nccl's debug lines "host:pid:tid [0] NCCL WARN ..."
    r'|\S+ \[\d+\] NCCL WARN\b'
    r')'
)
# Python's warnings module: "/path/file.py:123: DeprecationWarning: ..."
_PY_WARNING = re.compile(r'\.py:\d+: \w*Warning: ')
# messages SGLang (and its libraries) print and go on
_GOES_ON = re.compile(
    # sgl-project/sglang python/sglang/srt/models/registry.py::import_model_classes (logger.warning, the model is skipped)
    r'Ignore import error when loading sglang\.'
    # sgl-project/sglang python/sglang/srt/managers/scheduler.py::update_running_batch (requests retracted, re-queued)
    r'|KV cache pool is full\. Retract requests|Decode out of memory happened'
    # deprecations of flags and APIs: a notice, never a failure
    r'|\b(?:is|are) deprecated\b'
)


def _prefixes(line):
    """(the bracketed prefixes of a journal line, at most four: "[date TP0]", "(pid=1)", "[rank0]:"; its message)."""
    text, brackets = line, []
    for _i in range(4):
        found = _PREFIX_GROUP.match(text)
        if not found or found.end() == 0:
            break
        brackets.append(found.group('bracket') or '')
        text = text[found.end() :]
    return brackets, text


def message_of(line):
    """The message of a journal line without its log prefixes ("[date TP0]", "(pid=1)", "[rank0]:")."""
    return _prefixes(line)[1]


def is_warning_level(line):
    """Whether a line is a warning by its level or by being one of the messages SGLang prints and goes on (rule 1)."""
    brackets, text = _prefixes(line)
    if any(_BRACKET_WARNING.match(bracket) for bracket in brackets):
        return True
    return bool(_LEVEL_WARNING.match(text) or _PY_WARNING.search(text) or _GOES_ON.search(text))


def _ends_sglang(entry, options, line):
    """Whether a fatal match is an error that ends SGLang (rule 2): an exception line, or a message it goes down with."""
    return bool(options.get('ends', entry.get('ends')) or _EXCEPTION_LINE.match(message_of(line)))


_MAX_FATAL_LINES = 60
_TRACEBACK_LOOKBACK = 200
_UNCLASSIFIED_TAIL = 25


# Signature regexes are unanchored and some backtrack (quadratic on one huge line); SGLang's
# real lines are short, so only this much of each line is matched.
MAX_LINE_CHARS = 4096


# Ray prefixes each line of an actor's output with "(ActorName pid=N[, ip=A]) " (SGLang run by verl, OpenRLHF, ...),
# coloured on a terminal (ray-project/ray python/ray/_private/worker.py::print_worker_logs, colorama)
_RAY_PREFIX = re.compile(r'^\([\w.:-]+ pid=\d+(?:, ip=[\w.:-]+)?\) ')
# terminal colours (SGR escape sequences): Ray's prefix, uvicorn's and loguru's levels on a terminal
_ANSI_SGR = re.compile(r'\x1b\[[0-9;]*m')
# `docker logs --timestamps` and `kubectl logs --timestamps` put an RFC 3339 time (nanoseconds, UTC) and a space before
# each line (moby/moby daemon/logger: jsonfilelog's time as time.RFC3339Nano); a unit's journal keeps its time apart
_RUNTIME_TIMESTAMP = re.compile(r'^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z ')
# `docker compose up` and `docker compose logs` put the service's name, padded, and "| " before each line
# (docker/compose pkg/formatter/logs.go, LogConsumer)
_COMPOSE_PREFIX = re.compile(r'^[\w.-]+ *\| ')


def _clipped(lines):
    """Each line at most MAX_LINE_CHARS long, without terminal colours, a container runtime's timestamp or Ray's actor
    prefix, and without the indent every non-blank line shares (a log pasted as an indented block; a journal's lines share
    none)."""
    lines = [_RAY_PREFIX.sub('', _RUNTIME_TIMESTAMP.sub('', _COMPOSE_PREFIX.sub('', _ANSI_SGR.sub('', line[:MAX_LINE_CHARS])))) for line in lines]
    indents = [len(line) - len(line.lstrip(' ')) for line in lines if line.strip()]
    common = min(indents) if indents else 0
    return [line[common:] for line in lines] if common else lines


def compile_pattern(pattern):
    """A pattern of the table -> (regex, options); a plain string has no options."""
    if isinstance(pattern, dict):
        options = dict((k, v) for k, v in pattern.items() if k not in ('re', 'source'))
        return re.compile(pattern['re']), options
    return re.compile(pattern), {}


def _compile_table(table):
    compiled = []
    for entry in table:
        item = dict(entry)
        item['regexes'] = tuple(compile_pattern(p) for p in entry['patterns'])
        compiled.append(item)
    return tuple(compiled)


_COMPILED = _compile_table(SIGNATURES)
_BY_ID = dict((entry['id'], entry) for entry in _COMPILED)


class _Defaulting(string.Formatter):
    """Formats a template, replacing names the match did not capture with a fallback."""

    def __init__(self, defaults):
        string.Formatter.__init__(self)
        self.defaults = defaults

    def get_value(self, key, args, kwargs):
        value = kwargs.get(key)
        if value in (None, ''):
            value = self.defaults.get(key, '?')
        return value


def _number(text):
    try:
        value = float(text)
    except (TypeError, ValueError):
        return None
    # 'inf' / 'nan' parse as floats but int() of them raises
    return value if not math.isinf(value) and not math.isnan(value) else None


def sizing_values(server_args):
    """Values advice templates may name: the unit's own flags, and nudges from them in the right direction."""
    args = dict((k, v) for k, v in (server_args or {}).items() if v is not True)
    values = dict((k, str(v)) for k, v in args.items())
    unset = 'unset (SGLang picks it)'
    mfs = _number(args.get('mem_fraction_static'))
    if mfs is not None:
        values['mem_fraction_static_up'] = '%.2f' % min(0.95, mfs + 0.03)
        values['mem_fraction_static_down'] = '%.2f' % max(0.5, mfs - 0.05)
    context = _number(args.get('context_length'))
    values['context_length_down'] = str(max(4096, int(context) // 4)) if context else 'a smaller value'
    running = _number(args.get('max_running_requests'))
    values['max_running_requests_down'] = str(max(1, int(running) // 2)) if running else '4'
    # the same flag has several spellings (server_args.py aliases)
    for name, aliases in (('tp_size', ('tensor_parallel_size', 'tp')), ('model_path', ('model',))):
        for alias in aliases:
            if alias in values:
                values.setdefault(name, values[alias])
    # the address the server's warmup requests go to (ServerArgs.url(): a wildcard --host means loopback in
    # 0.5.x, the wildcard itself in older builds) must stay off any HTTP proxy
    host = values.setdefault('host', '127.0.0.1')
    values.setdefault('port', '30000')
    no_proxy = [host, '127.0.0.1', 'localhost', '::1' if ':' in host else '']
    values['no_proxy_hosts'] = ','.join(h for i, h in enumerate(no_proxy) if h and h not in no_proxy[:i])
    for name in (
        'context_length',
        'max_running_requests',
        'mamba_full_memory_ratio',
        'cuda_graph_max_bs',
        'speculative_algorithm',
        'chunked_prefill_size',
        'tp_size',
        'dist_init_addr',
        'nnodes',
        'dist_timeout',
    ):
        values.setdefault(name, unset)
    return values


def render(template, groups, defaults=None):
    """Fill an advice or diagnosis template; never raises on a missing name."""
    try:
        return _Defaulting(defaults or {}).format(template, **(groups or {})).strip()
    except (ValueError, IndexError):
        return template


def signature(sig_id):
    """The table entry for an id (without compiled regexes), or None."""
    entry = _BY_ID.get(sig_id)
    if entry is None:
        return None
    return dict((k, v) for k, v in entry.items() if k != 'regexes')


def furthest_phase(current, line):
    """``current`` or the phase ``line`` marks, whichever is further into start-up."""
    for regex, phase in _PHASE_MARKERS:
        if not regex.search(line):
            continue
        # a capture that begins after another one ended (piecewise after decode graphs, draft after
        # target) is capture again, not serving: an OOM there is the graphs' memory, not traffic's
        if _PHASE_RANK[phase] > _PHASE_RANK[current] or (phase, current) == ('capturing_cuda_graph', 'binding'):
            return phase
    return current


def phase_of(lines):
    """The furthest start-up phase the lines show (``starting`` when none)."""
    phase = PHASES[0]
    for line in _clipped(lines):
        phase = furthest_phase(phase, line)
    return phase


def _frame_phase(current, line):
    """``current`` (phase evidence of the traceback being printed, or None) with the frame on ``line`` added."""
    frame = _FRAME_LINE.search(line)
    if not frame:
        return current
    for regex, phase in _FRAME_PHASES:
        if regex.match(frame.group('func')):
            if current is None or current == 'ready' or (phase != 'ready' and _PHASE_RANK[phase] > _PHASE_RANK[current]):
                return phase
            return current
    return current


def _match_is_fatal(entry, options, groups):
    """Whether one match counts as fatal: the entry's, unless the pattern's options say otherwise."""
    if 'fatal' in options:
        return options['fatal']
    for name, limit in options.get('fatal_at_most', {}).items():
        value = _number(groups.get(name))
        if value is None or value > limit:
            return False
    return entry['fatal']


def classify(lines, server_args=None):
    """Every signature match in ``lines``, in line order.

    Returns a list of dicts: id, fatal, priority, index (line number in ``lines``), line,
    phase (start-up phase when the line was printed), groups, diagnosis, advice.
    A line may match several signatures (an OOM inside 'Capture cuda graph failed').
    """
    lines = _clipped(lines)
    matches = []
    promotable = []
    phase = PHASES[0]
    frames = None  # the phase the frames of the traceback being printed show
    sizing = sizing_values(server_args)
    for index, line in enumerate(lines):
        phase = furthest_phase(phase, line)
        frames = None if _TRACEBACK_START.search(line) else _frame_phase(frames, line)
        # a start-up frame of the traceback tells where its process failed; the phase lines are the furthest any rank
        # reached (ranks interleave), so they tell it for a traceback whose frames name no start-up step. Forward
        # frames alone say little before serving (profiling, capture and warmup run the model's forward too)
        here = frames if frames is not None and (frames != 'ready' or phase == PHASES[0]) else phase
        for entry in _COMPILED:
            when = entry.get('when_phase')
            if when and here not in when:
                continue
            for regex, options in entry['regexes']:
                found = regex.search(line)
                if not found:
                    continue
                groups = dict((k, v.strip()) for k, v in found.groupdict().items() if v)
                # the journal's own numbers first, then the unit's flags, then the entry's fallbacks
                defaults = dict(entry.get('defaults', {}))
                defaults.update(sizing)
                warning = is_warning_level(line)
                fatal = _match_is_fatal(entry, options, groups) and not warning
                match = {
                    'id': entry['id'],
                    'fatal': fatal,
                    'decides': fatal and _ends_sglang(entry, options, line),
                    'warning_level': warning,
                    'priority': options.get('priority', entry['priority']),
                    'index': index,
                    'line': line,
                    'phase': here,
                    'groups': groups,
                    'diagnosis': render(entry['diagnosis'], groups, defaults),
                    'advice': render(entry['advice'], groups, defaults),
                }
                matches.append(match)
                if not match['fatal'] and options.get('fatal_with'):
                    promotable.append((match, options['fatal_with']))
                break
    # a warning of a cause is the cause when the server died with it (a later fatal line of a cascade)
    for match, cascades in promotable:
        if any(m['fatal'] and m['id'] in cascades and m['index'] > match['index'] for m in matches):
            match['fatal'] = True
    return matches


def thread_of(url):
    """The thread or repository file a real log comes from: one file at two commits is one source."""
    return re.sub(r'/blob/[^/]+/', '/blob/-/', url)


def pattern_support(failures, healthy=()):
    """{(signature id, pattern index): set of threads} whose real logs hold a line the pattern matches.

    failures: (class, url, lines) of real failure logs; healthy: (url, lines) of real healthy ones. A pattern that
    names a failure counts the failure logs of its own class; a warning's pattern (the entry's or its own fatal is
    False) counts every log, healthy ones too. The catalogue asks each pattern for two threads or a cited source.
    """
    logs = [(cls, url, _clipped(lines)) for cls, url, lines in failures] + [(None, url, _clipped(lines)) for url, lines in healthy]
    found = {}
    for entry in _COMPILED:
        for index, (regex, options) in enumerate(entry['regexes']):
            warning = not entry['fatal'] or options.get('fatal') is False
            found[(entry['id'], index)] = set(
                thread_of(url) for cls, url, lines in logs if (warning or cls == entry['id']) and any(regex.search(line) for line in lines)
            )
    return found


def pattern_source(pattern):
    """The source line a pattern cites ('' when it cites none)."""
    return pattern.get('source', '') if isinstance(pattern, dict) else ''


def deciding(lines, server_args=None):
    """The first match that decides the verdict on its own (rule 2), or None."""
    for match in classify(lines, server_args):
        if match['decides']:
            return match
    return None


_MAX_NOTABLE = 20


def notable_lines(lines, server_args=None):
    """What a live server's journal holds that decides nothing: every warning-level line (rule 1) and every line of
    evidence (rule 3), each once ({'line', 'class'}: class is a signature id, or None), at most _MAX_NOTABLE; each line as
    the journal holds it (only clipped to MAX_LINE_CHARS)."""
    journal = [line[:MAX_LINE_CHARS] for line in lines]
    lines = _clipped(lines)
    classes = {}
    for match in classify(lines, server_args):
        if not match['decides']:
            classes.setdefault(match['index'], match['id'])
    seen, notable = set(), []
    for index, line in enumerate(lines):
        if index not in classes and not is_warning_level(line):
            continue
        key = _strip_prefix(line)
        if key in seen:
            continue
        seen.add(key)
        notable.append({'line': journal[index], 'class': classes.get(index)})
        if len(notable) >= _MAX_NOTABLE:
            break
    return notable


def warnings(lines):
    """Matches of the warning entries (ignored flags), one line each, duplicates from TP ranks dropped."""
    seen = []
    for match in classify(lines):
        # warnings of entries that are warnings; a fatal cause's own warning line (retraction) is not a flag
        if not match['fatal'] and not _BY_ID[match['id']]['fatal'] and match['line'] not in seen:
            seen.append(match['line'])
    return seen


def _strip_prefix(line):
    # "[2026-11-29 09:00:00 TP0] text" -> "text", so TP ranks' copies compare equal
    return re.sub(r'^\[[^\]]*\]\s*', '', line)


def _block_around(lines, index):
    """The lines that explain a match: its traceback (or argparse usage) through the exception line."""
    start = index
    for i in range(index, max(-1, index - _TRACEBACK_LOOKBACK), -1):
        if _TRACEBACK_START.search(lines[i]) or _ARGPARSE_USAGE.search(lines[i]):
            start = i
            break
    end = index
    # an exception chain or wrapped message continues on indented lines
    while end + 1 < len(lines) and end - index < 5 and lines[end + 1][:1] in (' ', '\t'):
        end += 1
    return list(range(start, end + 1))


def _is_filler(line):
    """A caret line (Python 3.11 prints ^ and ~ under the code it blames) or a blank one, behind any log prefix."""
    return bool(_FILLER_LINE.match(line))


def last_traceback(lines):
    """The last traceback in ``lines`` (at most its last lines), or [] when there is none.

    It ends at its exception line; caret and blank lines are never its last line. Without a "Traceback" line,
    the frames above the last exception line are the traceback.
    """
    lines = _clipped(lines)
    start = None
    for i in range(len(lines) - 1, -1, -1):
        if _TRACEBACK_START.search(lines[i]):
            start = i
            break
    if start is None:
        # a paste (or a journal cut) may have lost the "Traceback" line: the frames above the exception stand in
        return _cause_traceback(lines, set(), len(lines) - 1)
    end = len(lines) - 1
    for i in range(start + 1, len(lines)):
        if _EXCEPTION_LINE.match(lines[i]):
            end = i
            break
    while end > start and _is_filler(lines[end]):
        end -= 1
    block = lines[start : end + 1]
    if len(block) > _UNCLASSIFIED_TAIL:
        block = [block[0], '...'] + block[-(_UNCLASSIFIED_TAIL - 2) :]
    return block


# the signature of a child's death, whose cause the child printed before it
_CONSEQUENCE = 'child_process_died'


def _cause_traceback(lines, matched, last):
    """The last traceback that starts at or before line ``last`` (the death: a launcher's or a harness's traceback
    after it reports the death) and ends in an exception line no fatal signature matched and that is no warning; [] when
    none. Its start is its "Traceback" line, or, where a paste lost that line, the first of the frames above the exception."""
    for end in range(len(lines) - 1, 0, -1):
        if end in matched or not _EXCEPTION_LINE.match(lines[end]) or is_warning_level(lines[end]):
            continue
        start, framed, index = None, False, end - 1
        # up through the traceback's indented frame, code and caret lines to its "Traceback" line
        while index >= 0 and end - index < _TRACEBACK_LOOKBACK:
            if _TRACEBACK_START.search(lines[index]):
                start = index
                break
            if _FRAME_LINE.search(lines[index]):
                framed = True
            elif lines[index][:1] not in (' ', '\t'):
                break
            index -= 1
        if start is None and framed:
            start = index + 1
        if start is None or start > last:
            continue
        block = lines[start : end + 1]
        if len(block) > _UNCLASSIFIED_TAIL:
            block = [block[0], '...'] + block[-(_UNCLASSIFIED_TAIL - 2) :]
        return block
    return []


# a C++ exception nobody caught (libstdc++'s verbose terminate handler, then its what()), and CPython's fault handler
_TERMINATE = re.compile(r"terminate called after throwing an instance of '[^']+'")
_WHAT = re.compile(r'^\s*what\(\):\s')
_FATAL_PYTHON = re.compile(r'^Fatal Python error: \w+')
# a fatal signal as CPython's faulthandler names it (Python/faulthandler.c, faulthandler_fatal_error), or as tvm_ffi's
# handler does (apache/tvm-ffi src/ffi/backtrace.cc::TVMFFISegFaultHandler: flashinfer loads it into SGLang; it prints
# the banner and the native frames, then raises the signal again): the process is gone
_FATAL_SIGNAL = re.compile(
    r'^(?:Fatal Python error: (?:Segmentation fault|Bus error|Floating point exception|Illegal instruction|'
    r'Aborted)|!!!!!!! Segfault encountered !!!!!!!)$'
)
# tvm_ffi's native frames under its banner
_NATIVE_FRAME = re.compile(r'^\s+File "<unknown>", line 0, in ')
_NATIVE_FRAMES_SHOWN = 4


def native_abort(lines):
    """The last native abort's lines (the terminate line, its what(), CPython's "Fatal Python error"), else the last fatal
    signal faulthandler or tvm_ffi named (a segmentation fault) with the native frames under it, [] when none."""
    for index in range(len(lines) - 1, -1, -1):
        if _TERMINATE.search(lines[index]):
            block = [lines[index]]
            for line in lines[index + 1 : index + 4]:
                if _WHAT.match(line) or _FATAL_PYTHON.match(line):
                    block.append(line)
                elif line.strip():
                    break
            return block
    for index in range(len(lines) - 1, -1, -1):
        if _FATAL_SIGNAL.match(_strip_prefix(lines[index]).strip()):
            frames = []
            for line in lines[index + 1 : index + 1 + _NATIVE_FRAMES_SHOWN]:
                if not _NATIVE_FRAME.match(line):
                    break
                frames.append(line)
            return [lines[index]] + frames
    return []


def _exception_of(block):
    """What the unclassified diagnosis quotes: the exception line, or the traceback's last line when it has none."""
    last = _strip_prefix(block[-1]).strip()
    if len(block) > 1 and _EXCEPTION_LINE.match(block[-1]):
        return last
    return '%s (no exception line follows the traceback)' % last


def _has_required(match, matches):
    """Whether the lines give what the match's entry requires (its 'requires': named groups some match of it filled)."""
    required = _BY_ID[match['id']].get('requires', ())
    found = set(name for other in matches if other['id'] == match['id'] for name in other['groups'])
    return all(name in found for name in required)


def diagnose(lines, server_args=None):
    """Pick the cause of a failure from journal lines.

    Returns (cause, diagnosis, advice, fatal_lines). cause is a signature id, ``unclassified``
    when there is only a traceback nobody recognises, or None when nothing fatal shows.
    The most specific fatal match wins (highest priority, then the earliest line, since the
    first error usually causes the later ones); numbers it lacks come from other lines of the
    same cause (a warmup's "Initialization failed" line, then its HTTP status).
    """
    lines = _clipped(lines)
    matches = classify(lines, server_args)
    fatal = [m for m in matches if m['fatal'] and _has_required(m, matches)]
    if not fatal:
        block = last_traceback(lines)
        if block:
            return (
                UNCLASSIFIED,
                'the server printed a traceback that matches no known signature: %s' % _exception_of(block),
                'Read the fatal lines; if this failure recurs, add its signature to sglang_signature_table.py with a test.',
                block,
            )
        block = native_abort(lines)
        if block:
            return (
                UNCLASSIFIED,
                'the server aborted in native code, which matches no known signature: %s' % ' '.join(_strip_prefix(line).strip() for line in block),
                'Read the fatal lines (the C++ exception and its what() name the library); if this failure recurs, add its '
                'signature to sglang_signature_table.py with a test.',
                block,
            )
        return None, None, None, []
    best = sorted(fatal, key=lambda m: (-m['priority'], m['index']))[0]
    if all(m['id'] == _CONSEQUENCE for m in fatal):
        # a child's death is the consequence; the child's own exception, which no signature names, is the cause
        block = _cause_traceback(lines, set(m['index'] for m in fatal), max(m['index'] for m in fatal))
        if block:
            return (
                UNCLASSIFIED,
                'an SGLang child process died of an exception that matches no known signature: %s' % _exception_of(block),
                'Read the fatal lines; if this failure recurs, add its signature to sglang_signature_table.py with a test.',
                block + [lines[m['index']] for m in fatal if m['index'] > 0 and lines[m['index']] not in block],
            )
    diagnosis, advice = best['diagnosis'], best['advice']
    groups = {}
    for match in matches:
        if match['id'] == best['id']:
            for name, value in match['groups'].items():
                groups.setdefault(name, value)
    groups.update(best['groups'])
    if groups != best['groups']:
        entry = _BY_ID[best['id']]
        defaults = dict(entry.get('defaults', {}))
        defaults.update(sizing_values(server_args))
        diagnosis, advice = render(entry['diagnosis'], groups, defaults), render(entry['advice'], groups, defaults)
    picked = set(_block_around(lines, best['index']))
    # other fatal lines (the child-died notice, a second rank's error) complete the picture, and so do
    # the later lines of the same cause (the exception line after the frame that names the check)
    for match in matches:
        if match['fatal'] or (match['id'] == best['id'] and match['index'] > best['index']):
            picked.add(match['index'])
    ordered = sorted(picked)
    fatal_lines = [lines[i] for i in ordered]
    if len(fatal_lines) > _MAX_FATAL_LINES:
        fatal_lines = fatal_lines[:10] + ['...'] + fatal_lines[-(_MAX_FATAL_LINES - 11) :]
    return best['id'], diagnosis, advice, fatal_lines
