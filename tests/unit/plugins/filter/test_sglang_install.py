# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pins of role sglang_install: problems named per entry, exact requirement lines, the series."""

from __future__ import annotations

import json

import pytest

from ansible.errors import AnsibleFilterError
from ansible_collections.ddtree.sglang.plugins.filter.sglang_install import (
    FilterModule,
    sglang_install_pin_problems,
    sglang_install_problems,
    sglang_install_requirements,
    sglang_install_series,
)

SHA = 'a' * 64
WHEEL = {'name': 'sglang', 'version': '0.5.23', 'sha256': SHA}
PATCH = {'path': 'lab/patches/sglang-0.5.23/0001-x.patch', 'sha256': SHA}


def test_good_pins_have_no_problems():
    assert sglang_install_pin_problems(WHEEL, 'sglang_install_wheel') == []
    assert sglang_install_pin_problems([WHEEL, dict(WHEEL, name='torch', version='2.13.0+cpu')]) == []
    assert sglang_install_pin_problems([PATCH, dict(PATCH, path='/abs/0002-y.patch')], kind='patch') == []


def test_unset_pin_says_what_to_give():
    assert sglang_install_pin_problems({}, 'sglang_install_wheel') == ['sglang_install_wheel is not set: give a pin {name, version, sha256}']


def test_missing_sha256_refused_unless_unpinned_allowed():
    pin = {'name': 'sglang', 'version': '0.5.23'}
    problems = sglang_install_pin_problems(pin, 'sglang_install_wheel')
    assert problems == [
        'sglang_install_wheel (sglang) has no sha256: every artifact must be pinned (sglang_install_allow_unpinned: true accepts unpinned ones)'
    ]
    assert sglang_install_pin_problems(pin, 'sglang_install_wheel', allow_unpinned=True) == []


@pytest.mark.parametrize(
    'pin, fragment',
    [
        (dict(WHEEL, sha256='A' * 64), 'sha256 must be 64 lowercase hex digits'),
        (dict(WHEEL, sha256='a' * 63), 'sha256 must be 64 lowercase hex digits'),
        (dict(WHEEL, version='>=0.5'), 'version must be an exact version string'),
        (dict(WHEEL, version='0.5.23 --index-url x'), 'version must be an exact version string'),
        (dict(WHEEL, name='sglang; os_name'), 'name must be a distribution name'),
        (dict(WHEEL, url='x'), 'unknown keys url (allowed: name, version, sha256)'),
    ],
)
def test_bad_wheel_pins_name_the_entry(pin, fragment):
    problems = sglang_install_pin_problems([pin], 'sglang_install_build_wheels')
    assert len(problems) == 1
    assert problems[0].startswith('sglang_install_build_wheels[0]') and fragment in problems[0]


def test_patch_pins():
    problems = sglang_install_pin_problems([PATCH, PATCH, {'path': '', 'sha256': SHA}, 'x'], 'sglang_install_patches', 'patch')
    assert problems == [
        'sglang_install_patches[1] lists lab/patches/sglang-0.5.23/0001-x.patch a second time',
        "sglang_install_patches[2].path must be the path of a patch file on the controller, got ''",
        "sglang_install_patches[3] must be a dict {path, sha256}, got 'x'",
    ]
    assert 'unknown keys name' in sglang_install_pin_problems([dict(PATCH, name='x')], kind='patch')[0]


def test_a_name_twice_is_a_problem():
    problems = sglang_install_pin_problems([WHEEL, dict(WHEEL, name='SGLang')])
    assert problems == ['pins[1] pins SGLang a second time']


def test_not_a_pin_at_all():
    assert sglang_install_pin_problems('sglang==0.5.23', 'sglang_install_wheel') == [
        'sglang_install_wheel must be a {name, version, sha256} pin or a list of them, got str'
    ]
    with pytest.raises(AnsibleFilterError):
        sglang_install_pin_problems([], kind='bundle')


