#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, ddtree.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: sglang_host_lock
short_description: Take or release the one-run-per-host lease of a deploy, upgrade or rollback
version_added: "0.3.0"
description:
  - A lease file on the host names the run that may change it (owner, play, start, expiry). O(state=held) takes it,
    or renews it when O(token) is the one that holds it; a lease held by another run refuses with a message that
    names the holder. A lease past its expiry is broken (taken over), and the result says whose it was.
  - Reading, deciding and writing happen under C(flock) on a guard file beside the lease, so two runs that arrive
    at once are served one after the other; the lease is replaced by rename.
  - The default path is on C(/run), which a reboot empties, so a reboot ends every run that held a lease there.
  - Taking, renewing and releasing a lease report no change (a run that changes nothing on the host stays unchanged);
    breaking a stale lease does.
author:
  - ddtree.sglang maintainers (@ddtree)
options:
  path:
    description: The lease file.
    type: path
    default: /run/ddtree-sglang/host.lock
  state:
    description: C(held) takes or renews the lease; C(released) removes it when O(token) holds it.
    type: str
    choices: [held, released]
    default: held
  token:
    description: The token a previous O(state=held) returned to this run; empty for a run that holds nothing yet.
    type: str
    default: ''
  owner:
    description: Who runs (user and controller), written into the lease for a refusal to name.
    type: str
    default: ''
  play:
    description: The play that runs, written into the lease.
    type: str
    default: ''
  lease_s:
    description: Seconds the lease lasts from now; every renewal starts it again.
    type: int
    default: 3600
attributes:
  check_mode:
    description: Takes and releases the lease in check mode too, so that a check run cannot overlap a real one.
    support: full
  diff_mode:
    description: No diff.
    support: none
'''

EXAMPLES = r'''
- name: Take the host lock
  ddtree.sglang.sglang_host_lock:
    owner: "{{ lookup('ansible.builtin.env', 'USER') }}"
    play: "{{ ansible_play_name }}"
  register: host_lock

- name: Release it
  ddtree.sglang.sglang_host_lock:
    state: released
    token: "{{ host_lock.token }}"
'''

RETURN = r'''
token:
  description: The token of the lease this run holds (empty after a release or a refusal).
  returned: always
  type: str
action:
  description: C(take), C(renew), C(break) (a stale lease was taken over), C(refuse), C(release) or C(none).
  returned: always
  type: str
lease:
  description: The lease this run holds, or for C(refuse) the holder's.
  returned: always
  type: dict
broken:
  description: With C(action=break), the stale lease that was taken over.
  returned: always
  type: dict
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.ddtree.sglang.plugins.module_utils import host_lock


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type='path', default='/run/ddtree-sglang/host.lock'),
            state=dict(type='str', default='held', choices=['held', 'released']),
            token=dict(type='str', default='', no_log=False),
            owner=dict(type='str', default=''),
            play=dict(type='str', default=''),
            lease_s=dict(type='int', default=3600),
        ),
        supports_check_mode=True,
    )
    p = module.params
    if p['lease_s'] < 1:
        module.fail_json(msg='lease_s must be 1 or more, got %d' % p['lease_s'])
    if p['state'] == 'released':
        removed = host_lock.release(p['path'], p['token'])
        module.exit_json(changed=False, token='', action='release' if removed else 'none', lease=removed or {}, broken={})
    result = host_lock.acquire(p['path'], p['token'], p['lease_s'], p['owner'], p['play'])
    if result['action'] == 'refuse':
        module.fail_json(
            msg='this host is locked by another run: %s holds %s. One deploy, upgrade or rollback runs on a host '
            'at a time; run again when it has ended (a lease that outlives its run is broken after its expiry).'
            % (host_lock.describe(result['holder']), p['path']),
            token='',
            action='refuse',
            lease=result['holder'],
            broken={},
        )
    out = dict(
        changed=result['action'] == 'break', token=result['lease']['token'], action=result['action'], lease=result['lease'], broken=result['broken'] or {}
    )
    if result['broken']:
        module.warn('broke the stale host lock of %s: its lease had expired' % host_lock.describe(result['broken']))
    module.exit_json(**out)


if __name__ == '__main__':
    main()
