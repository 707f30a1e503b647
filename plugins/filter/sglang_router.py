# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which workers a router fronts, and which routers front a serving host (controller side, pure).

Both read other hosts' variables through ``hostvars``. A role's defaults are not part of another
host's ``hostvars``, so the worker URL falls back here the way role ``sglang_router``'s defaults do:
``sglang_router_worker_url``, else ``http://<sglang_router_worker_address or ansible_host or the
inventory name>:<sglang_service_port or 30000>``.
"""

from __future__ import annotations

import json
import re
from urllib.parse import urlsplit

from ansible.errors import AnsibleFilterError

from ansible_collections.ddtree.sglang.plugins.module_utils.sglang_args import secret_arg_names
from ansible_collections.ddtree.sglang.plugins.plugin_utils.wheel_pins import wheel_source_problems
from ansible_collections.ddtree.sglang.plugins.plugin_utils.safe_values import (
    is_host_name_or_address,
    is_loopback,
    parse_booleans,
    root_dir_problems,
    secret_values_valid,
    unsafe_chars,
)

DEFAULT_FRONTS = ['sglang_servers']
DEFAULT_SERVICE_PORT = 30000


def _vars(hostvars, host):
    try:
        return hostvars[host]
    except KeyError:
        raise AnsibleFilterError('host %r is in no inventory this play knows' % host)


def url_problem(url):
    """'' when ``url`` is http(s)://<address or DNS name>:<port>; else what is wrong. The router gets its workers
    through an EnvironmentFile and an unquoted $VARIABLE: a space would add flags, a line break variables."""
    text = str(url)
    if unsafe_chars(text):
        return 'it holds a space or a control character'
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError as exc:
        return 'it does not parse (%s)' % exc
    if parts.scheme not in ('http', 'https'):
        return 'its scheme is not http or https'
    if parts.username is not None or parts.password is not None:
        return 'it holds user information'
    if not parts.hostname or not is_host_name_or_address(parts.hostname):
        return 'its host is neither an IP address nor a DNS name'
    if port is None or not 0 < port < 65536:
        return 'it names no port in 1-65535'
    if parts.path not in ('', '/') or parts.query or parts.fragment:
        return 'it has a path, query or fragment'
    return ''


def worker_url(host, hostvars):
    """The URL a router reaches the serving host's API at; refused unless it is http(s)://host:port."""
    hv = _vars(hostvars, host)
    url = hv.get('sglang_router_worker_url')
    if url:
        source, url = 'sglang_router_worker_url', str(url).rstrip('/')
    else:
        address = str(hv.get('sglang_router_worker_address') or hv.get('ansible_host') or host)
        if ':' in address and not address.startswith('['):
            address = '[%s]' % address  # an IPv6 address in a URL
        source = 'sglang_router_worker_address, ansible_host or the inventory name'
        url = 'http://%s:%s' % (address, hv.get('sglang_service_port') or DEFAULT_SERVICE_PORT)
    problem = url_problem(url)
    if problem:
        raise AnsibleFilterError(
            'The worker URL of %s (from %s) must be http(s)://<IP address or DNS name>:<port 1-65535> and nothing else; %s: %r.' % (host, source, problem, url)
        )
    return url


def sglang_router_worker_urls(fronts, groups, hostvars):
    """Worker URLs of every host in the groups a router fronts, in inventory order, each once."""
    if isinstance(fronts, str) or not isinstance(fronts, (list, tuple)):
        raise AnsibleFilterError('sglang_router_fronts must be a list of group names, got %r' % (fronts,))
    urls = []
    for group in fronts:
        if group not in groups:
            raise AnsibleFilterError('sglang_router_fronts names %r, which is no group of the inventory' % group)
        for host in groups[group]:
            url = worker_url(host, hostvars)
            if url not in urls:
                urls.append(url)
    return urls


def _json(value):
    return json.dumps(value, default=str)


def sglang_router_pip_source_problems(find_links, index_url):
    """[] when exactly one wheel source is given and fits; else the messages (the rule every role that runs pip shares)."""
    return wheel_source_problems('sglang_router_pip_find_links', 'sglang_router_pip_index_url', find_links, index_url, ' for the router')


