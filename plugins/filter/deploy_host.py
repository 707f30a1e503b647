# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The decisions of the deploy protocol (role sglang_service, entry point deploy_host), as pure functions:
what a run's outcome was, whether the host serves after it, and which multi-node peers did not come up."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

# outcomes after which a host serves what this run meant it to serve
CAME_UP = ('upgraded', 'unchanged')


def deploy_outcome(run):
    """``{outcome, serving}`` of one run of deploy_host.

    ``run``: action (deploy or rollback), error (the first failure's message, '' when none), unit_changes (the run
    replaced the unit), unit_written (it wrote the new unit), rollback_needed (a rollback found a unit to restore),
    rollback_healthy and undo_healthy (the restored unit's and the put-back unit's verdicts; None when not judged).

    A deploy is ``upgraded`` or ``unchanged``; failed after writing its unit and restored healthy, ``rolled_back``;
    else ``failed``. The old service still serves when the failure came before the unit was written (validation, the
    lock, the build) or the restore was healthy. A rollback is ``rolled_back`` (or ``unchanged`` with nothing to
    restore); failed, the host serves unless the restored unit and the unit it replaced both failed their verdicts.
    """
    action, error = run.get('action'), run.get('error') or ''
    if action == 'deploy':
        if not error:
            return {'outcome': 'upgraded' if run.get('unit_changes', True) else 'unchanged', 'serving': True}
        restored = bool(run.get('unit_written')) and run.get('rollback_healthy') is True
        return {'outcome': 'rolled_back' if restored else 'failed', 'serving': restored or not run.get('unit_written')}
    if action == 'rollback':
        if not error:
            return {'outcome': 'rolled_back' if run.get('rollback_needed') else 'unchanged', 'serving': True}
        left_unhealthy = run.get('rollback_healthy') is False and run.get('undo_healthy') is not True
        return {'outcome': 'failed', 'serving': not left_unhealthy}
    raise AnsibleFilterError('deploy_outcome: action must be deploy or rollback, got %r' % (action,))


def multinode_down(members, outcomes):
    """The members of a multi-node group whose outcome in this run (``outcomes``, aligned with ``members``; None for
    a member without a record, such as one lost to the run) is not one after which it serves."""
    if len(members) != len(outcomes):
        raise AnsibleFilterError('multinode_down: %d members but %d outcomes' % (len(members), len(outcomes)))
    return [member for member, outcome in zip(members, outcomes) if outcome not in CAME_UP]


def deploy_plan(plan):
    """What a real run of the deploy protocol would do, from a check-mode run (nothing was changed): ``{change,
    restart, line}``. ``change`` is whether the host would change at all, ``restart`` one of restart, start or none, and
    ``line`` says it in one sentence.

    ``plan``: host, unit, unit_changes (the rendered unit differs from the installed one), active (the service runs
    now), release ({id, planned (to be built), was_current} or empty without a release build), lock (what taking the
    lock did: take, or break with broken_owner), routers (those a real run would drain the host from)."""
    release = plan.get('release') or {}
    new_release = bool(release) and not release.get('was_current')
    if plan.get('unit_changes'):
        restart = 'restart' if plan.get('active') else 'start'
    else:
        restart = 'none' if plan.get('active') else 'start'
    parts = ['%s on %s: the unit %s' % (plan.get('unit'), plan.get('host'), 'would be replaced' if plan.get('unit_changes') else 'is unchanged')]
    parts.append({'restart': 'the service would restart', 'start': 'the service would start', 'none': 'the service would go on running'}[restart])
    if release:
        if release.get('planned'):
            parts.append('release %s would be built' % release.get('id'))
        elif new_release:
            parts.append('release %s (built before) would become current' % release.get('id'))
        else:
            parts.append('release %s stays current' % release.get('id'))
    if plan.get('routers'):
        parts.append('the host would leave and rejoin %s' % ', '.join(plan['routers']))
    lock = plan.get('lock') or {}
    if lock.get('action') == 'break':
        parts.append("the host lock is free once the stale lease of %s is broken" % lock.get('broken_owner'))
    else:
        parts.append('the host lock is free')
    return {'change': bool(plan.get('unit_changes')) or new_release or restart != 'none', 'restart': restart, 'line': '; '.join(parts) + '.'}


class FilterModule:
    """Deploy protocol filters."""

    def filters(self):
        return {'deploy_outcome': deploy_outcome, 'multinode_down': multinode_down, 'deploy_plan': deploy_plan}
