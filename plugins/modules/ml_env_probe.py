#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, ddtree.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: ml_env_probe
short_description: Probe an ml-env release's Python for ABI mismatches, CUDA and the GPU's compute capability
version_added: "0.3.0"
description:
  - Runs the release's interpreter I(python) in a subprocess with a small probe script that imports
    each module of I(imports) on its own and reports C(torch.__version__), C(torch.version.cuda),
    C(torch.cuda.is_available()), the device count, each device's name, memory and compute
    capability, the CUDA architectures torch was built for, and a one-element CUDA operation.
  - An import that fails with the dynamic loader's C(undefined symbol) is an C(abi_mismatch) naming
    the import, the installed distribution that owns it and the symbol (a C++ symbol of torch's
    C(c10)/C(at)/C(torch) namespaces means the wheel was built against another torch). Other import
    failures are C(import_error); CUDA expected but unavailable is C(cuda_unavailable); a device whose
    compute capability differs from I(expect_compute_cap), or for which torch holds no kernels, is
    C(capability_mismatch); an interpreter that cannot be run, hangs past I(timeout) or dies is
    C(probe_failed) (or C(import_error) when it died inside an import).
  - Fails with a message an operator can act on when anything is wrong, and returns the same
    structured result either way. Never changes anything.
  - Each import runs in the same interpreter, one after the other, so an import that crashes the
    interpreter ends the probe; the result then names that import.
author:
  - ddtree.sglang maintainers (@ddtree)
options:
  python:
    description:
      - The interpreter of the release to probe, for example C(/opt/ddtree/ml-env/releases/<id>/bin/python).
      - It runs isolated (C(-I)), from C(/), so neither C(PYTHONPATH) nor the working directory can
        hide what the release itself holds.
    type: path
    required: true
  imports:
    description:
      - Module names to import, in order, each on its own, for example C([torch, sgl_kernel, flashinfer]).
      - torch is looked at in any case for the CUDA report; list it to make its import failure count.
    type: list
    elements: str
    default: []
  expect_cuda:
    description:
      - Whether torch must see CUDA and at least one GPU.
      - Default true when C(/dev/nvidiactl) exists or C(/proc/driver/nvidia/gpus) lists a GPU, otherwise false.
    type: bool
  expect_compute_cap:
    description:
      - Compute capability every visible GPU must have, for example C(9.0) (the one the matrix entry was chosen for).
      - Only checked on GPUs torch sees.
    type: str
  timeout:
    description: Seconds the probe may take before it is killed (a cold torch import can take a minute).
    type: int
    default: 300
notes:
  - The probe script needs only the standard library of the release's Python (3.8 or later; the owning
    distribution is found with C(importlib.metadata.packages_distributions), Python 3.10 or later).
  - Where C(c++filt) is installed, an undefined symbol is also returned demangled.
seealso:
  - module: ddtree.sglang.gpu_facts
extends_documentation_fragment:
  - ddtree.sglang.read_only
'''

EXAMPLES = r'''
- name: Probe the new release
  ddtree.sglang.ml_env_probe:
    python: "{{ ml_env_release.python }}"
    imports: [torch, sgl_kernel, flashinfer]
    expect_cuda: true
    expect_compute_cap: "{{ gpu_facts.gpus[0].compute_cap }}"

- name: Probe, keep the result, decide afterwards
  ddtree.sglang.ml_env_probe:
    python: /usr/bin/python3
    imports: [torch]
  register: probe
  failed_when: false

- name: Show what was found
  ansible.builtin.debug:
    msg: "torch {{ probe.torch.version }} CUDA {{ probe.torch.cuda }}: {{ probe.msg | default('ok', true) }}"
'''

RETURN = r'''
ok:
  description: True when every import succeeded and CUDA and the GPUs are as expected.
  returned: always
  type: bool
  sample: false
