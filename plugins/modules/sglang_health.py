#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, ddtree.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: sglang_health
short_description: Decide whether an SGLang systemd service is healthy, failed or stuck
version_added: "0.1.0"
description:
  - Watches three things at once until a deadline and returns the first decisive verdict.
  - The unit's state through C(systemctl show). A unit that is failed or inactive, in
    C(auto-restart), restarted since the check began (C(NRestarts) grew) or whose main PID
    changed is a failure at once. C(active) alone is never taken as healthy.
  - The journal of the unit's current invocation (C(_SYSTEMD_INVOCATION_ID)), read
    incrementally. A line of a fatal SGLang signature (memory-pool sizing, CUDA out of
    memory, CUDA graph capture, Triton, CUDA ABI mismatch, unknown flags, NCCL, model path,
    port in use, watchdog, child death) that ends SGLang (the exception line closing a
    traceback, or a message SGLang goes down with) is a failure at once, returned with the
    lines around it, a diagnosis and advice. A warning-level line never fails the service;
    other lines of a fatal signature name the cause once the unit dies or the API fails.
    Both come back in RV(journal_warnings), and flags the build reports as ignored in
    RV(ignored_flag_warnings).
  - The HTTP API. C(GET /v1/models) must answer 200 with a model id, then one C(POST /generate)
    must return non-empty text. Only then, with the unit still active under the same main
    PID, is the service healthy.
  - For a loopback O(base_url) the listening socket must belong to the unit's own processes;
    answers from another server on the port (an old unit still running) are a C(port_in_use)
    failure, not a healthy verdict. The check is skipped when C(/proc) cannot be read.
  - A service that neither fails nor becomes healthy before O(timeout) gets a C(timeout)
    verdict naming the start-up phase it is stuck in and for how long.
  - With O(settle_s), the unit's state and journal are watched for that many seconds more
    after the first healthy generation; a death, restart or fatal line inside this settle
    window is a C(failed) verdict with the cause from the journal.
  - "Live progress. A task using this module runs through the collection's action plugin of
    the same name, which calls the module in slices of O(slice_s) seconds (5 unless set) and
    prints a line per slice in the normal play output, for example
    V([ct129] sglang-qwen.service: capturing_cuda_graph, 12 s since start (pid 1234\\), API not answering yet).
    Each slice still polls every O(poll_interval), so a crash is still decided within about a
    second; the task's result is the last slice's result, the verdict."
  - The signatures live in the collection's C(sglang_signature_table) module_utils table.
  - The module only reads; it behaves the same in check mode.
author:
  - ddtree.sglang maintainers (@ddtree)
options:
  unit:
    description:
      - Name of the systemd unit running SGLang, for example C(sglang-qwen.service).
    type: str
    required: true
  base_url:
    description:
      - Base URL of the SGLang HTTP server, as seen from the managed host.
    type: str
    default: http://127.0.0.1:30000
  timeout:
    description:
      - Seconds to wait for a verdict. Large models can take minutes to load and capture
        CUDA graphs; failures are reported as soon as they show, not at the deadline.
    type: float
    default: 600
  poll_interval:
    description:
      - Seconds between two looks at the unit, the journal and the API.
    type: float
    default: 0.25
  generate_prompt:
    description:
      - Prompt of the test generation sent to C(/generate).
    type: str
    default: The capital of France is
  generate_max_tokens:
    description:
      - C(max_new_tokens) of the test generation (sampled at temperature 0).
    type: int
    default: 8
  generate_expect:
    description:
      - Optional substring the generated text must contain.
    type: str
  api_check:
    description:
      - What the API must answer before the service counts as healthy.
      - V(generate) (C(/v1/models), then a real C(/generate)) for a server that serves the API.
      - V(health) (C(GET /health) answers 200) for a node of a multi-node server with a I(node_rank)
        above 0, which serves no API of its own, only SGLang's health endpoints; unit state and
        journal are judged as always.
    type: str
    choices: [generate, health]
    default: generate
  api_key_file:
    description:
      - Path on the managed host of a file holding the server's API key (C(--api-key)).
      - It is read there and sent as an C(Authorization) bearer token; the key never appears
        in the results.
      - Mutually exclusive with O(api_key_env_file).
      - With a key, a healthy verdict also needs the server to refuse a request without it (401 or 403);
        a server that answers it fails with cause C(api_key_not_enforced).
    type: path
  api_key_env_file:
    description:
      - Path on the managed host of the unit's C(EnvironmentFile=) that gives the server its key
        in the variable O(api_key_env_var) (systemd's syntax, values quoted or not).
      - Read there and sent as an C(Authorization) bearer token; the key never appears in the
        results. Without the variable in the file (or with it empty) no key is sent, as the
        server then wants none.
      - Mutually exclusive with O(api_key_file).
    type: path
  api_key_env_var:
    description:
      - Variable of O(api_key_env_file) that holds the key.
    type: str
    default: SGLANG_API_KEY
  fail_on_unhealthy:
    description:
      - Fail the task when the verdict is C(failed) or C(timeout). With C(false) the
        verdict is only returned, for a rescue or rollback to act on.
    type: bool
    default: true
  settle_s:
    description:
      - Seconds to keep watching the unit's state and journal after the first healthy
        generation. A death, restart or fatal line in this window makes the verdict
        C(failed) (cause from the journal). V(0) ends the check at the healthy generation.
      - Counted on top of O(timeout), which bounds the start-up only.
    type: float
    default: 0
  slice_s:
    description:
      - Longest time one module call watches before it returns verdict C(pending) with a
        progress line and the state the next call needs (see RV(resume)).
      - V(0) watches until the verdict in one call. The module's own default is V(0); the
        collection's action plugin, which runs every task of this module, sets V(5) when the
        task does not set it, and calls the module again after each C(pending) slice.
      - A slice ends only after the HTTP request in flight has answered (a generation may
        take longer than a slice); the unit and the journal are watched meanwhile.
    type: float
    default: 0
  _resume:
    description:
      - Internal. State the action plugin hands from one slice to the next (the RV(resume)
        of a C(pending) result). Do not set it in a task; the action plugin refuses it.
    type: dict
notes:
  - Needs C(systemctl) and C(journalctl) on the managed host and read access to the
    unit's journal (root, or a member of C(systemd-journal)).
  - Call it right after starting or restarting the unit; it judges the unit's current
    invocation and takes the restart count at the moment it starts as the baseline.
  - Every slice reads the judged invocation's journal from its start, so no line is lost
    between slices; the baseline restart count, the first main PID, the invocation id and the
    HTTP probe's progress travel in RV(resume). A unit started again between two slices (new
    invocation id) is a C(restarted) failure.
  - A traceback that matches no signature does not fail the check by itself (SGLang logs
    some recoverable ones); if the service then dies, it is returned with cause
    C(unclassified).
