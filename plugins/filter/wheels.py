# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""pip's options for a role's pinned wheels (ml_env, cuda_overlay, sglang_install, sglang_router): one rule, in
plugin_utils/wheel_pins.py."""

from __future__ import annotations

from ansible_collections.ddtree.sglang.plugins.plugin_utils.wheel_pins import pip_wheel_args


class FilterModule:
    """Wheel filters."""

    def filters(self):
        return {'pip_wheel_args': pip_wheel_args}
