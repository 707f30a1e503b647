# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which workers a router fronts, and which routers front a serving host (controller side, pure).

Both read other hosts' variables through ``hostvars``. A role's defaults are not part of another
host's ``hostvars``, so the worker URL falls back here the way role ``sglang_router``'s defaults do:
``sglang_router_worker_url``, else ``http://<sglang_router_worker_address or ansible_host or the
inventory name>:<sglang_service_port or 30000>``.
"""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

DEFAULT_FRONTS = ['sglang_servers']
DEFAULT_SERVICE_PORT = 30000


def _vars(hostvars, host):
    try:
        return hostvars[host]
    except KeyError:
        raise AnsibleFilterError('host %r is in no inventory this play knows' % host)


def worker_url(host, hostvars):
    """The URL a router reaches the serving host's API at."""
    hv = _vars(hostvars, host)
    url = hv.get('sglang_router_worker_url')
    if url:
        return str(url).rstrip('/')
    address = hv.get('sglang_router_worker_address') or hv.get('ansible_host') or host
    return 'http://%s:%s' % (address, hv.get('sglang_service_port') or DEFAULT_SERVICE_PORT)


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
        }
