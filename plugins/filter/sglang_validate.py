# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The service role's checks of its variables and of the host's fit, on the controller.

One call returns every problem, each naming the variable and what it allows (the wording
tests/bad_inputs.yml expects); the role fails once with all of them. The host is read before,
in one remote call (module sglang_host_facts); nothing here touches it.

Over 400 lines with a reason: every check of the service role, one function a topic (variable_problems lists
them), with the host's fit after them; the checks other filters share live in plugin_utils/safe_values.py.
"""

from __future__ import annotations

import json
import numbers
import re

from ansible_collections.ddtree.sglang.plugins.plugin_utils.safe_values import (
    is_loopback,
    parse_booleans,
    root_dir_problem,
    root_owned_problems,
    unit_value_problems,
)
from ansible_collections.ddtree.sglang.plugins.module_utils.flag_check import is_secret_env_name
from ansible_collections.ddtree.sglang.plugins.module_utils.sglang_args import COUNT_KEYS, envelope_argv, secret_arg_names
from ansible_collections.ddtree.sglang.plugins.module_utils.service_account import account_problems as service_account_problems
from ansible_collections.ddtree.sglang.plugins.plugin_utils.prerequisites import command_problems
from ansible_collections.ddtree.sglang.plugins.module_utils.sglang_bench import (
    WORKLOAD_DEFAULTS,
    confidence_ok,
    noise_cv_ok,
    parse_prompts,
    ttft_limit_problem,
    workload_spec,
    worst_case_s,
)

USER_NAME = re.compile(r'^[a-z_][a-z0-9_-]{0,31}\Z')
# the role's booleans this filter reads, parsed once before any check reads them
BOOLEANS = ('sglang_service_expose_api', 'sglang_service_api_key_waived', 'sglang_service_gate')


def _json(value):
    # the wording of Ansible's to_json, which the messages used before they moved here
    try:
        return json.dumps(value, default=str)
    except (TypeError, ValueError):
        return json.dumps(str(value))


def _is_str(value):
    return isinstance(value, str)


def _is_int(value):
    # Jinja's `integer` test: booleans are not integers
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value):
    return isinstance(value, numbers.Number) and not isinstance(value, bool)


def _number_like(value):
    """A number, or a string of one (-e name=1.1 gives a string)."""
    if isinstance(value, bool):
        return False
    try:
        return float(value) == float(value)  # not NaN
    except (TypeError, ValueError):
        return False


def _match(pattern, value):
    return _is_str(value) and re.match(pattern, value) is not None


def _int(value):
    """Jinja's `int` filter: 0 for what does not convert."""
    try:
        return int(value)
    except (TypeError, ValueError):
        try:
            return int(float(value))
        except (TypeError, ValueError):
            return 0


def _float(value):
    try:
        return float(value)
    except (TypeError, ValueError):
        return 0.0


def _fmt_num(value):
    # Jinja prints 360.0 for a float sum
    return repr(value) if isinstance(value, float) else str(value)


def _whole(value):
    """A whole number, or a string of digits only (-e name=60 gives a string): int() would also take " 60" and "60\\n",
    and a line break in a number reaches the restore script and the unit."""
    return _is_int(value) or (_is_str(value) and re.fullmatch(r'[0-9]+', value) is not None)


def _decimal(value):
    """A number, or a string of one without sign, spaces or line breaks."""
    return _is_number(value) or (_is_str(value) and re.fullmatch(r'[0-9]+(?:\.[0-9]+)?', value) is not None)


def _port_ok(value):
    return _whole(value) and 1 <= _int(value) <= 65535


def variable_problems(v, hostname, group_names, groups):
    """The checks of the role's variables alone (no host facts); ``v`` maps each variable to its value. One function a
    topic, in the order the problems are listed."""
    problems = _group_problems(hostname, group_names)
    for topic in (
        _name_problems,
        _envelope_problems,
        _gpu_class_problems,
        _listen_problems,
        _environment_problems,
        _path_problems,
        _verdict_problems,
        _timing_problems,
        _account_problems,
    ):
        problems += topic(v)
    problems += multinode_problems(v, hostname, groups)
    problems += gate_problems(v)
    problems += _memory_check_problems(v)
    return problems


def _group_problems(hostname, group_names):
    """A host of sglang_servers belongs to exactly one GPU-class group."""
    problems = []
    if 'sglang_servers' in group_names:
        gpu_groups = [g for g in group_names if g.startswith('gpu_')]
        if len(gpu_groups) != 1:
            problems.append(
                '%s is in %d GPU-class groups (%s): a host of sglang_servers must be in exactly one gpu_* group, the one whose '
                'group_vars give its sglang_service_gpu_class and sglang_service_envelope.'
                % (hostname, len(gpu_groups), ', '.join(gpu_groups) if gpu_groups else 'none')
            )
    return problems


