# -*- coding: utf-8 -*-
# Copyright: (c) 2026, ddtree.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Who holds a listening TCP port, from /proc (net/tcp, net/tcp6, <pid>/fd, <pid>/cgroup) and
the unit's cgroup.procs. Reads files only; paths take a ``proc`` root so tests can build one.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import os

# An old SGLang unit still bound to the port answers /v1/models and /generate while the new
# unit is still loading (it only fails with "address already in use" minutes later, at
# bind). So a healthy answer counts only when the socket belongs to the unit's processes.

_TCP_LISTEN = '0A'


def parse_proc_net_tcp(text, port):
    """Inodes of sockets LISTENing on ``port`` in /proc/net/tcp or tcp6 text."""
    inodes = set()
    for line in text.splitlines()[1:]:
        cols = line.split()
        if len(cols) < 10 or cols[3] != _TCP_LISTEN:
            continue
        try:
            local_port = int(cols[1].rsplit(':', 1)[1], 16)
        except (IndexError, ValueError):
            continue
        if local_port == port and cols[9] != '0':
            inodes.add(cols[9])
    return inodes


def socket_inode(link):
    """'socket:[12345]' -> '12345', anything else -> None."""
    if link.startswith('socket:[') and link.endswith(']'):
        return link[8:-1]
    return None


def cgroup_procs_paths(control_group):
    """Where cgroup.procs of a unit's cgroup can be, for cgroup v2 and v1 (hybrid) hosts."""
    cg = control_group.strip('/')
    return ['/sys/fs/cgroup/%s/cgroup.procs' % cg, '/sys/fs/cgroup/systemd/%s/cgroup.procs' % cg, '/sys/fs/cgroup/unified/%s/cgroup.procs' % cg]


def _read(path):
    with open(path, 'r') as handle:
        return handle.read()


def listening_inodes(port, proc='/proc'):
    inodes = set()
    for name in ('tcp', 'tcp6'):
        try:
            inodes |= parse_proc_net_tcp(_read(os.path.join(proc, 'net', name)), port)
        except (IOError, OSError):
            pass
    return inodes


def pid_socket_inodes(pid, proc='/proc'):
    fd_dir = os.path.join(proc, str(pid), 'fd')
    inodes = set()
    for fd in os.listdir(fd_dir):
        try:
            inode = socket_inode(os.readlink(os.path.join(fd_dir, fd)))
        except OSError as e:
            # another user's links need CAP_SYS_PTRACE (root in a podman lab host lacks it): then the
            # process is unreadable, which must not read as "holds no socket"
            if e.errno in (errno.EACCES, errno.EPERM):
                raise
            continue
        if inode:
            inodes.add(inode)
    return inodes


def unit_pids(control_group, main_pid=0):
    pids = set()
    # an empty ControlGroup would name the root cgroup, i.e. every process on the host
    for path in cgroup_procs_paths(control_group) if control_group and control_group.strip('/') else []:
        try:
            pids |= set(int(p) for p in _read(path).split())
        except (IOError, OSError, ValueError):
            continue
        if pids:
            break
    if main_pid:
        pids.add(main_pid)
    return pids


def port_owner(port, control_group, main_pid, proc='/proc'):
    """Whether the unit holds the listening socket of ``port``.

    Returns (owned, other_pids): owned is True/False, or None when it cannot be told (no
    listener visible, the unit's /proc entries not readable as this user); other_pids
    names the processes outside the unit that hold it.
    """
    listeners = listening_inodes(port, proc)
    if not listeners:
        return None, []
    mine = set()
    readable = 0
    for pid in unit_pids(control_group, main_pid):
        try:
            mine |= pid_socket_inodes(pid, proc)
            readable += 1
        except OSError:
            continue
    if not readable:
        return None, []
    if mine & listeners:
        return True, []
    others = []
    try:
        entries = os.listdir(proc)
    except OSError:
        entries = []
    for entry in entries:
        if entry.isdigit():
            try:
                if pid_socket_inodes(entry, proc) & listeners:
                    others.append(int(entry))
            except OSError:
                continue
    return False, sorted(others)


def process_name(pid, proc='/proc'):
    try:
        return _read(os.path.join(proc, str(pid), 'comm')).strip()
    except (IOError, OSError):
        return '?'


def process_unit(pid, proc='/proc'):
    """The .service/.scope a process belongs to, from /proc/<pid>/cgroup (v2 or v1's name=systemd)."""
    try:
        with open(os.path.join(proc, str(pid), 'cgroup'), 'r') as handle:
            text = handle.read()
    except (IOError, OSError):
        return ''
    for line in text.splitlines():
        parts = line.split(':', 2)
        if len(parts) != 3 or parts[1] not in ('', 'name=systemd'):
            continue
        for part in reversed(parts[2].strip('/').split('/')):
            if part.endswith(('.service', '.scope')):
                return part
    return ''


def port_check(port, unit_pids, unit='', proc='/proc'):
    """Who listens on ``port``: the result dict of the module (without ``changed``)."""
    listeners = listening_inodes(port, proc)
    result = {'in_use': False, 'listening': bool(listeners), 'unit_holds': False, 'holders': [], 'unreadable': 0}
    if not listeners:
        result['msg'] = 'nothing listens on port %d' % port
        return result
    try:
        entries = sorted(int(e) for e in os.listdir(proc) if e.isdigit())
    except OSError:
        entries = []
    for pid in entries:
        try:
            held = pid_socket_inodes(pid, proc) & listeners
        except OSError:
            result['unreadable'] += 1
            continue
        if not held:
            continue
        if pid in unit_pids:
            result['unit_holds'] = True
        else:
            result['holders'].append({'pid': pid, 'name': process_name(pid, proc), 'unit': process_unit(pid, proc)})
    owner = unit or 'the unit'
    if result['holders']:
        result['in_use'] = True
        result['msg'] = '%s listen%s on port %d, not %s' % (
            ', '.join('PID %d (%s)' % (h['pid'], ', '.join(x for x in (h['name'], h['unit']) if x)) for h in result['holders']),
            's' if len(result['holders']) == 1 else '',
            port,
            owner,
        )
    elif result['unit_holds']:
        result['msg'] = '%s holds port %d' % (owner, port)
    elif not unit_pids:
        # the unit runs no process, so whoever listens is someone else
        result['in_use'] = True
        result['msg'] = 'a process this module cannot read (%d unreadable) listens on port %d, and %s runs no process' % (result['unreadable'], port, owner)
    else:
        result['msg'] = (
            'port %d listens but its holder could not be read (%d processes unreadable; root with CAP_SYS_PTRACE '
            'reads them): cannot tell whether %s holds it' % (port, result['unreadable'], owner)
        )
    return result
