#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, ddtree.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: sglang_idle
short_description: Wait until an SGLang server has no request in flight
version_added: "0.3.0"
description:
  - Reads the server's own load endpoint until no request runs or waits there, for O(quiet_s) in a row,
    or until O(timeout). Used after a server was taken out of its routers (a drain), before it is restarted.
  - The load is C(num_running_reqs + num_waiting_reqs) summed over the DP ranks of C(GET /v1/loads?include=core)
    (SGLang 0.5.x); a server without that endpoint is read through the older C(GET /get_load)
    (C(num_reqs + num_waiting_reqs)).
  - A server that refuses the connection has nothing in flight, so the module returns C(idle=true, answering=false).
  - Idle needs that positive answer, or a load of zero. A timeout, a reset, an HTTP error or a body that is no load says
    nothing about what runs, so the module keeps reading; when the last read at O(timeout) was such a non-answer it fails,
    whatever O(fail_on_timeout) says, so that a busy server is never restarted on a guess.
author:
  - ddtree.sglang maintainers (@ddtree)
options:
  base_url:
    description: Base URL of the server's HTTP API, as seen from the host the module runs on.
    type: str
    default: http://127.0.0.1:30000
  timeout:
    description: Seconds to wait for the server to become idle.
    type: float
    default: 300
  quiet_s:
    description:
      - Seconds the load must stay at zero before the server counts as idle, so that a request a router
        dispatched just before the worker's removal took effect is seen.
    type: float
    default: 1.0
  poll_interval:
    description: Seconds between two reads of the load.
    type: float
    default: 0.25
  fail_on_timeout:
    description:
      - Fail when the server still has requests in flight at O(timeout); C(false) returns C(idle=false) instead.
      - A server that gave no readable load at O(timeout) fails either way.
    type: bool
    default: true
  api_key_env_file:
    description:
      - The unit's root-only C(EnvironmentFile=) on the host; the key in O(api_key_env_var) there is sent as a bearer
        token (none when the file sets none or does not exist). The key is never returned.
    type: path
  api_key_env_var:
    description: Variable of O(api_key_env_file) that holds the key.
    type: str
    default: SGLANG_API_KEY
attributes:
  check_mode:
    description: Only reads; runs the same in check mode.
    support: full
  diff_mode:
    description: No diff.
    support: none
'''

EXAMPLES = r'''
- name: Wait (at most 5 minutes) until the drained server has finished what it was given
  ddtree.sglang.sglang_idle:
    base_url: http://127.0.0.1:30000
    timeout: 300
    api_key_env_file: /etc/ddtree-sglang/sglang-qwen.env
'''

RETURN = r'''
idle:
  description: Whether the server had nothing in flight for O(quiet_s) (or did not answer).
  returned: always
  type: bool
answering:
  description: Whether the server answered its load endpoint at the end.
  returned: always
  type: bool
in_flight:
  description: Requests running or waiting at the last read (null when the server did not answer).
  returned: always
  type: int
peak_in_flight:
  description: The most requests in flight seen while waiting.
  returned: always
  type: int
endpoint:
  description: The load endpoint that answered (C(/v1/loads) or C(/get_load)), or null.
  returned: always
  type: str
samples:
  description: How many times the load was read.
  returned: always
  type: int
elapsed_s:
  description: Seconds the module waited.
  returned: always
  type: float
'''

import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.ddtree.sglang.plugins.module_utils.env_file import read_env_value
from ansible_collections.ddtree.sglang.plugins.module_utils.sglang_load import LoadReader, NoLoadEndpoint, NotAnswering, NotListening


def read_key(module):
    path = module.params['api_key_env_file']
    if not path:
        return None
    try:
        # a host that has no service yet has no key file either
        key = read_env_value(path, module.params['api_key_env_var'], missing_ok=True)
    except (IOError, OSError) as e:
        module.fail_json(msg='cannot read api_key_env_file %s: %s' % (path, e.strerror or e))
    if key:
        module.no_log_values.add(key)
    return key


def run_module():
    module = AnsibleModule(
        argument_spec=dict(
            base_url=dict(type='str', default='http://127.0.0.1:30000'),
            timeout=dict(type='float', default=300),
            quiet_s=dict(type='float', default=1.0),
            poll_interval=dict(type='float', default=0.25),
            fail_on_timeout=dict(type='bool', default=True),
            api_key_env_file=dict(type='path', no_log=False),
            api_key_env_var=dict(type='str', default='SGLANG_API_KEY', no_log=False),
        ),
        supports_check_mode=True,
    )
    params = module.params
    reader = LoadReader(params['base_url'], read_key(module))
    started = time.monotonic()
    deadline = started + max(params['timeout'], 0)
    result = dict(changed=False, idle=False, answering=True, in_flight=None, peak_in_flight=0, endpoint=None, samples=0, elapsed_s=0.0)
    quiet_since = None
    last_problem = None
    while True:
        now = time.monotonic()
        try:
            in_flight = reader.read()
            last_problem = None
        except NotListening:
            # refused: nothing listens, so nothing can be in flight
            result.update(idle=True, answering=False, in_flight=None)
            break
        except NotAnswering as e:
            # a timeout (an overloaded server), a reset, an HTTP error (a 503 while the server drains
            # itself, a 401) or a body that is no load: nothing known about the load, keep reading
            last_problem = str(e)
            in_flight = None
        except NoLoadEndpoint as e:
            result['elapsed_s'] = round(time.monotonic() - started, 3)
            module.fail_json(msg=str(e), **result)
        result['samples'] += 1
        result['in_flight'] = in_flight
        result['endpoint'] = reader.endpoint.split('?')[0] if reader.endpoint else None
        if in_flight is not None:
            result['peak_in_flight'] = max(result['peak_in_flight'], in_flight)
        if in_flight == 0:
            quiet_since = now if quiet_since is None else quiet_since
            if now - quiet_since >= params['quiet_s']:
                result['idle'] = True
                break
        else:
            quiet_since = None
        if now >= deadline:
            break
        time.sleep(params['poll_interval'])
    result['elapsed_s'] = round(time.monotonic() - started, 3)
    if not result['idle'] and last_problem:
        result['answering'] = False
        module.fail_json(
            msg='%s gave no load to read for %s s (last: %s): the server may still be busy, so it is not '
            'taken for idle' % (params['base_url'], params['timeout'], last_problem),
            **result,
        )
    if not result['idle'] and params['fail_on_timeout']:
        module.fail_json(msg='%s still had %s request(s) in flight after %s s' % (params['base_url'], result['in_flight'], params['timeout']), **result)
    module.exit_json(**result)


def main():
    run_module()


if __name__ == '__main__':
    main()