def _name_problems(v):
    """The unit's name."""
    problems = []
    name = v['sglang_service_name']
    if not (_match(r'^[A-Za-z0-9][A-Za-z0-9:_.-]{0,200}\Z', name) and not re.match(r'.*[.]service$', name)):
        problems.append(
            'sglang_service_name must be a unit name without ".service": letters, digits, \':\', \'_\', \'.\', \'-\' '
            '(for example sglang-qwen); got %s.' % _json(name)
        )
    return problems


def _envelope_problems(v):
    """The envelope: SGLang's flags, with absolute model paths and sane numbers."""
    problems = []
    envelope = v['sglang_service_envelope']
    env_is_map = isinstance(envelope, dict)

    if not (env_is_map and _match('^/', envelope.get('model_path', '')) and _match('^/', envelope.get('speculative_draft_model_path', '/'))):
        problems.append(
            'sglang_service_envelope must be a dict of SGLang flags holding model_path, the absolute path of the model directory '
            'on the host (the host\'s GPU-class group file sets it), and speculative_draft_model_path, if any, absolute too; '
            'got %s.' % _json(envelope)
        )
    if env_is_map:
        if 'host' in envelope or 'port' in envelope:
            problems.append(
                'sglang_service_envelope must not hold host or port: set sglang_service_host (default 127.0.0.1) and '
                'sglang_service_port (1-65535) instead; the verdict and the port check read those.'
            )
        try:
            envelope_argv(envelope)
        except ValueError as e:
            problems.append(str(e))
        if 'mem_fraction_static' in envelope:
            fraction = envelope['mem_fraction_static']
            if not (_is_number(fraction) and 0 < fraction < 1):
                problems.append(
                    'sglang_service_envelope.mem_fraction_static must be a number in (0, 1), the share of each GPU\'s '
                    'memory for weights and pools (for example 0.85); got %s.' % _json(fraction)
                )
        bad_counts = [(k, envelope[k]) for k in envelope if k in COUNT_KEYS and not _is_int(envelope[k])]
        bad_counts += [(k, envelope[k]) for k in envelope if k in COUNT_KEYS and _is_int(envelope[k]) and envelope[k] <= 0]
        if bad_counts:
            problems.append(
                'sglang_service_envelope.%s must be a positive integer (1, 2, 3, ...); got %s.'
                % (', sglang_service_envelope.'.join(k for k, dummy in bad_counts), _json(dict(bad_counts)))
            )
    return problems


def _gpu_class_problems(v):
    """The GPU class the host group declares."""
    problems = []
    gpu_class = v['sglang_service_gpu_class']
    if not (
        isinstance(gpu_class, dict)
        and (
            not gpu_class
            or (
                sorted(gpu_class) == ['compute_cap', 'count', 'memory_total_mib', 'name']
                and _is_str(gpu_class['name'])
                and len(gpu_class['name']) > 0
                and _is_int(gpu_class['count'])
                and gpu_class['count'] > 0
                and _is_int(gpu_class['memory_total_mib'])
                and gpu_class['memory_total_mib'] > 0
                and _match(r'^[0-9]+[.][0-9]+\Z', gpu_class['compute_cap'])
            )
        )
    ):
        problems.append(
            'sglang_service_gpu_class must be {} or exactly {name: <nvidia-smi\'s GPU name>, count: <GPUs, 1 or more>, '
            'memory_total_mib: <MiB per GPU, 1 or more>, compute_cap: <quoted, such as "8.6">} (the host\'s GPU-class group file '
            'sets it); got %s.' % _json(gpu_class)
        )
    return problems


def _listen_problems(v):
    """Where the server listens and what runs it."""
    problems = []
    if not _port_ok(v['sglang_service_port']):
        problems.append('sglang_service_port must be a TCP port in 1-65535; got %s.' % _json(v['sglang_service_port']))

    if not _match(r'^[A-Za-z0-9:._-]+\Z', v['sglang_service_host']):
        problems.append(
            'sglang_service_host must be an IP address or a host name (default 127.0.0.1; anything but loopback also '
            'needs sglang_service_expose_api: true); got %s.' % _json(v['sglang_service_host'])
        )

    python, launcher = v['sglang_service_python'], v['sglang_service_launcher_module']
    if not (_match('^/', python) and _match(r'^[A-Za-z_][A-Za-z0-9_]*([.][A-Za-z_][A-Za-z0-9_]*)*\Z', launcher)):
        problems.append(
            'sglang_service_python must be an absolute path (default: the ml_env release\'s bin/python) and '
            'sglang_service_launcher_module a dotted Python module name run with python -m (default sglang.launch_server); '
            'got %s and %s.' % (_json(python), _json(launcher))
        )
    return problems


