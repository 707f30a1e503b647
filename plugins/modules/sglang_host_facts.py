#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, ddtree.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: sglang_host_facts
short_description: Read in one call everything a deploy's checks and plan need from a host
version_added: "0.3.0"
description:
  - Gathers the host's GPUs (as M(ddtree.sglang.gpu_facts) does), each model directory's C(config.json)
    (and the size of its C(*.safetensors) files when C(config.json) has no C(num_parameters)), who listens on the
    service's port (as M(ddtree.sglang.sglang_port_check) does), the service user and which supplementary groups
    exist, the unit's systemd state and its file's sha256, the ml_env releases and C(current), the interpreter's
    version, and whether given paths exist.
  - One remote call instead of one per check; the checks themselves run on the controller
    (filter C(ddtree.sglang.sglang_validate)).
  - The module only reads; it behaves the same in check mode.
author:
  - ddtree.sglang maintainers (@ddtree)
options:
  gpus:
    description: Read the GPUs with nvidia-smi.
    type: bool
    default: true
  nvidia_smi_path:
    description: Path or name of nvidia-smi; a bare name is looked up in C(PATH) and the driver's usual places.
    type: str
    default: nvidia-smi
  model_dirs:
    description: Model directories whose C(config.json) to read.
    type: list
    elements: path
    default: []
  paths:
    description: Paths to report C(exists), C(isdir), C(isreg) and C(executable) of.
    type: list
    elements: path
    default: []
  port:
    description: TCP port whose listeners to name; 0 skips it.
    type: int
    default: 0
  unit:
    description: systemd unit (with C(.service)) whose state, and whose processes as the port's rightful holder, to read.
    type: str
    default: ''
  unit_path:
    description: The unit file whose sha256 to return.
    type: path
  unit_record:
    description: The role's record of the last unit a healthy verdict confirmed (JSON), returned as C(unit.confirmed).
    type: path
  user:
    description: Service user to look up; with I(user_reads) or I(user_python), what it cannot use.
    type: str
    default: ''
  groups:
    description: Groups of which to report those that exist.
    type: list
    elements: str
    default: []
  user_reads:
    description: Directories the service user must read and search (checked only when the user exists).
    type: list
    elements: path
    default: []
  user_python:
    description: Interpreter the service user must start (checked only when the user exists and it does).
    type: path
  python:
    description: Interpreter whose version (C(3.11.2 x86_64)) to read.
    type: path
  ml_env_root:
    description: ml_env root whose releases and C(current) to list.
    type: path
  commands:
    description: Commands to look up in the host's PATH (the roles' prerequisites, such as C(patch) and C(git)).
    type: list
    elements: str
    default: []
attributes:
  facts:
    description: Returns C(host) rather than setting facts; register it.
    support: none
extends_documentation_fragment:
  - ddtree.sglang.read_only
'''

EXAMPLES = r'''
- name: Read the host once
  ddtree.sglang.sglang_host_facts:
    model_dirs: [/srv/models/Qwen3.6-27B]
    port: 30000
    unit: sglang-qwen.service
    unit_path: /etc/systemd/system/sglang-qwen.service
    user: sglang
    groups: [video, render]
    ml_env_root: /opt/ddtree/ml-env
  register: host

- name: Refuse too few GPUs
  ansible.builtin.assert:
    that:
      - host.host.gpus.count >= 2
