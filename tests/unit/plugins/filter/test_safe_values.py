# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Values that reach a unit file or a delete: roots the collection may own, entries without line breaks,
loopback by address, worker URLs of host and port only."""

from __future__ import annotations

import json

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.ddtree.sglang.plugins.plugin_utils.safe_values import (
    is_loopback,
    parse_booleans,
    root_dir_problems,
    scrub_secrets,
    secret_values_valid,
    unit_value_problems,
)
from ansible_collections.ddtree.sglang.plugins.filter.sglang_router import sglang_router_worker_urls, url_problem


@pytest.mark.parametrize(
    'path', ['/', '/opt', '/usr', '/var', '/var/lib', '/etc', '/home', '/srv', '/usr/local', '/tmp', '/root', '/etc/systemd/system', '/data']
)
def test_system_and_shallow_roots_are_refused(path):
    assert root_dir_problems({'sglang_router_root': path}) == [
        'sglang_router_root must be a directory of its own, at least two levels below / (such as /opt/ddtree/<name>): the '
        'collection creates, prunes and deletes entries below it; %s is a system or shared directory.' % path
    ]


@pytest.mark.parametrize('path', ['/opt/ddtree/ml-env', '/opt/ddtree', '/srv/ddtree/router', '/var/lib/ddtree-sglang'])
def test_roots_of_their_own_pass(path):
    assert root_dir_problems({'ml_env_root': path}) == []


@pytest.mark.parametrize(
    'path, words',
    [
        ('opt/ddtree', 'must be an absolute path'),
        ('/opt/ddtree/ml env', 'without spaces or control characters'),
        ('/opt/ddtree/x\nExecStartPre=+/bin/sh', 'without spaces or control characters'),
        ('/opt/ddtree/../../etc', 'must be a normalized path'),
        ('/opt//ddtree', 'must be a normalized path'),
        ('/opt/ddtree/', 'must be a normalized path'),
    ],
)
def test_malformed_roots_are_refused(path, words):
    problems = root_dir_problems({'ml_env_root': path})
    assert len(problems) == 1 and problems[0].startswith('ml_env_root must be ') and words in problems[0]


def test_a_line_break_or_space_in_a_unit_value_is_refused():
    assert unit_value_problems(
        {
            'sglang_service_read_write_paths': ['/srv/cache', '/srv/a\nExecStartPre=+/bin/sh -c id'],
            'sglang_service_environment_files': ['-/etc/ddtree-lab/sim.env'],
        }
    ) == [
        'sglang_service_read_write_paths must hold values without spaces, tabs, line breaks or other control characters '
        'and not ending in a backslash (each reaches the unit file as one word); got "/srv/a\\nExecStartPre=+/bin/sh -c id".'
    ]
    assert unit_value_problems({'sglang_service_environment_files': ['/etc/a b.env']})[0].startswith(
        'sglang_service_environment_files must hold values without spaces'
    )


@pytest.mark.parametrize(
    'host, loopback',
    [
        ('127.0.0.1', True),
        ('127.8.9.10', True),
        ('::1', True),
        ('localhost', True),
        ('LOCALHOST', True),
        ('127.example.com', False),
        ('127.0.0.1.nip.io', False),
        ('0.0.0.0', False),
        ('10.0.0.5', False),
        ('::', False),
        ('ddtree-lab-ct129', False),
    ],
)
def test_loopback_is_parsed_not_matched(host, loopback):
    assert is_loopback(host) is loopback


@pytest.mark.parametrize(
    'url, problem',
    [
        ('http://10.0.0.5:30000', ''),
        ('https://gpu-node-07.example.internal:30000', ''),
        ('http://[fd00::5]:30000', ''),
        ('http://10.0.0.5:30000 --policy random', 'it holds a space or a control character'),
        ('http://10.0.0.5:30000\nSGLANG_ROUTER_EXTRA=1', 'it holds a space or a control character'),
        ('ftp://10.0.0.5:30000', 'its scheme is not http or https'),
        ('http://10.0.0.5', 'it names no port in 1-65535'),
        ('http://10.0.0.5:0', 'it names no port in 1-65535'),
        ('http://user:pw@10.0.0.5:30000', 'it holds user information'),
        ('http://under_score:30000', 'its host is neither an IP address nor a DNS name'),
        ('http://10.0.0.5:30000/v1', 'it has a path, query or fragment'),
        ('http://10.0.0.5:99999', 'it does not parse (Port out of range 0-65535)'),
    ],
)
def test_worker_urls_are_host_and_port_only(url, problem):
    assert url_problem(url) == problem


def test_a_worker_address_that_would_inject_is_refused_naming_the_host():
    hostvars = {'ct129': {'ansible_host': 'ddtree-lab-ct129'}, 'ct130': {'sglang_router_worker_address': '10.0.0.6 --x'}}
    assert sglang_router_worker_urls(['sglang_servers'], {'sglang_servers': ['ct129']}, hostvars) == ['http://ddtree-lab-ct129:30000']
    with pytest.raises(AnsibleFilterError) as refused:
        sglang_router_worker_urls(['sglang_servers'], {'sglang_servers': ['ct129', 'ct130']}, hostvars)
    assert str(refused.value) == (
        "The worker URL of ct130 (from sglang_router_worker_address, ansible_host or the inventory name) must be "
        "http(s)://<IP address or DNS name>:<port 1-65535> and nothing else; it holds a space or a control character: "
        "'http://10.0.0.6 --x:30000'."
    )


def test_an_ipv6_worker_address_is_bracketed():
    assert sglang_router_worker_urls(['g'], {'g': ['h']}, {'h': {'ansible_host': 'fd00::5'}}) == ['http://[fd00::5]:30000']


def test_scrub_secrets_masks_given_values_and_secret_flags_at_any_depth():
    report = {
        'hosts': [{'diagnosis': {'diagnosis': 'Bearer s3cr3t refused; argv --hf-token hf_abc --port 30000'}}],
        'markdown': '| ct129 | s3cr3t |',
        'summary': {'upgraded': 1},
    }
    assert scrub_secrets(report, ['s3cr3t', '', None]) == {
        'hosts': [{'diagnosis': {'diagnosis': 'Bearer ******** refused; argv --hf-token ******** --port 30000'}}],
        'markdown': '| ct129 | ******** |',
        'summary': {'upgraded': 1},
    }


def test_a_trailing_backslash_in_a_unit_value_is_refused():
    # systemd joins the next line to one ending in a backslash: the EnvironmentFile= of the secrets would be lost
    assert unit_value_problems({'sglang_service_environment_files': ['/etc/ddtree/a.env\\']}) == [
        'sglang_service_environment_files must hold values without spaces, tabs, line breaks or other control characters '
        'and not ending in a backslash (each reaches the unit file as one word); got "/etc/ddtree/a.env\\\\".'
    ]
    assert unit_value_problems({'sglang_service_environment_files': ['/etc/ddtree/a\\b.env']}) == []


@pytest.mark.parametrize(
    'secret, valid',
    [
        ('sk-lab-0123', True),
        ('p@ss word!', True),
        ('', True),
        ("it's", False),
        ('back\\slash', False),
        ('two\nlines', False),
        ('tab\there', False),
        ('del\x7f', False),
        (None, False),
    ],
)
def test_secret_values_fit_an_environment_file_between_quotes(secret, valid):
    assert secret_values_valid(['fine', secret]) is valid


@pytest.mark.parametrize(
    'value, parsed',
    [
        (True, True),
        (False, False),
        ('true', True),
        ('false', False),
        ('no', False),
        ('NO', False),
        ('yes', True),
        ('0', False),
        ('1', True),
        (0, False),
        (1, True),
        ('off', False),
        ('on', True),
    ],
)
def test_booleans_are_parsed_as_argument_specs_read_them(value, parsed):
    assert parse_booleans({'x_flag': value, 'other': 'false'}, ('x_flag', 'absent')) == ({'x_flag': parsed, 'other': 'false'}, [])


@pytest.mark.parametrize('value', ['perhaps', 2, [], None])
def test_a_value_no_boolean_parser_takes_is_refused(value):
    parsed, problems = parse_booleans({'x_flag': value}, ('x_flag',))
    assert parsed == {'x_flag': False}
    assert problems == ['x_flag must be a boolean (allowed values: true, false; yes/no, on/off and 1/0 are read the same); got %s.' % json.dumps(value)]


@pytest.mark.parametrize(
    'path, scratch',
    [
        ('/tmp/ddtree', '/tmp'),
        ('/var/tmp/ddtree-sglang', '/var/tmp'),
        ('/dev/shm/x', '/dev/shm'),
        ('/tmp/a/b', '/tmp'),
    ],
)
def test_a_root_below_a_world_writable_scratch_tree_is_refused(path, scratch):
    assert root_dir_problems({'sglang_service_state_dir': path}) == [
        'sglang_service_state_dir must not be below %s, which every user of the host can write (and cleaners empty): root '
        'keeps files there that it runs or restores. Allowed: a directory below /var/lib, /opt or /srv, such as '
        '/var/lib/ddtree-sglang; got %s.' % (scratch, path)
    ]


@pytest.mark.parametrize('path', ['/var/lib/ddtree-sglang', '/opt/ddtree/ml-env', '/srv/tmp/x', '/var/tmpfiles/x'])
def test_roots_outside_the_scratch_trees_pass(path):
    assert root_dir_problems({'ml_env_root': path}) == []
