#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, ddtree.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: gpu_facts
short_description: Gather NVIDIA GPU facts with nvidia-smi
version_added: "0.1.0"
description:
  - Runs C(nvidia-smi --query-gpu=index,name,uuid,memory.total,driver_version,compute_cap --format=csv,noheader,nounits)
    and C(nvidia-smi -q) on the managed host and returns the GPUs as the C(gpu_facts) fact.
  - The envelope checks of the collection size KV cache and state pools from C(memory_total_mib)
    and pick wheels and kernels from C(compute_cap).
  - On lab hosts nvidia-smi is a stand-in that labels its output C(SIMULATED); the fact
    C(simulated) says so, so that plays can refuse to treat a lab host as production.
  - The module only reads; it behaves the same in check mode.
author:
  - ddtree.sglang maintainers (@ddtree)
options:
  nvidia_smi_path:
    description:
      - Path or name of the nvidia-smi binary. A bare name is looked up in C(PATH) and the
        usual driver locations.
    type: str
    default: nvidia-smi
notes:
  - Drivers older than 510 cannot report C(compute_cap); the module then asks again without it
    and returns C(compute_cap) as null.
seealso:
  - name: nvidia-smi documentation
    description: Query fields accepted by C(--query-gpu).
    link: https://docs.nvidia.com/deploy/nvidia-smi/index.html
attributes:
  facts:
    description: Sets the C(gpu_facts) fact.
    support: full
extends_documentation_fragment:
  - ddtree.sglang.read_only
'''

EXAMPLES = r'''
- name: Gather GPU facts
  ddtree.sglang.gpu_facts:

- name: Refuse hosts with fewer GPUs than the tensor-parallel size
  ansible.builtin.assert:
    that:
      - gpu_facts.count >= sglang_envelope.tensor_parallel_size
    fail_msg: "{{ inventory_hostname }} has {{ gpu_facts.count }} GPU(s), the envelope needs {{ sglang_envelope.tensor_parallel_size }}"

- name: Show the GPU class of each host
  ansible.builtin.debug:
    msg: "{{ gpu_facts.gpu_classes | join(', ') }}, {{ gpu_facts.gpus[0].memory_total_mib }} MiB, CUDA {{ gpu_facts.cuda_version }}"
'''

RETURN = r'''
ansible_facts:
  description: Facts added to the host.
  returned: always
  type: complex
  contains:
    gpu_facts:
      description: The host's NVIDIA GPUs as nvidia-smi reports them.
      returned: always
      type: complex
      contains:
        count:
          description: Number of GPUs.
          type: int
          sample: 2
        driver_version:
          description: NVIDIA driver version.
          type: str
          sample: "580.95.05"
        cuda_version:
          description: Highest CUDA version the driver supports (the C(CUDA Version) line of C(nvidia-smi -q)); null if not shown.
          type: str
          sample: "13.0"
        simulated:
          description: True when nvidia-smi labels its output C(SIMULATED) (lab hosts).
          type: bool
          sample: false
        gpu_classes:
          description: Sorted unique GPU names.
          type: list
          elements: str
          sample: ["NVIDIA RTX A6000"]
        gpus:
          description: One entry per GPU, in index order.
          type: list
          elements: dict
          contains:
            index:
              description: GPU index as nvidia-smi numbers it.
              type: int
              sample: 0
            minor_number:
              description:
                - The driver's minor number of the GPU (C(Minor Number) of C(nvidia-smi -q)); its device node is
                  C(/dev/nvidia<minor_number>). It need not equal the index. Null when nvidia-smi does not tell.
              type: int
              sample: 0
            device_node:
              description: The GPU's device node, from its minor number (its index when the minor number is not known).
              type: str
              sample: /dev/nvidia0
            name:
              description: Product name.
              type: str
              sample: NVIDIA RTX A6000
            uuid:
              description: GPU UUID.
              type: str
              sample: GPU-bd272f1a-08c5-5163-af85-026ab8815bae
            memory_total_mib:
              description: Total framebuffer memory in MiB; null when not reported.
              type: int
              sample: 49140
            compute_cap:
              description: CUDA compute capability, for example C(8.6) or C(12.0); null on drivers that cannot report it.
              type: str
              sample: "8.6"
'''

from ansible.module_utils.basic import AnsibleModule

# nvidia-smi's output is read once, in host_facts (module sglang_host_facts reads GPUs too)
from ansible_collections.ddtree.sglang.plugins.module_utils.host_facts import (  # noqa: F401 pylint: disable=unused-import
    QUERY_FIELDS,
    build_gpu_facts as build_facts,
    parse_query_csv,
    query_argv,
)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            nvidia_smi_path=dict(type='str', default='nvidia-smi'),
        ),
        supports_check_mode=True,
    )
    binary = module.params['nvidia_smi_path']
    if '/' not in binary:
        binary = module.get_bin_path(binary, opt_dirs=['/usr/bin', '/usr/local/bin', '/usr/local/nvidia/bin'])
        if not binary:
            module.fail_json(
                msg='nvidia-smi not found on this host (PATH, /usr/bin, /usr/local/bin, /usr/local/nvidia/bin): '
                'install the NVIDIA driver utilities, or set nvidia_smi_path'
            )

    fields = QUERY_FIELDS
    rc, out, err = module.run_command(query_argv(binary, fields))
    if rc != 0 and 'compute_cap' in (err + out):
        # drivers before 510 reject the compute_cap field; the rest is still worth having
        fields = tuple(f for f in QUERY_FIELDS if f != 'compute_cap')
        rc, out, err = module.run_command(query_argv(binary, fields))
    if rc != 0:
        module.fail_json(
            msg='%s --query-gpu failed (rc=%d): %s. Check that the NVIDIA driver is loaded (lsmod | grep nvidia) '
            'and that the GPUs are visible to this host.' % (binary, rc, (err or out).strip() or 'no output'),
            rc=rc,
            stdout=out,
            stderr=err,
        )
    q_rc, q_out, q_err = module.run_command([binary, '-q'])
    if q_rc != 0:
        module.fail_json(msg='%s -q failed (rc=%d): %s' % (binary, q_rc, (q_err or q_out).strip() or 'no output'), rc=q_rc, stdout=q_out, stderr=q_err)
    try:
        facts = build_facts(out, q_out, fields)
    except ValueError as e:
        module.fail_json(msg='cannot parse nvidia-smi output: %s' % e, stdout=out)
    module.exit_json(changed=False, ansible_facts={'gpu_facts': facts})


if __name__ == '__main__':
    main()
