# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The bad-input matrix (tests/bad_inputs.yml) covers every role variable.

A variable added to a role's argument spec without a case in the table fails here, and so does
a case whose expected words do not name its variable; molecule/bad_input runs the cases.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import functools
import os

import pytest
import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
TABLE = os.path.join(ROOT, 'tests', 'bad_inputs.yml')
ROLES = os.path.join(ROOT, 'roles')
CASE_KEYS = {'variable', 'case', 'value', 'merge', 'groups', 'vars', 'occupy_port', 'expect'}
HOW = ('value', 'merge', 'groups')


def load(path):
    with open(path) as handle:
        return yaml.safe_load(handle)


@functools.lru_cache(maxsize=None)
def specs():
    """{role: argument_specs} for every role that has them."""
    found = {}
    for role in sorted(os.listdir(ROLES)):
        path = os.path.join(ROLES, role, 'meta', 'argument_specs.yml')
        if os.path.exists(path):
            found[role] = load(path)['argument_specs']
    return found


@functools.lru_cache(maxsize=None)
def role_variables():
    """{variable: role} over every role's main entry point."""
    variables = {}
    for role, entry_points in specs().items():
        for name in entry_points['main'].get('options') or {}:
            variables[name] = role
    return variables


CASES = load(TABLE)['bad_inputs']


def test_the_collection_has_role_variables():
    # guards the test itself: a moved roles/ or argument_specs.yml must not make it pass vacuously
    assert set(specs()) >= {'ml_env', 'cuda_overlay', 'sglang_install', 'sglang_service'}
    assert len(role_variables()) >= 50


def test_every_role_variable_has_a_case():
    covered = set(case['variable'] for case in CASES)
    missing = sorted(set(role_variables()) - covered)
    assert not missing, (
        'variables without a case in tests/bad_inputs.yml (add a wrong type or a value out of range '
        'and the words its error must contain): %s' % ', '.join(missing)
    )


def test_every_case_is_about_a_role_variable():
    variables = role_variables()
    unknown = sorted(set(case['variable'] for case in CASES) - set(variables))
    assert not unknown, 'cases for variables no argument spec has: %s' % ', '.join(unknown)
    others = sorted(set(name for case in CASES for name in case.get('vars') or {}) - set(variables))
    assert not others, 'vars of cases that are no role variable: %s' % ', '.join(others)


@pytest.mark.parametrize('case', CASES, ids=[c.get('case', c['variable']) for c in CASES])
def test_case_is_well_formed(case):
    assert set(case) <= CASE_KEYS, 'unknown keys %s' % sorted(set(case) - CASE_KEYS)
    assert isinstance(case.get('case'), str) and case['case'].strip()
    assert [key for key in HOW if key in case] in ([key] for key in HOW), 'give exactly one of value, merge, groups'
    if 'merge' in case:
        assert isinstance(case['merge'], dict) and case['merge']
    if 'groups' in case:
        assert isinstance(case['groups'], list) and 'sglang_servers' in case['groups']
    assert isinstance(case.get('vars', {}), dict)
    assert case['variable'] not in case.get('vars', {})
    expect = case.get('expect')
    assert isinstance(expect, list) and expect and all(isinstance(word, str) and word.strip() for word in expect)


@pytest.mark.parametrize('case', CASES, ids=[c.get('case', c['variable']) for c in CASES])
def test_case_names_its_variable(case):
    assert any(case['variable'] in word for word in case['expect']), 'the error of "%s" must name %s: put it in expect' % (case['case'], case['variable'])


def test_case_names_are_unique():
    names = [case['case'] for case in CASES]
    assert len(names) == len(set(names)), sorted(set(n for n in names if names.count(n) > 1))


@pytest.mark.parametrize('role', ['ml_env', 'cuda_overlay', 'sglang_install', 'sglang_service'])
def test_validate_entry_point_checks_every_variable(role):
    # the deploy playbook's first step runs each role's validate entry point: its argument spec
    # must hold every variable of main, or a wrong type would only be seen once the role runs
    entry_points = specs()[role]
    assert set(entry_points['validate']['options']) == set(entry_points['main']['options'])


def spec_errors(case):
    """What the role's argument spec says about the case's value (empty: the spec takes it)."""
    from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

    role = role_variables()[case['variable']]
    option = dict(specs()[role]['main']['options'][case['variable']])
    # a default is the role's business; the case gives the value itself
    option.pop('default', None)
    return list(ArgumentSpecValidator({case['variable']: option}).validate({case['variable']: case['value']}).error_messages)


@pytest.mark.parametrize('case', [c for c in CASES if 'value' in c], ids=[c['case'] for c in CASES if 'value' in c])
def test_spec_refusals_carry_the_expected_words(case):
    # a value the argument spec refuses is refused with Ansible's own words, before any task of the role:
    # checked here without a host; the rest are refused by the roles' validate tasks (molecule/bad_input)
    errors = spec_errors(case)
    if not errors:
        pytest.skip('the argument spec takes this value; a validate task refuses it')
    text = '\n'.join(errors)
    missing = [word for word in case['expect'] if word not in text]
    assert not missing, 'the argument spec says %r, without %s' % (text, missing)
