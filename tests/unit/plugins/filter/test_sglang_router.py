# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which workers a router fronts and which routers front a host, from inventory variables."""

from __future__ import annotations

import json

import pytest

from ansible.errors import AnsibleFilterError
from ansible_collections.ddtree.sglang.plugins.filter.sglang_router import (
    sglang_router_fronts_problems,
    sglang_router_local_url,
    sglang_router_pip_source_problems,
    sglang_router_routers,
    sglang_router_worker_urls,
    sglang_router_problems,
)

GROUPS = {'sglang_servers': ['a', 'b', 'c'], 'gpu_a6000_tp2': ['a', 'b'], 'gpu_rtxpro6000_tp8': ['c'], 'routers': ['r1', 'r2']}
HOSTVARS = {
    'a': {'ansible_host': 'ddtree-lab-a'},
    'b': {'sglang_router_worker_address': '10.88.0.7', 'sglang_service_port': 31000},
    'c': {'sglang_router_worker_url': 'http://c.example:30000/'},
    'r1': {'sglang_router_fronts': ['gpu_a6000_tp2']},
    'r2': {'sglang_router_host': '0.0.0.0', 'sglang_router_port': 8000},
}


def test_worker_urls_follow_the_host_variables_in_inventory_order():
    assert sglang_router_worker_urls(['gpu_a6000_tp2', 'sglang_servers'], GROUPS, HOSTVARS) == [
        'http://ddtree-lab-a:30000',
        'http://10.88.0.7:31000',
        'http://c.example:30000',
    ]


def test_inventory_name_when_nothing_else_is_known():
    assert sglang_router_worker_urls(['g'], {'g': ['bare']}, {'bare': {}}) == ['http://bare:30000']


@pytest.mark.parametrize(
    'fronts, words',
    [
        ('sglang_servers', ['list of group names']),
        (['nope'], ["'nope'", 'no group']),
    ],
)
def test_bad_fronts_are_named(fronts, words):
    with pytest.raises(AnsibleFilterError) as err:
        sglang_router_worker_urls(fronts, GROUPS, HOSTVARS)
    for word in words:
        assert word in str(err.value)


def test_routers_of_a_host_are_those_fronting_one_of_its_groups():
    # r2 fronts the default, sglang_servers
    assert sglang_router_routers(['sglang_servers', 'gpu_a6000_tp2'], GROUPS['routers'], HOSTVARS) == ['r1', 'r2']
    assert sglang_router_routers(['sglang_servers', 'gpu_rtxpro6000_tp8'], GROUPS['routers'], HOSTVARS) == ['r2']
    assert sglang_router_routers(['lab'], GROUPS['routers'], HOSTVARS) == []
    assert sglang_router_routers(['sglang_servers'], [], HOSTVARS) == []


def test_local_url_is_loopback_unless_bound_to_one_address():
    assert sglang_router_local_url('r1', HOSTVARS) == 'http://127.0.0.1:30080'
    assert sglang_router_local_url('r2', HOSTVARS) == 'http://127.0.0.1:8000'
    assert sglang_router_local_url('r3', {'r3': {'sglang_router_host': '10.0.0.1'}}) == 'http://10.0.0.1:30080'
    assert sglang_router_local_url('r4', {'r4': {'sglang_router_host': 'fd00::1'}}) == 'http://[fd00::1]:30080'


# --- where pip takes the router's wheels from (plugin_utils/wheel_pins.py: one rule for every role running pip) ---
@pytest.mark.parametrize(
    'find_links, index_url',
    [
        ('/var/cache/ddtree-lab/wheelhouse', ''),
        ('https://wheels.example/router/', ''),
        ('', 'http://10.0.0.5:8080/simple'),
        ('', 'https://pypi.internal.example/simple/'),
    ],
)
def test_one_wheel_source_without_whitespace_passes(find_links, index_url):
    assert sglang_router_pip_source_problems(find_links, index_url) == []


@pytest.mark.parametrize(
    'find_links',
    [
        '/srv/wheels --trusted-host evil.example',
        '/srv/wheels\n',
        '/srv/wheels\t--pre',
        '/srv/wheels\r',
        '/srv/wheels\x00',
        '/srv/whe\u00a0els',
        ' /srv/wheels',
    ],
)
def test_whitespace_in_the_wheel_directory_is_refused(find_links):
    assert sglang_router_pip_source_problems(find_links, '') == [
        'sglang_router_pip_find_links must be an absolute directory on the host (or an http:// or https:// URL) without '
        'spaces, tabs, line breaks or control characters: pip takes the wheel sources as words of one command line; '
        'got %s.' % json.dumps(find_links)
    ]


@pytest.mark.parametrize(
    'index_url',
    [
        'http://10.0.0.5:8080/simple --extra-index-url https://pypi.org/simple',
        'http://10.0.0.5:8080/simple\n',
        'https://pypi.internal.example/simple\t',
    ],
)
def test_whitespace_in_the_index_is_refused(index_url):
    assert sglang_router_pip_source_problems('', index_url) == [
        'sglang_router_pip_index_url must be an http(s) URL of a local package index (http:// or https://) without spaces, '
        'tabs, line breaks or control characters: pip takes the wheel sources as words of one command line; got %s.' % json.dumps(index_url)
    ]