def _environment_problems(v):
    """The unit's environment variables."""
    problems = []
    environment = v['sglang_service_environment']
    if not (
        isinstance(environment, dict)
        and all(_match(r'^[A-Za-z_][A-Za-z0-9_]*\Z', k) for k in environment)
        and all(_is_str(x) or isinstance(x, numbers.Number) for x in environment.values())
        and not any(re.search('[\x00-\x1f]', str(x)) for x in environment.values())
    ):
        problems.append(
            'sglang_service_environment must be a dict of environment variables: names of letters, digits and \'_\' not starting '
            'with a digit, values one-line strings or numbers; got %s.' % _json(environment)
        )
    return problems


def _path_problems(v):
    """Paths the unit names, and the state directory."""
    problems = []
    relative = [('sglang_service_environment_files', p) for p in v['sglang_service_environment_files'] if not _match('^-?/', p)]
    relative += [('sglang_service_read_write_paths', p) for p in v['sglang_service_read_write_paths'] if not _match('^-?/', p)]
    if not _match('^/.', v['sglang_service_state_dir']):
        relative.append(('sglang_service_state_dir', v['sglang_service_state_dir']))
    if relative:
        names = []
        for key, dummy in relative:
            if key not in names:
                names.append(key)
        problems.append(
            '%s must hold absolute paths (a leading \'-\' lets systemd skip a missing one in sglang_service_environment_files '
            'and sglang_service_read_write_paths); got %s.' % (', '.join(names), ', '.join(_json(p) for dummy, p in relative))
        )

    # each entry is one line of the unit (EnvironmentFile=, ReadWritePaths=): a line break would add a directive
    problems += unit_value_problems(
        {'sglang_service_environment_files': v['sglang_service_environment_files'], 'sglang_service_read_write_paths': v['sglang_service_read_write_paths']}
    )
    textfile_dir = v.get('sglang_service_metrics_textfile_dir', '')
    if not isinstance(textfile_dir, str) or (textfile_dir and not _match(r'^/[^\n]*\Z', textfile_dir)):
        problems.append(
            "sglang_service_metrics_textfile_dir must be an absolute path (the node-exporter textfile collector's "
            "directory), or '' to write no outcome metrics; got %s." % _json(textfile_dir)
        )
    if _match('^/.', v['sglang_service_state_dir']):
        # root-only control files (the restore script, last known good) live below it
        state_dir_problem = root_dir_problem('sglang_service_state_dir', v['sglang_service_state_dir'])
        if state_dir_problem:
            problems.append(state_dir_problem)
        else:
            problems += writable_overlap_problems(v)
    return problems


def _verdict_problems(v):
    """The verdict's limits, prompt and expected text."""
    problems = []
    limits = []
    if not _whole(v['sglang_service_verdict_timeout']) or _int(v['sglang_service_verdict_timeout']) < 1:
        limits.append('sglang_service_verdict_timeout must be 1 or more seconds, got %s' % _json(v['sglang_service_verdict_timeout']))
    if not _whole(v['sglang_service_verdict_max_tokens']) or _int(v['sglang_service_verdict_max_tokens']) < 1:
        limits.append('sglang_service_verdict_max_tokens must be 1 or more tokens, got %s' % _json(v['sglang_service_verdict_max_tokens']))
    if not _decimal(v['sglang_service_verdict_settle_s']) or _float(v['sglang_service_verdict_settle_s']) < 0:
        limits.append('sglang_service_verdict_settle_s must be 0 or more seconds, got %s' % _json(v['sglang_service_verdict_settle_s']))
    if not _decimal(v['sglang_service_verdict_progress_s']) or _float(v['sglang_service_verdict_progress_s']) < 0:
        limits.append(
            'sglang_service_verdict_progress_s must be 0 or more seconds (0: no progress lines), got %s' % _json(v['sglang_service_verdict_progress_s'])
        )
    prompt = v['sglang_service_verdict_prompt']
    if not (_is_str(prompt) and prompt.strip()):
        limits.append('sglang_service_verdict_prompt must be a non-empty string, got %s' % _json(prompt))
    if not _is_str(v['sglang_service_verdict_expect']):
        limits.append('sglang_service_verdict_expect must be a string (empty: any text), got %s' % _json(v['sglang_service_verdict_expect']))
    if limits:
        problems.append('%s.' % '; '.join(limits))
    return problems