seealso:
  - module: ansible.builtin.systemd_service
  - module: ansible.builtin.uri
extends_documentation_fragment:
  - ddtree.sglang.read_only
'''

EXAMPLES = r'''
- name: Restart SGLang and wait for a verdict
  ansible.builtin.systemd_service:
    name: sglang-qwen.service
    state: restarted

- name: Wait until SGLang serves a real generation, or fail fast with the cause
  ddtree.sglang.sglang_health:
    unit: sglang-qwen.service
    base_url: http://127.0.0.1:30000
    timeout: 900
    settle_s: 5        # still fail if it dies within 5 s after the first generation
    slice_s: 10        # a progress line every 10 s (5 when not set)

- name: Judge without failing, so that a rollback can run
  ddtree.sglang.sglang_health:
    unit: sglang-qwen.service
    generate_prompt: "2 + 2 ="
    generate_expect: "4"
    api_key_file: /etc/sglang/api-key
    fail_on_unhealthy: false
  register: sglang_verdict

- name: Show why it failed
  ansible.builtin.debug:
    msg: "{{ sglang_verdict.cause }}: {{ sglang_verdict.diagnosis }} -- {{ sglang_verdict.advice }}"
  when: not sglang_verdict.healthy
'''

RETURN = r'''
healthy:
  description: Whether the API answered, a generation returned text and the unit kept the same main PID.
  returned: always
  type: bool
  sample: false
verdict:
  description:
    - C(healthy), C(failed) or C(timeout).
    - C(pending) only from a module call with O(slice_s) whose slice ended without a verdict;
      the action plugin then calls it again, so a task never ends with C(pending).
  returned: always
  type: str
  sample: failed
cause:
  description:
    - Why it is not healthy. A signature id from the sglang_signature_table module_utils (for example
      C(mem_pool_too_small), C(cuda_oom_graph_capture), C(triton_error), C(unrecognized_arguments)),
      or C(process_exited), C(restarted), C(unit_not_found), C(unclassified) (a traceback no
      signature knows), C(generation_failed) (C(/generate) failed twice after C(/v1/models) answered),
      C(http_unauthorized), C(api_key_not_enforced) (a key was given, but a request without it was served),
      C(probe_error), C(timeout). C(port_in_use) is also returned when the
      API answers come from a process outside the unit. Empty when healthy.
  returned: always
  type: str
  sample: mem_pool_too_small
diagnosis:
  description: One line saying what went wrong, empty when healthy.
  returned: always
  type: str
  sample: "memory-pool sizing failed: after weights, mem_fraction_static=0.88 leaves no room for the KV cache and recurrent-state pools"
advice:
  description: What to change, empty when healthy or when nothing specific is known.
  returned: always
  type: str
  sample: "Raise --mem-fraction-static above 0.88 ..., or make the pools smaller: lower --context-length, --max-running-requests or --mamba-full-memory-ratio"
phase:
  description:
    - Furthest start-up phase the journal shows, one of C(starting), C(loading_weights),
      C(sizing_pools), C(pools_sized), C(capturing_cuda_graph), C(binding), C(ready).
  returned: always
  type: str
  sample: sizing_pools
fatal_lines:
  description: The journal lines that show the failure (the traceback through the exception line, other fatal lines).
  returned: always
  type: list
  elements: str