@pytest.mark.parametrize(
    'find_links, index_url, variable',
    [
        ('srv/wheels', '', 'sglang_router_pip_find_links'),
        ('--trusted-host=evil.example', '', 'sglang_router_pip_find_links'),
        ('', 'local-index/simple', 'sglang_router_pip_index_url'),
        ('', 'file:///srv/index', 'sglang_router_pip_index_url'),
    ],
)
def test_a_source_of_another_kind_is_refused(find_links, index_url, variable):
    (problem,) = sglang_router_pip_source_problems(find_links, index_url)
    assert problem.startswith(variable + ' must be')


@pytest.mark.parametrize('find_links, index_url', [('', ''), ('/srv/wheels', 'http://10.0.0.5:8080/simple')])
def test_exactly_one_source(find_links, index_url):
    assert sglang_router_pip_source_problems(find_links, index_url) == [
        'Give exactly one wheel source for the router: sglang_router_pip_find_links (a directory of wheels on the host) or '
        'sglang_router_pip_index_url (a local package index, http:// or https://). Got sglang_router_pip_find_links=%s, '
        'sglang_router_pip_index_url=%s.' % (json.dumps(find_links), json.dumps(index_url))
    ]


def test_sources_that_are_not_strings_are_refused():
    assert sglang_router_pip_source_problems(['/srv/wheels'], '') == [
        'sglang_router_pip_find_links and sglang_router_pip_index_url must be strings, got ["/srv/wheels"] and "".'
    ]


ROUTER = {
    'sglang_router_name': 'sglang-router',
    'sglang_router_fronts': ['sglang_servers'],
    'sglang_router_host': '127.0.0.1',
    'sglang_router_expose_api': False,
    'sglang_router_port': 30080,
    'sglang_router_health_check_interval_s': 5,
    'sglang_router_wait_timeout_s': 120,
    'sglang_router_args': {'cb_failure_threshold': 4},
    'sglang_router_root': '/opt/ddtree/router',
    'sglang_router_python': '/usr/bin/python3',
    'sglang_router_user': 'sglang-router',
    'sglang_router_wheels': [{'name': 'setproctitle', 'version': '1.3.8', 'sha256': 'b' * 64}, {'name': 'smg', 'version': '1.13.0', 'sha256': 'a' * 64}],
    'sglang_router_pip_find_links': '/var/cache/wheels',
    'sglang_router_pip_index_url': '',
    'sglang_router_metrics_port': 29000,
    'sglang_router_retry_max_retries': 5,
    'sglang_router_disable_retries': False,
    'sglang_router_shutdown_grace_period_s': 180,
    'sglang_router_api_key': '',
    'sglang_router_control_plane_api_key': '',
}


def test_router_variables_that_are_fine_have_no_problem():
    assert sglang_router_problems(ROUTER) == []


@pytest.mark.parametrize(
    'change, message',
    [
        (
            {'sglang_router_name': 'router.service'},
            'sglang_router_name must be a unit name of letters, digits and "_.@-" without ".service", got "router.service"',
        ),
        (
            {'sglang_router_metrics_port': 30080},
            'sglang_router_metrics_port must be an integer in 1-65535 other than sglang_router_port (the router serves its '
            'Prometheus metrics there, on loopback), got 30080',
        ),
        ({'sglang_router_fronts': []}, 'sglang_router_fronts must be a non-empty list of inventory group names (the serving groups the router fronts), got []'),
        ({'sglang_router_port': 70000}, 'sglang_router_port must be an integer in 1-65535, got 70000'),
        ({'sglang_router_port': '80\n'}, 'sglang_router_port must be an integer in 1-65535, got "80\\n"'),
        ({'sglang_router_wait_timeout_s': 0}, 'sglang_router_wait_timeout_s must be a positive integer (seconds), got 0'),
        ({'sglang_router_health_check_interval_s': 'soon'}, 'sglang_router_health_check_interval_s must be a positive integer (seconds), got "soon"'),
        ({'sglang_router_python': 'python3'}, 'sglang_router_python must be an absolute path, got "python3"'),
        (
            {'sglang_router_wheels': []},
            'sglang_router_wheels is empty: give the complete wheel set of the router, each {name, version, sha256} '
            "(smg and what `smg launch` imports, setproctitle; the lab's is lab/smg.lock)",
        ),
        (
            {'sglang_router_wheels': [{'name': 'sglang-router', 'version': '0.3.2', 'sha256': 'a' * 64}]},
            "sglang_router_wheels names no smg wheel: the role runs smg (the Shepherd Model Gateway, sglang-router's successor; "
            'docs/zero-downtime.md says how to move from sglang-router), pinned with what `smg launch` imports (setproctitle; '
            "the lab's set is lab/smg.lock)",
        ),
        (
            {'sglang_router_retry_max_retries': 0},
            'sglang_router_retry_max_retries must be an integer in 1-1000 (attempts of a request, the first included), got 0',
        ),
        ({'sglang_router_shutdown_grace_period_s': -1}, 'sglang_router_shutdown_grace_period_s must be a positive integer (seconds), got -1'),
        (
            {'sglang_router_disable_retries': 'perhaps'},
            'sglang_router_disable_retries must be a boolean (allowed values: true, false; yes/no, on/off and 1/0 are read the same); got "perhaps".',
        ),
        (
            {'sglang_router_api_key': "it's"},
            'sglang_router_api_key must be a string of printable characters without a single quote or a backslash.',
        ),
        (
            {'sglang_router_control_plane_api_key': 'line\nbreak'},
            'sglang_router_control_plane_api_key must be a string of printable characters without a single quote or a backslash.',
        ),
    ],
)
def test_each_router_problem_names_its_variable_and_value(change, message):
    assert sglang_router_problems(dict(ROUTER, **change)) == [message]


