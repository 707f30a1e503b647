# -*- coding: utf-8 -*-
# Copyright: (c) 2026, ddtree.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The verdict's question to SGLang's API: /v1/models, then one real generation (or /health alone), asked in a
background thread through the HTTP client, so that the verdict's main loop keeps watching the unit and its
journal meanwhile (health_check.HealthCheck). Whether the API key is enforced is asked here too.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import threading
import time

from ansible_collections.ddtree.sglang.plugins.module_utils import http_client

# one retry for a generation that failed after /v1/models answered (brief hiccup at warm-up)
GENERATE_ATTEMPTS = 2


class HttpProbe(threading.Thread):
    """Models, then one generation, in the background so the main loop keeps watching the unit.

    A generation can block for seconds; a crash meanwhile must still be reported at once.
    """

    def __init__(self, base_url, headers, prompt, max_tokens, expect, interval, deadline, resume=None, health_only=False):
        threading.Thread.__init__(self)
        self.daemon = True
        self.base_url = base_url.rstrip('/')
        self.headers = headers
        self.prompt = prompt
        self.max_tokens = max_tokens
        self.expect = expect
        self.interval = interval
        self.deadline = deadline
        self.stop = threading.Event()
        self.lock = threading.Lock()
        # a multi-node SGLang serves its API on rank 0 only; the other ranks answer /health alone
        self.health_only = health_only
        self.stage = 'health' if health_only else 'models'
        self.last_error = ''
        self.model_id = ''
        self.generation_text = ''
        self.generation_latency_s = None
        self.outcome = None  # None while undecided, 'healthy' or 'failed'
        self.failure = ('', '')
        # failed generations so far (a slice hands the count on to the next)
        self.generate_failures = 0
        resume = resume or {}
        if resume.get('stage') == 'generate' and resume.get('model_id'):
            # /v1/models answered in an earlier slice
            self.stage = 'generate'
            self.model_id = str(resume['model_id'])
            self.generate_failures = int(resume.get('generate_failures') or 0)
        self.last_error = str(resume.get('last_error') or '')

    def snapshot(self):
        """What the next slice needs to go on where this one stopped."""
        with self.lock:
            return dict(stage=self.stage, model_id=self.model_id, generate_failures=self.generate_failures, last_error=self.last_error)

    def _request(self, path, body=None):
        remaining = max(1.0, self.deadline - time.monotonic())
        # models should answer at once; a generation may legitimately take a while
        timeout = min(remaining, 5.0 if body is None else 300.0)
        try:
            return http_client.call('GET' if body is None else 'POST', self.base_url + path, body, self.headers, timeout)
        except http_client.Unreachable as e:
            return None, e.reason.encode('utf-8', 'replace')

    def _fail(self, cause, diagnosis):
        with self.lock:
            self.outcome = 'failed'
            self.failure = (cause, diagnosis)

    def _sleep(self):
        self.stop.wait(self.interval)

    def _models(self):
        while not self.stop.is_set() and time.monotonic() < self.deadline:
            code, payload = self._request('/v1/models')
            if code == 200:
                try:
                    model_id = json.loads(payload.decode('utf-8', 'replace'))['data'][0]['id']
                except (ValueError, KeyError, IndexError, TypeError):
                    model_id = None
                if model_id:
                    with self.lock:
                        self.model_id = str(model_id)
                        self.stage = 'generate'
                    return True
                self.last_error = '/v1/models answered 200 without data[0].id'
            elif code in (401, 403):
                self._fail(
                    'http_unauthorized',
                    '/v1/models answered %d: the server wants an API key; give the key the service was started with (api_key_file or api_key_env_file)' % code,
                )
                return False
            elif code is None:
                self.last_error = '/v1/models: %s' % payload.decode('utf-8', 'replace')
            else:
                self.last_error = '/v1/models answered %d' % code
            self._sleep()
        return False

    def _health(self):
        while not self.stop.is_set() and time.monotonic() < self.deadline:
            code, payload = self._request('/health')
            if code == 200:
                with self.lock:
                    self.outcome = 'healthy'
                return
            if code in (401, 403):
                self._fail('http_unauthorized', '/health answered %d: give the key the service was started with (api_key_file or api_key_env_file)' % code)
                return
            self.last_error = '/health: %s' % (payload.decode('utf-8', 'replace') if code is None else 'answered %d' % code)
            self._sleep()

    def _generate(self):
        body = {'text': self.prompt, 'sampling_params': {'max_new_tokens': self.max_tokens, 'temperature': 0}}
        while not self.stop.is_set() and time.monotonic() < self.deadline:
            started = time.monotonic()
            code, payload = self._request('/generate', body)
            latency = time.monotonic() - started
            if code is None:
                # refused/reset: "not yet" (or dead, which the unit state will show)
                self.last_error = '/generate: %s' % payload.decode('utf-8', 'replace')
                self._sleep()
                continue
            problem = None
            text = ''
            if code == 200:
                try:
                    result = json.loads(payload.decode('utf-8', 'replace'))
                    if isinstance(result, list):
                        result = result[0]
                    text = result.get('text') or ''
                except (ValueError, AttributeError, IndexError, TypeError):
                    problem = '/generate answered 200 with a body that is not SGLang JSON'
                if problem is None and not text.strip():
                    problem = '/generate answered 200 with empty text'
                elif problem is None and self.expect and self.expect not in text:
                    problem = '/generate text %r does not contain %r' % (text[:200], self.expect)
            elif code in (401, 403):
                self._fail('http_unauthorized', '/generate answered %d: give the key the service was started with (api_key_file or api_key_env_file)' % code)
                return
            else:
                detail = payload.decode('utf-8', 'replace').strip().replace('\n', ' ')[:300]
                problem = '/generate answered HTTP %d after /v1/models was OK: %s' % (code, detail)
            if problem is None and not self._key_enforced():
                return
            if problem is None:
                with self.lock:
                    self.generation_text = text
                    self.generation_latency_s = round(latency, 3)
                    self.outcome = 'healthy'
                return
            with self.lock:
                self.generate_failures += 1
                failures = self.generate_failures
            self.last_error = problem
            if failures >= GENERATE_ATTEMPTS:
                self._fail('generation_failed', 'generation is broken: %s (after %d attempts)' % (problem, failures))
                return
            self.stop.wait(max(self.interval, 1.0))

    def _key_enforced(self):
        """With a key, whether the server refuses a request without it (else the verdict fails).

        Stock SGLang reads the key from --api-key only: a key given through the environment is then
        ignored and the API serves anyone, while every request the verdict signs with it succeeds.
        """
        if 'Authorization' not in self.headers:
            return True
        unsigned = dict((k, v) for k, v in self.headers.items() if k != 'Authorization')
        remaining = max(1.0, self.deadline - time.monotonic())
        try:
            code = http_client.call('GET', self.base_url + '/v1/models', None, unsigned, min(remaining, 5.0))[0]
        except http_client.Unreachable as e:
            code = None
            self.last_error = '/v1/models without the key: %s' % e.reason
        if code in (401, 403):
            return True
        self._fail(
            'api_key_not_enforced',
            '/v1/models answered %s to a request without the API key, while the service was given one: the '
            'installed SGLang ignores the key (stock SGLang reads --api-key only, not SGLANG_API_KEY), so its API '
            'serves anyone' % ('no answer' if code is None else code),
        )
        return False

    def run(self):
        try:
            if self.health_only:
                self._health()
            elif self.stage == 'generate' or self._models():
                self._generate()
        except Exception as e:  # pylint: disable=broad-except
            # a bug here must surface as a verdict, not as a silent thread death and a timeout
            self._fail('probe_error', 'the HTTP probe crashed: %s' % e)