# Flags with variables of their own, refused in sglang_router_args
RESERVED_ARGS = (
    'host',
    'port',
    'worker_urls',
    'policy',
    'health_check_interval_secs',
    'prometheus_host',
    'prometheus_port',
    'retry_max_retries',
    'disable_retries',
    'shutdown_grace_period_secs',
    'api_key',
    'control_plane_api_keys',
)
# what the role's own flags are set from, for the message that refuses them in sglang_router_args
RESERVED_VARIABLES = (
    'sglang_router_host, sglang_router_port, sglang_router_fronts, sglang_router_policy, sglang_router_health_check_interval_s, '
    'sglang_router_metrics_port, sglang_router_retry_max_retries, sglang_router_disable_retries, '
    'sglang_router_shutdown_grace_period_s, sglang_router_api_key, sglang_router_control_plane_api_key'
)


def _positive_int(value, upper=None):
    text = str(value)
    return bool(re.match(r'^[0-9]+\Z', text)) and 0 < int(text) and (upper is None or int(text) < upper)


def sglang_router_problems(v):
    """Every problem of the router role's variables (``v`` maps each to its value), each naming the variable and what it
    allows; [] when they are fine. The worker list, the account on the host and the wheel pins are checked where they
    are read or rendered (the role's validate entry point)."""
    v, problems = parse_booleans(v, ('sglang_router_expose_api', 'sglang_router_disable_retries'))
    name = v['sglang_router_name']
    if not (isinstance(name, str) and re.match(r'^[A-Za-z0-9][A-Za-z0-9_.@-]*\Z', name) and not name.endswith('.service')):
        problems.append('sglang_router_name must be a unit name of letters, digits and "_.@-" without ".service", got %s' % _json(name))
    fronts = v['sglang_router_fronts']
    if not (isinstance(fronts, (list, tuple)) and len(fronts) > 0):
        problems.append('sglang_router_fronts must be a non-empty list of inventory group names (the serving groups the router fronts), got %s' % _json(fronts))
    host = v['sglang_router_host']
    if not (is_loopback(host) or v['sglang_router_expose_api'] is True):
        problems.append(
            'sglang_router_host=%s exposes the router, and with it its control plane (POST and DELETE /workers, open to '
            'anyone without sglang_router_control_plane_api_key or sglang_router_api_key). Allowed: a loopback address '
            '(127.x, ::1, localhost), or set sglang_router_expose_api: true to mean it.' % host
        )
    if not _positive_int(v['sglang_router_port'], 65536):
        problems.append('sglang_router_port must be an integer in 1-65535, got %s' % _json(v['sglang_router_port']))
    metrics_port = v.get('sglang_router_metrics_port', 29000)
    if not _positive_int(metrics_port, 65536) or str(metrics_port) == str(v['sglang_router_port']):
        problems.append(
            'sglang_router_metrics_port must be an integer in 1-65535 other than sglang_router_port (the router serves its '
            'Prometheus metrics there, on loopback), got %s' % _json(metrics_port)
        )
    for key in ('sglang_router_health_check_interval_s', 'sglang_router_wait_timeout_s', 'sglang_router_shutdown_grace_period_s'):
        if not _positive_int(v.get(key, 1)):
            problems.append('%s must be a positive integer (seconds), got %s' % (key, _json(v[key])))
    retries = v.get('sglang_router_retry_max_retries', 5)
    if not _positive_int(retries, 1001):
        problems.append('sglang_router_retry_max_retries must be an integer in 1-1000 (attempts of a request, the first included), got %s' % _json(retries))
    # both are written to one EnvironmentFile between single quotes (a boolean answer only: no secret leaves the check)
    for key in ('sglang_router_api_key', 'sglang_router_control_plane_api_key'):
        if not secret_values_valid([v.get(key, '')]):
            problems.append('%s must be a string of printable characters without a single quote or a backslash.' % key)
    args = v['sglang_router_args']
    if not isinstance(args, dict) or set(args) & set(RESERVED_ARGS):
        problems.append(
            'sglang_router_args must be a dict of further router flags without %s (they have variables of their own: %s), got %s'
            % (', '.join(RESERVED_ARGS), RESERVED_VARIABLES, list(args) if isinstance(args, dict) else type(args).__name__)
        )
    secrets = secret_arg_names(args)
    # names only in the message: the values are the secrets
    if secrets:
        problems.append(
            "sglang_router_args %s would put a secret on the router's command line (ps, /proc/*/cmdline, systemctl show). "
            'Allowed: flags that carry no key, password or token.' % ', '.join(secrets)
        )
    # the role prunes its venvs below it
    problems += root_dir_problems({'sglang_router_root': v['sglang_router_root']})
    python = v['sglang_router_python']
    if not (isinstance(python, str) and python.startswith('/')):
        problems.append('sglang_router_python must be an absolute path, got %s' % _json(python))
    user = v['sglang_router_user']
    if not (isinstance(user, str) and re.match(r'^[a-z_][a-z0-9_-]{0,31}\Z', user)):
        problems.append(
            'sglang_router_user must be a system user name (lowercase letters, digits, "_" and "-", at most 32, starting with '
            'a letter or "_"), got %s' % _json(user)
        )
    # pip gets the source as words of one extra_args string: whitespace in it would add pip options
    problems += sglang_router_pip_source_problems(v['sglang_router_pip_find_links'], v['sglang_router_pip_index_url'])
    wheels = v['sglang_router_wheels']
    if not wheels:
        problems.append(
            'sglang_router_wheels is empty: give the complete wheel set of the router, each {name, version, sha256} '
            "(smg and what `smg launch` imports, setproctitle; the lab's is lab/smg.lock)"
        )
    elif isinstance(wheels, list) and not any(isinstance(w, dict) and str(w.get('name', '')).lower() == 'smg' for w in wheels):
        problems.append(
            'sglang_router_wheels names no smg wheel: the role runs smg (the Shepherd Model Gateway, sglang-router\'s '
            "successor; docs/zero-downtime.md says how to move from sglang-router), pinned with what `smg launch` imports "
            "(setproctitle; the lab's set is lab/smg.lock)"
        )
    return problems