def _timing_problems(v):
    """The stop timeout, the safety timer and the host lock's lease, each long enough for what it covers."""
    problems = []
    stop_value = v.get('sglang_service_stop_timeout_s', 60)
    stop = _int(stop_value)
    if not _whole(stop_value) or not 1 <= stop <= 3600:
        problems.append('sglang_service_stop_timeout_s must be an integer of seconds in 1-3600 (default 60); got %s.' % _json(stop_value))
        stop = 60
    # the timer is armed before the restart, which first waits up to TimeoutStopSec for the old server; the gate runs
    # after the verdict and before the confirmation
    needed = _int(v['sglang_service_verdict_timeout']) + _float(v['sglang_service_verdict_settle_s']) + stop + 60
    gate_s = gate_worst_case(v)
    if not (_whole(v['sglang_service_safety_timer_s']) and _int(v['sglang_service_safety_timer_s']) > needed + gate_s):
        problems.append(
            'sglang_service_safety_timer_s must exceed sglang_service_verdict_timeout + sglang_service_verdict_settle_s + '
            'sglang_service_stop_timeout_s + 60 s%s (%s s; default sglang_service_verdict_timeout + 300%s), a whole number of '
            'seconds, or the host would restore the old unit while the verdict%s still runs; got %s.'
            % (
                ' + the gate\'s longest run (%s s: its warmup and every round\'s requests, sglang_service_gate_workload\'s concurrency at a time, '
                'each taking sglang_service_gate_request_timeout_s)' % _fmt_num(gate_s)
                if gate_s
                else '',
                _fmt_num(needed + gate_s),
                ' + the gate\'s longest run' if gate_s else '',
                ' or the gate' if gate_s else '',
                _json(v['sglang_service_safety_timer_s']),
            )
        )

    # the lock must outlast the longest step it covers without a renewal: a verdict and its safety timer
    lease_value = v.get('sglang_service_host_lock_lease_s', 3600)
    if not _whole(lease_value) or not _int(lease_value) > _int(v['sglang_service_safety_timer_s']):
        problems.append(
            'sglang_service_host_lock_lease_s must be an integer of seconds above sglang_service_safety_timer_s '
            '(%s; default 3600), or the host lock could expire while the verdict runs; got %s.'
            % (_json(v['sglang_service_safety_timer_s']), _json(lease_value))
        )
    return problems


def _account_problems(v):
    """The service account and its supplementary groups."""
    problems = []
    user, extra_groups = v['sglang_service_user'], v['sglang_service_supplementary_groups']
    if not (_match(USER_NAME.pattern, user) and all(_match(USER_NAME.pattern, g) for g in extra_groups)):
        problems.append(
            'sglang_service_user and every entry of sglang_service_supplementary_groups must be a user or group name (lowercase '
            'letters, digits, \'_\' and \'-\', starting with a letter or \'_\', at most 32 characters; default sglang and [video, render]); '
            'got %s and %s.' % (_json(user), _json(extra_groups))
        )
    return problems


def _memory_check_problems(v):
    """The memory check's mode."""
    problems = []
    if v['sglang_service_memory_check'] not in ('refuse', 'warn', 'off'):
        problems.append(
            'sglang_service_memory_check must be refuse, warn or "off" (quoted: YAML reads a bare off as false); got %s.'
            % _json(v['sglang_service_memory_check'])
        )
    return problems


def gate_worst_case(v):
    """Seconds the gate can take at most (0 with the gate off or its variables wrong: gate_problems names those)."""
    if not parse_booleans(v, ('sglang_service_gate',))[0].get('sglang_service_gate'):
        return 0
    timeout = v.get('sglang_service_gate_request_timeout_s', 60)
    if not _whole(timeout) or not isinstance(v.get('sglang_service_gate_workload', {}), dict):
        return 0
    try:
        return worst_case_s(v.get('sglang_service_gate_workload', {}), _int(timeout))
    except ValueError:
        return 0


def gate_problems(v):
    """The throughput gate's variables (docs/gate.md), when the caller passes them (validate.yml does)."""
    if 'sglang_service_gate' not in v:
        return []
    problems = []
    workload = v.get('sglang_service_gate_workload', {})
    if not isinstance(workload, dict):
        problems.append('sglang_service_gate_workload must be a dict with the keys %s; got %s.' % (', '.join(sorted(WORKLOAD_DEFAULTS)), _json(workload)))
    else:
        try:
            workload_spec(workload)
        except ValueError as e:
            problems.append('sglang_service_gate_workload: %s.' % e)
    ratio = v.get('sglang_service_gate_min_ratio', 1.0)
    if not _number_like(ratio) or _float(ratio) <= 0:
        problems.append(
            'sglang_service_gate_min_ratio must be a number above 0 (1.0: no slower than the last known good unit, '
            '1.15: at least 15 %% faster); got %s.' % _json(ratio)
        )
    timeout = v.get('sglang_service_gate_request_timeout_s', 60)
    if not _whole(timeout) or not 1 <= _int(timeout) <= 3600:
        problems.append('sglang_service_gate_request_timeout_s must be an integer of seconds in 1-3600 (default 60); got %s.' % _json(timeout))
    for name in ('sglang_service_gate_max_p99_ttft_ms', 'sglang_service_gate_max_p99_itl_ms'):
        if not _number_like(v.get(name, 0)) or _float(v.get(name, 0)) < 0:
            problems.append('%s must be 0 (no limit) or more milliseconds; got %s.' % (name, _json(v.get(name))))
    problems += _gate_decision_problems(v, workload)
    return problems


