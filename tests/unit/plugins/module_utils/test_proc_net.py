# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.ddtree.sglang.plugins.module_utils import proc_net as pn


PROC_NET_TCP = """  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:7530 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 5551 1 0000000000000000 100 0 0 10 0
   1: 0100007F:7530 0100007F:A1B2 01 00000000:00000000 00:00000000 00000000     0        0 5552 1 0000000000000000 20 4 30 10 -1
   2: 00000000:0016 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 5553 1 0000000000000000 100 0 0 10 0
garbage
"""


def test_parse_proc_net_tcp_only_listeners_on_the_port():
    assert pn.parse_proc_net_tcp(PROC_NET_TCP, 30000) == set(['5551'])
    assert pn.parse_proc_net_tcp(PROC_NET_TCP, 22) == set(['5553'])
    assert pn.parse_proc_net_tcp(PROC_NET_TCP, 8080) == set()


def test_socket_inode():
    assert pn.socket_inode('socket:[5551]') == '5551'
    assert pn.socket_inode('/dev/null') is None
    assert pn.socket_inode('pipe:[12]') is None


def _fake_proc(root, sockets_by_pid):
    (root / 'net').mkdir(parents=True)
    (root / 'net' / 'tcp').write_text(PROC_NET_TCP)
    for pid, inodes in sockets_by_pid.items():
        fd_dir = root / str(pid) / 'fd'
        fd_dir.mkdir(parents=True)
        (root / str(pid) / 'comm').write_text('python3\n')
        for n, inode in enumerate(inodes):
            os.symlink('socket:[%s]' % inode, str(fd_dir / str(n)))
    return str(root)


def test_port_owner(tmp_path):
    proc = _fake_proc(tmp_path / 'proc', {100: ['5551'], 200: ['9999']})
    assert pn.port_owner(30000, '', 100, proc) == (True, [])
    assert pn.port_owner(30000, '', 200, proc) == (False, [100])
    assert pn.process_name(100, proc) == 'python3'
    # nothing listens on the port, or the unit's processes cannot be read: no opinion
    assert pn.port_owner(8080, '', 100, proc) == (None, [])
    assert pn.port_owner(30000, '', 424242, proc) == (None, [])


def test_port_owner_of_a_process_whose_links_are_unreadable(tmp_path, monkeypatch):
    proc = _fake_proc(tmp_path / 'proc', {100: ['5551']})
    real_readlink = os.readlink

    def readlink(path):
        if os.sep + '100' + os.sep in path:
            raise PermissionError(13, 'Permission denied', path)
        return real_readlink(path)

    monkeypatch.setattr(pn.os, 'readlink', readlink)
    # the service runs as another user and this one lacks CAP_SYS_PTRACE: no opinion, not "foreign"
    assert pn.port_owner(30000, '', 100, proc) == (None, [])


def test_unit_pids_never_reads_the_root_cgroup():
    assert pn.unit_pids('', 7) == set([7])
    assert pn.unit_pids('/', 0) == set()
