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
    incrementally. A line matching a fatal SGLang signature (memory-pool sizing, CUDA out of
    memory, CUDA graph capture, Triton, CUDA ABI mismatch, unknown flags, NCCL, model path,
    port in use, watchdog, child death) is a failure at once, returned with the lines around
    it, a diagnosis and advice. Flags the build reports as ignored are returned as warnings.
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
  - The signatures live in the collection's C(sglang_signatures) module_utils table.
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
    - Why it is not healthy. A signature id from the sglang_signatures table (for example
      C(mem_pool_too_small), C(cuda_oom_graph_capture), C(triton_error), C(unrecognized_arguments)),
      or C(process_exited), C(restarted), C(unit_not_found), C(unclassified) (a traceback no
      signature knows), C(generation_failed) (C(/generate) failed twice after C(/v1/models) answered),
      C(http_unauthorized), C(probe_error), C(timeout). C(port_in_use) is also returned when the
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
ignored_flag_warnings:
  description: Journal lines in which the build says it ignores a flag, returned even when healthy.
  returned: always
  type: list
  elements: str
  sample: ["disable_cuda_graph is ignored for piecewise cuda graph"]
'''

import json
import threading
import time
from urllib.parse import urlparse

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.ddtree.sglang.plugins.module_utils import http
from ansible_collections.ddtree.sglang.plugins.module_utils import proc_net, systemd
from ansible_collections.ddtree.sglang.plugins.module_utils.env_file import read_env_value
from ansible_collections.ddtree.sglang.plugins.module_utils import sglang_signatures as signatures

JOURNAL_TAIL = 40
LOOPBACK_HOSTS = ('127.0.0.1', 'localhost', '::1', '0.0.0.0')
# one retry for a generation that failed after /v1/models answered (brief hiccup at warm-up)
GENERATE_ATTEMPTS = 2
# after the first fatal sign, keep reading until the journal is quiet so the lines are complete
DRAIN_QUIET_S = 0.15
DRAIN_MAX_S = 1.5


class HttpProbe(threading.Thread):
    """Models, then one generation, in the background so the main loop keeps watching the unit.

    A generation can block for seconds; a crash meanwhile must still be reported at once.
    """

    def __init__(self, base_url, headers, prompt, max_tokens, expect, interval, deadline, resume=None, health_only=False):
        threading.Thread.__init__(self)
        self.daemon = True
        self.base_url = base_url.rstrip('/')
        self.headers = headers
        self.prompt = prompt
        self.max_tokens = max_tokens
        self.expect = expect
        self.interval = interval
        self.deadline = deadline
        self.stop = threading.Event()
        self.lock = threading.Lock()
        # a multi-node SGLang serves its API on rank 0 only; the other ranks answer /health alone
        self.health_only = health_only
        self.stage = 'health' if health_only else 'models'
        self.last_error = ''
        self.model_id = ''
        self.generation_text = ''
        self.generation_latency_s = None
        self.outcome = None  # None while undecided, 'healthy' or 'failed'
        self.failure = ('', '')
        # failed generations so far (a slice hands the count on to the next)
        self.generate_failures = 0
        resume = resume or {}
        if resume.get('stage') == 'generate' and resume.get('model_id'):
            # /v1/models answered in an earlier slice
            self.stage = 'generate'
            self.model_id = str(resume['model_id'])
            self.generate_failures = int(resume.get('generate_failures') or 0)
        self.last_error = str(resume.get('last_error') or '')

    def snapshot(self):
        """What the next slice needs to go on where this one stopped."""
        with self.lock:
            return dict(stage=self.stage, model_id=self.model_id, generate_failures=self.generate_failures,
                        last_error=self.last_error)

    def _request(self, path, body=None):
        remaining = max(1.0, self.deadline - time.monotonic())
        # models should answer at once; a generation may legitimately take a while
        timeout = min(remaining, 5.0 if body is None else 300.0)
        try:
            return http.call('GET' if body is None else 'POST', self.base_url + path, body, self.headers, timeout)
        except http.Unreachable as e:
            return None, e.reason.encode('utf-8', 'replace')

    def _fail(self, cause, diagnosis):
        with self.lock:
            self.outcome = 'failed'
            self.failure = (cause, diagnosis)

    def _sleep(self):
        self.stop.wait(self.interval)

    def _models(self):
        while not self.stop.is_set() and time.monotonic() < self.deadline:
            code, payload = self._request('/v1/models')
            if code == 200:
                try:
                    model_id = json.loads(payload.decode('utf-8', 'replace'))['data'][0]['id']
                except (ValueError, KeyError, IndexError, TypeError):
                    model_id = None
                if model_id:
                    with self.lock:
                        self.model_id = str(model_id)
                        self.stage = 'generate'
                    return True
                self.last_error = '/v1/models answered 200 without data[0].id'
            elif code in (401, 403):
                self._fail('http_unauthorized', '/v1/models answered %d: the server wants an API key; give the key the service was '
                                                'started with (api_key_file or api_key_env_file)' % code)
                return False
            elif code is None:
                self.last_error = '/v1/models: %s' % payload.decode('utf-8', 'replace')
            else:
                self.last_error = '/v1/models answered %d' % code
            self._sleep()
        return False

    def _health(self):
        while not self.stop.is_set() and time.monotonic() < self.deadline:
            code, payload = self._request('/health')
            if code == 200:
                with self.lock:
                    self.outcome = 'healthy'
                return
            if code in (401, 403):
                self._fail('http_unauthorized', '/health answered %d: give the key the service was started with '
                                                '(api_key_file or api_key_env_file)' % code)
                return
            self.last_error = '/health: %s' % (payload.decode('utf-8', 'replace') if code is None else 'answered %d' % code)
            self._sleep()

    def _generate(self):
        body = {'text': self.prompt, 'sampling_params': {'max_new_tokens': self.max_tokens, 'temperature': 0}}
        while not self.stop.is_set() and time.monotonic() < self.deadline:
            started = time.monotonic()
            code, payload = self._request('/generate', body)
            latency = time.monotonic() - started
            if code is None:
                # refused/reset: "not yet" (or dead, which the unit state will show)
                self.last_error = '/generate: %s' % payload.decode('utf-8', 'replace')
                self._sleep()
                continue
            problem = None
            text = ''
            if code == 200:
                try:
                    result = json.loads(payload.decode('utf-8', 'replace'))
                    if isinstance(result, list):
                        result = result[0]
                    text = result.get('text') or ''
                except (ValueError, AttributeError, IndexError, TypeError):
                    problem = '/generate answered 200 with a body that is not SGLang JSON'
                if problem is None and not text.strip():
                    problem = '/generate answered 200 with empty text'
                elif problem is None and self.expect and self.expect not in text:
                    problem = '/generate text %r does not contain %r' % (text[:200], self.expect)
            elif code in (401, 403):
                self._fail('http_unauthorized', '/generate answered %d: give the key the service was started with '
                                                '(api_key_file or api_key_env_file)' % code)
                return
            else:
                detail = payload.decode('utf-8', 'replace').strip().replace('\n', ' ')[:300]
                problem = '/generate answered HTTP %d after /v1/models was OK: %s' % (code, detail)
            if problem is None:
                with self.lock:
                    self.generation_text = text
                    self.generation_latency_s = round(latency, 3)
                    self.outcome = 'healthy'
                return
            with self.lock:
                self.generate_failures += 1
                failures = self.generate_failures
            self.last_error = problem
            if failures >= GENERATE_ATTEMPTS:
                self._fail('generation_failed', 'generation is broken: %s (after %d attempts)' % (problem, failures))
                return
            self.stop.wait(max(self.interval, 1.0))

    def run(self):
        try:
            if self.health_only:
                self._health()
            elif self.stage == 'generate' or self._models():
                self._generate()
        except Exception as e:  # pylint: disable=broad-except
            # a bug here must surface as a verdict, not as a silent thread death and a timeout
            self._fail('probe_error', 'the HTTP probe crashed: %s' % e)


def _number(value, default=None):
    try:
        return float(value)
    except (TypeError, ValueError):
        return default


class HealthCheck:
    def __init__(self, module):
        self.module = module
        self.params = module.params
        self.server_args = {}
        now = time.monotonic()
        # the state an earlier slice handed on (see the _resume option); empty on a first call
        resume = self.params.get('_resume') or {}
        started = _number(resume.get('started'))
        # CLOCK_MONOTONIC is system-wide, so a monotonic time from an earlier slice on this host still counts
        self.started = started if started is not None and started <= now else now
        self.deadline = self.started + max(0.0, self.params['timeout'])
        slice_s = self.params['slice_s'] or 0.0
        self.slice_end = now + slice_s if slice_s > 0 else None
        self.settle_s = max(0.0, self.params['settle_s'] or 0.0)
        self.slices = int(_number(resume.get('slices'), 0)) + 1
        self.state = {}
        baseline = _number(resume.get('baseline_restarts'))
        self.baseline_restarts = int(baseline) if baseline is not None else None
        self.first_pid = int(_number(resume.get('first_pid'), 0))
        self.invocation = str(resume.get('invocation_id') or '')
        self.api_resume = resume.get('api') if isinstance(resume.get('api'), dict) else {}
        # the healthy generation, once there was one (the settle window watches after it)
        healthy = resume.get('healthy') if isinstance(resume.get('healthy'), dict) else {}
        healthy_at = _number(healthy.get('at'))
        self.healthy_at = healthy_at if healthy_at is not None and healthy_at <= now else None
        self.time_to_healthy = _number(healthy.get('time_to_healthy_s'))
        self.api = dict(model_id=str(healthy.get('model_id') or self.api_resume.get('model_id') or ''),
                        generation_text=str(healthy.get('generation_text') or ''),
                        generation_latency_s=_number(healthy.get('generation_latency_s')))
        self.reader = None
        self.journal_error = None

    def run_bytes(self, argv):
        # encoding=None: raw bytes back, the journal may hold any bytes
        return self.module.run_command(argv, encoding=None)

    def show(self):
        rc, out, err = self.module.run_command(systemd.systemctl_show_argv(self.params['unit']))
        if rc != 0:
            self.module.fail_json(msg='systemctl show %s failed (rc=%d): %s. Is systemd running on this host and the unit name right?'
                                      % (self.params['unit'], rc, (err or out).strip()))
        state = systemd.parse_systemctl_show(out)
        if not self.first_pid and state['MainPID']:
            self.first_pid = state['MainPID']
        return state

    def read_journal(self):
        if self.reader is None:
            return []
        entries = self.reader.poll()
        self.journal_error = self.reader.last_error
        return entries

    def drain_journal(self):
        """Read until the journal has been quiet for a moment (journald may lag the exit)."""
        stop = time.monotonic() + DRAIN_MAX_S
        quiet_since = time.monotonic()
        while time.monotonic() < stop:
            if self.read_journal():
                quiet_since = time.monotonic()
            elif time.monotonic() - quiet_since >= DRAIN_QUIET_S:
                return
            time.sleep(0.05)

    def lines(self):
        return self.reader.lines if self.reader else []

    def unit_state(self):
        keys = ('ActiveState', 'SubState', 'NRestarts', 'ExecMainStatus', 'ExecMainCode', 'MainPID', 'InvocationID', 'Result')
        return dict((k, self.state.get(k)) for k in keys)

    def phase_age_s(self, phase):
        """Seconds since the journal first showed ``phase`` (since unit start for ``starting``)."""
        if self.reader is not None and phase != signatures.PHASES[0]:
            running = signatures.PHASES[0]
            for realtime_us, line in self.reader.timed_lines:
                before = running
                running = signatures.furthest_phase(running, line)
                if running == phase and before != phase and realtime_us:
                    return max(0.0, time.time() - realtime_us / 1e6)
        start_mono = (self.state.get('ExecMainStartTimestampMonotonic') or 0) / 1e6
        if start_mono:
            return max(0.0, time.monotonic() - start_mono)
        return time.monotonic() - self.started

    def sync_probe(self, probe):
        """Copy what the HTTP probe learnt into the results (the probe is gone in a settle slice)."""
        if probe is None:
            return
        with probe.lock:
            self.api['model_id'] = probe.model_id or self.api['model_id']
            self.api['generation_text'] = probe.generation_text or self.api['generation_text']
            if probe.generation_latency_s is not None:
                self.api['generation_latency_s'] = probe.generation_latency_s

    def since_start_s(self):
        start_mono = (self.state.get('ExecMainStartTimestampMonotonic') or 0) / 1e6
        return round(time.monotonic() - (start_mono or self.started), 3)

    def result(self, verdict, cause='', diagnosis='', advice='', fatal_lines=None, probe=None):
        lines = self.lines()
        self.sync_probe(probe)
        return dict(
            changed=False,
            healthy=verdict == 'healthy',
            verdict=verdict,
            cause=cause,
            diagnosis=diagnosis,
            advice=advice or '',
            phase=signatures.phase_of(lines),
            fatal_lines=fatal_lines or [],
            journal_tail=lines[-JOURNAL_TAIL:],
            unit_state=self.unit_state(),
            elapsed_s=round(time.monotonic() - self.started, 3),
            time_to_healthy_s=self.time_to_healthy if verdict == 'healthy' else None,
            settled_s=round(max(0.0, time.monotonic() - self.healthy_at), 3) if self.healthy_at is not None else 0.0,
            model_id=self.api['model_id'],
            generation_text=self.api['generation_text'],
            generation_latency_s=self.api['generation_latency_s'],
            ignored_flag_warnings=signatures.warnings(lines),
            decided_at=round(time.time(), 3),
        )

    def pending(self, probe):
        """The result of a slice that ended without a verdict: progress, and the state the next slice needs."""
        result = self.result('pending', probe=probe)
        api = probe.snapshot() if probe is not None else dict(self.api_resume)
        phase = result['phase']
        pid = self.state.get('MainPID') or 0
        if self.healthy_at is not None:
            api_status = 'healthy (%s answered after %.0f s), settling %.0f/%g s' % (
                '/health' if self.params['api_check'] == 'health' else 'a generation',
                self.time_to_healthy or 0, time.monotonic() - self.healthy_at, self.settle_s)
            phase = 'settling'
        elif api.get('stage') == 'generate':
            api_status = 'API up (model %s), waiting for a test generation' % (api.get('model_id') or '?')
        else:
            api_status = 'API not answering yet'
        result['progress'] = '%s: %s, %.0f s since start%s, %s' % (
            self.params['unit'], phase, self.since_start_s(), ' (pid %d)' % pid if pid else '', api_status)
        healthy = {}
        if self.healthy_at is not None:
            healthy = dict(at=self.healthy_at, time_to_healthy_s=self.time_to_healthy, model_id=self.api['model_id'],
                           generation_text=self.api['generation_text'], generation_latency_s=self.api['generation_latency_s'])
        result['resume'] = dict(
            started=self.started,
            slices=self.slices,
            invocation_id=self.invocation,
            baseline_restarts=self.baseline_restarts,
            first_pid=self.first_pid,
            api=api,
            healthy=healthy,
        )
        return result

    def failure_from_journal(self, fallback_cause, fallback_reason):
        """Failure verdict: a known signature beats the generic unit-state cause."""
        cause, diagnosis, advice, fatal_lines = signatures.diagnose(self.lines(), self.server_args)
        phase = signatures.phase_of(self.lines())
        if cause is None:
            cause = fallback_cause
            diagnosis = '%s during %s; the journal shows no known error' % (fallback_reason, phase)
            advice = 'Read journal_tail; run the server by hand with the same flags to see its output.'
            fatal_lines = self.lines()[-10:]
        elif fallback_reason:
            diagnosis = '%s (%s)' % (diagnosis, fallback_reason)
        if self.healthy_at is not None:
            diagnosis += ('; it had answered a generation %.1f s earlier and failed inside the %g s settle window'
                          % (time.monotonic() - self.healthy_at, self.settle_s))
        return self.result('failed', cause, diagnosis, advice, fatal_lines)

    def unit_failure(self):
        """(cause, reason) when the unit died or restarted since the check began, else None."""
        dead = systemd.unit_failure(self.state, self.baseline_restarts, self.first_pid)
        if dead is None and self.invocation and self.state.get('InvocationID') and self.state['InvocationID'] != self.invocation:
            # started again between two slices: the journal read stays on the invocation being judged
            dead = ('restarted', 'the unit was started again (InvocationID changed from %s to %s)'
                    % (self.invocation, self.state['InvocationID']))
        return dead

    def read_server_args(self):
        """The judged unit's SGLang flags, so advice can name their values; {} when unreadable."""
        path = self.state.get('FragmentPath') or ''
        try:
            with open(path) as unit_file:
                return signatures.server_args_from_argv(systemd.exec_start_argv(unit_file.read()))
        except (IOError, OSError, UnicodeDecodeError):
            return {}

    def check(self):
        unit = self.params['unit']
        self.state = self.show()
        self.server_args = self.read_server_args()
        if self.baseline_restarts is None:
            self.baseline_restarts = self.state['NRestarts']
        if not self.invocation:
            self.invocation = self.state.get('InvocationID') or ''
        if self.invocation:
            # every slice reads the invocation from its start: diagnosis and phase need all its lines
            self.reader = systemd.JournalReader(self.run_bytes, self.invocation)
            self.read_journal()

        # a unit already dead (or not there) needs no waiting
        dead = self.unit_failure()
        if dead:
            if dead[0] == 'unit_not_found':
                return self.result('failed', dead[0], 'unit %s is not loaded: install its unit file and run daemon-reload' % unit, '', [])
            self.drain_journal()
            return self.failure_from_journal(dead[0], dead[1])

        if self.healthy_at is not None:
            # an earlier slice saw the healthy generation: only the settle window is left
            return self.watch(None)

        headers = {'Accept': 'application/json'}
        key = self.read_api_key() if self.params['api_key_file'] else self.read_api_key_env()
        if key:
            headers['Authorization'] = 'Bearer %s' % key
        probe = HttpProbe(self.params['base_url'], headers, self.params['generate_prompt'], self.params['generate_max_tokens'],
                          self.params['generate_expect'], self.params['poll_interval'], self.deadline, self.api_resume,
                          health_only=self.params['api_check'] == 'health')
        probe.start()
        try:
            return self.watch(probe)
        finally:
            probe.stop.set()

    def read_api_key(self):
        path = self.params['api_key_file']
        try:
            with open(path, 'r') as handle:
                key = handle.read().strip()
        except (IOError, OSError) as e:
            self.module.fail_json(msg='cannot read api_key_file %s: %s' % (path, e.strerror or e))
        if not key:
            self.module.fail_json(msg='api_key_file %s is empty' % path)
        # keeps the key out of anything the module returns, server error bodies included
        self.module.no_log_values.add(key)
        return key

    def read_api_key_env(self):
        """The key from the unit's EnvironmentFile, or None when the file sets none."""
        path = self.params['api_key_env_file']
        if not path:
            return None
        try:
            key = read_env_value(path, self.params['api_key_env_var'])
        except (IOError, OSError) as e:
            self.module.fail_json(msg='cannot read api_key_env_file %s: %s' % (path, e.strerror or e))
        if key:
            self.module.no_log_values.add(key)
        return key

    def mark_healthy(self, probe):
        self.sync_probe(probe)
        self.healthy_at = time.monotonic()
        start_mono = (self.state.get('ExecMainStartTimestampMonotonic') or 0) / 1e6
        self.time_to_healthy = round(self.healthy_at - (start_mono or self.started), 3)

    def slice_over(self, probe):
        """Whether this slice may hand over now: its time is up and the HTTP probe has stopped."""
        if self.slice_end is None or time.monotonic() < self.slice_end:
            return False
        if probe is None:
            return True
        # the probe finishes the request it is in (a generation may take longer than a slice, and
        # cutting it would restart it in every slice) and records its outcome; the loop keeps
        # watching the unit and the journal meanwhile, and judges that outcome before handing over
        probe.stop.set()
        return not probe.is_alive()

    def watch(self, probe):
        # the first look judges every line read so far (a slice may start after a fatal line)
        judged = False
        while True:
            self.state = self.show()
            new_entries = self.read_journal()

            dead = self.unit_failure()
            if dead:
                self.drain_journal()
                return self.failure_from_journal(dead[0], dead[1])

            if new_entries or not judged:
                judged = True
                cause = signatures.diagnose(self.lines(), self.server_args)[0]
                if cause is not None and cause != signatures.UNCLASSIFIED:
                    self.drain_journal()
                    self.state = self.show()
                    return self.failure_from_journal(cause, '')

            if self.healthy_at is not None:
                # settle window: the same unit state and journal checks, nothing else
                if time.monotonic() - self.healthy_at >= self.settle_s:
                    return self.result('healthy')
            else:
                verdict = self.judge_probe(probe)
                if verdict is not None:
                    return verdict
                if self.healthy_at is None and time.monotonic() >= self.deadline:
                    return self.timeout(probe)
            if self.slice_over(probe):
                return self.pending(probe if self.healthy_at is None else None)
            time.sleep(self.params['poll_interval'])

    def judge_probe(self, probe):
        """A verdict from the HTTP probe, None while it has none (or when healthy and a settle window follows)."""
        with probe.lock:
            outcome = probe.outcome
            failure = probe.failure
        if outcome == 'failed':
            self.drain_journal()
            cause, diagnosis, advice, fatal_lines = signatures.diagnose(self.lines(), self.server_args)
            if cause is not None and cause != signatures.UNCLASSIFIED:
                return self.result('failed', cause, diagnosis, advice, fatal_lines, probe)
            advice = ('Check the server log around the failing request (journal_tail); a model that loads but cannot '
                      'generate often points at a broken kernel or a bad draft model.')
            if failure[0] == 'http_unauthorized':
                advice = ('Point api_key_file at the key given to the server with --api-key, or api_key_env_file at the unit\'s '
                          'EnvironmentFile that sets %s.' % self.params['api_key_env_var'])
            return self.result('failed', failure[0], failure[1], advice, fatal_lines, probe)
        if outcome == 'healthy':
            # the generation may have raced a crash: confirm the same process still runs
            self.state = self.show()
            dead = self.unit_failure()
            if dead is None and self.state.get('ActiveState') == 'active':
                self.read_journal()
                impostor = self.foreign_listener(probe)
                if impostor:
                    return impostor
                self.mark_healthy(probe)
                if self.settle_s > 0:
                    return None
                return self.result('healthy', probe=probe)
            self.drain_journal()
            return self.failure_from_journal(*(dead or ('process_exited', 'the unit is %s' % self.state.get('ActiveState'))))
        return None

    def foreign_listener(self, probe):
        """A failure verdict when the answers came from a process outside the unit, else None."""
        url = urlparse(self.params['base_url'])
        if (url.hostname or '') not in LOOPBACK_HOSTS:
            # a remote or proxied URL: the socket is not on this host, nothing to compare
            return None
        port = url.port or (443 if url.scheme == 'https' else 80)
        owned, others = proc_net.port_owner(port, self.state.get('ControlGroup'), self.state.get('MainPID'))
        if owned is not False:
            return None
        holders = ', '.join('%d (%s)' % (pid, proc_net.process_name(pid)) for pid in others) or 'a process outside the unit'
        entry = signatures.signature('port_in_use')
        diagnosis = ('port %d is answered by PID %s, not by %s (its main PID is %s): the API answers came from another server '
                     'while this unit is still in %s' % (port, holders, self.params['unit'], self.state.get('MainPID'),
                                                         signatures.phase_of(self.lines())))
        advice = signatures.render(entry['advice'], {'address': "('%s', %d)" % (url.hostname, port)}, entry.get('defaults'))
        return self.result('failed', 'port_in_use', diagnosis, advice, self.lines()[-10:], probe)

    def timeout(self, probe):
        lines = self.lines()
        phase = signatures.phase_of(lines)
        with probe.lock:
            stage = probe.stage
            last_error = probe.last_error
        if phase == 'ready' or stage == 'generate':
            where = 'the API answered /v1/models but no generation succeeded' if stage == 'generate' else 'the log says ready but /v1/models never answered'
        else:
            where = 'the API is not up yet'
        diagnosis = 'no verdict within %s s: stuck in %s for %d s (%s; last HTTP error: %s)' % (
            self.params['timeout'], phase, self.phase_age_s(phase), where, last_error or 'none')
        if self.journal_error:
            diagnosis += '; journal unreadable: %s' % self.journal_error
        _cause, _diag, _advice, fatal_lines = signatures.diagnose(lines, self.server_args)
        advice = ('If start-up is just slow (large weights, long CUDA graph capture), raise timeout; if the journal has stopped '
                  'moving, the server hangs in %s: see journal_tail.' % phase)
        return self.result('timeout', 'timeout', diagnosis, advice, fatal_lines or lines[-10:], probe)


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
            module.params['unit'], result['cause'], result['phase'], result['elapsed_s'], result['diagnosis'])
        if result['advice']:
            msg += ' Advice: %s' % result['advice']
        module.fail_json(msg=msg, **result)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
