# -*- coding: utf-8 -*-
# Copyright: (c) 2026, ddtree.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one HTTP client of the collection's modules (SGLang's API, the router's worker API).

Built on ansible.module_utils.urls with fixed safety settings:

- no proxies: the servers asked are on loopback or private addresses, and a proxy from the
  environment would only get in the way (or see an API key);
- no redirects: an answer 3xx is returned as such, never followed, so an Authorization header
  cannot travel to wherever a Location points;
- a cap on the body read (an answer that does not end within it is an error, not a truncation
  that a JSON parser would misread);
- a timeout clamped to a range, so a caller's arithmetic cannot make it zero, negative or endless.

``call`` returns ``(status, body)`` for every HTTP answer, 2xx or not, and raises ``Unreachable``
when there is no HTTP answer (refused, reset, timed out, too large): callers tell "the server said
no" from "nobody answered" by that alone.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import math
import socket
import ssl
from http.client import HTTPException
from urllib.error import HTTPError, URLError

from ansible.module_utils.urls import ConnectionError as UrlsConnectionError
from ansible.module_utils.urls import Request, make_context

# SGLang's answers (/v1/models, a short /generate, /v1/loads, the router's /workers) are a few KiB
MAX_BODY_BYTES = 8 * 1024 * 1024
MIN_TIMEOUT_S = 0.1
MAX_TIMEOUT_S = 300.0


# Request builds a TLS context per call unless given one, and building one loads the CA store (tens
# of ms, far more on a busy host): a poll loop and a verdict's first request must not pay that for
# plain http. https gets one verifying context, built once; http gets a bare one, never used.
_TLS_CONTEXTS = {}


def tls_context(url):
    kind = 'verify' if url.lower().startswith('https:') else 'unused'
    if kind not in _TLS_CONTEXTS:
        _TLS_CONTEXTS[kind] = make_context() if kind == 'verify' else ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    return _TLS_CONTEXTS[kind]


class Unreachable(Exception):
    """No (usable) HTTP answer: connection refused or reset, a timeout, an answer over the cap.

    ``refused`` is True only for a refused connection: nothing listens there. A timeout or a reset
    says nothing about what runs behind the port.
    """

    def __init__(self, reason, refused=False):
        Exception.__init__(self, reason)
        self.reason = reason
        self.refused = refused


class TooLarge(Unreachable):
    pass


def clamp_timeout(timeout):
    try:
        timeout = float(timeout)
    except (TypeError, ValueError):
        return MAX_TIMEOUT_S
    if math.isnan(timeout):
        return MAX_TIMEOUT_S
    return min(max(timeout, MIN_TIMEOUT_S), MAX_TIMEOUT_S)


def read_capped(response, max_bytes):
    """At most max_bytes of the body; TooLarge when there is more."""
    body = response.read(max_bytes + 1)
    if len(body) > max_bytes:
        raise TooLarge('the answer is larger than %d bytes' % max_bytes)
    return body


def call(method, url, body=None, headers=None, timeout=10, max_bytes=MAX_BODY_BYTES):
    """One request; ``(status, body bytes)`` for any HTTP answer, ``Unreachable`` for none.

    ``body`` other than None is sent as JSON. A 3xx comes back as its status (not followed).
    """
    return _exchange(method, url, body, headers, timeout, max_bytes, lambda response: read_capped(response, max_bytes))


def stream(url, body, read, headers=None, timeout=10, max_bytes=MAX_BODY_BYTES):
    """POSTs ``body`` as JSON and, for a 2xx, returns ``(status, read(lines))`` where ``lines`` yields
    the answer's lines as they arrive (at most ``max_bytes`` in all: a stream is read as it comes, for
    its timing). Any other HTTP answer is ``(status, body bytes)``; no answer raises ``Unreachable``."""

    def lines(response):
        seen = 0
        while True:
            line = response.readline(max_bytes + 1)
            if not line:
                return
            seen += len(line)
            if seen > max_bytes:
                raise TooLarge('the answer is larger than %d bytes' % max_bytes)
            yield line

    return _exchange('POST', url, body, headers, timeout, max_bytes, lambda response: read(lines(response)))


def _exchange(method, url, body, headers, timeout, max_bytes, read_answer):
    """Sends the request; ``(status, read_answer(response))`` for a 2xx, ``(status, body bytes)`` for
    another HTTP answer, ``Unreachable`` for none."""
    # pylint: disable=too-many-arguments,too-many-positional-arguments
    headers = dict(headers or {})
    data = None
    if body is not None:
        data = json.dumps(body).encode('utf-8')
        headers['Content-Type'] = 'application/json'
    # no netrc: a ~/.netrc entry for the host would add credentials nobody asked for
    request = Request(use_proxy=False, follow_redirects='none', use_netrc=False, timeout=clamp_timeout(timeout), context=tls_context(url))
    try:
        response = request.open(method, url, data=data, headers=headers)
        try:
            return response.getcode(), read_answer(response)
        finally:
            response.close()
    except HTTPError as e:
        # an HTTP answer other than 2xx (a 3xx included, since redirects are not followed)
        if not e.fp:
            return e.code, b''
        try:
            payload = read_capped(e, max_bytes)
        except TooLarge:
            raise
        except Exception:  # pylint: disable=broad-except
            payload = b''
        finally:
            e.close()
        return e.code, payload
    except (URLError, HTTPException, UrlsConnectionError, socket.error, socket.timeout, ValueError) as e:
        reason = getattr(e, 'reason', None)
        raise Unreachable(str(reason or e), refused=isinstance(reason or e, ConnectionRefusedError))
