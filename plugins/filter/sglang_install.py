# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pins of the SGLang install (role sglang_install), checked on the controller before any host changes.

A wheel pin is ``{name, version, sha256}``, a patch pin ``{path, sha256}`` (docs/dev/INTERFACES.md).
"""

from __future__ import annotations

import json
import os
import re

from ansible.errors import AnsibleFilterError
from ansible.module_utils.parsing.convert_bool import boolean

from ansible_collections.ddtree.sglang.plugins.plugin_utils.wheel_pins import (
    digest_problems,
    as_pins,
    requirement_lines,
    wheel_pin_problems,
    wheel_source_problems,
)

KEYS = {'wheel': ('name', 'version', 'sha256'), 'patch': ('path', 'sha256')}


def sglang_install_pin_problems(pins, variable='pins', kind='wheel', allow_unpinned=False):
    """Every problem of one pin or a list of pins, as sentences naming the variable and the entry."""
    if kind not in KEYS:
        raise AnsibleFilterError("sglang_install_pin_problems: kind must be 'wheel' or 'patch', got %r" % (kind,))
    keys = KEYS[kind]
    shape = '{%s}' % ', '.join(keys)
    if isinstance(pins, dict):
        if not pins:
            return ['%s is not set: give a pin %s' % (variable, shape)]
        entries = [(variable, pins)]
    elif isinstance(pins, list):
        entries = [('%s[%d]' % (variable, index), pin) for index, pin in enumerate(pins)]
    else:
        return ['%s must be a %s pin or a list of them, got %s' % (variable, shape, type(pins).__name__)]
    problems = []
    seen = set()
    for where, pin in entries:
        if not isinstance(pin, dict):
            problems.append('%s must be a dict %s, got %r' % (where, shape, pin))
            continue
        unknown = sorted(set(pin) - set(keys))
        if unknown:
            problems.append('%s has unknown keys %s (allowed: %s)' % (where, ', '.join(unknown), ', '.join(keys)))
        if kind == 'wheel':
            problems += wheel_pin_problems(where, pin, seen)
            label = pin.get('name')
        else:
            path = pin.get('path')
            if not isinstance(path, str) or not path.strip():
                problems.append('%s.path must be the path of a patch file on the controller, got %r' % (where, path))
            elif path in seen:
                problems.append('%s lists %s a second time' % (where, path))
            else:
                seen.add(path)
            label = path
        problems += digest_problems(where, label, pin.get('sha256'), allow_unpinned, 'sglang_install_allow_unpinned')
    return problems


def sglang_install_requirements(pins):
    """A pip requirements file for wheel pins, one ``name===version --hash=sha256:<hex>`` line each.

    ``===`` (exact string) and not ``==``: ``==0.5.23`` also matches the local version
    0.5.23+ddtree.1 (PEP 440), and pip 23 takes that higher twin from a wheelhouse holding both
    before it compares hashes, so the upstream pin would fail on the prebuilt wheel's hash.
    """
    if isinstance(pins, dict):
        pins = [pins]
    problems = sglang_install_pin_problems(pins, 'pins', 'wheel', allow_unpinned=True)
    if problems:
        raise AnsibleFilterError('; '.join(problems))
    return requirement_lines(pins)


def sglang_install_series(stat_results):
    """The patch series as the selection records it: ``[{name, path, sha256}]`` in order, from the
    registered results of an ``ansible.builtin.stat`` loop over the patch pins (sha256 checksums)."""
    if not isinstance(stat_results, list):
        raise AnsibleFilterError('sglang_install_series expects the results list of a stat loop, got %s' % type(stat_results).__name__)
    series = []
    for result in stat_results:
        try:
            path = result['item']['path']
            checksum = result['stat']['checksum']
        except (KeyError, TypeError):
            raise AnsibleFilterError('sglang_install_series: %r is not a stat result of an existing file with a checksum, looped over patch pins' % (result,))
        series.append({'name': path.rstrip('/').rsplit('/', 1)[-1], 'path': path, 'sha256': checksum})
    return series


# where each source takes its pins from, and of what kind (upstream adds the patch series)
SOURCE_PINS = {
    'upstream': (('sglang_install_wheel', 'wheel'), ('sglang_install_patches', 'patch')),
    'prebuilt': (('sglang_install_prebuilt_wheel', 'wheel'),),
    'fork': (('sglang_install_build_wheels', 'wheel'),),
}
FORK_KEYS = {'bundle', 'mirror', 'ref', 'sha256', 'commit', 'subdirectory'}
SUBDIRECTORY_RE = re.compile(r'^[A-Za-z0-9_][A-Za-z0-9_.-]*(/[A-Za-z0-9_][A-Za-z0-9_.-]*)*\Z')


def _json(value):
    return json.dumps(value, default=str)


def fork_ok(fork, allow_unpinned):
    """Whether ``sglang_install_fork`` is a bundle pinned by its sha256 or a mirror pinned by a commit, with a ref and
    a subdirectory inside the checkout."""
    if not isinstance(fork, dict) or set(fork) - FORK_KEYS:
        return False
    bundle, mirror = fork.get('bundle') or '', fork.get('mirror') or ''
    commit, sha256 = fork.get('commit') or '', fork.get('sha256') or ''
    subdirectory = fork.get('subdirectory', 'python')
    pinned = sha256 if bundle else commit
    return (
        bool(bundle) != bool(mirror)
        and bool(fork.get('ref'))
        and isinstance(commit, str) and re.match(r'^([0-9a-f]{40}|[0-9a-f]{64})?\Z', commit) is not None
        and isinstance(sha256, str) and re.match(r'^([0-9a-f]{64})?\Z', sha256) is not None
        and isinstance(subdirectory, str) and SUBDIRECTORY_RE.match(subdirectory) is not None
        and (boolean(allow_unpinned, strict=False) or bool(pinned))
    )  # fmt: skip


def sglang_install_problems(v):
    """Every problem of the role's variables (``v`` maps each to its value), each naming the variable and what it
    allows; [] when they are fine. Only the pins of the chosen source are checked; the patch directory is looked for on
    the controller, where this filter runs."""
    source = v['sglang_install_source']
    allow_unpinned = boolean(v['sglang_install_allow_unpinned'], strict=False)
    problems = []
    pin_errors = []
    for variable, kind in SOURCE_PINS.get(source, SOURCE_PINS['fork']):
        # the fork's build wheels (a list) may be a hashed requirements file's text: select.yml reads it with wheel_pins
        pins, lock_errors = as_pins(v[variable], variable) if variable == 'sglang_install_build_wheels' else (v[variable], [])
        pin_errors += lock_errors or sglang_install_pin_problems(pins, variable, kind, allow_unpinned)
    if pin_errors:
        problems.append('sglang_install_source is %s: %s' % (source, '; '.join(pin_errors)))
    problems += wheel_source_problems(
        'sglang_install_pip_find_links',
        'sglang_install_pip_index_url',
        v['sglang_install_pip_find_links'],
        v['sglang_install_pip_index_url'],
        ' for SGLang',
        '; by default they are ml_env_pip_find_links and ml_env_pip_index_url',
    )
    fork = v['sglang_install_fork']
    if source == 'fork' and not fork_ok(fork, allow_unpinned):
        problems.append(
            'sglang_install_fork must be {bundle: <git bundle on the host>, sha256: <64 hex>, ref: <tag, branch or commit>} '
            'or {mirror: <git repository on the host>, ref, commit: <commit id>}, optionally with commit (checked after '
            'the checkout) and subdirectory (default python: a relative path inside the checkout, without "..", "." or '
            'a leading "/"); a bundle is pinned by its sha256, a mirror by the commit. Got %s.' % _json(fork)
        )
    files_dir = v['sglang_install_files_dir']
    if not (isinstance(files_dir, str) and os.path.isdir(files_dir)):
        problems.append("sglang_install_files_dir must be a directory on the controller (default: the collection's root), got %s." % _json(files_dir))
    return problems


class FilterModule(object):
    def filters(self):
        return {
            'sglang_install_pin_problems': sglang_install_pin_problems,
            'sglang_install_requirements': sglang_install_requirements,
            'sglang_install_series': sglang_install_series,
            'sglang_install_problems': sglang_install_problems,
        }
