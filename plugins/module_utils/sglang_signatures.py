# -*- coding: utf-8 -*-
# Copyright: (c) 2026, ddtree.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Known SGLang start-up and serving failure signatures, in one table.

This is the only place where journal wording is mapped to a cause. Modules, filters and
docs refer to the ``id`` of an entry; add a signature here, with a test, rather than
matching log text anywhere else.

Everything in this file is pure (no I/O) so that it can be unit-tested with journal lines
copied from real failures.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math
import re
import string

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

# Wording SGLang prints when it enters a phase (see docs/INTERFACES.md). Each TP rank
# prints its own copy and ranks interleave, so phase_of() keeps the furthest phase seen
# rather than the last line's.
_PHASE_MARKERS = (
    (re.compile(r'Load weight begin\b'), 'loading_weights'),
    (re.compile(r'Load weight end\b'), 'sizing_pools'),
    (re.compile(r'KV Cache is allocated\b'), 'pools_sized'),
    (re.compile(r'Memory pool end\b'), 'pools_sized'),
    # older builds: "Capture cuda graph begin."; 0.5.23 names the graph: "Capture target decode CUDA graph
    # begin." (model_runner_components/cuda_graph_setup.py), then prefill / draft captures follow in turn
    (re.compile(r'Capture (?:[\w-]+ ){0,3}cuda graph begin\b', re.IGNORECASE), 'capturing_cuda_graph'),
    # after capture the server still has to start its tokenizer manager and bind the port
    (re.compile(r'Capture (?:[\w-]+ ){0,3}cuda graph end\b', re.IGNORECASE), 'binding'),
    (re.compile(r'Uvicorn running on '), 'binding'),
    (re.compile(r'The server is fired up and ready to roll'), 'ready'),
)

_PHASE_RANK = dict((name, rank) for rank, name in enumerate(PHASES))

_OOM = r'(?:CUDA out of memory|torch\.(?:cuda\.)?OutOfMemoryError|CUDA error: out of memory|cudaErrorMemoryAllocation)'

