# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pins become hash-checked requirement lines; release ids depend on inputs only."""

from __future__ import annotations

import json

import pytest

from ansible.errors import AnsibleFilterError
from ansible_collections.ddtree.sglang.plugins.filter.ml_env import (
    ml_env_plan,
    ml_env_prerequisite_packages,
    ml_env_prerequisite_problems,
    ml_env_problems,
    ml_env_release_id,
    ml_env_requirements,
)
from ansible_collections.ddtree.sglang.plugins.plugin_utils.wheel_pins import pin_problems

SHA = 'a' * 64


def test_requirements_lines():
    pins = [{'name': 'sglang', 'version': '0.5.23', 'sha256': SHA}, {'name': 'torch', 'version': '2.13.0+cpu', 'sha256': 'b' * 64}]
    assert ml_env_requirements(pins) == ('sglang===0.5.23 --hash=sha256:%s\ntorch===2.13.0+cpu --hash=sha256:%s\n' % (SHA, 'b' * 64))


def test_empty_list_is_empty_file():
    assert ml_env_requirements([]) == ''


@pytest.mark.parametrize(
    'pin, words',
    [
        ({'name': 'sglang', 'version': '0.5.23'}, ['ml_env_wheels[0]', 'no sha256', 'ml_env_allow_unpinned']),
        ({'name': 'sglang', 'version': '0.5.23', 'sha256': 'XYZ'}, ['64 lowercase hex']),
        ({'name': 'sglang', 'version': '>=0.5', 'sha256': SHA}, ['exact version']),
        ({'name': 'sglang; rm -rf /', 'version': '1', 'sha256': SHA}, ['distribution name']),
        ({'name': 'sglang', 'version': '1', 'sha256': SHA, 'url': 'x'}, ['unknown keys url']),
        ('sglang==0.5.23', ['must be a dict']),
    ],
)
def test_bad_pins_are_named(pin, words):
    with pytest.raises(AnsibleFilterError) as err:
        ml_env_requirements([pin], 'ml_env_wheels')
    for word in words:
        assert word in str(err.value)


def test_duplicate_names_refused_across_spellings():
    pins = [{'name': 'typing_extensions', 'version': '1', 'sha256': SHA}, {'name': 'typing-extensions', 'version': '2', 'sha256': SHA}]
    assert any('second time' in p for p in pin_problems(pins))


def test_unpinned_allowed_when_asked():
    assert ml_env_requirements([{'name': 'x', 'version': '1'}], allow_unpinned=True) == 'x===1\n'


def test_not_a_list():
    with pytest.raises(AnsibleFilterError, match='must be a list'):
        ml_env_requirements({'name': 'x'}, 'ml_env_wheels')


def test_release_id_stable_and_sensitive():
    inputs = {'python': '3.11.2 x86_64', 'wheels': [{'name': 'a', 'version': '1', 'sha256': SHA}], 'sglang': {'patches': [{'path': 'p', 'sha256': SHA}]}}
    reordered = {'sglang': {'patches': [{'sha256': SHA, 'path': 'p'}]}, 'wheels': inputs['wheels'], 'python': '3.11.2 x86_64'}
    assert ml_env_release_id(inputs) == ml_env_release_id(reordered)
    assert len(ml_env_release_id(inputs)) == 16
    changed = dict(inputs, sglang={'patches': [{'path': 'p', 'sha256': 'c' * 64}]})
    assert ml_env_release_id(changed) != ml_env_release_id(inputs)
    assert ml_env_release_id(dict(inputs, python='3.12.3 x86_64')) != ml_env_release_id(inputs)


@pytest.mark.parametrize('word', ['no', 'false', '0', 'off'])
def test_unpinned_refused_when_the_override_is_a_string_false(word):
    # INI :vars and -e give strings; Python would read "no" as true and let an unpinned wheel through
    with pytest.raises(AnsibleFilterError, match='has no sha256'):
        ml_env_requirements([{'name': 'x', 'version': '1'}], allow_unpinned=word)


@pytest.mark.parametrize('digest', ['a' * 64 + '\n', ' ' + 'a' * 64])
def test_a_digest_with_a_line_break_or_a_space_is_refused(digest):
    with pytest.raises(AnsibleFilterError, match='sha256 must be 64 lowercase hex digits'):
        ml_env_requirements([{'name': 'x', 'version': '1', 'sha256': digest}])


