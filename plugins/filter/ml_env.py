# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pins and release ids of the ml-env (controller side, pure functions); the pin checks themselves live in
plugin_utils/wheel_pins.py, which sglang_install and cuda_overlay share."""

from __future__ import annotations

import hashlib
import json

from ansible.errors import AnsibleFilterError

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


class FilterModule(object):
    def filters(self):
        return {
            'ml_env_requirements': ml_env_requirements,
            'ml_env_release_id': ml_env_release_id,
            'ml_env_problems': ml_env_problems,
        }
