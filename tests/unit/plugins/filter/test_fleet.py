# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rolling-upgrade plan, gate and report: canaries first, groups independent, capacity kept."""

from __future__ import annotations

import pytest

from ansible.errors import AnsibleFilterError
from ansible_collections.ddtree.sglang.plugins.filter.fleet import (
    serving_group,
    upgrade_gate,
    upgrade_plan,
    upgrade_release,
    upgrade_report,
)

A = ['a1', 'a2', 'a3', 'a4']
B = ['b1', 'b2', 'b3']
GROUPS = {
    'all': A + B,
    'ungrouped': [],
    'sglang_servers': A + B,
    'fleet_a': A,
    'fleet_b': B,
    'gpu_a6000_tp2': A,
    'gpu_rtxpro6000_tp8': B,
    'lab': A + B,
    'lab_light': A + B,
    'routers': ['r1'],
}


def test_smallest_group_wins_and_ties_go_by_name():
    assert serving_group('a1', GROUPS, ignore=['lab', 'lab_light']) == 'fleet_a'
    assert serving_group('b2', GROUPS) == 'fleet_b'
    lab = {
        'all': ['ct129', 'ct200'],
        'sglang_servers': ['ct129', 'ct200'],
        'gpu_a6000_tp2': ['ct129'],
        'gpu_rtxpro6000_tp8': ['ct200'],
        'lab': ['ct129', 'ct200'],
    }
    assert serving_group('ct129', lab) == 'gpu_a6000_tp2'


def test_explicit_group_must_hold_the_host():
    assert serving_group('a1', GROUPS, explicit='gpu_a6000_tp2') == 'gpu_a6000_tp2'
    with pytest.raises(AnsibleFilterError, match='does not hold a1'):
        serving_group('a1', GROUPS, explicit='fleet_b')


def test_canaries_first_then_batches_per_group():
    plan = upgrade_plan(A + B, GROUPS, serial=2)
    assert plan['groups']['fleet_a']['canary'] == ['a1']
    assert plan['groups']['fleet_a']['batches'] == [['a2', 'a3'], ['a4']]
    assert plan['groups']['fleet_b']['batches'] == [['b2', 'b3']]
    assert plan['waves'] == [['a1', 'b1'], ['a2', 'a3', 'b2', 'b3'], ['a4']]
    assert plan['serial'] == [2, 4, 1]
    assert plan['order'] == ['a1', 'b1', 'a2', 'a3', 'b2', 'b3', 'a4']
    assert plan['host_step']['a4'] == 'batch 2'
    assert plan['host_wave']['b3'] == 1


@pytest.mark.parametrize(
    'serial, batches',
    [
        (1, [['a2'], ['a3'], ['a4']]),
        ('50%', [['a2', 'a3'], ['a4']]),
        ('25%', [['a2'], ['a3'], ['a4']]),
        ('100%', [['a2', 'a3', 'a4']]),
        ([1, '100%'], [['a2'], ['a3', 'a4']]),
    ],
)
def test_serial_follows_ansible_rules(serial, batches):
    assert upgrade_plan(A, GROUPS, serial=serial)['groups']['fleet_a']['batches'] == batches


def test_min_serving_caps_the_batch():
    plan = upgrade_plan(A, GROUPS, serial='100%', min_serving='50%')
    assert plan['groups']['fleet_a']['batches'] == [['a2', 'a3'], ['a4']]
    assert plan['groups']['fleet_a']['min_serving'] == 2
    plan = upgrade_plan(A, GROUPS, serial='100%', min_serving=3)
    assert plan['groups']['fleet_a']['batches'] == [['a2'], ['a3'], ['a4']]


def test_min_serving_that_allows_no_downtime_is_refused():
    with pytest.raises(AnsibleFilterError, match='fleet_b has 3 host.*keeps 3 serving'):
        upgrade_plan(B, GROUPS, min_serving='100%')


def test_limit_keeps_capacity_of_the_whole_group():
    # two of four hosts in the run: min_serving counts the group's inventory size
    plan = upgrade_plan(['a3', 'a4'], GROUPS, serial='100%', min_serving=3)
    assert plan['groups']['fleet_a']['canary'] == ['a3']
    assert plan['groups']['fleet_a']['batches'] == [['a4']]


