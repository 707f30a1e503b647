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
version_added: "0.3.0"
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

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.ddtree.sglang.plugins.module_utils import proc_net, systemd


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
        state = systemd.show(module.run_command, unit)
        if state is not None and (state.get('MainPID') or state.get('ActiveState') in ('active', 'activating', 'deactivating', 'reloading')):
            unit_pids = proc_net.unit_pids(state.get('ControlGroup'), state.get('MainPID'))
    result = proc_net.port_check(port, unit_pids, unit)
    module.exit_json(changed=False, **result)


if __name__ == '__main__':
    main()
