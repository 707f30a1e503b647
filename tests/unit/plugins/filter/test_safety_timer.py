# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.ddtree.sglang.plugins.filter.safety_timer import safety_timer_state


def _read(timer='waiting', active='inactive', sub='dead', started='0', pending='yes'):
    return 'TimerSubState=%s\nActiveState=%s\nSubState=%s\nExecMainStartTimestampMonotonic=%s\nPending=%s\n' % (timer, active, sub, started, pending)


def test_a_waiting_timer_whose_restore_never_ran_has_not_fired():
    assert safety_timer_state(_read()) == {'fired': False, 'why': ''}


def test_an_elapsed_timer_whose_restore_still_runs_has_fired():
    # the case ActiveState misses: the timer stays "active" (elapsed) while its restore runs
    assert safety_timer_state(_read(timer='elapsed', active='activating', sub='start', started='81234567')) == {
        'fired': True,
        'why': 'the timer was elapsed, not waiting; its restore service was activating (start), and had started',
    }


def test_a_restore_that_began_between_the_two_reads_has_fired():
    # the timer read "waiting", then fired before it was stopped: its service has a start time
    assert safety_timer_state(_read(active='active', sub='running', started='5'))['fired'] is True


def test_a_timer_gone_after_its_restore_or_a_reboot_has_fired():
    assert safety_timer_state(_read(timer='', pending='no')) == {'fired': True, 'why': 'the timer was gone, not waiting; the pending record was gone'}


def test_a_missing_pending_record_alone_means_the_host_decided():
    assert safety_timer_state(_read(pending='no')) == {'fired': True, 'why': 'the pending record was gone'}


def test_a_read_without_every_line_is_an_error():
    with pytest.raises(AnsibleFilterError, match='lacks Pending'):
        safety_timer_state(_read().replace('Pending=yes\n', ''))


def test_the_gate_longest_run_is_its_waves_of_whole_timeouts():
    from ansible_collections.ddtree.sglang.plugins.filter.safety_timer import gate_worst_case_s

    # defaults: 1 warmup request and 24 requests, 4 at a time: 1 + 6 waves
    assert gate_worst_case_s({}, 60) == 1140.0  # 1 warm-up wave + 3 rounds of 6
    assert gate_worst_case_s({'requests': 16, 'concurrency': 4, 'warmup_requests': 0}, '30') == 360.0
    with pytest.raises(AnsibleFilterError, match='workload concurrency is 0'):
        gate_worst_case_s({'concurrency': 0})