def test_requirements_are_exact_string_pins():
    # == would let 0.5.23 match the 0.5.23+ddtree.1 wheel beside it in the wheelhouse
    assert sglang_install_requirements(WHEEL) == 'sglang===0.5.23 --hash=sha256:%s\n' % SHA
    two = sglang_install_requirements([dict(WHEEL, name='setuptools', version='84.2.1'), {'name': 'x', 'version': '1.0'}])
    assert two == 'setuptools===84.2.1 --hash=sha256:%s\nx===1.0\n' % SHA
    assert sglang_install_requirements([]) == ''


def test_requirements_refuse_bad_pins():
    with pytest.raises(AnsibleFilterError, match='version must be an exact version string'):
        sglang_install_requirements({'name': 'sglang', 'version': '0.5.23\n--index-url=x'})


def test_series_from_stat_results():
    results = [
        {'item': {'path': 'lab/patches/s/0001-a.patch', 'sha256': SHA}, 'stat': {'exists': True, 'checksum': SHA}},
        {'item': {'path': '/abs/0002-b.patch'}, 'stat': {'exists': True, 'checksum': 'b' * 64}},
    ]
    assert sglang_install_series(results) == [
        {'name': '0001-a.patch', 'path': 'lab/patches/s/0001-a.patch', 'sha256': SHA},
        {'name': '0002-b.patch', 'path': '/abs/0002-b.patch', 'sha256': 'b' * 64},
    ]
    assert sglang_install_series([]) == []


def test_series_refuses_what_is_not_a_stat_loop():
    with pytest.raises(AnsibleFilterError, match='not a stat result'):
        sglang_install_series([{'item': {'path': 'x'}, 'stat': {'exists': False}}])
    with pytest.raises(AnsibleFilterError, match='results list'):
        sglang_install_series({'results': []})


def test_filters_are_registered():
    assert set(FilterModule().filters()) == {
        'sglang_install_pin_problems',
        'sglang_install_requirements',
        'sglang_install_series',
        'sglang_install_problems',
    }


# --- every variable of the role at once (the role's validate task fails with this list) ------------
INSTALL = {
    'sglang_install_source': 'upstream',
    'sglang_install_allow_unpinned': False,
    'sglang_install_wheel': WHEEL,
    'sglang_install_patches': [PATCH],
    'sglang_install_prebuilt_wheel': {},
    'sglang_install_build_wheels': [],
    'sglang_install_fork': {},
    'sglang_install_pip_find_links': '/var/cache/ddtree-lab/wheelhouse',
    'sglang_install_pip_index_url': '',
    'sglang_install_files_dir': '/',
}
BUNDLE = {'bundle': '/srv/sglang.bundle', 'sha256': SHA, 'ref': 'ddtree'}
FORK_SHAPE = (
    'sglang_install_fork must be {bundle: <git bundle on the host>, sha256: <64 hex>, ref: <tag, branch or commit>} '
    'or {mirror: <git repository on the host>, ref, commit: <commit id>}, optionally with commit (checked after '
    'the checkout) and subdirectory (default python: a relative path inside the checkout, without "..", "." or '
    'a leading "/"); a bundle is pinned by its sha256, a mirror by the commit. Got '
)


def test_install_variables_that_are_fine_have_no_problem():
    assert sglang_install_problems(INSTALL) == []
    assert sglang_install_problems(dict(INSTALL, sglang_install_source='prebuilt', sglang_install_prebuilt_wheel=WHEEL)) == []
    assert sglang_install_problems(dict(INSTALL, sglang_install_source='fork', sglang_install_fork=BUNDLE)) == []
    mirror = {'mirror': '/srv/sglang.git', 'ref': 'main', 'commit': 'b' * 40, 'subdirectory': 'python'}
    assert sglang_install_problems(dict(INSTALL, sglang_install_source='fork', sglang_install_fork=mirror)) == []