def test_bad_numbers_are_refused():
    with pytest.raises(AnsibleFilterError, match='upgrade_serial'):
        upgrade_plan(A, GROUPS, serial='lots')
    with pytest.raises(AnsibleFilterError, match='upgrade_min_serving'):
        upgrade_plan(A, GROUPS, min_serving='150%')


def test_multinode_group_is_one_batch_and_must_be_whole():
    groups = dict(GROUPS, mn=['m1', 'm2'], sglang_servers=GROUPS['sglang_servers'] + ['m1', 'm2'])
    multinode = {'m1': 'mn', 'm2': 'mn'}
    plan = upgrade_plan(['a1', 'a2', 'm1', 'm2'], groups, multinode=multinode)
    assert plan['groups']['mn']['canary'] == ['m1', 'm2']
    assert plan['groups']['mn']['batches'] == []
    assert plan['waves'][0] == ['a1', 'm1', 'm2']
    with pytest.raises(AnsibleFilterError, match='multi-node group mn.*leaves out m2'):
        upgrade_plan(['m1'], groups, multinode=multinode)


def _record(host, outcome, cause=''):
    return {'host': host, 'outcome': outcome, 'diagnosis': {'cause': cause, 'diagnosis': '', 'advice': ''}}


def test_failed_canary_stops_its_group_only():
    plan = upgrade_plan(A + B, GROUPS, serial=2)
    records_b = [_record('b1', 'rolled_back', 'cuda_oom_graph_capture'), _record('b2', 'pending'), _record('b3', 'pending')]
    gate = upgrade_gate(records_b, plan, 'b2')
    assert not gate['proceed']
    assert 'canary b1' in gate['reason'] and 'cuda_oom_graph_capture' in gate['reason']
    records_a = [_record('a1', 'upgraded')] + [_record(h, 'pending') for h in A[1:]]
    assert upgrade_gate(records_a, plan, 'a2')['proceed']


def test_failure_budget_counts_tried_hosts_of_earlier_waves():
    plan = upgrade_plan(A, GROUPS, serial=2)
    # a2 failed in wave 1 beside a3: a4 (wave 2) stops at 0 %, goes on at 50 %
    records = [_record('a1', 'upgraded'), _record('a2', 'rolled_back'), _record('a3', 'upgraded'), _record('a4', 'pending')]
    assert not upgrade_gate(records, plan, 'a4', 0)['proceed']
    assert upgrade_gate(records, plan, 'a4', 50)['proceed']
    # batch-mates do not see each other's results: same wave
    assert upgrade_gate(records, plan, 'a3', 0)['proceed']


def test_stopped_group_stays_stopped():
    plan = upgrade_plan(A, GROUPS, serial=1)
    records = [_record('a1', 'upgraded'), _record('a2', 'skipped'), _record('a3', 'skipped'), _record('a4', 'pending')]
    assert not upgrade_gate(records, plan, 'a4', 100)['proceed']


def test_release_labels():
    assert upgrade_release({}) == {'id': None, 'sglang': None}
    real = {'id': 'abc', 'sglang': {'distribution': {'name': 'sglang', 'version': '0.5.23+ddtree.1'}}}
    assert upgrade_release(real) == {'id': 'abc', 'sglang': 'sglang 0.5.23+ddtree.1'}
    light = {'id': 'def', 'sglang': None, 'inputs': {'wheels': [{'name': 'sglang-sim', 'version': '0.1.0'}]}}
    assert upgrade_release(light) == {'id': 'def', 'sglang': 'sglang-sim 0.1.0'}


def test_report_orders_counts_and_renders():
    plan = upgrade_plan(A + B, GROUPS, serial=2)
    records = [
        dict(
            _record('b1', 'rolled_back', 'cuda_oom_graph_capture'),
            group='fleet_b',
            step='canary',
            before={'id': 'r1', 'sglang': 'sglang-sim 0.1.0'},
            after={'id': 'r1', 'sglang': 'sglang-sim 0.1.0'},
            timings={'deploy_s': 12.34, 'verdict_s': 1.5},
            envelope={'tp_size': 8, 'mem_fraction_static': 0.88},
        ),
        dict(
            _record('a1', 'upgraded'),
            group='fleet_a',
            step='canary',
            before={'id': 'r1', 'sglang': 'x'},
            after={'id': 'r2', 'sglang': 'x'},
            timings={'deploy_s': 20},
        ),
        _record('a2', 'deploying'),
    ]
    report = upgrade_report(records, plan)
    assert [row['host'] for row in report['hosts']] == ['a1', 'b1', 'a2']
    assert report['summary'] == {'upgraded': 1, 'rolled_back': 1, 'unreachable': 1}
    assert report['summary_text'] == '1 upgraded, 1 rolled back, 1 unreachable'
    lines = report['markdown'].splitlines()
    assert lines[0].startswith('| host | group | step | outcome |')
    assert '| a1 | fleet_a | canary | upgraded | r1 -> r2 | x |' in lines[2]
    assert 'rolled back' in lines[3] and 'tp 8, mem 0.88' in lines[3] and '12.3' in lines[3]
    assert 'cuda_oom_graph_capture' in lines[3]