@pytest.mark.parametrize('expose', [False, 'no', 'false', '0'])
def test_a_router_on_every_address_needs_expose_api_true(expose):
    problems = sglang_router_problems(dict(ROUTER, sglang_router_host='0.0.0.0', sglang_router_expose_api=expose))
    assert len(problems) == 1 and problems[0].startswith('sglang_router_host=0.0.0.0 exposes the router')
    assert sglang_router_problems(dict(ROUTER, sglang_router_host='0.0.0.0', sglang_router_expose_api=True)) == []


def test_router_args_without_reserved_flags_or_secrets_and_every_problem_at_once():
    problems = sglang_router_problems(dict(ROUTER, sglang_router_args={'port': 1, 'control_plane_api_keys': 'secret-4711'}, sglang_router_user='Root'))
    assert problems[0].startswith('sglang_router_args must be a dict of further router flags without host, port, worker_urls, policy,')
    assert 'control_plane_api_keys (they have variables of their own: sglang_router_host,' in problems[0]
    assert problems[0].endswith("got ['port', 'control_plane_api_keys']")
    assert problems[1] == (
        "sglang_router_args control_plane_api_keys would put a secret on the router's command line (ps, /proc/*/cmdline, "
        'systemctl show). Allowed: flags that carry no key, password or token.'
    )
    assert 'secret-4711' not in ' '.join(problems)  # names only: the value is the secret
    assert problems[2].startswith('sglang_router_user must be a system user name')
    assert len(problems) == 3


# --- the fronted workers: hosts to route to, none expecting a key ------------------------------------
def test_fronts_with_hosts_and_no_key_have_no_problem():
    assert sglang_router_fronts_problems(['sglang_servers'], GROUPS, dict(HOSTVARS, a={'sglang_service_api_key': ''})) == []


def test_an_empty_group_is_nothing_to_route_to():
    assert sglang_router_fronts_problems(['empty', 'gpu_a6000_tp2'], dict(GROUPS, empty=[], gpu_a6000_tp2=[]), HOSTVARS) == [
        'sglang_router_fronts (empty, gpu_a6000_tp2) holds no host: nothing to route to.'
    ]


def test_workers_keyed_otherwise_than_the_router_are_named_once_in_inventory_order():
    hostvars = dict(HOSTVARS, c=dict(HOSTVARS['c'], sglang_service_api_key='s3cret'), a={'sglang_service_api_key': 'k'})
    (problem,) = sglang_router_fronts_problems(['gpu_rtxpro6000_tp8', 'sglang_servers'], GROUPS, hostvars)
    assert problem == (
        "c, a expect an API key (sglang_service_api_key) other than the router's (sglang_router_api_key). smg sends a "
        "client's Authorization header on to the worker, and its own key to the workers it starts with, so a keyed worker "
        "must have the router's key. Allowed: sglang_router_api_key equal to the workers' sglang_service_api_key, or "
        'workers without a key.'
    )
    # the router's key is one of them: the others are named, no key is
    (problem,) = sglang_router_fronts_problems(['gpu_rtxpro6000_tp8', 'sglang_servers'], GROUPS, hostvars, 's3cret')
    assert problem.startswith('a expects an API key') and 's3cret' not in problem and "'k'" not in problem


def test_workers_keyed_with_the_routers_key_have_no_problem():
    hostvars = {host: dict(HOSTVARS[host], sglang_service_api_key='fleet') for host in HOSTVARS}
    assert sglang_router_fronts_problems(['gpu_rtxpro6000_tp8', 'sglang_servers'], GROUPS, hostvars, 'fleet') == []
    # a router with a key in front of keyless workers: the workers ignore the header smg sends on
    assert sglang_router_fronts_problems(['sglang_servers'], GROUPS, HOSTVARS, 'fleet') == []


def test_fronts_naming_no_group_are_refused():
    with pytest.raises(AnsibleFilterError, match="names 'nope', which is no group"):
        sglang_router_fronts_problems(['nope'], GROUPS, HOSTVARS)