def sglang_router_fronts_problems(fronts, groups, hostvars, router_api_key=''):
    """[] when the groups a router fronts hold hosts whose API keys the router can give; else the message.

    smg forwards the client's Authorization header to the worker, before the worker's own key
    (model_gateway/src/routers/common/header_utils.rs: "user header wins, worker key is the fallback"), and gives the
    workers of its start list (--worker-urls) its own --api-key. So a keyed worker must have the router's key; a worker
    without a key can be fronted by any router. The keys are compared here, never printed."""
    # refuses a group the inventory lacks and a worker URL that is not http(s)://host:port
    if not sglang_router_worker_urls(fronts, groups, hostvars):
        return ['sglang_router_fronts (%s) holds no host: nothing to route to.' % ', '.join(fronts)]
    hosts = []
    for group in fronts:
        hosts += [host for host in groups[group] if host not in hosts]
    router_key = router_api_key or ''
    # a worker without a key takes any request, the header smg sends on included
    other = [host for host in hosts if (_vars(hostvars, host).get('sglang_service_api_key') or '') not in ('', router_key)]
    if other:
        return [
            '%s expect%s an API key (sglang_service_api_key) other than the router\'s (sglang_router_api_key). smg sends '
            "a client's Authorization header on to the worker, and its own key to the workers it starts with, so a keyed "
            "worker must have the router's key. Allowed: sglang_router_api_key equal to the workers' sglang_service_api_key, "
            'or workers without a key.' % (', '.join(other), 's' if len(other) == 1 else '')
        ]
    return []


def sglang_router_routers(group_names, routers, hostvars):
    """The routers (hosts) whose sglang_router_fronts names one of a serving host's groups."""
    mine = set(group_names or [])
    return [r for r in routers or [] if mine & set(_vars(hostvars, r).get('sglang_router_fronts') or DEFAULT_FRONTS)]


def sglang_router_local_url(router, hostvars):
    """The router's API as seen from the router host itself (loopback unless it binds one address)."""
    hv = _vars(hostvars, router)
    host = hv.get('sglang_router_host') or '127.0.0.1'
    if host in ('0.0.0.0', '::', ''):
        host = '127.0.0.1'
    if ':' in host:
        host = '[%s]' % host
    return 'http://%s:%s' % (host, hv.get('sglang_router_port') or 30080)


class FilterModule(object):
    def filters(self):
        return {
            'sglang_router_worker_urls': sglang_router_worker_urls,
            'sglang_router_routers': sglang_router_routers,
            'sglang_router_local_url': sglang_router_local_url,
            'sglang_router_pip_source_problems': sglang_router_pip_source_problems,
            'sglang_router_problems': sglang_router_problems,
            'sglang_router_fronts_problems': sglang_router_fronts_problems,
        }