def _gate_decision_problems(v, workload):
    """The decision's confidence and noise, a TTFT limit's samples and the prompts file (read on the controller)."""
    problems = []
    confidence, noise_cv = v.get('sglang_service_gate_confidence', 0.99), v.get('sglang_service_gate_noise_cv', 0.01)
    if not _number_like(confidence) or not confidence_ok(_float(confidence)):
        problems.append(
            'sglang_service_gate_confidence must be a number above 0.5 and below 1 (default 0.99: an equal unit is refused '
            'about 1 %% of the time); got %s.' % _json(confidence)
        )
    if not _number_like(noise_cv) or not noise_cv_ok(_float(noise_cv)):
        problems.append(
            'sglang_service_gate_noise_cv must be a number from 0 to 0.5 (default 0.01: 1 %% spread between two server '
            'processes of one unit); got %s.' % _json(noise_cv)
        )
    ttft = v.get('sglang_service_gate_max_p99_ttft_ms', 0)
    if isinstance(workload, dict) and _number_like(ttft) and _float(ttft) > 0:
        try:
            problem = ttft_limit_problem(_float(ttft), workload)
            problems += ['sglang_service_gate_' + problem] if problem else []
        except ValueError:
            pass  # the workload's own problem is named above
    path = v.get('__sglang_service_gate_prompts_path')
    if path and parse_booleans(v, ('sglang_service_gate',))[0].get('sglang_service_gate'):
        try:
            with open(path, 'r') as handle:
                parse_prompts(handle.read(), source=path)
        except (IOError, OSError) as e:
            problems.append('sglang_service_gate_prompts_file must name a readable file of JSON lines on the controller; %s: %s.' % (path, e.strerror or e))
        except ValueError as e:
            problems.append('sglang_service_gate_prompts_file: %s (one {"prompt": text, "output_tokens": n} a line).' % e)
    return problems


def multinode_problems(v, hostname, groups):
    problems = []
    group = v['sglang_service_multinode_group']
    if not (_is_str(group) and (len(group) == 0 or hostname in groups.get(group, []))):
        problems.append(
            'sglang_service_multinode_group must be empty (a single-node server) or name the inventory group whose hosts serve one '
            'model together, which holds this host (%s); got %s%s.'
            % (hostname, _json(group), ' (no such group)' if _is_str(group) and group and group not in groups else '')
        )
    if not _port_ok(v['sglang_service_dist_init_port']):
        problems.append('sglang_service_dist_init_port must be a TCP port in 1-65535; got %s.' % _json(v['sglang_service_dist_init_port']))
    if not _match(r'^[A-Za-z0-9:._\[\]-]+\Z', v['sglang_service_node_address']):
        problems.append(
            'sglang_service_node_address must be a host name or IP address the other nodes reach this host at (default its '
            'ansible_host); got %s.' % _json(v['sglang_service_node_address'])
        )
    envelope = v['sglang_service_envelope']
    if _is_str(group) and group and isinstance(envelope, dict) and any(k in envelope for k in ('nnodes', 'node_rank', 'dist_init_addr')):
        problems.append(
            'sglang_service_envelope must not hold nnodes, node_rank or dist_init_addr when sglang_service_multinode_group '
            '(%s) derives them from the inventory.' % group
        )
    return problems


def _holds(a, b):
    a, b = a.rstrip('/') + '/', b.rstrip('/') + '/'
    return a.startswith(b) or b.startswith(a)


def writable_overlap_problems(v):
    """Root-only control directories (sglang_service_state_dir: last known good units; the control
    directory: the restore script root runs, the pending record) that overlap a directory the service
    user may write (its StateDirectory= and CacheDirectory=, sglang_service_read_write_paths)."""
    writable = [(str(path), 'its StateDirectory=' if i == 0 else 'its CacheDirectory=') for i, path in enumerate(v.get('__sglang_service_user_dirs') or [])]
    writable += [(str(p).lstrip('-'), 'sglang_service_read_write_paths') for p in v['sglang_service_read_write_paths'] if _match('^-?/', p)]
    control = [('sglang_service_state_dir', v['sglang_service_state_dir'])]
    if v.get('__sglang_service_control_dir'):
        control.append(('the control directory', v['__sglang_service_control_dir']))
    problems = []
    for name, path in control:
        clashes = ['%s (%s)' % (w, why) for w, why in writable if _holds(path, w)]
        if clashes:
            problems.append(
                '%s (%s) overlaps what the service user %s may write: %s. Root runs the restore script and restores the '
                'last known good unit from there, so the service user could replace them. Choose a sglang_service_state_dir '
                'and sglang_service_read_write_paths apart from each other, or another sglang_service_user.'
                % (name, path, v['sglang_service_user'], ', '.join(clashes))
            )
    return problems


