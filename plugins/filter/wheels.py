# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Wheel pins of a role (ml_env, cuda_overlay, sglang_install, sglang_router): a pin list as given or read from a
hashed requirements file, and pip's options for them; one rule each, in plugin_utils/wheel_pins.py."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.ddtree.sglang.plugins.plugin_utils.wheel_pins import as_pins, pip_wheel_args


def wheel_pins(pins, variable='pins'):
    """The pin list of a role's variable: as given when it is a list, read from the text of a hashed requirements file
    (``name==version --hash=sha256:...`` per line, as uv and pip-tools write it) when it is a string. A line that is no
    such pin is refused, naming the variable and the line."""
    pins, problems = as_pins(pins, variable)
    if problems:
        raise AnsibleFilterError('; '.join(problems))
    return pins


class FilterModule:
    """Wheel filters."""

    def filters(self):
        return {'pip_wheel_args': pip_wheel_args, 'wheel_pins': wheel_pins}
