# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

import pytest

from ansible_collections.ddtree.sglang.plugins.module_utils import ml_env_probe as probe

# Loader errors as users reported them; paths are theirs, the wording is glibc's.
# sgl-project/sglang#5100 (sgl-kernel built for another torch)
TORCH_ABI = '/usr/local/lib/python3.11/dist-packages/sgl_kernel/common_ops.abi3.so: undefined symbol: _ZN5torch3jit17parseSchemaOrNameERKSsb'
# sgl-project/sglang#13948 (sgl_kernel's own wrapper, a const method of c10::SymInt)
WRAPPED = (
    '[sgl_kernel] CRITICAL: Could not load any common_ops library!\nError details from previous import attempts:\n'
    '- ImportError: /usr/local/lib/python3.10/dist-packages/sgl_kernel/sm100/common_ops.abi3.so: '
    'undefined symbol: _ZNK3c106SymInt6sym_neERKS0_\n- ModuleNotFoundError: No module named \'common_ops\''
)
# sgl-project/sglang#8131 (a CUDA driver API symbol: the driver is older than the kernels need)
CUDA_SYMBOL = '/opt/conda/lib/python3.10/site-packages/sgl_kernel/common_ops.abi3.so: undefined symbol: cuGreenCtxStreamCreate'
# pytorch/pytorch c10/cuda/CUDAFunctions.cpp::device_count_impl (warning of torch.cuda.is_available())
OLD_DRIVER = (
    'CUDA initialization: The NVIDIA driver on your system is too old (found version 12020). Please update '
    'your GPU driver by downloading and installing a new version'
)

WHERE = 'the release at /opt/ddtree/ml-env/releases/0123456789abcdef'
TORCH_H200 = {
    'version': '2.11.0+cu130',
    'distribution_version': '2.11.0+cu130',
    'cuda': '13.0',
    'cuda_available': True,
    'device_count': 1,
    'arch_list': ['sm_75', 'sm_80', 'sm_86', 'sm_90', 'sm_100', 'sm_120', 'compute_120'],
    'devices': [{'index': 0, 'name': 'NVIDIA H200', 'capability': '9.0', 'total_memory_mib': 143156}],
    'smoke': {'ok': True, 'error': None},
}
SGL = [{'name': 'sglang-kernel', 'version': '0.4.10'}]


def _events(*events):
    return '\n'.join(probe.MARKER + json.dumps(e) for e in events) + '\n'


@pytest.mark.parametrize(
    'text, symbol, library',
    [
        (TORCH_ABI, '_ZN5torch3jit17parseSchemaOrNameERKSsb', '/usr/local/lib/python3.11/dist-packages/sgl_kernel/common_ops.abi3.so'),
        (WRAPPED, '_ZNK3c106SymInt6sym_neERKS0_', '/usr/local/lib/python3.10/dist-packages/sgl_kernel/sm100/common_ops.abi3.so'),
        (CUDA_SYMBOL, 'cuGreenCtxStreamCreate', '/opt/conda/lib/python3.10/site-packages/sgl_kernel/common_ops.abi3.so'),
        ('undefined symbol: ddtree_abi_fixture_missing', 'ddtree_abi_fixture_missing', None),
    ],
)
def test_undefined_symbol(text, symbol, library):
    assert probe.undefined_symbol(text) == (symbol, library)


def test_no_undefined_symbol():
    assert probe.undefined_symbol("No module named 'flashinfer'") is None
    assert probe.undefined_symbol(None) is None


@pytest.mark.parametrize(
    'symbol, torch',
    [
        ('_ZN5torch3jit17parseSchemaOrNameERKSsb', True),
        ('_ZNK3c106SymInt6sym_neERKS0_', True),
        ('_ZN3c104cuda9SetDeviceEa', True),
        ('_ZN2at4_ops5zeros4callEN3c108ArrayRefINS2_6SymIntEEE', True),
        ('_ZTVN3c1010TensorImplE', True),
        ('cuGreenCtxStreamCreate', False),
        ('_ZNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEE', False),
        ('_ZN10tensorflow8OpKernelE', False),
    ],
)
def test_is_torch_symbol(symbol, torch):
    assert probe.is_torch_symbol(symbol) is torch