def hardening_problems(v):
    problems = []
    host, port = v['sglang_service_host'], v['sglang_service_port']
    loopback = _is_str(host) and is_loopback(host)
    # a malformed address is refused as such, and an unwanted exposure before its key
    if not _match(r'^[A-Za-z0-9:._-]+\Z', host):
        pass
    elif not (loopback or v['sglang_service_expose_api']):
        problems.append(
            'sglang_service_host is %s, which is not a loopback address: binding it exposes the API to the network. Set '
            'sglang_service_expose_api: true (allowed values: true, false; default false) to mean it, or keep sglang_service_host '
            'at 127.0.0.1 (or another 127.x address, ::1, localhost).' % host
        )
    elif not (loopback or v['sglang_service_api_key_set'] or v['sglang_service_api_key_waived']):
        problems.append(
            'the API would listen on %s:%s without a key. Set sglang_service_api_key (a string, given Ansible Vault-encrypted: '
            'ansible-vault encrypt_string), or set sglang_service_api_key_waived: true (allowed values: true, false; default '
            'false) when something in front of the port authenticates.' % (host, port)
        )
    envelope, environment = v['sglang_service_envelope'], v['sglang_service_environment']
    secret_keys = secret_arg_names(envelope)
    secret_names = sorted(str(k) for k in environment if is_secret_env_name(k)) if isinstance(environment, dict) else []
    if secret_keys or secret_names:
        where = []
        if secret_keys:
            where.append(
                'sglang_service_envelope.%s puts it on the command line (ps, /proc/*/cmdline, systemctl show)' % ', sglang_service_envelope.'.join(secret_keys)
            )
        if secret_names:
            where.append(
                'sglang_service_environment\'s %s (a name of a secret: *_KEY, *_TOKEN, *_SECRET, *PASSWORD*) would put '
                'it into the unit file (mode 0644) and systemctl show' % ', '.join(secret_names)
            )
        problems.append(
            'a secret would be readable by every user of the host: %s. Set sglang_service_api_key and sglang_service_hf_token '
            '(Ansible Vault-encrypted) instead, which reach SGLang through a root-only EnvironmentFile; other secrets go into a '
            'root-only file named in sglang_service_environment_files.' % '; '.join(where)
        )
    if not v['sglang_service_secrets_valid']:
        problems.append(
            'sglang_service_api_key or sglang_service_hf_token contains a single quote, a backslash, a line break or another '
            'control character, which the EnvironmentFile cannot hold verbatim. Allowed: printable characters without \' and \\.'
        )
    hardening = v['sglang_service_hardening']
    if hardening != 'none':
        roots = v['__sglang_service_home_roots']
        pattern = '(' + '|'.join(re.escape(r) for r in roots) + ')(/|$)'
        candidates = [v['sglang_service_python']]
        if isinstance(envelope, dict):
            candidates += [envelope.get('model_path', ''), envelope.get('speculative_draft_model_path', ''), envelope.get('tokenizer_path', '')]
        hidden = [p for p in candidates if p and _is_str(p) and re.match(pattern, p)]
        if hidden:
            problems.append(
                'sglang_service_hardening: %s hides /root, /home and /run/user from the service (ProtectHome=yes), but it would '
                'need %s. Move them (models to /srv/models, the venv to /opt/ddtree/ml-env), or set sglang_service_hardening: '
                'none (allowed values: strict, baseline, none).' % (hardening, ', '.join(hidden))
            )
    return problems


def python_exists(python, host, ml_env_root):
    """Whether the host read saw ``python``: among its paths, or as the interpreter of a complete release
    (ml_env picked a release after the read: reusing one it saw, or building one, after which the
    host is read again)."""
    seen = host.get('paths', {}).get(python)
    if seen is not None:
        return seen.get('exists', False)
    found = re.match(re.escape(ml_env_root.rstrip('/')) + '/releases/([0-9a-f]{8,64})/bin/python[0-9.]*$', python)
    releases = (host.get('ml_env') or {}).get('releases', {})
    return bool(found) and releases.get(found.group(1), {}).get('complete', False)


# what the service needs on the host besides its release: the unit's manager and the verdict's journal
SERVICE_COMMANDS = ('systemctl', 'journalctl')