def test_an_unpinned_wheel_names_the_switch_of_the_role_that_pins_it():
    # the router's and the overlay's pins have switches of their own: the error must name the one the user sets
    with pytest.raises(AnsibleFilterError) as refused:
        ml_env_requirements([{'name': 'sglang-router', 'version': '0.3.2'}], 'sglang_router_wheels', 'false', 'sglang_router_allow_unpinned')
    assert str(refused.value) == (
        'sglang_router_wheels[0] (sglang-router) has no sha256: every artifact must be pinned (sglang_router_allow_unpinned: true accepts unpinned ones)'
    )


# --- the role's own variables at once (validate_own.yml fails with this list) ----------------------
ML_ENV = {
    'ml_env_pip_find_links': '/var/cache/ddtree-lab/wheelhouse',
    'ml_env_pip_index_url': '',
    'ml_env_root': '/opt/ddtree/ml-env',
    'ml_env_python': '/usr/bin/python3',
    'ml_env_referenced_in': ['/etc/systemd/system'],
    'ml_env_keep_releases': 2,
}
PATHS = (
    'ml_env_root (default /opt/ddtree/ml-env), ml_env_python (default /usr/bin/python3) and every entry of '
    'ml_env_referenced_in (default [/etc/systemd/system]) must be absolute paths on the host, and ml_env_root not /; got '
)


def test_ml_env_variables_that_are_fine_have_no_problem():
    assert ml_env_problems(ML_ENV) == []
    assert ml_env_problems(dict(ML_ENV, ml_env_pip_find_links='', ml_env_pip_index_url='http://127.0.0.1:8080/simple')) == []


@pytest.mark.parametrize(
    'change, got',
    [
        ({'ml_env_python': 'python3'}, '"/opt/ddtree/ml-env", "python3", ["/etc/systemd/system"].'),
        ({'ml_env_referenced_in': ['etc/systemd']}, '"/opt/ddtree/ml-env", "/usr/bin/python3", ["etc/systemd"].'),
        ({'ml_env_referenced_in': '/etc/systemd/system'}, '"/opt/ddtree/ml-env", "/usr/bin/python3", "/etc/systemd/system".'),
    ],
)
def test_paths_are_named_with_their_values(change, got):
    assert ml_env_problems(dict(ML_ENV, **change)) == [PATHS + got]


def test_a_root_that_is_not_absolute_is_named_twice_and_a_shared_root_once():
    assert ml_env_problems(dict(ML_ENV, ml_env_root='ml-env')) == [
        PATHS + '"ml-env", "/usr/bin/python3", ["/etc/systemd/system"].',
        'ml_env_root must be an absolute path without spaces or control characters, such as /opt/ddtree/ml-env; got "ml-env".',
    ]
    (problem,) = ml_env_problems(dict(ML_ENV, ml_env_root='/opt'))
    assert problem.startswith('ml_env_root must be a directory of its own, at least two levels below /')


@pytest.mark.parametrize('keep', [0, -1, '2', True, 1.5])
def test_keep_releases_is_an_integer_of_one_or_more(keep):
    assert ml_env_problems(dict(ML_ENV, ml_env_keep_releases=keep)) == [
        'ml_env_keep_releases must be an integer of 1 or more (releases kept besides the current one), got %s.' % json.dumps(keep)
    ]


@pytest.mark.parametrize('find_links, index_url', [('', ''), ('/srv/wheels', 'http://127.0.0.1:8080/simple')])
def test_exactly_one_wheel_source(find_links, index_url):
    assert ml_env_problems(dict(ML_ENV, ml_env_pip_find_links=find_links, ml_env_pip_index_url=index_url)) == [
        'Give exactly one wheel source: ml_env_pip_find_links (a directory of wheels on the host) or ml_env_pip_index_url '
        '(a local package index, http:// or https://). Got ml_env_pip_find_links=%s, ml_env_pip_index_url=%s.' % (json.dumps(find_links), json.dumps(index_url))
    ]


# --- check mode's plan of the release ---------------------------------------------------------------
def _pin(name, version, digest='a'):
    return {'name': name, 'version': version, 'sha256': digest * 64}


INPUTS = {
    'python': '3.11.2 x86_64',
    'wheels': [_pin('torch', '2.9.0'), _pin('sglang-sim', '0.1.0')],
    'cuda_overlay': None,
    'sglang': {'source': 'upstream', 'wheels': [_pin('sglang', '0.5.23')], 'patches': [{'name': '0001-a.patch', 'sha256': 'b' * 64}]},
}


def host(current, releases):
    return {'current': current, 'releases': {rid: {'complete': True, 'manifest': {'id': rid, 'inputs': inputs}} for rid, inputs in releases.items()}}


