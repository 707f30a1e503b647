#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, ddtree.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: sglang_flag_check
short_description: Validate SGLang server flags with the argument parser of the installed SGLang
version_added: "0.3.0"
description:
  - Asks the SGLang installed in an ml-env release whether it accepts a server command line,
    before a unit that uses it is (re)started. An unknown flag, a bad choice or value, or a DDTree
    flag or algorithm missing from the build is refused while the running service is untouched.
  - Runs O(python) in a subprocess with a small probe script that does what
    C(python -m sglang.launch_server) does before it starts anything, in the same order. First
    C(sglang.srt.plugins.load_plugins()) (plugins may extend the parser), then
    C(prepare_server_args(argv)) from O(module), which builds SGLang's own argparse parser
    (C(ServerArgs.add_cli_args)), merges a C(--config) file, parses the flags and builds the
    C(ServerArgs) record.
  - Then, without a GPU, the probe resolves C(--speculative-algorithm) with
    C(SpeculativeAlgorithm.from_string), the lookup SGLang's start-up does, so a name the build
    neither has built in nor registers (C(DDTREE) without the DDTree patch) is refused too.
  - Then the probe runs those steps of SGLang's resolution pipeline (C(ServerArgs.resolve_once()),
    which in SGLang 0.5.23 holds what C(ServerArgs.__post_init__) did in older releases) that read
    only the flags and the platform, in the pipeline's order, for the host's GPUs
    (O(compute_capability)). They are SGLang's own functions of C(sglang/srt/arg_groups/)
    C(validate_prefill_decode_interval), C(validate_response_store),
    C(validate_sampling_mask_max_tokens), C(handle_hardware_runtime_validation),
    C(handle_ssl_validation), C(handle_pd_disaggregation), C(handle_mamba_backend),
    C(handle_hicache), C(handle_speculative_decoding) and C(handle_other_validations). A
    C(ValueError), C(AssertionError) or C(NotImplementedError) raised in SGLang's argument code
    refuses the flags with SGLang's message and RV(error_check) naming the function, file and line.
    A step that cannot run in the release (a module it imports is missing, it needs the model's
    config) is listed in RV(checks_skipped) with the reason. The probe runs with
    C(HF_HUB_OFFLINE=1), so no step fetches a config from a hub.
  - The rest of the pipeline is not run, since it reads the model's config through C(transformers) and
    sizes the pools from the GPUs' free memory, which the running service holds. The role's
    preflight mirrors the checks of it that an envelope reaches (docs/preflight-parity.md), and the
    verdict (M(ddtree.sglang.sglang_health)) names what is left at start-up.
  - For an older SGLang whose C(ServerArgs) resolves while it is built (no C(resolve_once)),
    the probe only parses the flags with the parser and does not build the record; the result's
    RV(checks) and RV(checks_skipped) say what ran.
  - Log records at WARNING and above and C(warnings.warn) messages emitted while SGLang parses
    (for example a deprecated flag) are returned in RV(sglang_warnings) and shown as warnings
    of the task.
  - Secrets never leave the host in the output. The values of C(--api-key), C(--admin-api-key),
    C(--ssl-keyfile-password), C(--watermark-config) and of any flag whose name holds the word
    C(password), C(secret) or C(token) are masked in every returned string, including the
    echoed O(argv) and the invocation, and the module does not log its arguments to the host's
    journal. The probe gets the flags on its standard input, never on its command line.
  - Only reads; runs the same in check mode, except that an interpreter that does not exist yet
    (a release a check-mode run did not build) makes the task skipped instead of failed.
author:
  - ddtree.sglang maintainers (@ddtree)
