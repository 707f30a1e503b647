# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pins and release ids of the ml-env (controller side, pure functions); the pin checks themselves live in
plugin_utils/wheel_pins.py, which sglang_install and cuda_overlay share."""

from __future__ import annotations

import hashlib
import json

from ansible.errors import AnsibleFilterError

from ansible_collections.ddtree.sglang.plugins.plugin_utils.prerequisites import (
    PREREQUISITES,
    command_problems,
    missing_commands,
    packages_text,
    prerequisite_packages,
)
from ansible_collections.ddtree.sglang.plugins.plugin_utils.safe_values import root_dir_problems
from ansible_collections.ddtree.sglang.plugins.plugin_utils.wheel_pins import pin_problems, requirement_lines, wheel_source_problems


def ml_env_requirements(pins, variable='pins', allow_unpinned=False, allow_unpinned_variable='ml_env_allow_unpinned'):
    """A pip requirements file for the pins; refuses the whole list on any problem."""
    problems = pin_problems(pins, variable, allow_unpinned, allow_unpinned_variable)
    if problems:
        raise AnsibleFilterError('; '.join(problems))
    return requirement_lines(pins)


def ml_env_release_id(inputs, length=16):
    """Stable id of a release: same inputs, same id (key order and whitespace do not count)."""
    try:
        canonical = json.dumps(inputs, sort_keys=True, separators=(',', ':'), ensure_ascii=True)
    except (TypeError, ValueError) as exc:
        raise AnsibleFilterError('ml_env_release_id: inputs are not JSON data: %s' % exc)
    return hashlib.sha256(canonical.encode('ascii')).hexdigest()[: int(length)]


def _json(value):
    return json.dumps(value, default=str)


def _absolute(path):
    return isinstance(path, str) and path.startswith('/')


def ml_env_problems(v):
    """Every problem of the role's own variables (``v`` maps each to its value), each naming the variable and what it
    allows; [] when they are fine. The pins are refused by ml_env_requirements, which renders them."""
    problems = wheel_source_problems('ml_env_pip_find_links', 'ml_env_pip_index_url', v['ml_env_pip_find_links'], v['ml_env_pip_index_url'])
    root, python, referenced_in = v['ml_env_root'], v['ml_env_python'], v['ml_env_referenced_in']
    if not (
        _absolute(root) and root != '/' and _absolute(python)
        and isinstance(referenced_in, (list, tuple)) and all(_absolute(path) for path in referenced_in)
    ):  # fmt: skip
        problems.append(
            'ml_env_root (default /opt/ddtree/ml-env), ml_env_python (default /usr/bin/python3) and every entry of '
            'ml_env_referenced_in (default [/etc/systemd/system]) must be absolute paths on the host, and ml_env_root not /; '
            'got %s, %s, %s.' % (_json(root), _json(python), _json(referenced_in))
        )
    problems += root_dir_problems({'ml_env_root': root})
    keep = v['ml_env_keep_releases']
    if isinstance(keep, bool) or not isinstance(keep, int) or keep < 1:
        problems.append('ml_env_keep_releases must be an integer of 1 or more (releases kept besides the current one), got %s.' % _json(keep))
    return problems


def _wheels(pins):
    return {str(pin.get('name')): pin for pin in pins or [] if isinstance(pin, dict)}


def _wheel_changes(label, new, old):
    """'name old -> new' per wheel pin that differs (by name), '+name version' and '-name version' for the others."""
    new, old = _wheels(new), _wheels(old)
    changes = []
    for name in sorted(set(new) | set(old)):
        a, b = old.get(name), new.get(name)
        if a is None:
            changes.append('%s +%s %s' % (label, name, b.get('version')))
        elif b is None:
            changes.append('%s -%s %s' % (label, name, a.get('version')))
        elif (a.get('version'), a.get('sha256')) != (b.get('version'), b.get('sha256')):
            same = a.get('version') == b.get('version')
            changes.append('%s %s %s -> %s' % (label, name, a.get('version'), (b.get('version') + ' (another sha256)') if same else b.get('version')))
    return changes


def ml_env_plan(inputs, release_id, host_ml_env):
    """What a real run would do with the release (check mode's plan): ``{id, build, current, changes}``.

    ``inputs`` are the release's inputs (python, wheels, cuda_overlay, sglang), ``host_ml_env`` the host read's
    ``{current, releases: {id: {complete, manifest}}}``. ``build`` is whether the release would be built (it is not
    complete on the host); ``changes`` names what differs from the current release's inputs: wheels, the overlay's
    wheels, SGLang's wheels and patches, the interpreter."""
    host_ml_env = host_ml_env or {}
    releases = host_ml_env.get('releases') or {}
    current = host_ml_env.get('current')
    build = not (releases.get(release_id) or {}).get('complete')
    old = ((releases.get(current) or {}).get('manifest') or {}).get('inputs') or {}
    changes = []
    if current and current != release_id:
        if old.get('python') != inputs.get('python'):
            changes.append('python %s -> %s' % (old.get('python'), inputs.get('python')))
        changes += _wheel_changes('wheel', inputs.get('wheels'), old.get('wheels'))
        new_overlay, old_overlay = inputs.get('cuda_overlay') or {}, old.get('cuda_overlay') or {}
        if new_overlay.get('entry') != old_overlay.get('entry'):
            changes.append('cuda_overlay entry %s -> %s' % (old_overlay.get('entry'), new_overlay.get('entry')))
        changes += _wheel_changes('cuda_overlay wheel', new_overlay.get('wheels'), old_overlay.get('wheels'))
        new_sglang, old_sglang = inputs.get('sglang') or {}, old.get('sglang') or {}
        if new_sglang.get('source') != old_sglang.get('source'):
            changes.append('sglang source %s -> %s' % (old_sglang.get('source'), new_sglang.get('source')))
        changes += _wheel_changes('sglang wheel', new_sglang.get('wheels'), old_sglang.get('wheels'))
        new_patches = [(p.get('name'), p.get('sha256')) for p in new_sglang.get('patches') or []]
        old_patches = [(p.get('name'), p.get('sha256')) for p in old_sglang.get('patches') or []]
        if new_patches != old_patches:
            old_names, new_names = [name for name, digest in old_patches], [name for name, digest in new_patches]
            changes.append('sglang patches %s -> %s' % (', '.join(old_names) or 'none', ', '.join(new_names) or 'none'))
        if new_sglang.get('fork') != old_sglang.get('fork'):
            changes.append('sglang fork changed')
        if not changes:
            changes.append('inputs differ from the current release %s in what its manifest does not record' % current)
    return {'id': release_id, 'build': build, 'current': current, 'changes': changes}


def ml_env_prerequisite_needs(host, commands):
    """What a build needs that the host lacks: 'venv' when ml_env_python cannot make a venv with pip, and each missing
    command of ``commands`` (``host`` is sglang_host_facts' ``host``: python_venv, commands)."""
    return (['venv'] if host.get('python_venv') is False else []) + missing_commands(host, commands)


def ml_env_prerequisite_problems(host, inventory_hostname, python, commands):
    """The problems of a host that must build a release: ``python`` (ml_env_python) must create a venv with pip, and
    each of ``commands`` must be on the host; ``host`` is sglang_host_facts' ``host`` (python_venv, commands). Each
    message names what is missing, why the build needs it and the package that brings it on Debian/Ubuntu and on the
    RHEL family."""
    problems = []
    if host.get('python_venv') is False:
        problems.append(
            'ml_env_python %s on %s cannot create a venv with pip (its ensurepip module is missing): %s. Install %s '
            '(python3.X-venv for another python3.X on Debian/Ubuntu), name another interpreter, or set '
            'ml_env_install_prerequisites: true to have it installed.' % (python, inventory_hostname, PREREQUISITES['venv'][0], packages_text('venv'))
        )
    return problems + command_problems(host, inventory_hostname, commands)


def ml_env_prerequisite_packages(host, commands, os_family):
    """The packages ml_env_install_prerequisites installs for what the host lacks (ml_env_prerequisite_needs)."""
    return prerequisite_packages(ml_env_prerequisite_needs(host, commands), os_family)


class FilterModule(object):
    def filters(self):
        return {
            'ml_env_requirements': ml_env_requirements,
            'ml_env_release_id': ml_env_release_id,
            'ml_env_problems': ml_env_problems,
            'ml_env_plan': ml_env_plan,
            'ml_env_prerequisite_problems': ml_env_prerequisite_problems,
            'ml_env_prerequisite_packages': ml_env_prerequisite_packages,
            'ml_env_prerequisite_needs': ml_env_prerequisite_needs,
        }
