#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, ddtree.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: sglang_router_workers
short_description: Add, remove and reconcile the workers of a running smg router, and wait for them
version_added: "0.3.0"
description:
  - Talks to the worker API of a running smg (the Shepherd Model Gateway, 1.13) at O(url), so its worker list changes
    without a restart. C(GET /workers) lists the workers with their status, C(POST /workers) with the worker's C(url) (and
    its key) in a JSON body queues a registration (the router lists the worker once it registered, and routes to it once
    its status is C(ready)), C(DELETE /workers/<id>) queues a removal (the worker is listed as C(draining), routed no new
    request, then dropped; requests in flight to it still finish).
  - O(state=present) adds the O(workers) the router does not list; O(state=absent) removes them;
    O(state=exact) adds the missing ones and removes every listed worker that is not in O(workers).
  - With O(wait), the module returns only when the router reports what was asked (every worker of
    O(workers) listed and healthy for C(present) and C(exact), none of them listed for C(absent)); past
    O(timeout) it fails naming the workers that did not get there.
  - Worker URLs are compared without a trailing slash. A worker listed as C(draining) counts as removed.
author:
  - ddtree.sglang maintainers (@ddtree)
options:
  url:
    description: Base URL of the router's HTTP API.
    type: str
    default: http://127.0.0.1:30080
  workers:
    description: Worker base URLs, such as C(http://10.0.0.5:30000).
    type: list
    elements: str
    required: true
  state:
    description: What the router's worker list must look like afterwards.
    type: str
    choices: [present, absent, exact]
    default: present
  wait:
    description: Wait until the router reports the requested state (healthy for C(present)/C(exact)).
    type: bool
    default: true
  timeout:
    description: Seconds to wait with O(wait) before failing; also bounds the wait for the router's API itself.
    type: float
    default: 120
  poll_interval:
    description: Seconds between two reads of C(GET /workers).
    type: float
    default: 0.5
  min_healthy:
    description:
      - With O(state=absent) or O(state=exact), refuse (fail, changing nothing) a removal that would leave the router with
        fewer healthy workers than this. C(0) allows any removal.
    type: int
    default: 0
  lock_path:
    description:
      - A lock file on the host the module runs on (the router's host). Every call that changes the router holds an
        C(flock) on it from its read of the worker list, through the O(min_healthy) check and the change, until the
        router shows the change (with O(wait)); so the drains of two hosts at once are served one after the other, and
        the second sees the first's removal before it checks O(min_healthy). Check mode takes no lock.
      - A call waits at most O(timeout) for the lock.
    type: path
    default: /run/ddtree-sglang/router-workers.lock
  unit:
    description:
      - The router's systemd unit on the host the module runs on. When set, every poll also reads its state, and a unit that
        failed, stopped or is restarting fails the module at once with the journal's last lines, instead of waiting for O(timeout).
    type: str
  api_key_env_file:
    description:
      - The router's root-only C(EnvironmentFile=) on the host the module runs on, as role sglang_router writes it. Its
        C(DDTREE_SMG_CONTROL_PLANE_API_KEY), else its C(DDTREE_SMG_API_KEY), is sent as the bearer token of every call;
        C(DDTREE_SMG_API_KEY) is also the key the module gives each worker it adds (the fronted workers share the router's
        key). No key leaves the host; a missing file means a router without keys.
    type: path
attributes:
  check_mode:
    description: Reads the worker list and reports what it would add and remove; sends no C(POST) or C(DELETE).
    support: full
  diff_mode:
    description: No diff.
    support: none
notes:
  - The router lists a worker only after its registration passed, so a queued addition of a worker that never
    answers never appears; O(wait) then fails at O(timeout). A worker still listed as C(draining) is asked for again
    once it is gone (smg answers 409 while it is listed).
  - A router that does not answer within O(timeout) fails the module (no change is made).
'''

EXAMPLES = r'''
- name: Take this host out of every router, waiting until none lists it
  ddtree.sglang.sglang_router_workers:
    url: http://127.0.0.1:30080
    workers: [http://10.88.0.12:30000]
    state: absent
  delegate_to: "{{ item }}"
  loop: "{{ groups.routers }}"

- name: Make the router front exactly the inventory's workers, and wait until all are healthy
  ddtree.sglang.sglang_router_workers:
    url: http://127.0.0.1:30080
    workers: "{{ __sglang_router_expected_workers }}"
    state: exact
    timeout: 300
'''

RETURN = r'''
added:
  description: Worker URLs the module asked the router to add (or would add, in check mode).
  returned: always
  type: list
  elements: str
removed:
  description: Worker URLs the module asked the router to remove (or would remove, in check mode).
  returned: always
  type: list
  elements: str
workers:
  description: The router's worker list when the module finished.
  returned: always
  type: list
  elements: dict
  contains:
    url:
      description: Worker base URL.
      type: str
    id:
      description: The router's id of the worker (a new one after each addition).
      type: str
    is_healthy:
      description: The router's health verdict.
      type: bool
    status:
      description: The router's status of the worker (C(pending), C(ready), C(not_ready), C(failed) or C(draining)).
      type: str
    load:
      description: The router's load counter for the worker (only some policies count it).
      type: int
unit_state:
  description: C(ActiveState) and C(SubState) of O(unit) at the end (empty without O(unit)).
  returned: always
  type: dict
pending:
  description: Worker URLs of O(workers) not yet in the requested state when the module finished (empty on success).
  returned: always
  type: list
  elements: str
elapsed_s:
  description: Seconds the module took.
  returned: always
  type: float
'''

import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.ddtree.sglang.plugins.module_utils import systemd
from ansible_collections.ddtree.sglang.plugins.module_utils.env_file import read_env_file
from ansible_collections.ddtree.sglang.plugins.module_utils.host_lock import Guard, GuardTimeout
from ansible_collections.ddtree.sglang.plugins.module_utils.router_workers import Router, RouterError, norm, pending, plan, shortfall, unit_broken

# a failed registration is asked for again at most this often (smg answers 409 while one is under way)
READD_INTERVAL_S = 5.0


def unit_state(module, unit):
    """ActiveState and SubState of a systemd unit, or {} when systemctl cannot tell."""
    return systemd.show(module.run_command, unit, ('ActiveState', 'SubState', 'LoadState')) or {}


def journal_tail(module, unit, lines=15):
    return systemd.journal_tail(module.run_command, unit, lines)


def run_module():
    module = AnsibleModule(
        argument_spec=dict(
            url=dict(type='str', default='http://127.0.0.1:30080'),
            workers=dict(type='list', elements='str', required=True),
            state=dict(type='str', choices=['present', 'absent', 'exact'], default='present'),
            wait=dict(type='bool', default=True),
            timeout=dict(type='float', default=120),
            poll_interval=dict(type='float', default=0.5),
            min_healthy=dict(type='int', default=0),
            unit=dict(type='str'),
            lock_path=dict(type='path', default='/run/ddtree-sglang/router-workers.lock'),
            api_key_env_file=dict(type='path'),
        ),
        supports_check_mode=True,
    )
    if module.check_mode:
        reconcile(module)
    try:
        with Guard(module.params['lock_path'], timeout=max(module.params['timeout'], 0)):
            reconcile(module)
    except GuardTimeout as e:
        module.fail_json(
            msg='another change of the router at %s did not end in time: %s' % (module.params['url'], e),
            changed=False,
            added=[],
            removed=[],
            workers=[],
            pending=[],
            unit_state={},
            elapsed_s=0.0,
        )


def router_of(module):
    """The router's API with the keys of its EnvironmentFile (none without one)."""
    path = module.params['api_key_env_file']
    keys = {}
    if path:
        try:
            keys = read_env_file(path, missing_ok=True)
        except (IOError, OSError) as e:
            module.fail_json(msg='cannot read the router\'s keys in %s: %s' % (path, e.strerror or e))
    api_key = keys.get('DDTREE_SMG_API_KEY') or None
    control = keys.get('DDTREE_SMG_CONTROL_PLANE_API_KEY') or api_key
    for key in (api_key, control):
        if key:
            # never in a message or a result, even if a router's answer echoes it
            module.no_log_values.add(key)
    return Router(module.params['url'], key=control, worker_key=api_key)


def reconcile(module):
    """Read, check, change and wait: the whole of one call, under the caller's lock."""
    started = time.monotonic()
    deadline = started + max(module.params['timeout'], 0)
    state = module.params['state']
    wanted = []
    for url in module.params['workers']:
        if norm(url) and norm(url) not in wanted:
            wanted.append(norm(url))
    router = router_of(module)
    unit = module.params['unit']
    result = dict(changed=False, added=[], removed=[], workers=[], pending=[], unit_state={}, elapsed_s=0.0)

    def finish(fail=None, **extra):
        result.update(extra)
        result['elapsed_s'] = round(time.monotonic() - started, 3)
        if fail:
            module.fail_json(msg=fail, **result)
        module.exit_json(**result)

    def check_unit():
        # the verdict's idea: the unit's own state is decisive at once, the API only by a deadline
        if not unit:
            return
        result['unit_state'] = unit_state(module, unit)
        why = unit_broken(result['unit_state'])
        if why:
            finish(
                '%s %s on this host, so the router at %s cannot serve; its journal ends: %s'
                % (unit, why, router.url, ' | '.join(journal_tail(module, unit)) or '(nothing)')
            )

    listed, last_error = None, None
    while listed is None:
        check_unit()
        try:
            listed = router.workers()
        except RouterError as e:
            last_error = str(e)
            if time.monotonic() >= deadline:
                finish('the router at %s did not answer within %s s: %s' % (router.url, module.params['timeout'], last_error))
            time.sleep(module.params['poll_interval'])

    add, remove = plan(state, wanted, listed)
    left = shortfall(remove, listed, module.params['min_healthy'])
    if left is not None:
        finish(
            'removing %s from the router at %s would leave %d healthy worker(s), fewer than min_healthy=%d; it lists %s'
            % (
                ', '.join(w['url'] for w in remove),
                router.url,
                left,
                module.params['min_healthy'],
                ', '.join('%s (%s)' % (w['url'], 'healthy' if w['is_healthy'] else 'unhealthy') for w in listed),
            ),
            workers=listed,
        )
    result['added'] = add
    result['removed'] = [w['url'] for w in remove]
    result['changed'] = bool(add or remove)
    if module.check_mode:
        finish(workers=listed, pending=pending(state, wanted, listed))
    try:
        for worker in remove:
            router.remove(worker['id'])
        for url in add:
            router.add(url)
    except RouterError as e:
        finish('changing the workers of %s failed: %s' % (router.url, e), workers=listed)
    asked_at = time.monotonic()

    # an addition or removal is queued by the router; poll until it shows
    while True:
        check_unit()
        try:
            listed = router.workers()
        except RouterError as e:
            last_error = str(e)
        waiting = pending(state, wanted, listed)
        # a worker asked for while the router still listed it draining was refused (409): ask again once it is gone
        unlisted = [u for u in waiting if u not in set(w['url'] for w in listed)] if state != 'absent' else []
        if unlisted and time.monotonic() - asked_at >= READD_INTERVAL_S:
            asked_at = time.monotonic()
            try:
                for url in unlisted:
                    router.add(url)
            except RouterError as e:
                last_error = str(e)
        if not module.params['wait'] or not waiting:
            finish(workers=listed, pending=waiting if module.params['wait'] else [])
        if time.monotonic() >= deadline:
            what = 'still listed' if state == 'absent' else 'not listed healthy (or not ours)'
            finish(
                'after %s s the router at %s has %s %s; it lists %s%s'
                % (
                    module.params['timeout'],
                    router.url,
                    ', '.join(waiting),
                    what,
                    ', '.join('%s (%s)' % (w['url'], 'healthy' if w['is_healthy'] else 'unhealthy') for w in listed) or 'no worker',
                    ('; last error: %s' % last_error) if last_error else '',
                ),
                workers=listed,
                pending=waiting,
            )
        time.sleep(module.params['poll_interval'])


def main():
    run_module()


if __name__ == '__main__':
    main()