# Fields of an entry:
#   id          stable name, returned as ``cause``
#   patterns    regexes searched in each journal MESSAGE line; named groups feed ``advice``
#   phase       where in start-up this usually strikes (documentation and reporting)
#   when_phase  optional: only match while phase_of(lines so far) is one of these
#   fatal       True: the service is going down; False: a warning worth showing
#   priority    the most specific fatal match wins; cascades (child died, NCCL timeouts on
#               the other rank) rank below their causes
#   diagnosis   one line, what it means
#   advice      str.format template; {group} from the pattern, missing ones from ``defaults``
SIGNATURES = (
    {
        'id': 'unrecognized_arguments',
        'patterns': (r'error: unrecognized arguments: (?P<args>.+)$',),
        'phase': 'starting',
        'fatal': True,
        'priority': 100,
        'diagnosis': 'the installed SGLang build does not know these flags: {args}',
        'advice': 'Remove {args} from the service flags, or install the SGLang build that has them '
                  '(DDTree flags such as --speculative-ddtree-budget need the DDTree patch set). '
                  'Check flags against the installed build before restarting.',
        'defaults': {'args': 'some flags'},
    },
    {
        'id': 'invalid_argument',
        'patterns': (
            r'error: argument (?P<arg>\S+?):? invalid choice: (?P<value>\S+)(?: \(choose from (?P<choices>.*)\))?',
            r'error: argument (?P<arg>\S+?): (?P<value>.+)$',
        ),
        'phase': 'starting',
        'fatal': True,
        'priority': 95,
        'diagnosis': 'SGLang rejected the value of {arg}: {value}',
        'advice': 'Fix the value of {arg} in the service flags. Accepted values: {choices}. '
                  'A value such as DDTREE for --speculative-algorithm only exists in a patched build.',
        'defaults': {'arg': 'an argument', 'value': 'invalid value', 'choices': 'see --help of the installed build'},
    },
    {
        'id': 'cuda_abi_mismatch',
        'patterns': (
            r'undefined symbol: ?(?P<symbol>\S*)',
            r'no kernel image is available for execution on the device',
            r'CUDA error: no kernel image',
        ),
        'phase': 'starting',
        'fatal': True,
        'priority': 90,
        'diagnosis': 'compiled extensions do not match the installed torch/CUDA or this GPU (undefined symbol or missing kernel image)',
        'advice': 'Install a CUDA-ABI-matched wheel set (torch, sglang, sgl-kernel, flashinfer built for the same torch '
                  'and CUDA, with kernels for this GPU\'s compute capability) and probe the imports before restarting. '
                  'Symbol: {symbol}',
        'defaults': {'symbol': 'n/a'},
    },
    {
        'id': 'model_config_error',
        'patterns': (
            r"Can't load the configuration of '(?P<path>[^']+)'",
            r"(?P<path>\S+) does not appear to have a file named config\.json",
            r'checkpoint you are trying to load has model type `(?P<model_type>[^`]+)`',
        ),
        'phase': 'starting',
        'fatal': True,
        'priority': 90,
        'diagnosis': 'the model path or its config.json cannot be loaded ({path})',
        'advice': 'Check that --model-path {path} (and --speculative-draft-model-path) exists on the host, holds a '
                  'config.json readable by the service user, and that the installed transformers knows the architecture.',
        'defaults': {'path': 'the model path', 'model_type': ''},
    },
    {
        'id': 'port_in_use',
        'patterns': (
            r'error while attempting to bind on address (?P<address>\(.*?\))?.*address already in use',
            r'\[Errno 98\].*',
            r'address already in use',
        ),
        'phase': 'binding',
        'fatal': True,
        'priority': 85,
        'diagnosis': 'the HTTP port is already taken by another process {address}',
        'advice': "Find the holder with `ss -ltnp` (often the previous SGLang unit still running under another name) "
                  "and stop it, or change --port. Address: {address}",
        'defaults': {'address': ''},
    },
    {
        'id': 'mem_pool_too_small',
        # newer builds append "Current value: ..." (pool_configurator.py MemoryPoolConfig), older ones stop at the period
        'patterns': (
            r'Not enough memory\. Please try to increase --mem-fraction-static\.(?: Current value: mem_fraction_static=(?P<mem_fraction_static>[0-9.]+))?',
        ),
        'phase': 'sizing_pools',
        'fatal': True,
        'priority': 80,
        'diagnosis': 'memory-pool sizing failed: after weights, mem_fraction_static={mem_fraction_static} leaves no room '
                     'for the KV cache and recurrent-state pools',
        'advice': 'Raise --mem-fraction-static above {mem_fraction_static} (try {mem_fraction_static_up}; leaves less headroom '
                  'for CUDA graphs), or make the pools smaller: --context-length {context_length} (try {context_length_down}), '
                  '--max-running-requests {max_running_requests} (try {max_running_requests_down}), '
                  '--mamba-full-memory-ratio {mamba_full_memory_ratio} (try 0.5); a draft model (DFlash/DDTree) needs room of its own.',
        'defaults': {'mem_fraction_static': 'its current value'},
    },
    {
        'id': 'cuda_oom_graph_capture',
        'patterns': (r'Capture cuda graph failed:.*' + _OOM, _OOM),
        'when_phase': ('capturing_cuda_graph',),
        'phase': 'capturing_cuda_graph',
        'fatal': True,
        'priority': 78,
        'diagnosis': 'CUDA out of memory while capturing CUDA graphs',
        'advice': 'Lower --mem-fraction-static from {mem_fraction_static} (try {mem_fraction_static_down}) to leave more memory '
                  'outside the static pools, or lower --cuda-graph-max-bs ({cuda_graph_max_bs}); --disable-cuda-graph also '
                  'works if the build does not report it ignored.',
    },
    {
        'id': 'cuda_oom_loading_weights',
        'patterns': (_OOM,),
        'when_phase': ('starting', 'loading_weights'),
        'phase': 'loading_weights',
        'fatal': True,
        'priority': 76,
        'diagnosis': 'CUDA out of memory while loading weights: the model does not fit on the GPUs as split',
        'advice': 'Raise --tensor-parallel-size (more GPUs), use a quantized checkpoint, or free the GPUs '
                  '(nvidia-smi shows other processes holding memory, e.g. the previous service).',
    },
    {
        'id': 'cuda_oom_sizing_pools',
        'patterns': (_OOM,),
        'when_phase': ('sizing_pools', 'pools_sized'),
        'phase': 'sizing_pools',
        'fatal': True,
        'priority': 76,
        'diagnosis': 'CUDA out of memory while allocating the KV cache / state pools',
        'advice': 'Lower --mem-fraction-static, or lower --context-length / --max-running-requests / --mamba-full-memory-ratio.',
    },
    {
        'id': 'cuda_oom_serving',
        'patterns': (_OOM,),
        'when_phase': ('binding', 'ready'),
        'phase': 'ready',
        'fatal': True,
        'priority': 75,
        'diagnosis': 'CUDA out of memory while serving requests',
        'advice': 'Lower --mem-fraction-static to leave activation headroom, or lower --max-running-requests / '
                  '--chunked-prefill-size / --cuda-graph-max-bs.',
    },
    {
        'id': 'triton_error',
        # older Triton raised OutOfResources as triton.runtime.autotuner.OutOfResources (InternLM/lmdeploy#2451)
        'patterns': (r'triton\.runtime\.(?:errors|autotuner)\.(?P<triton_error>\w+)(?::\s*(?P<detail>.*))?',),
        'phase': 'capturing_cuda_graph',
        'fatal': True,
        'priority': 70,
        'diagnosis': 'a Triton kernel failed ({triton_error}: {detail})',
        'advice': 'The kernel configuration does not fit this GPU (OutOfResources: shared memory). Try another attention / '
                  'linear-attention backend, a smaller --cuda-graph-max-bs, or a build tuned for this GPU; check that '
                  '--disable-cuda-graph is not reported ignored.',
        'defaults': {'triton_error': 'Triton error', 'detail': ''},
    },
    {
        'id': 'cuda_graph_capture_failed',
        'patterns': (r'Capture cuda graph failed(?::\s*(?P<detail>.*))?',),
        'phase': 'capturing_cuda_graph',
        'fatal': True,
        'priority': 50,
        'diagnosis': 'CUDA graph capture failed: {detail}',
        'advice': 'Read the lines above it for the root cause. Lower --cuda-graph-max-bs or --mem-fraction-static; '
                  '--disable-cuda-graph only helps if the build does not report it ignored.',
        'defaults': {'detail': 'see the lines above'},
    },
    {
        'id': 'nccl_distributed_init',
        'patterns': (
            r'NCCL error',
            r'nccl(?:InternalError|UnhandledCudaError|SystemError|InvalidUsage|RemoteError)',
            r'ProcessGroupNCCL.*(?:[Tt]imeout|timed out|Watchdog caught)',
            # torch's what() line of the same timeout names no file
            r'Watchdog caught collective operation timeout',
            r'torch\.distributed\.(?:DistStoreError|DistNetworkError|DistBackendError)',
            r'init_process_group.*(?:timed out|[Tt]imeout)',
            r'Timed out .*(?:rendezvous|TCPStore|store)',
        ),
        'phase': 'starting',
        'fatal': True,
        'priority': 40,
        'diagnosis': 'NCCL / distributed initialisation failed or timed out between tensor-parallel ranks',
        'advice': 'Check that --tensor-parallel-size matches the GPUs the unit can see (CUDA_VISIBLE_DEVICES), that '
                  '--nccl-port / --dist-init-addr are free, and try NCCL_P2P_DISABLE=1 on cards without P2P; '
                  'NCCL errors on one rank often follow a crash on another, so read the lines above.',
    },
    {
        'id': 'host_oom_killed',
        'patterns': (r'A process of this unit has been killed by the OOM killer', r'Out of memory: Killed process'),
        'phase': 'loading_weights',
        'fatal': True,
        'priority': 60,
        'diagnosis': 'the kernel OOM killer killed the server (host RAM, not GPU memory)',
        'advice': 'Give the host more RAM or swap, or load weights with less host memory (fewer loader workers, '
                  'safetensors); check other processes on the host.',
    },
    {
        'id': 'scheduler_watchdog',
        'patterns': (r'[Ww]atchdog timeout',),
        'phase': 'ready',
        'fatal': True,
        'priority': 30,
        'diagnosis': 'the scheduler watchdog fired: a forward batch hung longer than --watchdog-timeout',
        'advice': 'Usually a stuck NCCL collective or GPU hang: look for errors above it and in `dmesg` (Xid). '
                  'Raise --watchdog-timeout only if the model is legitimately that slow.',
    },
    {
        'id': 'cuda_illegal_memory_access',
        # torch's wording for cudaErrorIllegalAddress; in SGLang usually a kernel bug of one attention or
        # speculative-decoding path (sgl-project/sglang#5029 shows it during graph capture)
        'patterns': (r'CUDA error: an illegal memory access was encountered',),
        'phase': 'ready',
        'fatal': True,
        'priority': 45,  # below cuda_graph_capture_failed: inside a capture, the capture is the context
        'diagnosis': 'a CUDA kernel made an illegal memory access (the GPU context is lost; the server cannot continue)',
        'advice': 'A kernel bug, not a sizing problem: rerun with CUDA_LAUNCH_BLOCKING=1 in the unit environment to find the '
                  'kernel, then try another --attention-backend, --disable-cuda-graph, or a build with the fix; if it started '
                  'with the speculative algorithm ({speculative_algorithm}), try without it.',
    },
    {
        'id': 'child_process_died',
        # start-up wording (launch_server), then the running server's handler (http_server.py)
        'patterns': (r'Received sigquit from a child process', r'SIGQUIT received\. .*It usually means one child failed'),
        'phase': 'starting',
        'fatal': True,
        'priority': 10,
        'diagnosis': 'an SGLang child process (scheduler or detokenizer) died',
        'advice': 'The cause is printed by the child before this line; read the traceback above.',
    },
    {
        'id': 'flag_ignored',
        'patterns': (r'(?P<flag>\w+) is ignored (?:for|because|when|since) (?P<reason>.*)$',),
        'phase': 'starting',
        'fatal': False,
        'priority': 0,
        'diagnosis': 'the installed build ignores {flag} ({reason})',
        'advice': 'Do not count on {flag} taking effect with this build; remove it or change the setting that overrides it.',
        'defaults': {'flag': 'a flag', 'reason': ''},
    },
)

