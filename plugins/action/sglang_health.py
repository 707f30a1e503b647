# -*- coding: utf-8 -*-
# Copyright: (c) 2026, ddtree.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of ddtree.sglang.sglang_health: the verdict in short slices, with progress lines.

A module cannot print while it runs, so one long module call is a silent wait of up to
``timeout`` seconds. This plugin runs the module for ``slice_s`` seconds at a time. A slice
without a verdict returns ``verdict: pending`` with a ``progress`` line and a ``resume`` dict
(baseline NRestarts, first MainPID, InvocationID, start time, HTTP probe progress, the healthy
generation of a settle window); the plugin prints the line on the controller and passes the
dict back as the module's internal ``_resume`` option. Inside a slice the module still polls
every ``poll_interval``, so a crash is still decided within about a second. The task result
is the module's last (decisive) result, unchanged apart from ``_resume`` being left out of
``invocation``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase
from ansible.utils.display import Display
from ansible.utils.vars import merge_hash

display = Display()

MODULE = 'ddtree.sglang.sglang_health'
# seconds per module call when the task does not set slice_s; 0 would mean one silent call
DEFAULT_SLICE_S = 5.0
# the module decides by its own deadline; this only stops a runaway loop should it not
GUARD_S = 600.0


def _seconds(value, default):
    try:
        return float(value)
    except (TypeError, ValueError):
        return default


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _supports_check_mode = True
    _supports_async = False

    def run(self, tmp=None, task_vars=None):
        if task_vars is None:
            task_vars = dict()
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp  # tmp no longer has any effect

        args = dict(self._task.args)
        if '_resume' in args:
            raise AnsibleActionFail('_resume is internal to the sglang_health action plugin; do not set it in a task')
        if args.get('slice_s') is None:
            args['slice_s'] = DEFAULT_SLICE_S
        host = task_vars.get('inventory_hostname') or self._play_context.remote_addr or '?'
        limit = time.monotonic() + _seconds(args.get('timeout'), 600.0) + _seconds(args.get('settle_s'), 0.0) + GUARD_S

        try:
            while True:
                module_result = self._execute_module(module_name=MODULE, module_args=args, task_vars=task_vars)
                resume = module_result.get('resume')
                if module_result.get('failed') or module_result.get('verdict') != 'pending' or not isinstance(resume, dict):
                    break
                if time.monotonic() > limit:
                    raise AnsibleActionFail('sglang_health kept answering pending past its timeout; last progress: %s' % module_result.get('progress'))
                display.display('[%s] %s' % (host, module_result.get('progress') or 'no verdict yet'))
                args['_resume'] = resume
        finally:
            # the slices share one remote tmp dir; remove it as the normal action does
            self._remove_tmp_path(self._connection._shell.tmpdir)

        invocation = module_result.get('invocation')
        if isinstance(invocation, dict) and isinstance(invocation.get('module_args'), dict):
            invocation['module_args'].pop('_resume', None)
        return merge_hash(result, module_result)