def host_problems(v, hostname, host, check_python):
    """The host's fit, from what sglang_host_facts read: systemd, GPUs, model directories, interpreter, port."""
    # a read without commands (an older caller) says nothing about them
    problems = command_problems(host, hostname, SERVICE_COMMANDS, None) if 'commands' in host else []
    envelope = v['sglang_service_envelope']
    gpus = host.get('gpus')
    if not gpus:
        return problems + [host.get('gpus_error') or 'the GPUs could not be read']
    count = gpus['count']
    if isinstance(envelope, dict):
        tp, dp, pp = envelope.get('tp_size', 1), envelope.get('dp_size', 1), envelope.get('pp_size', 1)
        # SGLang places tp_size x pp_size ranks per data-parallel replica; with dp attention the
        # replicas share the tensor-parallel ranks (dp_size divides tp_size)
        replicas = 1 if envelope.get('enable_dp_attention') else dp
        needed = _int(tp * pp * replicas) if _is_int(tp) and _is_int(dp) and _is_int(pp) else None
        if needed is not None and needed > 0 and not (needed <= count and count % needed == 0):
            asked = 'tp_size=%s x dp_size=%s' % (tp, dp) if pp == 1 else 'tp_size=%s x pp_size=%s x dp_size=%s' % (tp, pp, dp)
            if envelope.get('enable_dp_attention'):
                asked += ' (dp attention: the replicas share the tensor-parallel GPUs)'
            problems.append(
                'sglang_service_envelope asks for %s GPUs; %s has %d (%s). Allowed: tp_size x dp_size dividing '
                'the host\'s GPU count (%s), times pp_size when it is set, dp_size not counted with enable_dp_attention.'
                % (asked, hostname, count, ', '.join(gpus['gpu_classes']), ', '.join(str(n) for n in range(1, count + 1) if count % n == 0))
            )
    gpu_class = v['sglang_service_gpu_class']
    if (
        isinstance(gpu_class, dict)
        and gpu_class
        and not (count == gpu_class.get('count') and gpu_class.get('name') in gpus['gpu_classes'] and len(gpus['gpu_classes']) == 1)
    ):
        problems.append(
            'sglang_service_gpu_class expects %s x %s; %s has %d x %s. Put the host in the group of its GPU class.'
            % (gpu_class.get('count'), gpu_class.get('name'), hostname, count, ' + '.join(gpus['gpu_classes']))
        )
    if isinstance(envelope, dict):
        missing = [
            (k, envelope[k])
            for k in envelope
            if k in ('model_path', 'speculative_draft_model_path') and not host.get('models', {}).get(envelope[k], {}).get('isdir')
        ]
        if missing:
            problems.append(
                ''.join('sglang_service_envelope.%s names %s, which is not a directory on %s. ' % (k, d, hostname) for k, d in missing)
                + 'Allowed: an existing directory holding the model\'s config.json.'
            )
    problems += service_account_problems(
        'sglang_service_user', v['sglang_service_user'], host.get('user') or {}, (v.get('__sglang_service_user_dirs') or [None])[0]
    )
    control = {'sglang_service_state_dir': v['sglang_service_state_dir']}
    if v.get('__sglang_service_control_dir'):
        control['the control directory'] = v['__sglang_service_control_dir']
    problems += root_owned_problems(control, host.get('paths'))
    python = v['sglang_service_python']
    if check_python and not python_exists(python, host, v.get('ml_env_root', '/opt/ddtree/ml-env')):
        problems.append(
            'sglang_service_python %s does not exist on %s: leave it at its default (the interpreter of the release role ml_env '
            'builds) or name an existing python executable.' % (python, hostname)
        )
    port = host.get('port')
    if port and port.get('in_use'):
        problems.append(
            'sglang_service_port %s is in use on %s: %s. Allowed: a port (1-65535) that no process but %s listens on; stop the '
            'other process or choose another sglang_service_port.' % (v['sglang_service_port'], hostname, port['msg'], v['__sglang_service_unit'])
        )
    return problems


# sglang/srt/utils/hf_transformers/common.py (SGLang 0.5.23): the keys get_context_length reads, in order
CONTEXT_LENGTH_KEYS = ('max_sequence_length', 'seq_length', 'max_seq_len', 'model_max_length', 'max_position_embeddings')
ALLOW_LONGER_CONTEXT = 'SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN'


def derived_context_length(config):
    """SGLang 0.5.23's get_context_length (sglang/srt/utils/hf_transformers/common.py) of a config.json:
    the first of CONTEXT_LENGTH_KEYS, times the rope scaling factor unless the scaling keeps the original
    length; 2048 when the config has none. A multimodal config is read through its text_config."""
    text = config.get('text_config') or config
    rope = text.get('rope_scaling') or {}
    factor = rope.get('factor', 1) if rope else 1
    if 'original_max_position_embeddings' in rope or rope.get('rope_type') == 'llama3':
        factor = 1
    for key in CONTEXT_LENGTH_KEYS:
        if text.get(key) is not None:
            return int(factor * text[key])
    return 2048


