# -*- coding: utf-8 -*-
# Copyright: (c) 2026, ddtree.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""How many requests an SGLang server has in flight, from /v1/loads (newer) or /get_load (older)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible_collections.ddtree.sglang.plugins.module_utils import http_client

REQUEST_TIMEOUT_S = 5
ENDPOINTS = ('/v1/loads?include=core', '/get_load')


class NotAnswering(Exception):
    """No answer that says how many requests are in flight: a timeout, a reset, an HTTP error, a body
    that is no load. The server may be busy: this is never taken for idle."""


class NotListening(NotAnswering):
    """The connection was refused: nothing listens, so nothing is in flight."""


class NoLoadEndpoint(Exception):
    pass


def in_flight_of(endpoint, body):
    """Requests running or waiting, summed over DP ranks, from either load endpoint's JSON."""
    if endpoint.startswith('/v1/loads'):
        loads = body.get('loads') if isinstance(body, dict) else None
        keys = ('num_running_reqs', 'num_waiting_reqs')
    else:
        loads = body if isinstance(body, list) else [body]
        keys = ('num_reqs', 'num_waiting_reqs')
    if not isinstance(loads, list):
        raise ValueError('no per-rank loads in %r' % (body,))
    return sum(int(rank.get(key) or 0) for rank in loads if isinstance(rank, dict) for key in keys)


class LoadReader(object):
    def __init__(self, base_url, key=None):
        self.base_url = base_url.rstrip('/')
        self.headers = {'Authorization': 'Bearer %s' % key} if key else {}
        self.endpoint = None

    def read(self):
        """In-flight requests; NotAnswering when nothing listens, NoLoadEndpoint when neither endpoint exists."""
        for endpoint in [self.endpoint] if self.endpoint else ENDPOINTS:
            try:
                status, raw = http_client.call('GET', self.base_url + endpoint, headers=self.headers, timeout=REQUEST_TIMEOUT_S)
            except http_client.Unreachable as e:
                raise (NotListening if e.refused else NotAnswering)('%s%s: %s' % (self.base_url, endpoint, e.reason))
            if status == 404 and not self.endpoint:
                continue
            if not 200 <= status < 300:
                raise NotAnswering('HTTP %s from %s%s' % (status, self.base_url, endpoint))
            try:
                in_flight = in_flight_of(endpoint, json.loads(raw.decode('utf-8')))
            except (ValueError, TypeError, AttributeError) as e:
                raise NotAnswering('%s%s answered no load: %s' % (self.base_url, endpoint, e))
            self.endpoint = endpoint
            return in_flight
        raise NoLoadEndpoint('%s serves neither /v1/loads nor /get_load' % self.base_url)
