# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pins of the SGLang install (role sglang_install), checked on the controller before any host changes.

A wheel pin is ``{name, version, sha256}``, a patch pin ``{path, sha256}`` (docs/dev/INTERFACES.md).
"""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.ddtree.sglang.plugins.plugin_utils.wheel_pins import digest_problems, requirement_lines, wheel_pin_problems

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


class FilterModule(object):
    def filters(self):
        return {
            'sglang_install_pin_problems': sglang_install_pin_problems,
            'sglang_install_requirements': sglang_install_requirements,
            'sglang_install_series': sglang_install_series,
        }
