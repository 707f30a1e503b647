# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Choosing the CUDA overlay's wheel set from a host's GPU facts (controller side, pure).

A matrix entry says which GPUs, driver and driver-supported CUDA its wheels were built for.
The first entry that fits wins; when none does, the answer lists every entry with the reasons
it did not fit, so that an operator sees at once whether to add an entry or upgrade a driver.
A malformed matrix is a configuration error and raises, rather than quietly matching nothing
(or everything).
"""

from __future__ import annotations

import json
import re

from ansible.errors import AnsibleFilterError
from ansible_collections.ddtree.sglang.plugins.plugin_utils.wheel_pins import as_pins, pin_problems, wheel_source_problems

ENTRY_KEYS = {'name', 'description', 'match', 'wheels', 'probe_imports', 'expect_cuda'}
MATCH_KEYS = {'compute_caps', 'min_driver_version', 'min_cuda_version', 'simulated'}
_VERSION = re.compile(r'^\d+(\.\d+)*\Z')
_CAPABILITY = re.compile(r'^\d+\.\d+\Z')


def version_tuple(text):
    """'580.95.05' -> (580, 95, 5); None when it is not dotted numbers."""
    text = str(text).strip()
    if not _VERSION.match(text):
        return None
    return tuple(int(part) for part in text.split('.'))


def version_at_least(have, need):
    """Numeric comparison, missing parts counted as 0 (580.95.05 >= 575, 13.0 >= 13)."""
    width = max(len(have), len(need))
    return have + (0,) * (width - len(have)) >= need + (0,) * (width - len(need))


def _capability(value, where):
    # YAML reads 8.6 as a float; str() gives it back as written for every capability CUDA has
    text = str(value).strip()
    if isinstance(value, bool) or not _CAPABILITY.match(text):
        raise AnsibleFilterError('%s: %r is not a compute capability such as "8.6"' % (where, value))
    major, minor = text.split('.')
    return '%d.%d' % (int(major), int(minor))


def _version_option(match, key, where, allow_int):
    value = match[key]
    if isinstance(value, bool) or isinstance(value, float) or (isinstance(value, int) and not allow_int):
        # a float loses digits (12.10 reads as 12.1), so a version must be quoted
        raise AnsibleFilterError(
            '%s.%s: write the version as a quoted string such as "%s", got %r' % (where, key, '575' if key == 'min_driver_version' else '13.0', value)
        )
    parsed = version_tuple(value)
    if parsed is None:
        raise AnsibleFilterError('%s.%s: %r is not a numeric version such as "575.51" or "13.0"' % (where, key, value))
    return str(value).strip(), parsed


def normalise_entry(entry, index, allow_unpinned=False, variable='cuda_overlay_matrix'):
    """The entry with defaults filled in and versions parsed; raises on any mistake in it."""
    where = '%s[%d]' % (variable, index)
    if not isinstance(entry, dict):
        raise AnsibleFilterError('%s must be a dict {name, match, wheels, probe_imports, expect_cuda}, got %r' % (where, entry))
    name = entry.get('name')
    if not isinstance(name, str) or not name.strip():
        raise AnsibleFilterError('%s has no name' % where)
    where = '%s (%s)' % (where, name)
    unknown = sorted(set(entry) - ENTRY_KEYS)
    if unknown:
        raise AnsibleFilterError('%s has unknown keys %s (allowed: %s)' % (where, ', '.join(unknown), ', '.join(sorted(ENTRY_KEYS))))
    match = entry.get('match') or {}
    if not isinstance(match, dict):
        raise AnsibleFilterError('%s.match must be a dict, got %r' % (where, match))
    unknown = sorted(set(match) - MATCH_KEYS)
    if unknown:
        # a misspelt key would otherwise drop a condition and match GPUs it was never meant for
        raise AnsibleFilterError('%s.match has unknown keys %s (allowed: %s)' % (where, ', '.join(unknown), ', '.join(sorted(MATCH_KEYS))))
    rules = {}
    if 'compute_caps' in match:
        caps = match['compute_caps']
        if not isinstance(caps, list) or not caps:
            raise AnsibleFilterError('%s.match.compute_caps must be a non-empty list such as ["8.6"], got %r' % (where, caps))
        rules['compute_caps'] = [_capability(c, where + '.match.compute_caps') for c in caps]
    if 'min_driver_version' in match:
        rules['min_driver_version'] = _version_option(match, 'min_driver_version', where + '.match', True)
    if 'min_cuda_version' in match:
        rules['min_cuda_version'] = _version_option(match, 'min_cuda_version', where + '.match', False)
    if 'simulated' in match:
        if not isinstance(match['simulated'], bool):
            raise AnsibleFilterError('%s.match.simulated must be true or false, got %r' % (where, match['simulated']))
        rules['simulated'] = match['simulated']
    # a hashed requirements file's text becomes its pins here, so the selection (and the release id) holds pins either way
    wheels, problems = as_pins(entry.get('wheels'), '%s.wheels' % where)
    problems = problems or pin_problems(wheels, '%s.wheels' % where, allow_unpinned, 'cuda_overlay_allow_unpinned')
    if not problems and not wheels:
        problems = ['%s.wheels is empty: an overlay entry installs at least one wheel' % where]
    if problems:
        raise AnsibleFilterError('; '.join(problems))
    imports = entry.get('probe_imports', ['torch'])
    if not isinstance(imports, list) or not all(isinstance(i, str) and i for i in imports):
        raise AnsibleFilterError('%s.probe_imports must be a list of module names, got %r' % (where, imports))
    expect_cuda = entry.get('expect_cuda', True)
    if not isinstance(expect_cuda, bool):
        raise AnsibleFilterError('%s.expect_cuda must be true or false, got %r' % (where, expect_cuda))
    return {'name': name, 'rules': rules, 'wheels': wheels, 'probe_imports': imports, 'expect_cuda': expect_cuda}


def host_summary(gpu_facts):
    if not isinstance(gpu_facts, dict):
        raise AnsibleFilterError('cuda_overlay_match expects the gpu_facts fact (ddtree.sglang.gpu_facts), got %r' % (gpu_facts,))
    gpus = gpu_facts.get('gpus') or []
    caps = sorted(set(g.get('compute_cap') for g in gpus if g.get('compute_cap')), key=lambda c: version_tuple(c) or (0,))
    return {
        'count': len(gpus),
        'driver_version': gpu_facts.get('driver_version'),
        'cuda_version': gpu_facts.get('cuda_version'),
        'compute_caps': caps,
        'compute_cap_unknown': any(not g.get('compute_cap') for g in gpus),
        'gpu_classes': list(gpu_facts.get('gpu_classes') or sorted(set(g.get('name') for g in gpus if g.get('name')))),
        'simulated': bool(gpu_facts.get('simulated')),
    }


def entry_mismatches(rules, host):
    """Why an entry's rules do not fit the host (empty: it fits)."""
    reasons = []
    if 'simulated' in rules and rules['simulated'] != host['simulated']:
        reasons.append('for %s GPUs, this host\'s are %s' % ('simulated' if rules['simulated'] else 'real', 'simulated' if host['simulated'] else 'real'))
    if 'compute_caps' in rules:
        wanted = rules['compute_caps']
        if not host['count']:
            reasons.append('needs compute capability %s, nvidia-smi lists no GPU' % ' or '.join(wanted))
        elif host['compute_cap_unknown']:
            reasons.append(
                'needs compute capability %s, the driver (%s) cannot report it (drivers before 510)'
                % (' or '.join(wanted), host['driver_version'] or 'unknown')
            )
        else:
            outside = [c for c in host['compute_caps'] if c not in wanted]
            if outside:
                reasons.append('compute capability %s not in [%s]' % (', '.join(outside), ', '.join(wanted)))
    for key, label, have in (
        ('min_driver_version', 'driver', host['driver_version']),
        ('min_cuda_version', 'CUDA (the driver\'s highest)', host['cuda_version']),
    ):
        if key not in rules:
            continue
        text, need = rules[key]
        parsed = version_tuple(have) if have is not None else None
        if parsed is None:
            reasons.append('needs %s %s or later, the host\'s is unknown (%r)' % (label, text, have))
        elif not version_at_least(parsed, need):
            reasons.append('%s %s < %s (%s)' % (label, have, text, key))
    return reasons


