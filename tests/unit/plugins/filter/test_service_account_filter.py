# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The service-account filters the roles call: getent's answer in, the shared rule's messages out."""

from __future__ import annotations

import pytest

from ansible.errors import AnsibleFilterError
from ansible_collections.ddtree.sglang.plugins.filter.service_account import FilterModule, getent_account, service_account_problems

# ansible.builtin.getent with fail_key: false, as the router's validate reads it
GETENT_DEPLOY = {'deploy': ['x', '1000', '1000', ',,,', '/home/deploy', '/bin/bash']}
GETENT_MISSING = {'sglang-router': None}
GETENT_DAEMON = {'daemon': ['x', '1', '1', 'daemon', '/usr/sbin', '/usr/sbin/nologin']}
GETENT_OWN = {'sglang-router': ['x', '997', '997', '', '/var/lib/sglang-router', '/usr/sbin/nologin']}


def router(getent, user):
    return service_account_problems(getent_account(getent, user), 'sglang_router_user', user, '/var/lib/%s' % user)


def test_the_filters_are_registered():
    assert set(FilterModule().filters()) == {'service_account_problems', 'getent_account'}


def test_a_missing_account_or_the_roles_own_passes():
    assert router(GETENT_MISSING, 'sglang-router') == []
    assert router(GETENT_OWN, 'sglang-router') == []
    # root's read is skipped: the registered result has no getent_passwd
    assert router({}, 'root') == []
    assert router(None, 'sglang-router') == []


def test_the_ssh_user_is_refused():
    (problem,) = router(GETENT_DEPLOY, 'deploy')
    assert problem.startswith(
        'sglang_router_user deploy is an existing account that is not the system user the role would '
        'make: uid 1000 (not a system uid, 1-999), shell /bin/bash (a login shell), home /home/deploy '
        '(not /var/lib/deploy).'
    )


def test_a_system_account_with_another_home_is_refused():
    (problem,) = router(GETENT_DAEMON, 'daemon')
    assert 'sglang_router_user daemon is an existing account' in problem
    assert ': home /usr/sbin (not /var/lib/daemon). The role' in problem


def test_the_service_roles_host_read_is_read_as_it_is():
    # sglang_host_facts' user, with the fields the service role's read carries
    user = {
        'name': 'deploy',
        'exists': True,
        'group': 'deploy',
        'home': '/home/deploy',
        'shell': '/bin/bash',
        'uid': 1000,
        'comment': '',
        'groups': ['sudo'],
        'groups_existing': ['video'],
    }
    (problem,) = service_account_problems(user, 'sglang_service_user', 'deploy', '/var/lib/deploy')
    assert problem.startswith('sglang_service_user deploy is an existing account')
    assert service_account_problems({'name': 'sglang', 'exists': False, 'groups_existing': []}, 'sglang_service_user', 'sglang', '/var/lib/sglang') == []


@pytest.mark.parametrize('call', [lambda: service_account_problems(['x'], 'sglang_router_user', 'a'), lambda: getent_account(['x'], 'a')])
def test_a_wrong_input_type_is_an_error(call):
    with pytest.raises(AnsibleFilterError):
        call()