def test_multinode_group_does_not_start_without_a_node():
    groups = dict(GROUPS, mn=['m1', 'm2'], sglang_servers=GROUPS['sglang_servers'] + ['m1', 'm2'])
    plan = upgrade_plan(['m1', 'm2'], groups, multinode={'m1': 'mn', 'm2': 'mn'})
    gate = upgrade_gate([_record('m1', 'pending'), _record('m2', 'unreachable')], plan, 'm1')
    assert not gate['proceed'] and 'without m2' in gate['reason']
    assert upgrade_gate([_record('m1', 'pending'), _record('m2', 'pending')], plan, 'm1')['proceed']


def test_report_shows_the_throughput_gate_numbers():
    refused = {
        'outcome': 'refused',
        'ratio': 0.962,
        'interval': [0.931, 0.994],
        'reasons': ['below min_ratio 1.1'],
        'gate_s': 3.1,
        'cause': 'gate_refused',
        'measured': {
            'output_throughput': 193.4,
            'request_throughput': 3.02,
            'ttft_p99_ms': 20.5,
            'itl_p99_ms': 12.5,
            'completed': 24,
            'failed': 0,
            'e2e_p50_ms': 300.0,
        },
        'baseline': {'unit_sha256': 'ab', 'measured': {'output_throughput': 201.0}},
        'invocation': {'module_args': {}},
    }
    records = [
        dict(_record('a1', 'rolled_back', 'gate_refused'), gate=refused),
        dict(_record('a2', 'upgraded'), gate={'outcome': 'baseline', 'ratio': None, 'measured': {'output_throughput': 99.5}}),
        dict(_record('a3', 'upgraded'), gate={}),
    ]
    report = upgrade_report(records)
    assert report['hosts'][0]['gate'] == {
        'outcome': 'refused',
        'ratio': 0.962,
        'interval': [0.931, 0.994],
        'reasons': ['below min_ratio 1.1'],
        'gate_s': 3.1,
        'output_throughput': 193.4,
        'request_throughput': 3.02,
        'ttft_p99_ms': 20.5,
        'itl_p99_ms': 12.5,
        'completed': 24,
        'failed': 0,
        'baseline_output_throughput': 201.0,
    }
    lines = report['markdown'].splitlines()
    assert lines[0].endswith('| verdict s | tok/s | ratio | gate | diagnosis |')
    assert lines[2].endswith('|  |  | 193.4 | 0.962 (0.931-0.994) | refused | gate_refused: |')
    assert lines[3].endswith('|  |  | 99.5 |  | baseline |  |')
    assert lines[4].endswith('|  |  |  |  | - |  |')


@pytest.mark.parametrize(
    'secret',
    [
        'sk-' + 'x' * 200,  # cut by the cell's width: its first part would survive a scrub of the table
        'sk-left|right-0123',  # escaped to 'sk-left\\|right' in the table: a scrub of the table would not find it
    ],
)
def test_secrets_are_masked_before_a_cell_is_cut_or_escaped(secret):
    record = _record('a1', 'rolled_back', 'api_key_not_enforced')
    record['diagnosis']['diagnosis'] = 'the server answered without the key ' + secret + ' it was given'
    record['diagnosis']['advice'] = 'SGLang ran with --api-key %s --port 30000' % secret
    report = upgrade_report([record], secrets=[secret])
    text = report['markdown'] + repr(report['hosts'])
    assert secret[:8] not in text and 'right-0123' not in text
    assert report['hosts'][0]['diagnosis']['diagnosis'] == 'the server answered without the key ******** it was given'
    assert report['hosts'][0]['diagnosis']['advice'] == 'SGLang ran with --api-key ******** --port 30000'
