# -*- coding: utf-8 -*-
# Copyright: (c) 2026, ddtree.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One run per host: a lease file that a run takes before it changes the host.

The lease is JSON (token, owner, play, started_at, expires_at). Taking, renewing and
releasing it happen under flock(2) on a guard file beside it, so two runs that arrive at
the same moment read and write it one after the other; the lease itself is replaced by
rename, so a reader never sees half of one. decide() is the whole policy, without I/O.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import fcntl
import json
import os
import time
import uuid


def describe(lease):
    """The holder of a lease, in the words a refusal or a warning uses."""
    return '%s (play %r, since %s, lease until %s)' % (
        lease.get('owner') or 'unknown',
        lease.get('play') or '',
        _stamp(lease.get('started_at')),
        _stamp(lease.get('expires_at')),
    )


def _stamp(ts):
    try:
        return time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(float(ts)))
    except (TypeError, ValueError):
        return 'unknown'


def decide(current, now, token, lease_s, owner, play, new_token=None):
    """What taking the lock does.

    current: the lease on the host (a dict) or None; token: the one this run holds, or ''.
    Returns a dict: action (take, renew, break, refuse), lease (what to write, None when
    refused), broken (the stale lease that was broken, or None), holder (who holds it when
    refused).
    """
    if current and token and current.get('token') == token:
        lease = dict(current, expires_at=now + lease_s)
        return {'action': 'renew', 'lease': lease, 'broken': None, 'holder': None}
    fresh = {'token': new_token or uuid.uuid4().hex, 'owner': owner, 'play': play, 'started_at': now, 'expires_at': now + lease_s}
    if not current:
        return {'action': 'take', 'lease': fresh, 'broken': None, 'holder': None}
    try:
        expired = float(current.get('expires_at')) <= now
    except (TypeError, ValueError):
        # a lease that cannot say when it ends is no lease
        expired = True
    if expired:
        return {'action': 'break', 'lease': fresh, 'broken': current, 'holder': None}
    return {'action': 'refuse', 'lease': None, 'broken': None, 'holder': current}


def _read(path):
    try:
        with open(path) as f:
            data = json.load(f)
    except (IOError, OSError) as e:
        if e.errno == errno.ENOENT:
            return None
        raise
    except ValueError:
        # half-written by hand or a full disk: treat as expired, decide() breaks it
        return {'owner': 'an unreadable lease file', 'expires_at': None}
    return data if isinstance(data, dict) else {'owner': 'an unreadable lease file', 'expires_at': None}


def _write(path, lease):
    tmp = '%s.%d.%s' % (path, os.getpid(), uuid.uuid4().hex[:8])
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, 'w') as f:
            json.dump(lease, f, sort_keys=True)
            f.flush()
            os.fsync(f.fileno())
        os.rename(tmp, path)
    except Exception:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


class GuardTimeout(Exception):
    """The guard was held by another process for the whole wait."""


class Guard(object):
    """flock on path + '.guard' for a read-decide-write, such as one call's lease update, or a router's
    read-check-remove of its workers. timeout: seconds to wait for it (None: as long as it takes)."""

    def __init__(self, path, timeout=None, poll_s=0.1):
        self.path = path + '.guard'
        self.timeout = timeout
        self.poll_s = poll_s
        self.fd = None

    def __enter__(self):
        ensure_dir(self.path)
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        if self.timeout is None:
            fcntl.flock(self.fd, fcntl.LOCK_EX)
            return self
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return self
            except (IOError, OSError) as e:
                if e.errno not in (errno.EAGAIN, errno.EACCES):
                    raise
            if time.monotonic() >= deadline:
                os.close(self.fd)
                raise GuardTimeout('%s was held by another run for %s s' % (self.path, self.timeout))
            time.sleep(self.poll_s)

    def __exit__(self, *exc):
        fcntl.flock(self.fd, fcntl.LOCK_UN)
        os.close(self.fd)


def ensure_dir(path):
    parent = os.path.dirname(path)
    if not os.path.isdir(parent):
        os.makedirs(parent, 0o700)


def acquire(path, token, lease_s, owner, play, now=None):
    ensure_dir(path)
    with Guard(path):
        current = _read(path)
        result = decide(current, time.time() if now is None else now, token, lease_s, owner, play)
        if result['lease'] is not None:
            _write(path, result['lease'])
    return result


def release(path, token):
    """Remove the lease when this run holds it. Returns the lease removed, or None."""
    if not token or not os.path.exists(path):
        return None
    with Guard(path):
        current = _read(path)
        if not current or current.get('token') != token:
            return None
        os.unlink(path)
    return current


def read(path):
    return _read(path)
