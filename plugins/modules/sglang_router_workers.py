#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, ddtree.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: sglang_router_workers
short_description: Add, remove and reconcile the workers of a running sglang-router, and wait for them
version_added: "0.3.0"
description:
  - Talks to the HTTP API of a running sglang-router (0.3.x, the SGLang Model Gateway) at O(url), so its
    worker list changes without a restart. C(GET /workers) lists the workers with their health,
    C(POST /workers) with the worker's C(url) in a JSON body queues an addition (the router lists the worker once its health
    check passed), C(DELETE /workers/<id>) queues a removal (requests in flight to that worker still finish).
  - O(state=present) adds the O(workers) the router does not list; O(state=absent) removes them;
    O(state=exact) adds the missing ones and removes every listed worker that is not in O(workers).
  - With O(wait), the module returns only when the router reports what was asked (every worker of
    O(workers) listed and healthy for C(present) and C(exact), none of them listed for C(absent)); past
    O(timeout) it fails naming the workers that did not get there.
  - Worker URLs are compared without a trailing slash.
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
attributes:
  check_mode:
    description: Reads the worker list and reports what it would add and remove; sends no C(POST) or C(DELETE).
    support: full
  diff_mode:
    description: No diff.
    support: none
notes:
  - The router lists a worker only after its health check passed, so a queued addition of a worker that never
    becomes healthy never appears; O(wait) then fails at O(timeout).
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
from ansible_collections.ddtree.sglang.plugins.module_utils.host_lock import Guard, GuardTimeout
from ansible_collections.ddtree.sglang.plugins.module_utils.router_workers import Router, RouterError, norm, pending, plan, shortfall, unit_broken


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


def reconcile(module):
    """Read, check, change and wait: the whole of one call, under the caller's lock."""
    started = time.monotonic()
    deadline = started + max(module.params['timeout'], 0)
    state = module.params['state']
    wanted = []
    for url in module.params['workers']:
        if norm(url) and norm(url) not in wanted:
            wanted.append(norm(url))
    router = Router(module.params['url'])
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

    # an addition or removal is queued by the router; poll until it shows
    while True:
        check_unit()
        try:
            listed = router.workers()
        except RouterError as e:
            last_error = str(e)
        waiting = pending(state, wanted, listed)
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
