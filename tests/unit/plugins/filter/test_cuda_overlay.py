# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Choosing the CUDA overlay: the GPUs of the field notes, an old driver, and no entry at all."""

from __future__ import annotations

import os

import pytest
import yaml

from ansible.errors import AnsibleFilterError
from ansible_collections.ddtree.sglang.plugins.filter.cuda_overlay import cuda_overlay_match, cuda_overlay_problems, version_at_least, version_tuple

ROOT = os.path.join(os.path.dirname(__file__), '..', '..', '..', '..')
SHA = 'a' * 64
WHEELS = [{'name': 'torch', 'version': '2.11.0+cu130', 'sha256': SHA}, {'name': 'sglang-kernel', 'version': '0.4.10', 'sha256': 'b' * 64}]
CU130 = {'min_driver_version': '580.65.06', 'min_cuda_version': '13.0', 'simulated': False}
MATRIX = [
    {'name': 'h100-h200-cu130', 'match': dict(CU130, compute_caps=['9.0']), 'wheels': WHEELS, 'probe_imports': ['torch', 'sgl_kernel']},
    {'name': 'a6000-cu130', 'match': dict(CU130, compute_caps=[8.6]), 'wheels': WHEELS},
    {'name': 'rtxpro6000-cu130', 'match': dict(CU130, compute_caps=['12.0']), 'wheels': WHEELS},
]


def facts(name, cap, count=1, driver='580.95.05', cuda='13.0', simulated=False):
    return {
        'count': count,
        'driver_version': driver,
        'cuda_version': cuda,
        'simulated': simulated,
        'gpu_classes': [name] if count else [],
        'gpus': [{'index': i, 'name': name, 'compute_cap': cap, 'memory_total_mib': 1} for i in range(count)],
    }


# the H200 as nvidia-smi answered on the borrowed machine (docs/dev/real-gpu-check.md)
H200 = facts('NVIDIA H200', '9.0', driver='580.159.04')
A6000 = facts('NVIDIA RTX A6000', '8.6', count=2)
RTXPRO = facts('NVIDIA RTX PRO 6000 Blackwell Workstation Edition', '12.0', count=8)
H100 = facts('NVIDIA H100 80GB HBM3', '9.0', count=8)


@pytest.mark.parametrize(
    'host, entry, cap',
    [
        (H200, 'h100-h200-cu130', '9.0'),
        (H100, 'h100-h200-cu130', '9.0'),
        (A6000, 'a6000-cu130', '8.6'),
        (RTXPRO, 'rtxpro6000-cu130', '12.0'),
    ],
)
def test_each_gpu_class_gets_its_entry(host, entry, cap):
    choice = cuda_overlay_match(host, MATRIX)
    assert choice['matched'] and choice['entry'] == entry and choice['compute_cap'] == cap
    assert choice['wheels'] == WHEELS and choice['expect_cuda'] is True
    assert choice['rejected'] == [r for r in choice['rejected'] if r['entry'] != entry]


def test_defaults_and_imports():
    assert cuda_overlay_match(H200, MATRIX)['probe_imports'] == ['torch', 'sgl_kernel']
    assert cuda_overlay_match(A6000, MATRIX)['probe_imports'] == ['torch']


def test_old_driver_is_refused_with_every_reason():
    old = facts('NVIDIA H100 80GB HBM3', '9.0', driver='535.54.03', cuda='12.2')
    choice = cuda_overlay_match(old, MATRIX)
    assert not choice['matched'] and choice['entry'] is None and choice['wheels'] == []
    msg = choice['msg']
    assert msg.startswith('no entry of cuda_overlay_matrix fits this host (driver 535.54.03, CUDA 12.2, compute capability 9.0, NVIDIA H100 80GB HBM3): ')
    assert ("h100-h200-cu130: driver 535.54.03 < 580.65.06 (min_driver_version), CUDA (the driver's highest) 12.2 < 13.0 (min_cuda_version)") in msg
    assert 'a6000-cu130: compute capability 9.0 not in [8.6]' in msg
    assert 'nothing was installed' in msg


def test_gpu_without_an_entry():
    l40 = facts('NVIDIA L40S', '8.9')
    choice = cuda_overlay_match(l40, MATRIX)
    assert not choice['matched'] and [r['entry'] for r in choice['rejected']] == [e['name'] for e in MATRIX]
    assert 'rtxpro6000-cu130: compute capability 8.9 not in [12.0]' in choice['msg']