cause:
  description: >-
    Cause of the first failure (C(abi_mismatch), C(import_error), C(cuda_unavailable),
    C(capability_mismatch), C(probe_failed)); null when I(ok).
  returned: always
  type: str
  sample: abi_mismatch
msg:
  description: What is wrong and what to do, one sentence per failure; C(probe ok) when I(ok).
  returned: always
  type: str
  sample: "ABI mismatch in the release at /opt/ddtree/ml-env/releases/0123456789abcdef: import sgl_kernel
    (package sglang-kernel 0.4.10) needs symbol _ZN3c1017RegisterOperatorsD1Ev that the installed torch
    2.11.0+cu130 does not export: the overlay's wheels were built against another torch; ..."
failures:
  description: Every failure, imports first.
  returned: always
  type: list
  elements: dict
  contains:
    cause:
      description: One of the causes above.
      type: str
    msg:
      description: The operator's sentence for this failure.
      type: str
    import:
      description: The import concerned, if any.
      type: str
    distributions:
      description: Installed distributions that provide the import's top-level package (C(name), C(version)).
      type: list
      elements: dict
    symbol:
      description: The undefined symbol (C(abi_mismatch)).
      type: str
    symbol_demangled:
      description: The symbol through C(c++filt), where installed.
      type: str
    library:
      description: The shared library that needs the symbol (C(abi_mismatch)).
      type: str
    error:
      description: The exception or warning text.
      type: str
    device:
      description: GPU index (C(capability_mismatch)).
      type: int
  sample:
    - cause: abi_mismatch
      import: sgl_kernel
      symbol: _ZN3c1017RegisterOperatorsD1Ev
      distributions: [{name: sglang-kernel, version: 0.4.10}]
python:
  description: The probed interpreter (C(executable), C(version), C(prefix)); null when it did not start.
  returned: always
  type: dict
  sample: {executable: /opt/ddtree/ml-env/releases/0123456789abcdef/bin/python, version: "3.12.3", prefix: /opt/ddtree/ml-env/releases/0123456789abcdef}
imports:
  description: One entry per import in I(imports), in order.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: Module name.
      type: str
    ok:
      description: Whether it imported.
      type: bool
    version:
      description: The module's C(__version__), if any.
      type: str
    distributions:
      description: Installed distributions providing its top-level package (C(name), C(version)).
      type: list
      elements: dict
    error_type:
      description: Exception class of a failed import.
      type: str
    error:
      description: Exception text of a failed import.
      type: str
    traceback:
      description: End of the failed import's traceback.
      type: str
    library:
      description: The shared library named by an C(undefined symbol) error.
      type: str
    library_distribution:
      description: The installed distribution whose files hold that library (C(name), C(version)).
      type: dict
    seconds:
      description: Time the import took.
      type: float
torch:
  description: What torch reports; null when the probe did not get that far.
  returned: always
  type: dict
  contains:
    version:
      description: C(torch.__version__); null when torch cannot be imported.
      type: str
      sample: 2.11.0+cu130
    distribution_version:
      description: Version of the installed torch distribution (also when its import fails).
      type: str
    cuda:
      description: C(torch.version.cuda), the CUDA torch was built with; null for a CPU build.
      type: str
      sample: "13.0"
    cuda_available:
      description: C(torch.cuda.is_available()).
      type: bool
    cuda_warning:
      description: The warning torch gave while looking for CUDA, if any (for example a driver too old).
      type: str
    device_count:
      description: C(torch.cuda.device_count()).
      type: int
    arch_list:
      description: C(torch.cuda.get_arch_list()), the GPU architectures torch holds kernels for.
      type: list
      elements: str
    devices:
      description: One entry per visible GPU (C(index), C(name), C(capability) such as C(9.0), C(total_memory_mib), C(multi_processor_count)).
      type: list
      elements: dict
    smoke:
      description: A one-element CUDA operation on GPU 0 (C(ok), C(error)); absent without a GPU.
      type: dict
    error:
      description: Why torch could not be imported.
      type: str
