# -*- coding: utf-8 -*-
# Copyright: (c) 2026, ddtree.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""smg's worker API (list, add, remove) and the plan of which workers to change.

smg 1.13 (the Shepherd Model Gateway): GET /workers lists the registered workers, each with an id (a UUID minted per
registration), its url, ``status`` (pending, ready, not_ready, failed, draining; only ready is routed to) and
``is_healthy``; POST /workers {url, api_key} answers 202 and registers in the background (a worker being added is not
listed yet; a second POST of its URL answers 409); DELETE /workers/{id} answers 202, the worker is listed as draining
(not routed to) for a few seconds, then gone. With keys, the control plane takes the bearer token of
--control-plane-api-keys, else that of --api-key."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible_collections.ddtree.sglang.plugins.module_utils import http_client

REQUEST_TIMEOUT_S = 10


def norm(url):
    return (url or '').strip().rstrip('/')


class RouterError(Exception):
    pass


class AlreadyThere(RouterError):
    """POST /workers of a URL the router has or is adding (409)."""


class Router(object):
    """The three worker-management calls of smg's HTTP API. ``key``: the control plane's bearer token; ``worker_key``:
    the key the router gives the workers it adds (the workers' own API key)."""

    def __init__(self, url, key=None, worker_key=None):
        self.url = norm(url)
        self.key = key
        self.worker_key = worker_key

    def call(self, method, path, body=None):
        headers = {'Authorization': 'Bearer %s' % self.key} if self.key else None
        try:
            status, raw = http_client.call(method, self.url + path, body, headers=headers, timeout=REQUEST_TIMEOUT_S)
        except http_client.Unreachable as e:
            raise RouterError('%s %s%s failed: %s' % (method, self.url, path, e.reason))
        if status == 409:
            raise AlreadyThere(raw[:500].decode('utf-8', 'replace'))
        if not 200 <= status < 300:
            detail = raw[:500].decode('utf-8', 'replace')
            raise RouterError('%s %s%s answered HTTP %s %s' % (method, self.url, path, status, detail.strip()))
        try:
            return json.loads(raw.decode('utf-8') or 'null')
        except ValueError:
            raise RouterError('%s %s%s did not answer JSON: %r' % (method, self.url, path, raw[:200]))

    def workers(self):
        listing = self.call('GET', '/workers')
        if not isinstance(listing, dict) or not isinstance(listing.get('workers'), list):
            raise RouterError('GET %s/workers did not answer {"workers": [...]}: %r' % (self.url, listing))
        return [
            {
                'url': norm(w.get('url')),
                'id': w.get('id'),
                'is_healthy': bool(w.get('is_healthy')),
                'status': w.get('status') or ('ready' if w.get('is_healthy') else 'not_ready'),
                'load': w.get('load'),
            }
            for w in listing['workers']
            if isinstance(w, dict)
        ]

    def add(self, url):
        """Asks for the worker; a router that has it or is adding it already (409) is no error: the caller's poll
        sees the worker, or asks again once a draining one is gone."""
        body = {'url': url}
        if self.worker_key:
            # smg gives a worker added through its API no key unless the body has one
            body['api_key'] = self.worker_key
        try:
            self.call('POST', '/workers', body)
        except AlreadyThere:
            pass

    def remove(self, worker_id):
        self.call('DELETE', '/workers/%s' % worker_id)


def serving(listed):
    """The entries a router routes to or will again: a draining worker is on its way out."""
    return [w for w in listed if w.get('status') != 'draining']


def plan(state, wanted, listed):
    """(to add, to remove as listing entries) for the requested state."""
    by_url = dict((w['url'], w) for w in serving(listed))
    add = [u for u in wanted if u not in by_url] if state in ('present', 'exact') else []
    if state == 'absent':
        remove = [by_url[u] for u in wanted if u in by_url]
    elif state == 'exact':
        remove = [w for w in serving(listed) if w['url'] not in wanted]
    else:
        remove = []
    return add, remove


def shortfall(remove, listed, min_healthy):
    """Healthy workers left after the removal, when that is fewer than min_healthy; else None."""
    if not remove or min_healthy <= 0:
        return None
    gone = set(w['url'] for w in remove)
    left = [w for w in listed if w['is_healthy'] and w['url'] not in gone]
    return len(left) if len(left) < min_healthy else None


def unit_broken(state):
    """Why the unit cannot be serving, or None."""
    if not state:
        return None
    if state.get('LoadState') == 'not-found':
        return 'is not installed'
    if state.get('ActiveState') in ('failed', 'inactive', 'deactivating') or state.get('SubState') == 'auto-restart':
        return 'is %s (%s)' % (state.get('ActiveState'), state.get('SubState'))
    return None


def pending(state, wanted, listed):
    """Workers of `wanted` not yet where the state wants them."""
    healthy = set(w['url'] for w in listed if w['is_healthy'])
    present = set(w['url'] for w in serving(listed))
    if state == 'absent':
        return [u for u in wanted if u in present]
    stray = [w['url'] for w in serving(listed) if w['url'] not in wanted] if state == 'exact' else []
    return [u for u in wanted if u not in healthy] + stray