def startup_problems(v, host):
    """SGLang's start-up checks that the flag check cannot run before the restart (they need the model's
    config, or modules only a GPU build has), mirrored; each cites the SGLang 0.5.23 function it mirrors.
    docs/preflight-parity.md has the table; lab/tests/test_startup_parity.py holds them to SGLang's source."""
    envelope = v['sglang_service_envelope']
    if not isinstance(envelope, dict):
        return []
    problems = []
    algorithm = str(envelope.get('speculative_algorithm') or '').upper()
    # sglang/srt/arg_groups/speculative_hook.py::_handle_dflash
    if algorithm == 'DFLASH' and envelope.get('pp_size', 1) != 1:
        problems.append(
            'sglang_service_envelope.pp_size is %s with speculative_algorithm DFLASH; SGLang refuses it at start-up '
            '("Currently DFLASH speculative decoding only supports pp_size == 1", speculative_hook._handle_dflash). '
            'Allowed: pp_size 1 (or leave it out) with DFLASH.' % _json(envelope.get('pp_size'))
        )
    if algorithm == 'DFLASH' and not envelope.get('speculative_draft_model_path'):
        problems.append(
            'sglang_service_envelope has speculative_algorithm DFLASH without speculative_draft_model_path; SGLang refuses '
            'it at start-up (speculative_hook._handle_dflash). Allowed: the absolute path of the drafter\'s directory.'
        )
    # the DDTree patch set's worker for DDTREE is the DFlash worker: it drafts with the same drafter, and 0.5.23's hook only
    # checks DFLASH, so a DDTREE unit without one would start and fail later; refused here, before the host changes
    if algorithm == 'DDTREE' and not envelope.get('speculative_draft_model_path'):
        problems.append(
            'sglang_service_envelope has speculative_algorithm DDTREE without speculative_draft_model_path; DDTree drafts '
            'with the DFlash drafter, which needs its model. Allowed: the absolute path of the drafter\'s directory.'
        )
    # sglang/srt/arg_groups/attention_hook.py::handle_attention_backend_compatibility
    if envelope.get('attention_backend') == 'flex_attention' and algorithm:
        problems.append(
            'sglang_service_envelope.attention_backend flex_attention does not take speculative decoding (%s); SGLang '
            'refuses it at start-up (attention_hook.handle_attention_backend_compatibility). Allowed: another '
            'attention_backend, or no speculative_algorithm.' % algorithm
        )
    # sglang/srt/arg_groups/serving_hook.py::handle_ssl_validation
    if envelope.get('ssl_keyfile') and not envelope.get('ssl_certfile'):
        problems.append(
            'sglang_service_envelope.ssl_keyfile needs ssl_certfile too; SGLang refuses a key without its certificate '
            'at start-up (serving_hook.handle_ssl_validation).'
        )
    # sglang/srt/configs/model_config.py::ModelConfig._derive_context_length
    context = envelope.get('context_length')
    config = ((host or {}).get('models', {}).get(envelope.get('model_path'), {}) or {}).get('config')
    allowed = str(v['sglang_service_environment'].get(ALLOW_LONGER_CONTEXT, '')).strip().lower() in ('1', 'true', 'yes', 'on')
    if _is_int(context) and isinstance(config, dict) and not allowed:
        derived = derived_context_length(config)
        if context > derived:
            problems.append(
                'sglang_service_envelope.context_length %d is more than the model\'s context length %d (%s\'s config.json); SGLang '
                'refuses it at start-up (model_config.ModelConfig._derive_context_length). Allowed: 1-%d, or set %s: "1" in '
                'sglang_service_environment to let SGLang run past the model\'s length.'
                % (context, derived, envelope.get('model_path'), derived, ALLOW_LONGER_CONTEXT)
            )
    return problems


def sglang_service_problems(values, host, hostname, group_names, groups, check_python=True):
    """Every problem of the service role's variables and of the host's fit, as messages; [] when none.

    ``values`` maps the role's variables to their values (and sglang_service_api_key_set,
    sglang_service_secrets_valid: booleans computed without handing the secrets over); ``host`` is
    sglang_host_facts' ``host``. The host's checks run only when the variables are right: a wrong
    envelope or port says nothing about the host. Without ``host`` (None), only the variables.
    """
    values, problems = parse_booleans(values, BOOLEANS)
    problems += variable_problems(values, hostname, group_names, groups)
    if problems:
        return problems
    # the sandbox plan after the host's fit (as the checks ran before they were one filter): a model
    # directory that is not there is named even when the sandbox would also hide it
    fit = [] if host is None else host_problems(values, hostname, host, check_python)
    return fit + startup_problems(values, host) + hardening_problems(values)


class FilterModule(object):
    def filters(self):
        return {'sglang_service_problems': sglang_service_problems}