journal_tail:
  description: The last lines of this invocation's journal.
  returned: always
  type: list
  elements: str
unit_state:
  description: The unit's properties at the verdict.
  returned: always
  type: dict
  sample:
    ActiveState: failed
    SubState: failed
    NRestarts: 0
    ExecMainStatus: 1
    ExecMainCode: 1
    MainPID: 0
    InvocationID: d702c87bd75b4c0d814920a15dab0820
    Result: exit-code
elapsed_s:
  description: Seconds the check took.
  returned: always
  type: float
  sample: 2.6
time_to_healthy_s:
  description:
    - Seconds from the unit's main process start to the first healthy generation (before any
      settle window); null when not healthy.
  returned: always
  type: float
  sample: 41.3
settled_s:
  description:
    - Seconds the unit was watched after the first healthy generation; at least O(settle_s)
      when healthy, how long it lasted when it failed inside the settle window, 0 when no
      generation succeeded.
  returned: always
  type: float
  sample: 5.2
progress:
  description: One line on where start-up stands, printed by the action plugin between slices.
  returned: when verdict is C(pending)
  type: str
  sample: "sglang-qwen.service: capturing_cuda_graph, 12 s since start (pid 1234), API not answering yet"
resume:
  description:
    - Internal. What the next slice needs, passed back as O(_resume) by the action plugin
      (start time, baseline C(NRestarts), first C(MainPID), C(InvocationID), HTTP probe
      progress, the healthy generation of a settle window). Its keys may change.
  returned: when verdict is C(pending)
  type: dict
model_id:
  description: C(data[0].id) from C(/v1/models), empty until the API answered.
  returned: always
  type: str
  sample: /root/models/Qwen3.6-27B
generation_text:
  description: Text the test generation returned.
  returned: always
  type: str
  sample: " Paris. It is known for"
generation_latency_s:
  description: Seconds the successful test generation took; null when none succeeded.
  returned: always
  type: float
  sample: 0.42
decided_at:
  description: Epoch seconds (host clock) when the verdict was reached; compare with journal timestamps to measure detection delay.
  returned: always
  type: float
  sample: 1795945051.912
journal_warnings:
  description:
    - Journal lines that decided nothing, returned whatever the verdict, each once and at most 20
      (TP ranks' copies dropped). Every warning-level line (its log level, an ignored import, a KV
      retraction, a deprecation) and every line of a fatal signature that did not end SGLang.
    - C(class) is the signature the line matches (for example C(kv_cache_oom_serving) for a
      retraction), or null.
  returned: always
  type: list
  elements: dict
  version_added: "0.3.0"
  sample: [{"line": "[2025-06-18 08:43:16] KV cache pool is full. Retract requests. #retracted_reqs: 22", "class": "kv_cache_oom_serving"}]
ignored_flag_warnings:
  description: Journal lines in which the build says it ignores a flag, returned even when healthy.
  returned: always
  type: list
  elements: str
  sample: ["disable_cuda_graph is ignored for piecewise cuda graph"]
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.ddtree.sglang.plugins.module_utils.health_check import HealthCheck


def main():
    module = AnsibleModule(
        argument_spec=dict(
            unit=dict(type='str', required=True),
            base_url=dict(type='str', default='http://127.0.0.1:30000'),
            timeout=dict(type='float', default=600),
            poll_interval=dict(type='float', default=0.25),
            generate_prompt=dict(type='str', default='The capital of France is'),
            generate_max_tokens=dict(type='int', default=8, no_log=False),
            generate_expect=dict(type='str'),
            api_check=dict(type='str', default='generate', choices=['generate', 'health']),
            api_key_file=dict(type='path', no_log=True),
            api_key_env_file=dict(type='path', no_log=False),
            api_key_env_var=dict(type='str', default='SGLANG_API_KEY', no_log=False),
            fail_on_unhealthy=dict(type='bool', default=True),
            settle_s=dict(type='float', default=0),
            slice_s=dict(type='float', default=0),
            _resume=dict(type='dict'),
        ),
        supports_check_mode=True,
        mutually_exclusive=[('api_key_file', 'api_key_env_file')],
    )
    if module.params['poll_interval'] <= 0:
        module.fail_json(msg='poll_interval must be above 0 (got %s)' % module.params['poll_interval'])
    if module.params['generate_max_tokens'] < 1:
        module.fail_json(msg='generate_max_tokens must be at least 1')
    for name in ('settle_s', 'slice_s'):
        if module.params[name] < 0:
            module.fail_json(msg='%s must not be negative (got %s)' % (name, module.params[name]))

    result = HealthCheck(module).check()
    if result['verdict'] not in ('healthy', 'pending') and module.params['fail_on_unhealthy']:
        msg = '%s is not healthy [%s] in phase %s after %.1f s: %s' % (
            module.params['unit'],
            result['cause'],
            result['phase'],
            result['elapsed_s'],
            result['diagnosis'],
        )
        if result['advice']:
            msg += ' Advice: %s' % result['advice']
        module.fail_json(msg=msg, **result)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