UNCLASSIFIED = 'unclassified'

_TRACEBACK_START = re.compile(r'Traceback \(most recent call last\):')
# the exception line that ends a traceback: "pkg.mod.SomeError: text" or a bare name
_EXCEPTION_LINE = re.compile(r'^(?:\[[^\]]*\]\s*)?(?:[A-Za-z_][\w.]*\.)?(?:[A-Za-z_]\w*)?(?:Error|Exception|Exit|Interrupt)\b(?::.*)?$')
_ARGPARSE_USAGE = re.compile(r'^usage: ')

_MAX_FATAL_LINES = 60
_TRACEBACK_LOOKBACK = 200
_UNCLASSIFIED_TAIL = 25


# Signature regexes are unanchored and some backtrack (quadratic on one huge line); SGLang's
# real lines are short, so only this much of each line is matched.
MAX_LINE_CHARS = 4096


def _clipped(lines):
    return [line[:MAX_LINE_CHARS] for line in lines]


def _compile_table(table):
    compiled = []
    for entry in table:
        item = dict(entry)
        item['regexes'] = tuple(re.compile(p) for p in entry['patterns'])
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


def server_args_from_argv(argv):
    """``--flag value`` / bare ``--flag`` words of a launch_server command line -> {flag_name: value}.

    Names use underscores like the envelope (``--mem-fraction-static`` -> ``mem_fraction_static``);
    a bare flag maps to ``True``. Words before the first flag (python, -m, module) are skipped.
    """
    args = {}
    name = None
    for word in argv:
        if word.startswith('--'):
            flag, eq, value = word[2:].partition('=')
            name = flag.replace('-', '_')
            args[name] = value if eq else True
            if eq:
                name = None
        elif name is not None:
            args[name] = word
            name = None
    return args


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
    for name in ('context_length', 'max_running_requests', 'mamba_full_memory_ratio', 'cuda_graph_max_bs', 'speculative_algorithm'):
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