def _host_text(host):
    gpus = ', '.join(host['gpu_classes']) or 'no GPU'
    return 'driver %s, CUDA %s, compute capability %s, %s%s' % (
        host['driver_version'] or 'unknown',
        host['cuda_version'] or 'unknown',
        ', '.join(host['compute_caps']) or 'unknown',
        gpus,
        ' (simulated)' if host['simulated'] else '',
    )


def cuda_overlay_match(gpu_facts, matrix, allow_unpinned=False, variable='cuda_overlay_matrix'):
    """Pick the first matrix entry that fits the host's GPU facts.

    Returns ``{matched, entry, wheels, probe_imports, expect_cuda, compute_cap, host, rejected, msg}``;
    ``msg`` says why nothing matched (``matched`` false) or what was chosen.
    """
    if not isinstance(matrix, list):
        raise AnsibleFilterError('%s must be a list of entries, got %s' % (variable, type(matrix).__name__))
    entries = [normalise_entry(e, i, allow_unpinned, variable) for i, e in enumerate(matrix)]
    names = [e['name'] for e in entries]
    twice = sorted(set(n for n in names if names.count(n) > 1))
    if twice:
        raise AnsibleFilterError('%s names %s more than once' % (variable, ', '.join(twice)))
    host = host_summary(gpu_facts)
    rejected = []
    for entry in entries:
        reasons = entry_mismatches(entry['rules'], host)
        if reasons:
            rejected.append({'entry': entry['name'], 'reasons': reasons})
            continue
        return {
            'matched': True,
            'entry': entry['name'],
            'wheels': entry['wheels'],
            'probe_imports': entry['probe_imports'],
            'expect_cuda': entry['expect_cuda'],
            'compute_cap': host['compute_caps'][0] if len(host['compute_caps']) == 1 else None,
            'host': host,
            'rejected': rejected,
            'msg': 'matrix entry %s fits this host (%s)' % (entry['name'], _host_text(host)),
        }
    if not entries:
        why = '%s is empty' % variable
    else:
        why = '; '.join('%s: %s' % (r['entry'], ', '.join(r['reasons'])) for r in rejected)
    return {
        'matched': False,
        'entry': None,
        'wheels': [],
        'probe_imports': [],
        'expect_cuda': None,
        'compute_cap': None,
        'host': host,
        'rejected': rejected,
        'msg': 'no entry of %s fits this host (%s): %s. Add an entry for these GPUs with wheels built for them, '
        'or upgrade the driver where an entry needs a newer one; nothing was installed.' % (variable, _host_text(host), why),
    }


