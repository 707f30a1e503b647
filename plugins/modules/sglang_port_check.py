#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, ddtree.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: sglang_port_check
short_description: Tell whether a process other than a unit's own listens on a TCP port
version_added: "0.1.0"
description:
  - Finds the sockets listening on O(port) (IPv4 and IPv6, any address) in C(/proc/net/tcp) and C(/proc/net/tcp6), the
    processes holding them, and which of those belong to the systemd unit O(unit) (its control group and main PID).
  - C(in_use) is true when a process outside the unit listens on the port, so that a deploy can refuse the port before
    it replaces a unit whose new process could not bind it. A redeploy of a running unit on its own port is not in use.
  - Reading another user's sockets needs root (and C(CAP_SYS_PTRACE), which a root shell has on a normal host); processes
    that cannot be read are counted in C(unreadable). When the port listens, the unit has no process and no holder can
    be read, the port is still in use; when the unit runs and no holder can be read, C(in_use) is false and C(msg) says
    that it could not be told.
  - Only reads; it behaves the same in check mode.
author:
  - ddtree.sglang maintainers (@ddtree)
options:
  port:
    description: TCP port, 1-65535.
    type: int
    required: true
  unit:
    description: Unit whose own processes may hold the port, for example C(sglang-qwen.service). Empty for none.
    type: str
    default: ""
extends_documentation_fragment:
  - ddtree.sglang.read_only
'''

EXAMPLES = r'''
- name: Read who listens on the service's port
  ddtree.sglang.sglang_port_check:
    port: 30000
    unit: sglang-qwen.service
  register: port_check

- name: Refuse a port another process holds
  ansible.builtin.assert:
    that:
      - not port_check.in_use
    fail_msg: "port 30000: {{ port_check.msg }}"
'''

RETURN = r'''
in_use:
  description: True when a process outside O(unit) listens on the port.
  returned: always
  type: bool
  sample: true
listening:
  description: True when any socket listens on the port.
  returned: always
  type: bool
  sample: true
unit_holds:
  description: True when a process of O(unit) holds a listening socket of the port.
  returned: always
  type: bool
  sample: false
holders:
  description: Processes outside O(unit) that hold a listening socket of the port.
  returned: always
  type: list
  elements: dict
  contains:
    pid:
      description: Process id.
      type: int
      sample: 4242
    name:
      description: Process name (C(/proc/<pid>/comm)).
      type: str
      sample: python3
    unit:
      description: The systemd unit whose control group holds the process, empty when none.
      type: str
      sample: sglang-old.service
unreadable:
  description: Processes whose file descriptors could not be read.
  returned: always
  type: int
  sample: 0
msg:
  description: One line saying who holds the port.
  returned: always
  type: str
  sample: "PID 4242 (python3, sglang-old.service) listens on port 30000, not sglang-qwen.service"
'''

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.ddtree.sglang.plugins.module_utils import sglang_journal as journal


def process_unit(pid, proc='/proc'):
    """The .service/.scope a process belongs to, from /proc/<pid>/cgroup (v2 or v1's name=systemd)."""
    try:
        with open(os.path.join(proc, str(pid), 'cgroup'), 'r') as handle:
            text = handle.read()
    except (IOError, OSError):
        return ''
    for line in text.splitlines():
        parts = line.split(':', 2)
        if len(parts) != 3 or parts[1] not in ('', 'name=systemd'):
            continue
        for part in reversed(parts[2].strip('/').split('/')):
            if part.endswith(('.service', '.scope')):
                return part
    return ''


def port_check(port, unit_pids, unit='', proc='/proc'):
    """Who listens on ``port``: the result dict of the module (without ``changed``)."""
    listeners = journal.listening_inodes(port, proc)
    result = {'in_use': False, 'listening': bool(listeners), 'unit_holds': False, 'holders': [], 'unreadable': 0}
    if not listeners:
        result['msg'] = 'nothing listens on port %d' % port
        return result
    try:
        entries = sorted(int(e) for e in os.listdir(proc) if e.isdigit())
    except OSError:
        entries = []
    for pid in entries:
        try:
            held = journal.pid_socket_inodes(pid, proc) & listeners
        except OSError:
            result['unreadable'] += 1
            continue
        if not held:
            continue
        if pid in unit_pids:
            result['unit_holds'] = True
        else:
            result['holders'].append({'pid': pid, 'name': journal.process_name(pid, proc), 'unit': process_unit(pid, proc)})
    owner = unit or 'the unit'
    if result['holders']:
        result['in_use'] = True
        result['msg'] = '%s listen%s on port %d, not %s' % (
            ', '.join('PID %d (%s)' % (h['pid'], ', '.join(x for x in (h['name'], h['unit']) if x)) for h in result['holders']),
            's' if len(result['holders']) == 1 else '', port, owner)
    elif result['unit_holds']:
        result['msg'] = '%s holds port %d' % (owner, port)
    elif not unit_pids:
        # the unit runs no process, so whoever listens is someone else
        result['in_use'] = True
        result['msg'] = ('a process this module cannot read (%d unreadable) listens on port %d, and %s runs no process'
                         % (result['unreadable'], port, owner))
    else:
        result['msg'] = ('port %d listens but its holder could not be read (%d processes unreadable; root with CAP_SYS_PTRACE '
                         'reads them): cannot tell whether %s holds it' % (port, result['unreadable'], owner))
    return result


def main():
    module = AnsibleModule(
        argument_spec=dict(
            port=dict(type='int', required=True),
            unit=dict(type='str', default=''),
        ),
        supports_check_mode=True,
    )
    port = module.params['port']
    if not 1 <= port <= 65535:
        module.fail_json(msg='port must be in 1-65535, got %d' % port)
    unit = module.params['unit']
    unit_pids = set()
    if unit:
        rc, out, err = module.run_command(journal.systemctl_show_argv(unit))
        if rc == 0:
            state = journal.parse_systemctl_show(out)
            if state.get('MainPID') or state.get('ActiveState') in ('active', 'activating', 'deactivating', 'reloading'):
                unit_pids = journal.unit_pids(state.get('ControlGroup'), state.get('MainPID'))
    result = port_check(port, unit_pids, unit)
    module.exit_json(changed=False, **result)


if __name__ == '__main__':
    main()