def classify(lines, server_args=None):
    """Every signature match in ``lines``, in line order.

    Returns a list of dicts: id, fatal, priority, index (line number in ``lines``), line,
    phase (start-up phase when the line was printed), groups, diagnosis, advice.
    A line may match several signatures (an OOM inside 'Capture cuda graph failed').
    """
    lines = _clipped(lines)
    matches = []
    phase = PHASES[0]
    for index, line in enumerate(lines):
        phase = furthest_phase(phase, line)
        for entry in _COMPILED:
            when = entry.get('when_phase')
            if when and phase not in when:
                continue
            for regex in entry['regexes']:
                found = regex.search(line)
                if not found:
                    continue
                groups = dict((k, v.strip()) for k, v in found.groupdict().items() if v)
                # the journal's own numbers first, then the unit's flags, then the entry's fallbacks
                defaults = dict(entry.get('defaults', {}))
                defaults.update(sizing_values(server_args))
                matches.append({
                    'id': entry['id'],
                    'fatal': entry['fatal'],
                    'priority': entry['priority'],
                    'index': index,
                    'line': line,
                    'phase': phase,
                    'groups': groups,
                    'diagnosis': render(entry['diagnosis'], groups, defaults),
                    'advice': render(entry['advice'], groups, defaults),
                })
                break
    return matches


