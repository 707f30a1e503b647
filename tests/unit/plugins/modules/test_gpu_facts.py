# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible.module_utils import basic
from ansible.module_utils.testing import patch_module_args

from ansible_collections.ddtree.sglang.tests.unit.plugins.modules.utils import ExitJson, FailJson, exits  # noqa: F401 pylint: disable=unused-import

from ansible_collections.ddtree.sglang.plugins.modules import gpu_facts

CSV = """0, NVIDIA RTX A6000, GPU-bd272f1a-08c5-5163-af85-026ab8815bae, 49140, 580.95.05, 8.6
1, NVIDIA RTX A6000, GPU-82a5e7c3-d04a-5cb1-aab2-0bc0efa8622e, 49140, 580.95.05, 8.6
"""

Q_SIMULATED = """
==============NVSMI LOG==============

Timestamp                                 : Sun Nov 29 09:40:05 2026
Driver Version                            : 580.95.05
CUDA Version                              : 13.0
Simulation                                : SIMULATED (ddtree lab, no GPU present)
"""

Q_REAL = """
Driver Version                            : 580.95.05
CUDA Version                              : 13.0

Attached GPUs                             : 8
"""


def test_parse_query_csv():
    gpus = gpu_facts.parse_query_csv(CSV)
    assert gpus[0] == {
        'index': 0,
        'name': 'NVIDIA RTX A6000',
        'uuid': 'GPU-bd272f1a-08c5-5163-af85-026ab8815bae',
        'memory_total_mib': 49140,
        'compute_cap': '8.6',
        'driver_version': '580.95.05',
    }
    assert [g['index'] for g in gpus] == [0, 1]


def test_parse_query_csv_odd_values():
    text = '1, NVIDIA RTX PRO 6000 Blackwell, GPU-1, [N/A], 580.95.05, 12.0\n0, Odd, Name, GPU-0, 97887, 580.95.05, [N/A]\n\n'
    gpus = gpu_facts.parse_query_csv(text)
    assert gpus[0]['name'] == 'Odd, Name' and gpus[0]['uuid'] == 'GPU-0' and gpus[0]['compute_cap'] is None
    assert gpus[1]['memory_total_mib'] is None and gpus[1]['compute_cap'] == '12.0'


def test_parse_query_csv_rejects_short_lines():
    with pytest.raises(ValueError):
        gpu_facts.parse_query_csv('0, NVIDIA RTX A6000\n')


def test_build_facts():
    facts = gpu_facts.build_facts(CSV, Q_SIMULATED)
    assert facts['count'] == 2 and facts['driver_version'] == '580.95.05' and facts['cuda_version'] == '13.0'
    assert facts['simulated'] is True and facts['gpu_classes'] == ['NVIDIA RTX A6000']
    assert 'driver_version' not in facts['gpus'][0]
    assert gpu_facts.build_facts(CSV, Q_REAL)['simulated'] is False
    assert gpu_facts.build_facts('', '')['count'] == 0


def _fake_run(outputs, calls):
    def run_command(module, args, **kwargs):
        calls.append(args)
        return outputs.pop(0)

    return run_command


def test_module_returns_facts(monkeypatch):
    calls = []
    monkeypatch.setattr(basic.AnsibleModule, 'run_command', _fake_run([(0, CSV, ''), (0, Q_REAL, '')], calls))
    with patch_module_args({'nvidia_smi_path': '/usr/bin/nvidia-smi', '_ansible_check_mode': True}):
        with pytest.raises(ExitJson) as e:
            gpu_facts.main()
    facts = e.value.args[0]['ansible_facts']['gpu_facts']
    assert facts['count'] == 2 and facts['simulated'] is False
    assert e.value.args[0]['changed'] is False
    assert calls[0][1].startswith('--query-gpu=index,name,uuid,memory.total,driver_version,compute_cap')


def test_module_retries_without_compute_cap_on_old_drivers(monkeypatch):
    calls = []
    old = '0, Tesla V100-SXM2-16GB, GPU-1, 16160, 470.82.01\n'
    outputs = [(2, '', 'Field "compute_cap" is not a valid field to query.'), (0, old, ''), (0, Q_REAL, '')]
    monkeypatch.setattr(basic.AnsibleModule, 'run_command', _fake_run(outputs, calls))
    with patch_module_args({'nvidia_smi_path': '/usr/bin/nvidia-smi'}):
        with pytest.raises(ExitJson) as e:
            gpu_facts.main()
    gpu = e.value.args[0]['ansible_facts']['gpu_facts']['gpus'][0]
    assert gpu['compute_cap'] is None and gpu['memory_total_mib'] == 16160
    assert 'compute_cap' not in calls[1][1]


def test_module_fails_with_stderr(monkeypatch):
    err = 'NVIDIA-SMI has failed because it couldn\'t communicate with the NVIDIA driver.'
    monkeypatch.setattr(basic.AnsibleModule, 'run_command', _fake_run([(9, '', err)], []))
    with patch_module_args({'nvidia_smi_path': '/usr/bin/nvidia-smi'}):
        with pytest.raises(FailJson) as e:
            gpu_facts.main()
    assert err in e.value.args[0]['msg'] and e.value.args[0]['rc'] == 9


def test_module_fails_when_missing(monkeypatch):
    monkeypatch.setattr(basic.AnsibleModule, 'get_bin_path', lambda self, *a, **kw: None)
    with patch_module_args({}):
        with pytest.raises(FailJson) as e:
            gpu_facts.main()
    assert 'nvidia-smi not found' in e.value.args[0]['msg']


Q_TWO_OF_EIGHT = """
Driver Version                            : 580.95.05
CUDA Version                              : 13.0

Attached GPUs                             : 2
GPU 00000000:41:00.0
    Product Name                          : NVIDIA RTX A6000
    Minor Number                          : 2
GPU 00000000:C1:00.0
    Product Name                          : NVIDIA RTX A6000
    Minor Number                          : 5
"""


def test_device_nodes_come_from_the_minor_numbers():
    """A host given two of its eight cards: indices 0 and 1, device nodes /dev/nvidia2 and /dev/nvidia5."""
    gpus = gpu_facts.build_facts(CSV, Q_TWO_OF_EIGHT)['gpus']
    assert [(g['index'], g['minor_number'], g['device_node']) for g in gpus] == [(0, 2, '/dev/nvidia2'), (1, 5, '/dev/nvidia5')]
    # no minor numbers shown: the index stands in
    gpus = gpu_facts.build_facts(CSV, Q_REAL)['gpus']
    assert [(g['minor_number'], g['device_node']) for g in gpus] == [(None, '/dev/nvidia0'), (None, '/dev/nvidia1')]