expect_cuda:
  description: Whether CUDA was expected (the option, or what the host's device files said).
  returned: always
  type: bool
expect_cuda_reason:
  description: Where I(expect_cuda) came from.
  returned: always
  type: str
  sample: /dev/nvidiactl exists
elapsed_s:
  description: Seconds the probe ran.
  returned: always
  type: float
stderr_tail:
  description: Last lines the interpreter wrote to stderr (imports' own output goes there too).
  returned: always
  type: str
'''

import os
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.ddtree.sglang.plugins.module_utils.ml_env_probe import (
    MARKER,
    auto_expect_cuda,
    exit_text,
    judge,
    parse_probe_output,
    summary,
    where_of,
)
from ansible_collections.ddtree.sglang.plugins.module_utils.probes import ml_env as ml_env_program
from ansible_collections.ddtree.sglang.plugins.module_utils.probes import probe_argv


def _run(module, python, args, timeout):
    """(rc, stdout, stderr, timed_out).

    GNU timeout runs the probe in a process group of its own and signals the whole group, so a hung
    import's children go too; a host without it runs the probe unbounded.
    """
    limiter = module.get_bin_path('timeout')
    argv = probe_argv(python, ml_env_program, args, isolated=True, timeout_bin=limiter, timeout=timeout)
    rc, out, err = module.run_command(argv, cwd='/')
    return rc, out, err, bool(limiter) and rc in (124, 137)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            python=dict(type='path', required=True),
            imports=dict(type='list', elements='str', default=[]),
            expect_cuda=dict(type='bool'),
            expect_compute_cap=dict(type='str'),
            timeout=dict(type='int', default=300),
        ),
        supports_check_mode=True,
    )
    python = module.params['python']
    imports = module.params['imports']
    expect_cuda = module.params['expect_cuda']
    if expect_cuda is None:
        expect_cuda, reason = auto_expect_cuda()
    else:
        reason = 'the expect_cuda option'
    result = dict(
        changed=False,
        ok=False,
        cause=None,
        failures=[],
        python=None,
        imports=[],
        torch=None,
        expect_cuda=expect_cuda,
        expect_cuda_reason=reason,
        elapsed_s=0.0,
        stderr_tail='',
    )

    if not (os.path.isfile(python) and os.access(python, os.X_OK)):
        failure = {
            'cause': 'probe_failed',
            'msg': 'the interpreter %s does not exist or is not executable: the release was not built (or python points elsewhere)' % python,
        }
        result.update(cause='probe_failed', failures=[failure])
        module.fail_json(msg=failure['msg'], **result)

    timeout = module.params['timeout']
    # expect_cuda decides the smoke operation: a lab host's CPU torch must not be asked for a GPU
    args = [MARKER, module.jsonify(imports), '1' if expect_cuda else '0']
    began = time.time()
    rc, out, err, timed_out = _run(module, python, args, timeout)
    result['elapsed_s'] = round(time.time() - began, 3)
    result['stderr_tail'] = '\n'.join(err.splitlines()[-40:])

    report, in_progress = parse_probe_output(out)
    where = where_of(python)
    failures = judge(report, imports, expect_cuda, module.params['expect_compute_cap'], where, in_progress, exit_text(rc, timed_out, timeout))
    demangler = module.get_bin_path('c++filt')
    for failure in failures:
        if failure.get('symbol') and demangler:
            d_rc, d_out, dummy = module.run_command([demangler, failure['symbol']])
            if d_rc == 0 and d_out.strip() and d_out.strip() != failure['symbol']:
                failure['symbol_demangled'] = d_out.strip()
    result.update(
        python=report['python'],
        imports=report['imports'],
        torch=report['torch'],
        failures=failures,
        ok=not failures,
        cause=failures[0]['cause'] if failures else None,
    )
    if failures:
        module.fail_json(msg=summary(failures), **result)
    module.exit_json(msg='probe ok', **result)


if __name__ == '__main__':
    main()
