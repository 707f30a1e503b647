# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Whether a role may run its service as an account: one rule for every role that makes a system user.

A role's user task (ansible.builtin.user with system, shell and home) rewrites an account that is
already there: it sets a nologin shell and moves the home, so pointing it at a person's account
(the SSH user, say) locks that person out. An existing account is therefore used only when it
already looks like the account the role would make; anything else is refused before the host
changes. Pure: the account comes from a host read (sglang_host_facts' user, or getent passwd).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import posixpath

# useradd's UID_MIN (login.defs) on Debian, Ubuntu and RHEL: system accounts are below it; uid 0 is
# root's, and another name with uid 0 is root in all but name
SYSTEM_UID_MIN = 1
SYSTEM_UID_MAX = 999
# an empty shell field is /bin/sh (passwd(5)), so it is not among them
NOLOGIN_SHELLS = ('/usr/sbin/nologin', '/sbin/nologin', '/usr/bin/nologin', '/bin/nologin', '/usr/bin/false', '/bin/false')


def expected_home(user):
    """The home both roles give their account: the unit's StateDirectory=, /var/lib/<user>."""
    return '/var/lib/%s' % user


def passwd_account(entry):
    """An account as account_problems reads it, from one getent passwd record ([password, uid, gid, gecos,
    home, shell], ansible.builtin.getent's value for a key), or none when getent did not find it (None)."""
    if not entry:
        return {'exists': False}
    if isinstance(entry[0], list):
        # getent lists every record of a name that is there twice; the first is the one the system uses
        entry = entry[0]
    fields = list(entry) + [''] * (6 - len(entry))
    try:
        uid = int(fields[1])
    except (TypeError, ValueError):
        uid = None
    return {'exists': True, 'uid': uid, 'comment': fields[3], 'home': fields[4], 'shell': fields[5]}


def _uid(value):
    if isinstance(value, bool):
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def account_problems(variable, user, account, home=None):
    """[] when the role may run as ``user``; else one message naming ``variable``, the account and what is wrong.

    ``account`` is {exists, uid, shell, home} as read on the host. root is the role's to use as it is (it
    makes no account then); a name that does not exist yet is the role's to create. An existing account is
    used only with the shape the role would give it: a system uid (1-999), a no-login shell and ``home``
    (default /var/lib/<user>).
    """
    account = account or {}
    if user == 'root' or not account.get('exists'):
        return []
    home = home or expected_home(user)
    uid, shell, found_home = _uid(account.get('uid')), account.get('shell') or '', account.get('home') or ''
    wrong = []
    if uid is None or not SYSTEM_UID_MIN <= uid <= SYSTEM_UID_MAX:
        wrong.append('uid %s (not a system uid, %d-%d)' % (account.get('uid'), SYSTEM_UID_MIN, SYSTEM_UID_MAX))
    if shell not in NOLOGIN_SHELLS:
        wrong.append('shell %s (a login shell)' % (shell or 'empty, which is /bin/sh'))
    if not found_home or posixpath.normpath(found_home) != home:
        wrong.append('home %s (not %s)' % (found_home or 'none', home))
    if not wrong:
        return []
    return [
        '%s %s is an existing account that is not the system user the role would make: %s. The role would set a '
        'nologin shell and home %s on it, locking out whoever logs in as %s. Allowed: a user name '
        'that does not exist yet (the role creates it as a system user), an existing system account (uid %d-%d) with a '
        'no-login shell and home %s, or root.' % (variable, user, ', '.join(wrong), home, user, SYSTEM_UID_MIN, SYSTEM_UID_MAX, home)
    ]
