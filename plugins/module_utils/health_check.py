# -*- coding: utf-8 -*-
# Copyright: (c) 2026, ddtree.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The restart verdict of module sglang_health: the unit's state and journal watched through the
systemd reader, SGLang's API asked in a background thread (api_probe.HttpProbe), the port's
owner from /proc, failures named by the signature catalogue. The module holds its options and
main(); everything it decides is here.

Over 400 lines with a reason: one class, the verdict's loop, whose steps (reading the journal, the unit's
state, the probe's snapshot, the decision and its result) share its state; the API probe is apart.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time
from urllib.parse import urlparse

from ansible_collections.ddtree.sglang.plugins.module_utils import proc_net, systemd
from ansible_collections.ddtree.sglang.plugins.module_utils.api_probe import HttpProbe
from ansible_collections.ddtree.sglang.plugins.module_utils.env_file import read_env_value
from ansible_collections.ddtree.sglang.plugins.module_utils.sglang_args import server_args_from_argv
from ansible_collections.ddtree.sglang.plugins.module_utils import sglang_signatures as signatures

JOURNAL_TAIL = 40
LOOPBACK_HOSTS = ('127.0.0.1', 'localhost', '::1', '0.0.0.0')
# after the first fatal sign, keep reading until the journal is quiet so the lines are complete
DRAIN_QUIET_S = 0.15
DRAIN_MAX_S = 1.5


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
        self.api = dict(
            model_id=str(healthy.get('model_id') or self.api_resume.get('model_id') or ''),
            generation_text=str(healthy.get('generation_text') or ''),
            generation_latency_s=_number(healthy.get('generation_latency_s')),
        )
        self.reader = None
        self.journal_error = None

    def run_bytes(self, argv):
        # encoding=None: raw bytes back, the journal may hold any bytes
        return self.module.run_command(argv, encoding=None)

    def show(self):
        rc, out, err = self.module.run_command(systemd.systemctl_show_argv(self.params['unit']))
        if rc != 0:
            self.module.fail_json(
                msg='systemctl show %s failed (rc=%d): %s. Is systemd running on this host and the unit name right?'
                % (self.params['unit'], rc, (err or out).strip())
            )
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
            journal_warnings=signatures.notable_lines(lines, self.server_args),
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
                self.time_to_healthy or 0,
                time.monotonic() - self.healthy_at,
                self.settle_s,
            )
            phase = 'settling'
        elif api.get('stage') == 'generate':
            api_status = 'API up (model %s), waiting for a test generation' % (api.get('model_id') or '?')
        else:
            api_status = 'API not answering yet'
        result['progress'] = '%s: %s, %.0f s since start%s, %s' % (
            self.params['unit'],
            phase,
            self.since_start_s(),
            ' (pid %d)' % pid if pid else '',
            api_status,
        )
        healthy = {}
        if self.healthy_at is not None:
            healthy = dict(
                at=self.healthy_at,
                time_to_healthy_s=self.time_to_healthy,
                model_id=self.api['model_id'],
                generation_text=self.api['generation_text'],
                generation_latency_s=self.api['generation_latency_s'],
            )
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
            diagnosis += '; it had answered a generation %.1f s earlier and failed inside the %g s settle window' % (
                time.monotonic() - self.healthy_at,
                self.settle_s,
            )
        return self.result('failed', cause, diagnosis, advice, fatal_lines)

    def unit_failure(self):
        """(cause, reason) when the unit died or restarted since the check began, else None."""
        dead = systemd.unit_failure(self.state, self.baseline_restarts, self.first_pid)
        if dead is None and self.invocation and self.state.get('InvocationID') and self.state['InvocationID'] != self.invocation:
            # started again between two slices: the journal read stays on the invocation being judged
            dead = ('restarted', 'the unit was started again (InvocationID changed from %s to %s)' % (self.invocation, self.state['InvocationID']))
        return dead

    def read_server_args(self):
        """The judged unit's SGLang flags, so advice can name their values; {} when unreadable."""
        path = self.state.get('FragmentPath') or ''
        try:
            with open(path) as unit_file:
                return server_args_from_argv(systemd.exec_start_argv(unit_file.read()))
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
        probe = HttpProbe(
            self.params['base_url'],
            headers,
            self.params['generate_prompt'],
            self.params['generate_max_tokens'],
            self.params['generate_expect'],
            self.params['poll_interval'],
            self.deadline,
            self.api_resume,
            health_only=self.params['api_check'] == 'health',
        )
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
                # only an error that ends SGLang fails a live server (signatures' rule); a warning or a line of
                # evidence waits for the unit or the API to show the failure, and is reported with the warnings
                decided = signatures.deciding(self.lines(), self.server_args)
                if decided is not None:
                    self.drain_journal()
                    self.state = self.show()
                    return self.failure_from_journal(decided['id'], '')

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
            advice = (
                'Check the server log around the failing request (journal_tail); a model that loads but cannot '
                'generate often points at a broken kernel or a bad draft model.'
            )
            if failure[0] == 'api_key_not_enforced':
                advice = (
                    'Install a build that reads the key from SGLANG_API_KEY (the DDTree patch set does: '
                    'sglang_install_patches), or keep the API on loopback without a key.'
                )
            if failure[0] == 'http_unauthorized':
                advice = (
                    'Point api_key_file at the key given to the server with --api-key, or api_key_env_file at the unit\'s '
                    'EnvironmentFile that sets %s.' % self.params['api_key_env_var']
                )
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
        diagnosis = 'port %d is answered by PID %s, not by %s (its main PID is %s): the API answers came from another server while this unit is still in %s' % (
            port,
            holders,
            self.params['unit'],
            self.state.get('MainPID'),
            signatures.phase_of(self.lines()),
        )
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
            self.params['timeout'],
            phase,
            self.phase_age_s(phase),
            where,
            last_error or 'none',
        )
        if self.journal_error:
            diagnosis += '; journal unreadable: %s' % self.journal_error
        _cause, _diag, _advice, fatal_lines = signatures.diagnose(lines, self.server_args)
        advice = (
            'If start-up is just slow (large weights, long CUDA graph capture), raise timeout; if the journal has stopped '
            'moving, the server hangs in %s: see journal_tail.' % phase
        )
        return self.result('timeout', 'timeout', diagnosis, advice, fatal_lines or lines[-10:], probe)