@pytest.mark.parametrize(
    'arch, cap, runs',
    [
        ('sm_90', '9.0', True),
        ('sm_80', '8.6', True),
        ('sm_86', '8.0', False),
        ('sm_90a', '9.0', True),
        ('sm_90a', '9.1', False),
        ('sm_120', '12.0', True),
        ('sm_90', '12.0', False),
        ('compute_90', '12.0', True),
        ('compute_120', '9.0', False),
        ('sm_100', '10.0', True),
        ('gfx90a', '9.0', False),
        ('sm_90', 'x', False),
    ],
)
def test_arch_runs_on(arch, cap, runs):
    assert probe.arch_runs_on(arch, cap) is runs


def test_parse_probe_output_ignores_noise_and_tracks_the_step():
    text = (
        'noise\n'
        + _events({'event': 'start', 'executable': '/x/bin/python', 'version': '3.12.3', 'prefix': '/x'}, {'event': 'step', 'name': 'torch'})
        + probe.MARKER
        + '{broken\n'
    )
    report, step = probe.parse_probe_output(text)
    assert report['python']['version'] == '3.12.3' and report['done'] is False and step == 'torch'


def test_abi_mismatch_against_torch_names_import_package_symbol_and_torch():
    record = {'name': 'sgl_kernel', 'ok': False, 'error_type': 'ImportError', 'error': TORCH_ABI, 'distributions': SGL}
    report = {'imports': [record], 'torch': TORCH_H200, 'done': True}
    failures = probe.judge(report, ['sgl_kernel'], True, '9.0', WHERE)
    assert len(failures) == 1
    f = failures[0]
    assert f['cause'] == 'abi_mismatch' and f['symbol'] == '_ZN5torch3jit17parseSchemaOrNameERKSsb'
    assert f['library'].endswith('common_ops.abi3.so')
    assert f['msg'].startswith(
        'ABI mismatch in the release at /opt/ddtree/ml-env/releases/0123456789abcdef: import sgl_kernel '
        '(package sglang-kernel 0.4.10) needs symbol _ZN5torch3jit17parseSchemaOrNameERKSsb'
    )
    assert "that the installed torch 2.11.0+cu130 does not export: the overlay's wheels were built against another torch" in f['msg']


def test_abi_mismatch_of_another_library_does_not_blame_torch():
    record = {
        'name': 'ddtree_abi_fixture',
        'ok': False,
        'error_type': 'ImportError',
        'error': CUDA_SYMBOL,
        'distributions': [{'name': 'ddtree-abi-fixture', 'version': '1.0'}],
        'library_distribution': {'name': 'ddtree-abi-fixture', 'version': '1.0'},
    }
    f = probe.import_failure(record, {'distribution_version': '2.13.0+cpu'}, WHERE)
    assert f['cause'] == 'abi_mismatch' and 'does not export' not in f['msg']
    assert 'package ddtree-abi-fixture 1.0' in f['msg'] and 'none of the libraries it loads exports' in f['msg']
    assert 'torch 2.13.0+cpu' in f['msg']


def test_missing_module_and_other_import_errors():
    gone = probe.import_failure(
        {'name': 'flashinfer', 'ok': False, 'error_type': 'ModuleNotFoundError', 'error': "No module named 'flashinfer'", 'distributions': []}, None, WHERE
    )
    assert gone['cause'] == 'import_error' and 'no installed package provides it' in gone['msg']
    other = probe.import_failure(
        {'name': 'triton', 'ok': False, 'error_type': 'RuntimeError', 'error': 'boom', 'distributions': [{'name': 'triton', 'version': '3.9.0'}]}, None, WHERE
    )
    assert other['msg'] == 'import triton failed in %s (package triton 3.9.0): RuntimeError: boom' % WHERE