'''

RETURN = r'''
host:
  description: What was read; a part not asked for is absent.
  returned: always
  type: complex
  contains:
    gpus:
      description: The C(gpu_facts) fact of M(ddtree.sglang.gpu_facts), or null when nvidia-smi failed.
      type: dict
    gpus_error:
      description: Why the GPUs could not be read (the message M(ddtree.sglang.gpu_facts) fails with).
      type: str
    nvidia_smi:
      description: The nvidia-smi that was run (resolved path), or null.
      type: str
    models:
      description: Per model directory, C(isdir), C(config) (the parsed C(config.json)) or C(error), and C(safetensors_bytes).
      type: dict
    paths:
      description: Per path, C(exists), C(isdir), C(isreg), C(executable).
      type: dict
    port:
      description: Who listens on I(port), as M(ddtree.sglang.sglang_port_check) returns it.
      type: dict
    unit:
      description: C(exists), C(sha256) of I(unit_path), C(state) (systemctl show), C(pids) of I(unit), and
        C(confirmed) (the record at I(unit_record), or null).
      type: dict
    user:
      description: C(exists), C(uid), C(shell), C(comment) (GECOS), C(groups_existing), and C(cannot_use) (paths the
        user cannot read or start, with why).
      type: dict
    python_version:
      description: The version and machine of I(python), or null; C(python_error) says why.
      type: str
    python_venv:
      description: Whether I(python) can create a venv with pip (its C(venv) and C(ensurepip) modules import); null when
        it does not run.
      type: bool
    commands:
      description: Each of I(commands) and its path on the host, or null where the host lacks it.
      type: dict
    ml_env:
      description: C(current) and C(releases) (C(complete), C(manifest)) of I(ml_env_root).
      type: dict
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.ddtree.sglang.plugins.module_utils import host_facts


def main():
    module = AnsibleModule(
        argument_spec=dict(
            gpus=dict(type='bool', default=True),
            nvidia_smi_path=dict(type='str', default='nvidia-smi'),
            model_dirs=dict(type='list', elements='path', default=[]),
            paths=dict(type='list', elements='path', default=[]),
            port=dict(type='int', default=0),
            unit=dict(type='str', default=''),
            unit_path=dict(type='path'),
            unit_record=dict(type='path'),
            user=dict(type='str', default=''),
            groups=dict(type='list', elements='str', default=[]),
            user_reads=dict(type='list', elements='path', default=[]),
            user_python=dict(type='path'),
            python=dict(type='path'),
            ml_env_root=dict(type='path'),
            commands=dict(type='list', elements='str', default=[]),
        ),
        supports_check_mode=True,
    )
    p = module.params
    run = module.run_command
    host = {}
    if p['gpus']:
        binary = p['nvidia_smi_path']
        if '/' not in binary:
            binary = module.get_bin_path(binary, opt_dirs=host_facts.NVIDIA_SMI_DIRS)
        host['nvidia_smi'] = binary
        host['gpus'], host['gpus_error'] = host_facts.read_gpus(run, binary)
    host['models'] = dict((d, host_facts.model_dir_facts(d)) for d in p['model_dirs'])
    host['paths'] = dict((path, host_facts.path_facts(path)) for path in p['paths'])
    if p['unit'] or p['unit_path']:
        host['unit'] = host_facts.unit_facts(run, p['unit'], p['unit_path'], p['unit_record'])
    if p['port']:
        if not 1 <= p['port'] <= 65535:
            module.fail_json(msg='port must be in 1-65535, got %d' % p['port'])
        host['port'] = host_facts.port_check(p['port'], set(host.get('unit', {}).get('pids', [])), p['unit'])
    if p['user']:
        host['user'] = host_facts.user_facts(p['user'], p['groups'])
        if host['user']['exists'] and p['user'] != 'root':
            python = p['user_python'] if p['user_python'] and host_facts.path_facts(p['user_python'])['exists'] else None
            host['user']['cannot_use'] = host_facts.user_access(run, p['user'], p['user_reads'], python)
            host['user']['checked'] = {'reads': p['user_reads'], 'python': python}
    if p['python']:
        # a missing interpreter is an answer here, not a module failure
        host['python_version'], host['python_error'], host['python_venv'] = host_facts.interpreter_facts(
            lambda argv: module.run_command(argv, handle_exceptions=False), p['python']
        )
    if p['commands']:
        host['commands'] = {name: module.get_bin_path(name) for name in p['commands']}
    if p['ml_env_root']:
        host['ml_env'] = host_facts.release_facts(p['ml_env_root'])
    module.exit_json(changed=False, host=host)


if __name__ == '__main__':
    main()
