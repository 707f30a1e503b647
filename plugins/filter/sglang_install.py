# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pins of the SGLang install (role sglang_install), checked on the controller before any host changes.

A wheel pin is ``{name, version, sha256}``, a patch pin ``{path, sha256}`` (docs/INTERFACES.md).
"""

from __future__ import annotations

import re

from ansible.errors import AnsibleFilterError

SHA256_RE = re.compile(r'^[0-9a-f]{64}$')
# Enough of PEP 508 / PEP 440 to keep pip option syntax and whitespace out of a requirements line.
NAME_RE = re.compile(r'^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$')
VERSION_RE = re.compile(r'^[A-Za-z0-9][A-Za-z0-9.+!_-]*$')
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
            name = pin.get('name')
            if not isinstance(name, str) or not NAME_RE.match(name):
                problems.append('%s.name must be a distribution name such as "sglang", got %r' % (where, name))
            elif name.lower().replace('_', '-') in seen:
                problems.append('%s pins %s a second time' % (where, name))
            else:
                seen.add(name.lower().replace('_', '-'))
            version = pin.get('version')
            if not isinstance(version, str) or not VERSION_RE.match(version):
                problems.append('%s.version must be an exact version string such as "0.5.23", got %r' % (where, version))
            label = name
        else:
            path = pin.get('path')
            if not isinstance(path, str) or not path.strip():
                problems.append('%s.path must be the path of a patch file on the controller, got %r' % (where, path))
            elif path in seen:
                problems.append('%s lists %s a second time' % (where, path))
            else:
                seen.add(path)
            label = path
        digest = pin.get('sha256')
        if digest is None or digest == '':
            if not allow_unpinned:
                problems.append('%s (%s) has no sha256: every artifact must be pinned '
                                '(sglang_install_allow_unpinned: true accepts unpinned ones)' % (where, label))
        elif not isinstance(digest, str) or not SHA256_RE.match(digest):
            problems.append('%s.sha256 must be 64 lowercase hex digits, got %r' % (where, digest))
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
    lines = []
    for pin in pins:
        line = '%s===%s' % (pin['name'], pin['version'])
        if pin.get('sha256'):
            line += ' --hash=sha256:%s' % pin['sha256']
        lines.append(line)
    return '\n'.join(lines) + ('\n' if lines else '')


def sglang_install_series(stat_results):
    """The patch series as the selection records it: ``[{name, path, sha256}]`` in order, from the
    registered results of an ``ansible.builtin.stat`` loop over the patch pins (sha256 checksums)."""
    if not isinstance(stat_results, list):
        raise AnsibleFilterError('sglang_install_series expects the results list of a stat loop, got %s'
                                 % type(stat_results).__name__)
    series = []
    for result in stat_results:
        try:
            path = result['item']['path']
            checksum = result['stat']['checksum']
        except (KeyError, TypeError):
            raise AnsibleFilterError('sglang_install_series: %r is not a stat result of an existing file '
                                     'with a checksum, looped over patch pins' % (result,))
        series.append({'name': path.rstrip('/').rsplit('/', 1)[-1], 'path': path, 'sha256': checksum})
    return series


class FilterModule(object):
    def filters(self):
        return {
            'sglang_install_pin_problems': sglang_install_pin_problems,
            'sglang_install_requirements': sglang_install_requirements,
            'sglang_install_series': sglang_install_series,
        }