options:
  python:
    description:
      - Interpreter of the release whose SGLang is asked, normally C(<release>/bin/python)
        (the C(ml_env_release.python) fact).
    type: path
    required: true
  argv:
    description:
      - The server's flags, exactly as the unit passes them after C(python -m <launcher module>)
        (without the interpreter, C(-m) and the module).
    type: list
    elements: str
    required: true
  module:
    description:
      - Python module that provides C(prepare_server_args) and C(ServerArgs).
    type: str
    default: sglang.srt.server_args
  env:
    description:
      - Extra environment variables for the probe, normally the unit's C(Environment=) entries
        (a few SGLang parser choices depend on C(SGLANG_*) variables). C(EnvironmentFile=) files
        are not read.
      - Root runs the probe, so the dynamic loader's and the interpreter's variables (C(LD_*), C(PYTHON*)) and
        C(BASH_ENV)/C(ENV) are left out, named in RV(env_left_out).
    type: dict
    default: {}
  timeout:
    description:
      - Seconds the probe may take (importing torch on a cold host takes a while).
    type: int
    default: 180
  fail_on_invalid:
    description:
      - Fail the task when SGLang refuses the flags. With C(false) the task returns
        RV(valid=false) and the reasons instead. A probe that cannot run at all (no interpreter,
        no SGLang) fails either way.
    type: bool
    default: true
  compute_capability:
    description:
      - Compute capability of the host's GPUs (C(nvidia-smi)'s C(compute_cap), such as C("9.0")), the
        platform SGLang's start-up checks are run for. Without it those checks are skipped.
    type: str
notes:
  - The probe writes no byte code into the release (C(PYTHONDONTWRITEBYTECODE=1)) and runs in a
    fresh private temporary directory, so the release's files are not changed.
seealso:
  - module: ddtree.sglang.sglang_health
attributes:
  check_mode:
    description: Can run in check mode; it only reads. A release not built yet is skipped there.
    support: full
  diff_mode:
    description: Returns no diff; nothing is changed.
    support: none
'''

EXAMPLES = r'''
- name: Ask the release's SGLang about the unit's flags
  ddtree.sglang.sglang_flag_check:
    python: "{{ ml_env_release.python }}"
    argv:
      - --model-path
      - /root/models/Qwen3.6-27B
      - --tp-size
      - "2"
      - --speculative-algorithm
      - DDTREE
      - --speculative-ddtree-budget
      - "16"

- name: Check without failing, then decide
  ddtree.sglang.sglang_flag_check:
    python: /opt/ddtree/ml-env/current/bin/python
    argv: "{{ __sglang_service_argv[3:] }}"
    fail_on_invalid: false
  register: flag_check

- name: Report flags the build does not know
  ansible.builtin.debug:
    msg: "unknown to sglang {{ flag_check.sglang_version }}: {{ flag_check.unknown_flags | join(', ') }}"
  when: not flag_check.valid
'''

RETURN = r'''
env_left_out:
  description: Names of I(env) left out of the probe's environment (they would run code in root's probe).
  returned: when the probe ran
  type: list
  elements: str
  sample: [LD_PRELOAD, PYTHONPATH]
valid:
  description: Whether the installed SGLang accepts the flags.
  returned: always
  type: bool
  sample: false
unknown_flags:
  description: Flags the installed parser does not know, in the order of O(argv) (only the flag, not its value).
  returned: always
  type: list
  elements: str
  sample: ["--speculative-ddtree-budget"]
error:
  description:
    - Why SGLang refuses the flags, as it would say it at start-up; null when valid.
    - "For the parser, argparse's line (C(sglang serve: error: unrecognized arguments ...),
      C(... invalid choice ...), C(... invalid int value ...)); for the algorithm lookup, SGLang's exception text."
  returned: always
  type: str
  sample: "sglang serve: error: unrecognized arguments: --speculative-ddtree-budget 16"
error_flag:
  description: The flag the error is about, when it names one; null otherwise.
  returned: always
  type: str
  sample: --speculative-algorithm
error_check:
  description: The SGLang start-up check that refused, as C(module.function (path:line)); null otherwise.
  returned: always
  type: str
  sample: speculative_hook.handle_speculative_decoding (sglang/srt/arg_groups/speculative_hook.py:325)
sglang_warnings:
  description:
    - WARNING (and higher) log records and C(warnings.warn) messages SGLang emitted while parsing,
      ANSI colours removed. Each is also shown as a warning of the task.
  returned: always
  type: list
  elements: str
  sample: ["'--disable-cuda-graph' is deprecated and will be removed in a future release. Use '--cuda-graph-backend-{decode,prefill}=disabled' instead."]
sglang_version:
  description: Version of the installed SGLang distribution; null when it has no metadata.
  returned: always
  type: str
  sample: "0.5.23"
server_args:
  description:
    - A few values as the parser produced them (before SGLang's start-up fills in defaults from the
      GPUs and the model, so an unset C(mem_fraction_static) is null here); every
      C(speculative_ddtree_*) value the build has is included. Empty when parsing failed.
  returned: always
  type: dict
  sample: {"model_path": "/root/models/Qwen3.6-27B", "tp_size": 2, "mem_fraction_static": 0.85, "context_length": 32768,
           "speculative_algorithm": "DDTREE", "speculative_ddtree_budget": 16}
