# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The deploy outcome's textfile: exact text, counters carried over from the file before."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.ddtree.sglang.plugins.module_utils.outcome_metrics import escape_label, read_samples, render

ROLLED_BACK = {
    'service': 'sglang',
    'action': 'deploy',
    'outcome': 'rolled_back',
    'cause': 'server_crashed',
    'release': 'abc123',
    'verdict_healthy': False,
    'gate_ratio': None,
    'rolled_back': True,
    'timestamp': 1700000000,
}

ROLLED_BACK_TEXT = """# HELP ddtree_sglang_last_deploy_timestamp_seconds When the last deploy or rollback of the service ended (Unix time).
# TYPE ddtree_sglang_last_deploy_timestamp_seconds gauge
ddtree_sglang_last_deploy_timestamp_seconds{service="sglang"} 1700000000
# HELP ddtree_sglang_last_verdict_healthy The last deploy's verdict on its new unit: 1 healthy, 0 failed.
# TYPE ddtree_sglang_last_verdict_healthy gauge
ddtree_sglang_last_verdict_healthy{service="sglang"} 0
# HELP ddtree_sglang_last_deploy_info The last deploy or rollback: action, outcome (upgraded, unchanged, rolled_back, failed), \
the verdict cause and the release it deployed.
# TYPE ddtree_sglang_last_deploy_info gauge
ddtree_sglang_last_deploy_info{action="deploy",cause="server_crashed",deployed_release="abc123",outcome="rolled_back",service="sglang"} 1
# HELP ddtree_sglang_rollbacks_total Rollbacks to the last known good unit, made by a deploy that failed or on demand.
# TYPE ddtree_sglang_rollbacks_total counter
ddtree_sglang_rollbacks_total{service="sglang"} 1
# HELP ddtree_sglang_last_rollback_timestamp_seconds When the last rollback ended (Unix time).
# TYPE ddtree_sglang_last_rollback_timestamp_seconds gauge
ddtree_sglang_last_rollback_timestamp_seconds{service="sglang"} 1700000000
"""


def test_a_rollback_counts_and_keeps_the_failed_verdict():
    assert render(ROLLED_BACK) == ROLLED_BACK_TEXT


def test_the_counter_and_the_last_rollback_carry_over_an_unchanged_run():
    unchanged = dict(ROLLED_BACK, outcome='unchanged', cause='', verdict_healthy=None, rolled_back=False, timestamp=1700000100)
    samples = read_samples(render(unchanged, ROLLED_BACK_TEXT))
    assert samples == {
        'ddtree_sglang_last_deploy_timestamp_seconds': 1700000100.0,
        # no verdict judged a new unit: the last one (failed) stays
        'ddtree_sglang_last_verdict_healthy': 0.0,
        'ddtree_sglang_last_deploy_info': 1.0,
        'ddtree_sglang_rollbacks_total': 1.0,
        'ddtree_sglang_last_rollback_timestamp_seconds': 1700000000.0,
    }


def test_a_second_rollback_counts_two():
    again = dict(ROLLED_BACK, timestamp=1700000200)
    assert read_samples(render(again, ROLLED_BACK_TEXT))['ddtree_sglang_rollbacks_total'] == 2.0


def test_a_gate_writes_its_ratio_and_whether_it_passed():
    gated = dict(ROLLED_BACK, outcome='rolled_back', cause='gate_refused', verdict_healthy=False, gate_ratio=0.87, gate_passed=False)
    lines = render(gated).splitlines()
    assert 'ddtree_sglang_gate_ratio{service="sglang"} 0.87' in lines
    assert 'ddtree_sglang_gate_passed{service="sglang"} 0' in lines
    healthy = dict(gated, outcome='upgraded', cause='', verdict_healthy=True, gate_ratio=1.02, gate_passed=True, rolled_back=False)
    samples = read_samples(render(healthy))
    assert (samples['ddtree_sglang_gate_ratio'], samples['ddtree_sglang_gate_passed'], samples['ddtree_sglang_last_verdict_healthy']) == (1.02, 1.0, 1.0)
    assert 'ddtree_sglang_last_rollback_timestamp_seconds' not in samples


def test_a_damaged_file_costs_its_counters_not_the_run():
    assert read_samples('garbage {\nddtree_sglang_rollbacks_total{service="sglang"} many\n# a comment 3\n') == {}
    assert read_samples(render(dict(ROLLED_BACK), 'garbage'))['ddtree_sglang_rollbacks_total'] == 1.0


def test_label_values_are_escaped():
    assert escape_label('a"b\\c\nd') == 'a\\"b\\\\c\\nd'
