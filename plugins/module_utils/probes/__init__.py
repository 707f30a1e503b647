# -*- coding: utf-8 -*-
# Copyright: (c) 2026, ddtree.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Programs that run in another interpreter on the target (a release's Python), one per file.

The modules never call their functions: they send a program's source (``probe_argv``) to that
interpreter, which runs its main(). Being files, the programs are linted, sanity-checked and
unit-tested like the rest; inspect reads their source inside AnsiballZ's zip as well.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import inspect


def probe_argv(python, program, args=(), isolated=False, timeout_bin=None, timeout=None):
    """The command that runs ``program`` (a module of this package) with ``python``.

    With timeout_bin (coreutils timeout): SIGTERM at ``timeout`` seconds, SIGKILL 10 s later, to the
    probe's whole process group; exit status 124 (137 after the SIGKILL) means it fired.
    """
    argv = [python] + (['-I'] if isolated else []) + ['-c', inspect.getsource(program)] + list(args)
    if timeout_bin:
        argv = [timeout_bin, '--kill-after=10', str(int(timeout))] + argv
    return argv
