# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The service-account rule (module_utils/service_account.py) as filters, for the roles that make a system user."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.ddtree.sglang.plugins.module_utils.service_account import account_problems, passwd_account


def service_account_problems(account, variable, user, home=None):
    """[] when the role may run as ``user``, else one message naming ``variable``; ``account`` as the host read it."""
    if account is not None and not isinstance(account, dict):
        raise AnsibleFilterError('service_account_problems takes the account as a dict, got %r' % (account,))
    return account_problems(variable, user, account, home)


def getent_account(getent_passwd, user):
    """The account ``user`` from ansible.builtin.getent's getent_passwd (fail_key: false), for service_account_problems."""
    if getent_passwd is not None and not isinstance(getent_passwd, dict):
        raise AnsibleFilterError('getent_account takes getent_passwd (a dict), got %r' % (getent_passwd,))
    return passwd_account((getent_passwd or {}).get(user))


class FilterModule(object):
    def filters(self):
        return {
            'service_account_problems': service_account_problems,
            'getent_account': getent_account,
        }