def test_empty_matrix():
    choice = cuda_overlay_match(H200, [])
    assert not choice['matched'] and 'cuda_overlay_matrix is empty' in choice['msg']


def test_mixed_gpus_need_an_entry_for_all_of_them():
    mixed = facts('NVIDIA H100 80GB HBM3', '9.0')
    mixed['gpus'].append({'index': 1, 'name': 'NVIDIA RTX A6000', 'compute_cap': '8.6'})
    both = [{'name': 'both', 'match': {'compute_caps': ['8.6', '9.0']}, 'wheels': WHEELS}]
    assert not cuda_overlay_match(mixed, MATRIX)['matched']
    choice = cuda_overlay_match(mixed, both)
    assert choice['matched'] and choice['compute_cap'] is None


def test_driver_that_cannot_report_compute_capability():
    old = facts('Tesla V100', None, driver='470.82.01', cuda='11.4')
    assert 'cannot report it (drivers before 510)' in cuda_overlay_match(old, MATRIX)['msg']
    assert 'nvidia-smi lists no GPU' in cuda_overlay_match(facts('x', '9.0', count=0), MATRIX)['msg']


def test_simulated_gpus_only_match_lab_entries():
    lab = [{'name': 'lab', 'match': {'compute_caps': ['9.0'], 'simulated': True}, 'wheels': WHEELS, 'expect_cuda': False}]
    assert cuda_overlay_match(facts('NVIDIA H200', '9.0', simulated=True), lab)['entry'] == 'lab'
    real = cuda_overlay_match(H200, lab)
    assert not real['matched'] and 'for simulated GPUs, this host\'s are real' in real['msg']
    assert not cuda_overlay_match(facts('NVIDIA H200', '9.0', simulated=True), MATRIX)['matched']


def test_first_matching_entry_wins_and_catch_all():
    matrix = [{'name': 'any', 'wheels': WHEELS}] + MATRIX
    assert cuda_overlay_match(H200, matrix)['entry'] == 'any'


@pytest.mark.parametrize(
    'have, need, ok',
    [
        ('580.95.05', '575', True),
        ('580.159.04', '580.65.06', True),
        ('580.65.06', '580.65.06', True),
        ('580.9.1', '580.65.06', False),
        ('13.0', '13', True),
        ('12.8', '13.0', False),
        ('575', '575.0.1', False),
    ],
)
def test_numeric_versions(have, need, ok):
    assert version_at_least(version_tuple(have), version_tuple(need)) is ok


def test_unknown_host_versions():
    unknown = facts('NVIDIA H200', '9.0', driver=None, cuda=None)
    assert "needs driver 580.65.06 or later, the host's is unknown (None)" in cuda_overlay_match(unknown, MATRIX)['msg']


@pytest.mark.parametrize(
    'entry, words',
    [
        ({'name': 'x', 'match': {'compute_cap': ['9.0']}, 'wheels': WHEELS}, 'match has unknown keys compute_cap'),
        ({'name': 'x', 'wheel': WHEELS}, 'unknown keys wheel'),
        ({'match': {}, 'wheels': WHEELS}, 'has no name'),
        ({'name': 'x', 'match': {'min_cuda_version': 12.1}, 'wheels': WHEELS}, 'quoted string'),
        ({'name': 'x', 'match': {'min_driver_version': 'r580'}, 'wheels': WHEELS}, 'not a numeric version'),
        ({'name': 'x', 'match': {'compute_caps': ['sm_90']}, 'wheels': WHEELS}, 'not a compute capability'),
        ({'name': 'x', 'match': {'compute_caps': []}, 'wheels': WHEELS}, 'non-empty list'),
        ({'name': 'x', 'match': {'simulated': 'yes'}, 'wheels': WHEELS}, 'simulated must be true or false'),
        ({'name': 'x', 'wheels': [{'name': 'torch', 'version': '2.11.0+cu130'}]}, 'has no sha256'),
        (
            {'name': 'x', 'wheels': [{'name': 'torch', 'version': '2.11.0', 'sha256': 'REPLACE-with-the-sha256-of-your-wheel'}]},
            'must be 64 lowercase hex digits',
        ),
        ({'name': 'x', 'wheels': []}, 'wheels is empty'),
        ({'name': 'x', 'wheels': WHEELS, 'probe_imports': 'torch'}, 'probe_imports must be a list'),
        ({'name': 'x', 'wheels': WHEELS, 'expect_cuda': 'no'}, 'expect_cuda must be true or false'),
    ],
)
def test_malformed_entries_are_refused_whatever_the_host(entry, words):
    with pytest.raises(AnsibleFilterError, match=words):
        cuda_overlay_match(H200, MATRIX + [entry])