def test_h200_as_seen_is_ok():
    report = {'imports': [{'name': 'torch', 'ok': True}], 'torch': TORCH_H200, 'done': True}
    assert probe.judge(report, ['torch'], True, '9.0', WHERE) == []


def test_lab_cpu_stand_in_is_ok_without_cuda():
    torch = {'version': '2.13.0+cpu', 'cuda': None, 'cuda_available': False, 'device_count': 0, 'arch_list': [], 'devices': []}
    report = {'imports': [{'name': 'torch', 'ok': True}, {'name': 'triton', 'ok': True}], 'torch': torch, 'done': True}
    assert probe.judge(report, ['torch', 'triton'], False, '8.6', WHERE) == []


@pytest.mark.parametrize(
    'torch, words',
    [
        ({'version': '2.13.0+cpu', 'cuda': None}, 'is a CPU-only build'),
        (
            {'version': '2.11.0+cu130', 'cuda': '13.0', 'cuda_available': False, 'cuda_warning': OLD_DRIVER},
            'reports torch.cuda.is_available() = False (CUDA initialization: The NVIDIA driver on your system is too old',
        ),
        ({'version': '2.11.0+cu130', 'cuda': '13.0', 'cuda_available': True, 'device_count': 0}, 'sees no GPU'),
        ({'distribution_version': '2.11.0+cu130', 'error': 'OSError: libcudnn.so.9: cannot open shared object file'}, 'torch cannot be imported'),
        ({}, 'no torch is installed'),
    ],
)
def test_cuda_unavailable(torch, words):
    failures = probe.cuda_failures(torch, True, None, WHERE)
    assert [f['cause'] for f in failures] == ['cuda_unavailable'] and words in failures[0]['msg']


def test_capability_mismatch_expected_and_missing_kernels():
    wrong = probe.cuda_failures(TORCH_H200, True, '12.0', WHERE)
    assert wrong[0]['cause'] == 'capability_mismatch'
    assert 'GPU 0 (NVIDIA H200)' in wrong[0]['msg'] and 'compute capability 9.0, the matrix entry expects 12.0' in wrong[0]['msg']
    old_build = dict(TORCH_H200, arch_list=['sm_80', 'sm_90'], devices=[{'index': 0, 'name': 'NVIDIA RTX PRO 6000 Blackwell', 'capability': '12.0'}])
    missing = probe.cuda_failures(old_build, True, '12.0', WHERE)
    assert missing[0]['cause'] == 'capability_mismatch' and 'none of them runs on GPU 0' in missing[0]['msg']
    error = 'AcceleratorError: CUDA error: no kernel image is available for execution on the device'
    no_image = dict(TORCH_H200, smoke={'ok': False, 'error': error})
    assert probe.cuda_failures(no_image, True, '9.0', WHERE)[0]['cause'] == 'capability_mismatch'


def test_probe_that_died_inside_an_import_names_it():
    report, step = probe.parse_probe_output(_events({'event': 'start'}, {'event': 'step', 'name': 'flashinfer'}))
    failures = probe.judge(report, ['flashinfer'], True, None, WHERE, step, 'when it was killed by SIGSEGV (rc -11)')
    assert failures[0]['cause'] == 'import_error' and failures[0]['import'] == 'flashinfer'
    assert 'ended when it was killed by SIGSEGV (rc -11) while importing flashinfer' in failures[0]['msg']
    nothing, step = probe.parse_probe_output('')
    assert probe.judge(nothing, ['torch'], False, None, WHERE, step, 'with exit code 1 before reporting')[0]['cause'] == 'probe_failed'


def test_summary_numbers_several_failures():
    assert probe.summary([]) is None
    assert probe.summary([{'msg': 'a'}]) == 'a'
    assert probe.summary([{'msg': 'a'}, {'msg': 'b'}]) == '2 problems: 1) a | 2) b'
