# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters over the checks of values that reach a unit file, an EnvironmentFile or a delete; the checks themselves
live in plugin_utils/safe_values.py, which the other filters share."""

from __future__ import annotations

from ansible_collections.ddtree.sglang.plugins.module_utils.sglang_args import secret_arg_names
from ansible_collections.ddtree.sglang.plugins.plugin_utils.safe_values import (
    is_loopback,
    path_and_parents,
    root_dir_problems,
    scrub_secrets,
    secret_values_valid,
    unit_value_problems,
)


class FilterModule(object):
    def filters(self):
        return {
            'root_dir_problems': root_dir_problems,
            'path_and_parents': path_and_parents,
            'unit_value_problems': unit_value_problems,
            'loopback': is_loopback,
            'secret_args': secret_arg_names,
            'scrub_secrets': scrub_secrets,
            'secret_values_valid': secret_values_valid,
        }