def test_duplicate_names_and_wrong_inputs():
    with pytest.raises(AnsibleFilterError, match='names h100-h200-cu130 more than once'):
        cuda_overlay_match(H200, MATRIX + MATRIX[:1])
    with pytest.raises(AnsibleFilterError, match='must be a list'):
        cuda_overlay_match(H200, {'name': 'x'})
    with pytest.raises(AnsibleFilterError, match='expects the gpu_facts fact'):
        cuda_overlay_match('H200', MATRIX)


def test_unpinned_allowed_on_request():
    loose = [{'name': 'x', 'wheels': [{'name': 'torch', 'version': '2.11.0+cu130'}]}]
    assert cuda_overlay_match(H200, loose, allow_unpinned=True)['matched']
    with pytest.raises(AnsibleFilterError, match=r'has no sha256: every artifact must be pinned \(cuda_overlay_allow_unpinned: true'):
        cuda_overlay_match(H200, loose)


def _load(path):
    with open(os.path.join(ROOT, path)) as f:
        return yaml.safe_load(f)


def test_lab_matrix_fits_both_lab_hosts_and_no_real_gpu():
    matrix = _load('inventory/group_vars/lab/cuda_overlay.yml')['cuda_overlay_matrix']
    # what the simulated nvidia-smi answers on ct129 and ct200 (lab/files/nvidia-smi, driver 580.95.05, CUDA 13.0)
    ct129 = cuda_overlay_match(facts('NVIDIA RTX A6000', '8.6', count=2, simulated=True), matrix)
    ct200 = cuda_overlay_match(facts('NVIDIA RTX PRO 6000 Blackwell Workstation Edition', '12.0', count=8, simulated=True), matrix)
    assert ct129['entry'] == 'lab-a6000-cpu-stand-in' and ct200['entry'] == 'lab-rtxpro6000-cpu-stand-in'
    for choice in (ct129, ct200):
        assert choice['expect_cuda'] is False and choice['probe_imports'] == ['torch', 'triton']
        assert [(w['name'], w['version']) for w in choice['wheels']] == [('torch', '2.13.0+cpu'), ('triton', '3.9.0')]
    assert not cuda_overlay_match(H200, matrix)['matched']


def test_production_example_matrix_is_complete_but_refused_until_pinned():
    inventory = _load('inventory/production.example.yml')
    matrix = inventory['all']['children']['sglang_servers']['vars']['cuda_overlay_matrix']
    with pytest.raises(AnsibleFilterError, match='REPLACE-with-the-sha256-of-your-wheel'):
        cuda_overlay_match(H200, matrix)
    pinned = [dict(e, wheels=[dict(w, sha256=SHA) for w in e['wheels']]) for e in matrix]
    assert cuda_overlay_match(H200, pinned)['entry'] == 'h100-h200-cu130'
    assert cuda_overlay_match(A6000, pinned)['entry'] == 'a6000-cu130'
    assert cuda_overlay_match(RTXPRO, pinned)['entry'] == 'rtxpro6000-blackwell-cu130'


def test_lab_matrix_pins_are_the_wheelhouse_lock_s():
    lock = os.path.join(ROOT, 'lab', 'wheelhouse.lock')
    if not os.path.exists(lock):
        pytest.skip('lab/wheelhouse.lock not present')
    locked = {}
    with open(lock) as f:
        for line in f:
            if '==' in line and '--hash=sha256:' in line:
                spec, digest = line.split('--hash=sha256:')
                name, version = spec.strip().split('==')
                locked[name] = (version, digest.strip())
    for entry in _load('inventory/group_vars/lab/cuda_overlay.yml')['cuda_overlay_matrix']:
        for wheel in entry['wheels']:
            assert locked[wheel['name']] == (wheel['version'], wheel['sha256']), entry['name']


