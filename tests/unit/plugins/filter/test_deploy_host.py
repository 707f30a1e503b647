# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The deploy protocol's decisions: a run's outcome, whether the host serves after it, the multi-node peers that did not come up."""

from __future__ import annotations

import pytest

from ansible.errors import AnsibleFilterError
from ansible_collections.ddtree.sglang.plugins.filter.deploy_host import deploy_outcome, multinode_down


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