def test_the_current_release_is_reused_with_nothing_to_say():
    assert ml_env_plan(INPUTS, 'r1', host('r1', {'r1': INPUTS})) == {'id': 'r1', 'build': False, 'current': 'r1', 'changes': []}


def test_a_new_release_names_what_differs_from_the_current_one():
    new = dict(
        INPUTS,
        wheels=[_pin('torch', '2.10.0'), _pin('sglang-sim', '0.1.0', 'c'), _pin('numpy', '2.1.0')],
        sglang=dict(INPUTS['sglang'], patches=[{'name': '0001-a.patch', 'sha256': 'b' * 64}, {'name': '0002-b.patch', 'sha256': 'd' * 64}]),
    )
    assert ml_env_plan(new, 'r2', host('r1', {'r1': INPUTS})) == {
        'id': 'r2',
        'build': True,
        'current': 'r1',
        'changes': [
            'wheel +numpy 2.1.0',
            'wheel sglang-sim 0.1.0 -> 0.1.0 (another sha256)',
            'wheel torch 2.9.0 -> 2.10.0',
            'sglang patches 0001-a.patch -> 0001-a.patch, 0002-b.patch',
        ],
    }


def test_a_release_built_before_is_not_built_again():
    old = dict(INPUTS, python='3.11.1 x86_64')
    plan = ml_env_plan(INPUTS, 'r1', host('r0', {'r0': old, 'r1': INPUTS}))
    assert (plan['build'], plan['changes']) == (False, ['python 3.11.1 x86_64 -> 3.11.2 x86_64'])


def test_a_first_release_has_no_current_to_compare_with():
    assert ml_env_plan(INPUTS, 'r1', {'current': None, 'releases': {}}) == {'id': 'r1', 'build': True, 'current': None, 'changes': []}


# --- what a release build needs on the host -----------------------------------------------------------
VENV = (
    'ml_env_python /usr/bin/python3 on ct129 cannot create a venv with pip (its ensurepip module is missing): every release '
    'is a venv made with pip (ensurepip). Install the package python3-venv on Debian/Ubuntu, python3 on the RHEL family '
    '(python3.X-venv for another python3.X on Debian/Ubuntu), name another interpreter, or set ml_env_install_prerequisites: '
    'true to have it installed.'
)
PATCH = (
    'patch is not on ct129: sglang_install applies the patch series (sglang_install_patches) with it. Install the package '
    'patch (Debian/Ubuntu and RHEL family), or set ml_env_install_prerequisites: true to have it installed.'
)
GIT = (
    'git is not on ct129: sglang_install checks out the fork (sglang_install_fork) with it. Install the package git on '
    'Debian/Ubuntu, git-core on the RHEL family, or set ml_env_install_prerequisites: true to have it installed.'
)


@pytest.mark.parametrize(
    'host, commands, expected',
    [
        ({'python_venv': True, 'commands': {'patch': '/usr/bin/patch'}}, ['patch'], []),
        ({'python_venv': True}, [], []),
        # an interpreter that does not run is named by its own check (release_id.yml), not here
        ({'python_venv': None}, [], []),
        ({'python_venv': False}, [], [VENV]),
        ({'python_venv': True, 'commands': {'patch': None}}, ['patch'], [PATCH]),
        ({'python_venv': False, 'commands': {}}, ['patch'], [VENV, PATCH]),
        ({'python_venv': True, 'commands': {'git': None}}, ['git'], [GIT]),
    ],
)
def test_prerequisites_of_a_build(host, commands, expected):
    assert ml_env_prerequisite_problems(host, 'ct129', '/usr/bin/python3', commands) == expected


@pytest.mark.parametrize(
    'host, commands, family, expected',
    [
        ({'python_venv': False, 'commands': {'patch': None, 'git': None}}, ['patch', 'git'], 'Debian', ['python3-venv', 'patch', 'git']),
        ({'python_venv': False, 'commands': {'patch': None, 'git': None}}, ['patch', 'git'], 'RedHat', ['python3', 'patch', 'git-core']),
        ({'python_venv': True, 'commands': {'patch': '/usr/bin/patch'}}, ['patch'], 'Debian', []),
        # a family without known package names installs nothing (the check then refuses, naming both families' names)
        ({'python_venv': False}, [], 'Suse', []),
    ],
)
def test_packages_that_bring_what_a_build_lacks(host, commands, family, expected):
    assert ml_env_prerequisite_packages(host, commands, family) == expected