checks:
  description: The checks that ran (C(argparse), C(server_args), C(speculative_algorithm)).
  returned: always
  type: list
  elements: str
  sample: ["argparse", "server_args", "speculative_algorithm"]
checks_skipped:
  description: Checks that could not run here, each with the reason.
  returned: always
  type: list
  elements: str
  sample: []
release_path:
  description: Root of the environment asked (the probe's C(sys.prefix)).
  returned: always
  type: str
  sample: /opt/ddtree/ml-env/releases/3f9a0c1d2e4b5a69
argv:
  description: O(argv) with secret values replaced by C(********).
  returned: always
  type: list
  elements: str
  sample: ["--model-path", "/root/models/Qwen3.6-27B", "--api-key", "********"]
'''

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.ddtree.sglang.plugins.module_utils.flag_check import (
    ProbeError,
    build_message,
    error_flag_of,
    mask_argv,
    probe_environment,
    release_of,
    run_probe,
    secret_values,
)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            python=dict(type='path', required=True),
            argv=dict(type='list', elements='str', required=True),
            module=dict(type='str', default='sglang.srt.server_args'),
            env=dict(type='dict', default={}, no_log=True),
            timeout=dict(type='int', default=180),
            fail_on_invalid=dict(type='bool', default=True),
            compute_capability=dict(type='str'),
        ),
        supports_check_mode=True,
        # the argv may hold an API key: keep "Invoked with ..." out of the host's journal
        no_log=True,
    )
    python = module.params['python']
    argv = module.params['argv']
    secrets = secret_values(argv)
    module.no_log_values.update(secrets)
    masked = mask_argv(argv)
    invocation = {'module_args': dict(module.params, argv=masked, env='VALUE_SPECIFIED_IN_NO_LOG_PARAMETER')}
    base = dict(changed=False, argv=masked, invocation=invocation)

    if not (os.path.isfile(python) and os.access(python, os.X_OK)):
        if module.check_mode:
            # a check-mode run builds no release, so there is nothing to ask yet
            module.exit_json(
                skipped=True,
                msg='No interpreter at %s yet (check mode builds no release); flags not checked.' % python,
                release_path=release_of(python),
                **base,
            )
        module.fail_json(
            msg='No interpreter at %s, so the flags cannot be checked: is the release %s built?' % (python, release_of(python)),
            release_path=release_of(python),
            **base,
        )
    timeout_bin = module.get_bin_path('timeout', required=True)

    def run(args, data, cwd, environ_update):
        return module.run_command(args, data=data, binary_data=True, cwd=cwd, environ_update=environ_update, expand_user_and_vars=False)

    try:
        answer = run_probe(
            run,
            timeout_bin,
            python,
            argv,
            module.params['module'],
            probe_environment(module.params['env'])[0],
            module.params['timeout'],
            module.params['compute_capability'],
        )
    except ProbeError as exc:
        module.fail_json(msg='Cannot ask the sglang of %s about the unit\'s flags: %s' % (release_of(python), exc), release_path=release_of(python), **base)
    release = release_of(python, answer.get('prefix'))
    if answer.get('probe_error'):
        module.fail_json(
            msg='Cannot ask the sglang of %s about the unit\'s flags: %s' % (release, answer['probe_error']),
            release_path=release,
            sglang_version=answer.get('sglang_version'),
            **base,
        )

    warnings = answer.get('warnings') or []
    for text in warnings:
        module.warn('sglang %s in %s: %s' % (answer.get('sglang_version'), release, text))
    result = dict(
        base,
        valid=bool(answer.get('valid')),
        unknown_flags=answer.get('unknown_flags') or [],
        error=answer.get('error'),
        error_flag=answer.get('error_flag') or error_flag_of(answer.get('error')),
        error_check=answer.get('error_check'),
        sglang_warnings=warnings,
        sglang_version=answer.get('sglang_version'),
        server_args=answer.get('server_args') or {},
        checks=answer.get('checks') or [],
        checks_skipped=answer.get('checks_skipped') or [],
        release_path=release,
        env_left_out=probe_environment(module.params['env'])[1],
    )
    if not result['valid'] and module.params['fail_on_invalid']:
        module.fail_json(msg=build_message(dict(answer, **result), release), **result)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
