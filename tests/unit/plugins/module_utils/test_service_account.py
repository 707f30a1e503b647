# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The service-account rule both roles use: an existing account only with the system user's shape."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.ddtree.sglang.plugins.module_utils.service_account import account_problems, expected_home, passwd_account

ROLE_MADE = {'exists': True, 'uid': 998, 'shell': '/usr/sbin/nologin', 'home': '/var/lib/sglang-router'}


def account(**changes):
    return dict(ROLE_MADE, **changes)


def test_a_name_that_does_not_exist_yet_is_the_roles_to_create():
    assert account_problems('sglang_router_user', 'sglang-router', {'exists': False}) == []
    assert account_problems('sglang_router_user', 'sglang-router', None) == []
    assert account_problems('sglang_router_user', 'sglang-router', {}) == []


def test_root_is_used_as_it_is():
    # the roles make no account for root; its uid 0, shell and home are not theirs to judge
    assert account_problems('sglang_service_user', 'root', {'exists': True, 'uid': 0, 'shell': '/bin/bash', 'home': '/root'}) == []


@pytest.mark.parametrize('shell', ['/usr/sbin/nologin', '/sbin/nologin', '/bin/false', '/usr/bin/false'])
def test_a_system_account_of_the_expected_shape_is_used(shell):
    assert account_problems('sglang_router_user', 'sglang-router', account(shell=shell)) == []


@pytest.mark.parametrize('uid', [1, 100, 999, '998'])
def test_any_system_uid_passes(uid):
    assert account_problems('sglang_router_user', 'sglang-router', account(uid=uid)) == []


def test_the_home_is_compared_without_a_trailing_slash():
    assert account_problems('sglang_router_user', 'sglang-router', account(home='/var/lib/sglang-router/')) == []


def test_the_ssh_user_is_refused_naming_the_variable_the_account_and_all_that_is_wrong():
    assert account_problems('sglang_router_user', 'deploy', {'exists': True, 'uid': 1000, 'shell': '/bin/bash', 'home': '/home/deploy', 'comment': ''}) == [
        'sglang_router_user deploy is an existing account that is not the system user the role would make: uid 1000 (not a '
        'system uid, 1-999), shell /bin/bash (a login shell), home /home/deploy (not /var/lib/deploy). The role would set a '
        'nologin shell and home /var/lib/deploy on it, locking out whoever logs in as deploy. Allowed: a user name that does '
        'not exist yet (the role creates it as a system user), an existing system account (uid 1-999) with a no-login shell '
        'and home /var/lib/deploy, or root.'
    ]


@pytest.mark.parametrize('uid', [1000, 65534, 0, -1, None, 'x', True])
def test_a_uid_outside_the_system_range_is_refused(uid):
    (problem,) = account_problems('sglang_service_user', 'sglang', account(uid=uid, home='/var/lib/sglang'))
    assert problem.startswith(
        'sglang_service_user sglang is an existing account that is not the system user the role would make: uid %s (not a system uid, 1-999).' % uid
    )


@pytest.mark.parametrize(
    'shell, shown', [('/bin/bash', '/bin/bash'), ('/bin/sh', '/bin/sh'), ('', 'empty, which is /bin/sh'), (None, 'empty, which is /bin/sh')]
)
def test_a_login_shell_is_refused(shell, shown):
    (problem,) = account_problems('sglang_router_user', 'sglang-router', account(shell=shell))
    assert ': shell %s (a login shell). The role would' % shown in problem


@pytest.mark.parametrize('home, shown', [('/usr/sbin', '/usr/sbin'), ('/home/sglang-router', '/home/sglang-router'), ('', 'none'), (None, 'none')])
def test_another_home_is_refused(home, shown):
    (problem,) = account_problems('sglang_router_user', 'sglang-router', account(home=home))
    assert ': home %s (not /var/lib/sglang-router). The role would' % shown in problem


def test_the_expected_home_can_be_given():
    assert account_problems('sglang_service_user', 'sglang', account(home='/srv/sglang'), home='/srv/sglang') == []
    (problem,) = account_problems('sglang_service_user', 'sglang', account(home='/var/lib/sglang'), home='/srv/sglang')
    assert 'home /var/lib/sglang (not /srv/sglang)' in problem
    assert expected_home('sglang') == '/var/lib/sglang'


def test_the_mark_of_the_role_does_not_excuse_a_login_shell():
    # a comment is anyone's to set: the shape decides
    (problem,) = account_problems('sglang_service_user', 'sglang', account(shell='/bin/bash', home='/var/lib/sglang', comment='ddtree.sglang service user'))
    assert 'shell /bin/bash (a login shell)' in problem


def test_getent_records_read_as_accounts():
    assert passwd_account(None) == {'exists': False}
    assert passwd_account(['x', '998', '998', 'ddtree', '/var/lib/sglang-router', '/usr/sbin/nologin']) == {
        'exists': True,
        'uid': 998,
        'comment': 'ddtree',
        'home': '/var/lib/sglang-router',
        'shell': '/usr/sbin/nologin',
    }
    # a name listed twice: the first record is the one the system uses
    assert (
        passwd_account([['x', '1000', '1000', '', '/home/deploy', '/bin/bash'], ['x', '998', '998', '', '/var/lib/deploy', '/usr/sbin/nologin']])['uid'] == 1000
    )
    # a short or odd record is read as far as it goes, and then refused
    short = passwd_account(['x', 'many'])
    assert short == {'exists': True, 'uid': None, 'comment': '', 'home': '', 'shell': ''}
    assert account_problems('sglang_router_user', 'odd', short)
