# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Whether the safety timer's restore has begun, from one read of the host (safety_timer_confirm.yml, service.yml's rescue)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.ddtree.sglang.plugins.module_utils.sglang_bench import worst_case_s

# The read prints, one per line: TimerSubState=<the timer's SubState, read before it is stopped>, the restore
# service's ActiveState=, SubState= and ExecMainStartTimestampMonotonic= (systemctl show), and Pending=yes|no.
KEYS = ('TimerSubState', 'ActiveState', 'SubState', 'ExecMainStartTimestampMonotonic', 'Pending')


def _fields(text):
    fields = {}
    for line in (text or '').splitlines():
        key, sep, value = line.partition('=')
        if sep and key in KEYS:
            fields[key] = value.strip()
    missing = [k for k in KEYS if k not in fields]
    if missing:
        raise AnsibleFilterError('safety_timer_state: the host read lacks %s, got %r' % (', '.join(missing), text))
    return fields


def safety_timer_state(text):
    """``{fired, why}``: fired is true unless the timer was still waiting, its restore never started and the pending
    record is still there. A timer's ActiveState stays ``active`` after it elapsed while its restore runs, so the
    timer's SubState, the restore service's own state and the pending record are read, not ActiveState."""
    fields = _fields(text)
    reasons = []
    if fields['TimerSubState'] != 'waiting':
        reasons.append('the timer was %s, not waiting' % (fields['TimerSubState'] or 'gone'))
    started = fields['ExecMainStartTimestampMonotonic'] not in ('', '0')
    if started or fields['ActiveState'] not in ('inactive', ''):
        reasons.append('its restore service was %s (%s)%s' % (fields['ActiveState'], fields['SubState'], ', and had started' if started else ''))
    if fields['Pending'] != 'yes':
        reasons.append('the pending record was gone')
    return {'fired': bool(reasons), 'why': '; '.join(reasons)}


def gate_worst_case_s(workload, request_timeout=60):
    """Seconds the throughput gate can take at most with ``workload`` (sglang_service_gate_workload), which the safety
    timer's margin counts."""
    try:
        return worst_case_s(workload, int(request_timeout))
    except (TypeError, ValueError) as exc:
        raise AnsibleFilterError('gate_worst_case_s: %s' % exc)


class FilterModule(object):
    def filters(self):
        return {'safety_timer_state': safety_timer_state, 'gate_worst_case_s': gate_worst_case_s}