OVERLAY = {
    'cuda_overlay_nvidia_smi_path': 'nvidia-smi',
    'cuda_overlay_release_path': '',
    'cuda_overlay_release_python': '',
    'cuda_overlay_probe_timeout': 300,
    'cuda_overlay_pip_find_links': '/var/cache/ddtree-lab/wheelhouse',
    'cuda_overlay_pip_index_url': '',
}
PATHS = (
    'cuda_overlay_nvidia_smi_path must be a command name or an absolute path (default nvidia-smi), cuda_overlay_release_path '
    "and cuda_overlay_release_python absolute paths or empty (default: role ml_env's release), cuda_overlay_probe_timeout "
    '1 or more seconds (default 300); got '
)
SOURCE = (
    'Give exactly one wheel source for the overlay: cuda_overlay_pip_find_links (a directory of wheels on the host) or '
    'cuda_overlay_pip_index_url (a local package index, http:// or https://); by default they are ml_env_pip_find_links '
    'and ml_env_pip_index_url. Got '
)
FIND_LINKS = (
    'cuda_overlay_pip_find_links must be an absolute directory on the host (or an http:// or https:// URL) without spaces, '
    'tabs, line breaks or control characters: pip takes the wheel sources as words of one command line; got '
)
INDEX_URL = (
    'cuda_overlay_pip_index_url must be an http(s) URL of a local package index (http:// or https://) without spaces, '
    'tabs, line breaks or control characters: pip takes the wheel sources as words of one command line; got '
)


def test_overlay_variables_that_are_fine_have_no_problem():
    assert cuda_overlay_problems(OVERLAY) == []
    assert cuda_overlay_problems(dict(OVERLAY, cuda_overlay_nvidia_smi_path='/usr/bin/nvidia-smi', cuda_overlay_probe_timeout='60')) == []
    assert cuda_overlay_problems(dict(OVERLAY, cuda_overlay_pip_find_links='', cuda_overlay_pip_index_url='http://pypi.lab:8080/simple')) == []


@pytest.mark.parametrize(
    'change, got',
    [
        ({'cuda_overlay_probe_timeout': 0}, '"nvidia-smi", "", "", 0.'),
        ({'cuda_overlay_probe_timeout': True}, '"nvidia-smi", "", "", true.'),
        ({'cuda_overlay_nvidia_smi_path': 'bin/nvidia-smi'}, '"bin/nvidia-smi", "", "", 300.'),
        ({'cuda_overlay_release_path': 'releases/x'}, '"nvidia-smi", "releases/x", "", 300.'),
        ({'cuda_overlay_nvidia_smi_path': 'nvidia-smi\n'}, '"nvidia-smi\\n", "", "", 300.'),
    ],
)
def test_paths_and_timeout_are_named_with_their_values(change, got):
    assert cuda_overlay_problems(dict(OVERLAY, **change)) == [PATHS + got]


@pytest.mark.parametrize(
    'find_links, index_url, expected',
    [
        ('', '', [SOURCE + 'cuda_overlay_pip_find_links="", cuda_overlay_pip_index_url="".']),
        (
            '/srv/wheels',
            'http://pypi.lab/simple',
            [SOURCE + 'cuda_overlay_pip_find_links="/srv/wheels", cuda_overlay_pip_index_url="http://pypi.lab/simple".'],
        ),
        ('/srv/wheels --trusted-host x', '', [FIND_LINKS + '"/srv/wheels --trusted-host x".']),
        ('', 'ftp://pypi.lab', [INDEX_URL + '"ftp://pypi.lab".']),
    ],
)
def test_exactly_one_wheel_source_that_fits_pips_command_line(find_links, index_url, expected):
    problems = cuda_overlay_problems(dict(OVERLAY, cuda_overlay_pip_find_links=find_links, cuda_overlay_pip_index_url=index_url))
    assert problems == expected


def test_an_entry_may_give_its_wheels_as_a_hashed_requirements_file():
    lock = 'torch==2.11.0+cu130 \\\n    --hash=sha256:%s\nsglang-kernel==0.4.10 --hash=sha256:%s  # via sglang\n' % (SHA, 'b' * 64)
    matrix = [dict(MATRIX[0], wheels=lock)]
    choice = cuda_overlay_match(H200, matrix)
    assert choice['matched'] and choice['wheels'] == WHEELS


def test_a_lock_line_without_hash_in_an_entry_is_refused_naming_the_entry_and_line():
    matrix = [dict(MATRIX[0], wheels='torch==2.11.0+cu130\n')]
    with pytest.raises(AnsibleFilterError) as refused:
        cuda_overlay_match(H200, matrix)
    assert str(refused.value) == (
        'cuda_overlay_matrix[0] (h100-h200-cu130).wheels line 1 (torch) has no --hash=sha256: every wheel must be pinned by hash (--generate-hashes)'
    )
