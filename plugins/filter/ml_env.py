# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pins and release ids of the ml-env (controller side, pure functions); the pin checks themselves live in
plugin_utils/wheel_pins.py, which sglang_install and cuda_overlay share."""

from __future__ import annotations

import hashlib
import json

from ansible.errors import AnsibleFilterError

from ansible_collections.ddtree.sglang.plugins.plugin_utils.wheel_pins import pin_problems, requirement_lines


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


class FilterModule(object):
    def filters(self):
        return {
            'ml_env_requirements': ml_env_requirements,
            'ml_env_release_id': ml_env_release_id,
        }
