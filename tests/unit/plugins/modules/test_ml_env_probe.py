# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The probe script runs for real, in this interpreter, behind a wrapper that adds a package dir.

The wrapper drops the probe's -I so that PYTHONPATH can bring the test packages in; everything
else (the script, the protocol, the judging) is what a host runs.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import shutil
import subprocess
import sys

import pytest

from ansible.module_utils.testing import patch_module_args

from ansible_collections.ddtree.sglang.tests.unit.plugins.modules.utils import ExitJson, FailJson, exits  # noqa: F401 pylint: disable=unused-import

from ansible_collections.ddtree.sglang.plugins.modules import ml_env_probe


@pytest.fixture
def python(tmp_path):
    site = tmp_path / 'site'
    site.mkdir()
    (site / 'noisy_ok.py').write_text('import os, sys\nprint("hello from an import")\nos.write(1, b"raw fd 1 ")\n__version__ = "1.2"\n')
    (site / 'raises_abi.py').write_text(
        'raise ImportError("/x/lib/python3.12/site-packages/sgl_kernel/common_ops.abi3.so: undefined symbol: _ZN3c104cuda9SetDeviceEa")\n'
    )
    (site / 'crashes.py').write_text('import os\nos.abort()\n')
    (site / 'hangs.py').write_text('import time\ntime.sleep(60)\n')
    wrapper = tmp_path / 'python'
    wrapper.write_text('#!/bin/sh\nshift\nPYTHONPATH=%s exec %s "$@"\n' % (site, sys.executable))
    wrapper.chmod(0o755)
    return str(wrapper)


def _run(args, fails):
    with patch_module_args(args):
        with pytest.raises(FailJson if fails else ExitJson) as e:
            ml_env_probe.main()
    return e.value.args[0]


def test_imports_ok_and_noise_does_not_disturb(python):
    result = _run({'python': python, 'imports': ['json', 'noisy_ok'], 'expect_cuda': False}, fails=False)
    assert result['ok'] is True and result['cause'] is None and result['msg'] == 'probe ok'
    assert [i['name'] for i in result['imports']] == ['json', 'noisy_ok']
    assert result['imports'][1]['version'] == '1.2' and 'hello from an import' in result['stderr_tail']
    assert result['python']['executable'] == sys.executable and result['changed'] is False
    assert result['torch']['version'] is None and result['torch']['error'] is None and result['torch']['devices'] == []


def test_abi_mismatch_and_missing_module(python):
    result = _run({'python': python, 'imports': ['raises_abi', 'no_such_module_ddtree'], 'expect_cuda': False}, fails=True)
    assert [f['cause'] for f in result['failures']] == ['abi_mismatch', 'import_error']
    assert result['cause'] == 'abi_mismatch' and result['failures'][0]['symbol'] == '_ZN3c104cuda9SetDeviceEa'
    assert result['msg'].startswith('2 problems: 1) ABI mismatch in the environment of %s: import raises_abi' % python)
    if shutil.which('c++filt'):
        assert result['failures'][0]['symbol_demangled'] == 'c10::cuda::SetDevice(signed char)'


def test_crash_inside_an_import(python):
    result = _run({'python': python, 'imports': ['json', 'crashes'], 'expect_cuda': False}, fails=True)
    assert result['cause'] == 'import_error' and result['failures'][0]['import'] == 'crashes'
    assert 'killed by SIGABRT' in result['msg'] and 'while importing crashes' in result['msg']


def test_hang_is_killed_at_the_timeout(python):
    result = _run({'python': python, 'imports': ['hangs'], 'expect_cuda': False, 'timeout': 2}, fails=True)
    assert 'after the 2 s timeout while importing hangs' in result['msg'] and result['elapsed_s'] < 30


def test_cuda_expected_without_torch(python):
    result = _run({'python': python, 'imports': [], 'expect_cuda': True}, fails=True)
    assert result['cause'] == 'cuda_unavailable' and result['expect_cuda_reason'] == 'the expect_cuda option'


def test_expect_cuda_default_follows_the_device_files(python, monkeypatch):
    monkeypatch.setattr(ml_env_probe.os.path, 'exists', lambda p: p == '/dev/nvidiactl' or os.path.isfile(p))
    result = _run({'python': python, 'imports': ['json']}, fails=True)
    assert result['expect_cuda'] is True and result['expect_cuda_reason'] == '/dev/nvidiactl exists'


def test_missing_interpreter(tmp_path):
    result = _run({'python': str(tmp_path / 'releases' / 'x' / 'bin' / 'python')}, fails=True)
    assert result['cause'] == 'probe_failed' and 'does not exist' in result['msg']


@pytest.mark.skipif(not shutil.which('cc'), reason='needs a C compiler')
def test_real_loader_error_from_a_shared_object(tmp_path):
    """glibc's own words: an extension linked against a c10 symbol nobody exports."""
    site = tmp_path / 'site'
    site.mkdir()
    src = tmp_path / 'fake.c'
    src.write_text('extern void _ZN3c1017RegisterOperatorsD1Ev(void);\nvoid ddtree_use(void) { _ZN3c1017RegisterOperatorsD1Ev(); }\n')
    subprocess.check_call(['cc', '-shared', '-fPIC', '-o', str(site / 'fake_ext.so'), str(src)])
    wrapper = tmp_path / 'python'
    wrapper.write_text('#!/bin/sh\nshift\nPYTHONPATH=%s exec %s "$@"\n' % (site, sys.executable))
    wrapper.chmod(0o755)
    result = _run({'python': str(wrapper), 'imports': ['fake_ext'], 'expect_cuda': False}, fails=True)
    failure = result['failures'][0]
    assert failure['cause'] == 'abi_mismatch' and failure['symbol'] == '_ZN3c1017RegisterOperatorsD1Ev'
    assert failure['library'] == str(site / 'fake_ext.so') and result['imports'][0]['library'] == failure['library']
