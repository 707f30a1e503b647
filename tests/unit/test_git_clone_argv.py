# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every git clone a role runs ends git's options before its source, and reaches local transports only.

The source of sglang_install's fork clone is a variable (sglang_install_fork.mirror): before "--" a value
such as --upload-pack=<command> would be an option, and a remote URL (ext::, ssh://-o...) a command or a
network fetch.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import glob
import os

import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))


def tasks(node):
    """Every task of a task file, blocks included."""
    for task in node or []:
        if not isinstance(task, dict):
            continue
        yield task
        for key in ('block', 'rescue', 'always'):
            yield from tasks(task.get(key))


def git_clones():
    found = []
    for path in sorted(glob.glob(os.path.join(ROOT, 'roles', '*', 'tasks', '*.yml'))):
        with open(path) as handle:
            for task in tasks(yaml.safe_load(handle)):
                for module in ('ansible.builtin.command', 'command', 'ansible.builtin.shell', 'shell'):
                    args = task.get(module)
                    if args is None:
                        continue
                    argv = args.get('argv') if isinstance(args, dict) else None
                    text = ' '.join(argv) if isinstance(argv, list) else str(args.get('cmd', '') if isinstance(args, dict) else args)
                    if 'git' in text.split() and 'clone' in text.split():
                        found.append((os.path.relpath(path, ROOT), task['name'], argv))
                assert 'ansible.builtin.git' not in task and 'git' not in task, (
                    '%s uses the git module: check that its repo cannot carry an option, then extend this test' % path
                )
    return found


def test_the_fork_clone_is_found():
    # guards the test itself: a moved task must not make the checks below pass on nothing
    assert [name for _path, name, _argv in git_clones()] == ['Clone the fork']


def test_every_clone_is_an_argv_with_its_source_after_the_end_of_options():
    for path, name, argv in git_clones():
        assert isinstance(argv, list), '%s: "%s" must run git with argv, not a shell line' % (path, name)
        clone = argv.index('clone')
        assert '--' in argv[clone:], '%s: "%s" must end the options with "--" before the source' % (path, name)
        # the source and the destination, nothing else, after "--"
        assert len(argv) - argv.index('--', clone) - 1 == 2, argv


def test_every_clone_reaches_local_transports_only():
    for path, name, argv in git_clones():
        settings = [argv[i + 1] for i, word in enumerate(argv[: argv.index('clone')]) if word == '-c']
        assert settings == ['protocol.allow=never', 'protocol.file.allow=always'], (path, name, settings)
