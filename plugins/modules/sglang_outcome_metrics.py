#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, ddtree.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: sglang_outcome_metrics
short_description: Write a deploy's outcome as node-exporter textfile metrics
version_added: "0.3.0"
description:
  - Writes C(<directory>/ddtree_sglang_<service>.prom) for the textfile collector of prometheus-node-exporter
    (Debian's default directory is C(/var/lib/prometheus/node-exporter)), the C(ddtree_sglang_*) metrics of
    docs/observability.md, which say when the last deploy or rollback ended, its action, outcome, cause and release,
    the last verdict, the gate's ratio and whether it passed, the rollbacks so far and when the last one ended.
  - The counter and the last rollback's time carry over from the file before; a missing or unreadable file starts
    them from zero.
  - Atomic and readable by the exporter (a temporary file in the same directory, mode 0644, renamed over the old one),
    so a scrape never reads half a file. Holds no secret, only names, outcomes and numbers.
author:
  - ddtree.sglang maintainers (@ddtree)
options:
  directory:
    description: The textfile collector's directory; made (0755) when missing.
    type: path
    required: true
  service:
    description: The service's name (the unit without C(.service)); the file's name and the C(service) label.
    type: str
    required: true
  action:
    description: What the run did.
    type: str
    choices: [deploy, rollback]
    required: true
  outcome:
    description: The run's outcome (the deploy protocol's C(sglang_service_outcome)).
    type: str
    required: true
  cause:
    description: The failed verdict's cause (for example C(server_crashed), C(gate_refused)); empty when none failed.
    type: str
    default: ""
  release:
    description: The release the run deployed; empty without one.
    type: str
    default: ""
  verdict_healthy:
    description: The verdict on the new unit; left out when no verdict judged one (the last one stays).
    type: bool
  gate_ratio:
    description: The throughput gate's ratio; left out when no gate ran.
    type: float
  gate_passed:
    description: Whether the gate passed; read only with O(gate_ratio).
    type: bool
    default: false
  rolled_back:
    description: The run restored the last known good unit.
    type: bool
    default: false
attributes:
  check_mode:
    description: Writes nothing in check mode.
    support: full
  diff_mode:
    description: No diff.
    support: none
'''

EXAMPLES = r'''
- name: Record a deploy that rolled back
  ddtree.sglang.sglang_outcome_metrics:
    directory: /var/lib/prometheus/node-exporter
    service: sglang
    action: deploy
    outcome: rolled_back
    cause: server_crashed
    release: 3f2a9c1e0b7d
    verdict_healthy: false
    rolled_back: true
'''

RETURN = r'''
path:
  description: The file written.
  returned: always
  type: str
metrics:
  description: The file's text.
  returned: always
  type: str
'''

import os
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.ddtree.sglang.plugins.module_utils.atomic_file import write_atomically
from ansible_collections.ddtree.sglang.plugins.module_utils.outcome_metrics import render


def main():
    module = AnsibleModule(
        argument_spec=dict(
            directory=dict(type='path', required=True),
            service=dict(type='str', required=True),
            action=dict(type='str', required=True, choices=['deploy', 'rollback']),
            outcome=dict(type='str', required=True),
            cause=dict(type='str', default=''),
            release=dict(type='str', default=''),
            verdict_healthy=dict(type='bool'),
            gate_ratio=dict(type='float'),
            gate_passed=dict(type='bool', default=False),
            rolled_back=dict(type='bool', default=False),
        ),
        supports_check_mode=True,
    )
    params = module.params
    path = os.path.join(params['directory'], 'ddtree_sglang_%s.prom' % params['service'])
    try:
        with open(path) as stream:
            previous = stream.read()
    except (IOError, OSError):
        previous = ''
    outcome = dict(params, timestamp=int(time.time()))
    text = render(outcome, previous)
    if module.check_mode:
        module.exit_json(changed=False, path=path, metrics=text)
    try:
        if not os.path.isdir(params['directory']):
            os.makedirs(params['directory'], 0o755)
        # not *.prom while it is written: the collector reads only those
        write_atomically(path, text, 0o644, '.ddtree_sglang_')
    except (IOError, OSError) as exc:
        module.fail_json(msg='cannot write %s: %s' % (path, exc))
    module.exit_json(changed=True, path=path, metrics=text)


if __name__ == '__main__':
    main()
