# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The deploy protocol's decisions: a run's outcome, whether the host serves after it, the multi-node peers that did not come up."""

from __future__ import annotations

import pytest

from ansible.errors import AnsibleFilterError
from ansible_collections.ddtree.sglang.plugins.filter.deploy_host import deploy_outcome, deploy_plan, multinode_down


def run(**values):
    base = {'action': 'deploy', 'error': '', 'unit_changes': True, 'unit_written': False, 'rollback_needed': False}
    return dict(base, **dict({'rollback_healthy': None, 'undo_healthy': None}, **values))


@pytest.mark.parametrize(
    'values, expected',
    [
        ({}, {'outcome': 'upgraded', 'serving': True}),
        ({'unit_changes': False}, {'outcome': 'unchanged', 'serving': True}),
        # refused before the unit was written (validation, the lock, the build): the old service still serves
        ({'error': 'refused'}, {'outcome': 'failed', 'serving': True}),
        ({'error': 'verdict', 'unit_written': True, 'rollback_healthy': True}, {'outcome': 'rolled_back', 'serving': True}),
        ({'error': 'verdict', 'unit_written': True, 'rollback_healthy': False}, {'outcome': 'failed', 'serving': False}),
        # rollback off: the failed unit stays, nothing judged it healthy
        ({'error': 'verdict', 'unit_written': True}, {'outcome': 'failed', 'serving': False}),
    ],
)
def test_deploy_outcomes(values, expected):
    assert deploy_outcome(run(**values)) == expected


@pytest.mark.parametrize(
    'values, expected',
    [
        ({'rollback_needed': True, 'rollback_healthy': True}, {'outcome': 'rolled_back', 'serving': True}),
        ({}, {'outcome': 'unchanged', 'serving': True}),
        # refused before any restore (no last known good unit): the host serves as before
        ({'error': 'no last known good unit'}, {'outcome': 'failed', 'serving': True}),
        # the restored unit failed, the unit it replaced came back healthy
        ({'error': 'failed', 'rollback_healthy': False, 'undo_healthy': True}, {'outcome': 'failed', 'serving': True}),
        ({'error': 'failed', 'rollback_healthy': False, 'undo_healthy': False}, {'outcome': 'failed', 'serving': False}),
        ({'error': 'failed', 'rollback_healthy': False}, {'outcome': 'failed', 'serving': False}),
    ],
)
def test_rollback_outcomes(values, expected):
    assert deploy_outcome(run(action='rollback', **values)) == expected


def test_an_unknown_action_is_refused():
    with pytest.raises(AnsibleFilterError, match="action must be deploy or rollback, got 'upgrade'"):
        deploy_outcome(run(action='upgrade'))


def test_members_that_did_not_come_up_in_group_order():
    members = ['m0', 'm1', 'm2', 'm3', 'm4']
    assert multinode_down(members, ['upgraded', 'rolled_back', None, 'unchanged', 'failed']) == ['m1', 'm2', 'm4']
    assert multinode_down(members[:2], ['upgraded', 'unchanged']) == []


def test_members_and_outcomes_must_align():
    with pytest.raises(AnsibleFilterError, match='2 members but 1 outcomes'):
        multinode_down(['m0', 'm1'], ['upgraded'])


# --- check mode's plan ---------------------------------------------------------------------------
PLAN = {'host': 'ct129', 'unit': 'sglang-qwen.service', 'unit_changes': True, 'active': True, 'release': {}, 'lock': {'action': 'take'}, 'routers': []}


def test_a_changed_unit_would_restart_the_service():
    assert deploy_plan(PLAN) == {
        'change': True,
        'restart': 'restart',
        'line': 'sglang-qwen.service on ct129: the unit would be replaced; the service would restart; the host lock is free.',
    }


def test_an_unchanged_running_unit_on_its_current_release_changes_nothing():
    plan = dict(PLAN, unit_changes=False, release={'id': 'abc', 'planned': False, 'was_current': True})
    assert deploy_plan(plan) == {
        'change': False,
        'restart': 'none',
        'line': 'sglang-qwen.service on ct129: the unit is unchanged; the service would go on running; release abc stays current; the host lock is free.',
    }


def test_a_new_release_a_stopped_service_routers_and_a_stale_lease():
    plan = dict(
        PLAN,
        active=False,
        release={'id': 'def', 'planned': True, 'was_current': False},
        routers=['r1'],
        lock={'action': 'break', 'broken_owner': 'ops@ctl'},
    )
    assert deploy_plan(plan) == {
        'change': True,
        'restart': 'start',
        'line': 'sglang-qwen.service on ct129: the unit would be replaced; the service would start; release def would be built; '
        'the host would leave and rejoin r1; the host lock is free once the stale lease of ops@ctl is broken.',
    }


def test_a_release_built_before_would_become_current_without_a_unit_change():
    plan = dict(PLAN, unit_changes=False, release={'id': 'old', 'planned': False, 'was_current': False})
    result = deploy_plan(plan)
    assert (result['change'], result['restart']) == (True, 'none')
    assert 'release old (built before) would become current' in result['line']