def warnings(lines):
    """Non-fatal matches (ignored flags), one line each, duplicates from TP ranks dropped."""
    seen = []
    for match in classify(lines):
        if not match['fatal'] and match['line'] not in seen:
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


def last_traceback(lines):
    """The last traceback in ``lines`` (at most its last lines), or [] when there is none."""
    lines = _clipped(lines)
    start = None
    for i in range(len(lines) - 1, -1, -1):
        if _TRACEBACK_START.search(lines[i]):
            start = i
            break
    if start is None:
        return []
    end = len(lines) - 1
    for i in range(start + 1, len(lines)):
        if _EXCEPTION_LINE.match(lines[i]):
            end = i
            break
    block = lines[start:end + 1]
    if len(block) > _UNCLASSIFIED_TAIL:
        block = [block[0], '...'] + block[-(_UNCLASSIFIED_TAIL - 2):]
    return block


def diagnose(lines, server_args=None):
    """Pick the cause of a failure from journal lines.

    Returns (cause, diagnosis, advice, fatal_lines). cause is a signature id, ``unclassified``
    when there is only a traceback nobody recognises, or None when nothing fatal shows.
    The most specific fatal match wins (highest priority, then the earliest line, since the
    first error usually causes the later ones).
    """
    lines = _clipped(lines)
    fatal = [m for m in classify(lines, server_args) if m['fatal']]
    if not fatal:
        block = last_traceback(lines)
        if not block:
            return None, None, None, []
        exception = block[-1]
        return (UNCLASSIFIED,
                'the server printed a traceback that matches no known signature: %s' % _strip_prefix(exception).strip(),
                'Read the fatal lines; if this failure recurs, add its signature to sglang_signatures.py with a test.',
                block)
    best = sorted(fatal, key=lambda m: (-m['priority'], m['index']))[0]
    picked = set(_block_around(lines, best['index']))
    # other fatal lines (the child-died notice, a second rank's error) complete the picture
    for match in fatal:
        picked.add(match['index'])
    ordered = sorted(picked)
    fatal_lines = [lines[i] for i in ordered]
    if len(fatal_lines) > _MAX_FATAL_LINES:
        fatal_lines = fatal_lines[:10] + ['...'] + fatal_lines[-(_MAX_FATAL_LINES - 11):]
    return best['id'], best['diagnosis'], best['advice'], fatal_lines