def test_only_the_chosen_sources_pins_are_checked():
    # an unpinned prebuilt wheel does not matter while the source is upstream
    assert sglang_install_problems(dict(INSTALL, sglang_install_prebuilt_wheel={'name': 'sglang'})) == []
    assert sglang_install_problems(dict(INSTALL, sglang_install_source='prebuilt')) == [
        'sglang_install_source is prebuilt: sglang_install_prebuilt_wheel is not set: give a pin {name, version, sha256}'
    ]
    assert sglang_install_problems(dict(INSTALL, sglang_install_patches=[{'path': PATCH['path']}])) == [
        'sglang_install_source is upstream: sglang_install_patches[0] (%s) has no sha256: every artifact must be pinned '
        '(sglang_install_allow_unpinned: true accepts unpinned ones)' % PATCH['path']
    ]
    # "no" from INI :vars is false, "yes" accepts the unpinned patch
    assert sglang_install_problems(dict(INSTALL, sglang_install_patches=[{'path': PATCH['path']}], sglang_install_allow_unpinned='yes')) == []


@pytest.mark.parametrize(
    'fork',
    [
        {'bundle': '/srv/sglang.bundle'},
        {'bundle': '/srv/sglang.bundle', 'ref': 'ddtree'},
        dict(BUNDLE, ref=''),
        dict(BUNDLE, mirror='/srv/sglang.git'),
        dict(BUNDLE, subdirectory='../../etc'),
        dict(BUNDLE, subdirectory='/python'),
        dict(BUNDLE, sha256='A' * 64),
        dict(BUNDLE, commit='abc'),
        dict(BUNDLE, branch='x'),
        {'mirror': '/srv/sglang.git', 'ref': 'main'},
        ['/srv/sglang.bundle'],
    ],
)
def test_a_fork_that_is_not_pinned_or_leaves_the_checkout_is_refused(fork):
    assert sglang_install_problems(dict(INSTALL, sglang_install_source='fork', sglang_install_fork=fork)) == [FORK_SHAPE + json.dumps(fork) + '.']


def test_an_unpinned_fork_passes_only_when_allowed():
    fork = {'mirror': '/srv/sglang.git', 'ref': 'main'}
    assert sglang_install_problems(dict(INSTALL, sglang_install_source='fork', sglang_install_fork=fork, sglang_install_allow_unpinned=True)) == []


def test_wheel_source_and_patch_directory_are_named_with_their_values():
    problems = sglang_install_problems(
        dict(INSTALL, sglang_install_pip_find_links='', sglang_install_pip_index_url='local-index/simple', sglang_install_files_dir='/nonexistent/p')
    )
    assert problems == [
        'sglang_install_pip_index_url must be an http(s) URL of a local package index (http:// or https://) without spaces, '
        'tabs, line breaks or control characters: pip takes the wheel sources as words of one command line; got "local-index/simple".',
        'sglang_install_files_dir must be a directory on the controller (default: the collection\'s root), got "/nonexistent/p".',
    ]
    assert sglang_install_problems(dict(INSTALL, sglang_install_pip_find_links='')) == [
        'Give exactly one wheel source for SGLang: sglang_install_pip_find_links (a directory of wheels on the host) or '
        'sglang_install_pip_index_url (a local package index, http:// or https://); by default they are ml_env_pip_find_links '
        'and ml_env_pip_index_url. Got sglang_install_pip_find_links="", sglang_install_pip_index_url="".'
    ]


def test_a_fork_s_build_wheels_may_be_a_hashed_requirements_file():
    fork = dict(INSTALL, sglang_install_source='fork', sglang_install_fork=BUNDLE)
    assert sglang_install_problems(dict(fork, sglang_install_build_wheels='setuptools==84.2.1 --hash=sha256:%s\n' % SHA)) == []
    assert sglang_install_problems(dict(fork, sglang_install_build_wheels='setuptools>=70\n')) == [
        'sglang_install_source is fork: sglang_install_build_wheels line 1 must be one requirement "name==version '
        '--hash=sha256:<64 hex>" (options, URLs, markers and ranges are not pins: compile the file for one platform and '
        "Python with --generate-hashes), got 'setuptools>=70'"
    ]
