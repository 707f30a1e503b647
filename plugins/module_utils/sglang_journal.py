# -*- coding: utf-8 -*-
# Copyright: (c) 2026, ddtree.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Former home of the systemd reader and the /proc socket owner; both now live in
systemd.py and proc_net.py. Only names, no code, so that older imports keep working;
new code imports systemd or proc_net.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.ddtree.sglang.plugins.module_utils.proc_net import (  # noqa: F401 pylint: disable=unused-import
    cgroup_procs_paths, listening_inodes, parse_proc_net_tcp, pid_socket_inodes, port_owner, process_name, socket_inode,
    unit_pids)
from ansible_collections.ddtree.sglang.plugins.module_utils.systemd import (  # noqa: F401 pylint: disable=unused-import
    UNIT_PROPERTIES, JournalReader, describe_exit, exec_start_argv, journal_argv, message_lines, message_text,
    parse_journal_json, parse_systemctl_show, systemctl_show_argv, unit_failure)