def _json(value):
    return json.dumps(value, default=str)


def cuda_overlay_problems(v):
    """The problems of the overlay's variables (``v`` maps each to its value), each naming the variables and what they
    allow; [] when they are fine. The matrix's shape is cuda_overlay_match's to refuse."""
    problems = []
    smi, release, python, timeout = (
        v['cuda_overlay_nvidia_smi_path'],
        v['cuda_overlay_release_path'],
        v['cuda_overlay_release_python'],
        v['cuda_overlay_probe_timeout'],
    )
    paths_ok = (
        isinstance(smi, str) and re.match(r'^(/\S*|[^\s/]+)\Z', smi)
        and isinstance(release, str) and re.match(r'^(/.*)?\Z', release)
        and isinstance(python, str) and re.match(r'^(/.*)?\Z', python)
        and not isinstance(timeout, bool) and re.match(r'^[0-9]+\Z', str(timeout)) and int(str(timeout)) >= 1
    )  # fmt: skip
    if not paths_ok:
        problems.append(
            'cuda_overlay_nvidia_smi_path must be a command name or an absolute path (default nvidia-smi), cuda_overlay_release_path '
            "and cuda_overlay_release_python absolute paths or empty (default: role ml_env's release), cuda_overlay_probe_timeout "
            '1 or more seconds (default 300); got %s, %s, %s, %s.' % (_json(smi), _json(release), _json(python), _json(timeout))
        )
    problems += wheel_source_problems(
        'cuda_overlay_pip_find_links',
        'cuda_overlay_pip_index_url',
        v['cuda_overlay_pip_find_links'],
        v['cuda_overlay_pip_index_url'],
        ' for the overlay',
        '; by default they are ml_env_pip_find_links and ml_env_pip_index_url',
    )
    return problems


class FilterModule:
    """CUDA overlay filters."""

    def filters(self):
        return {'cuda_overlay_match': cuda_overlay_match, 'cuda_overlay_problems': cuda_overlay_problems}
