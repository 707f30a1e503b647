"""The simulated nvidia-smi: real CSV format, real error texts and exit codes."""

import json
import os
import subprocess
import sys

import pytest

SMI = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "files", "nvidia-smi")
A6000 = {"name": "NVIDIA RTX A6000", "memory_total_mib": 49140, "compute_cap": "8.6"}


@pytest.fixture(name="gpus_file")
def fixture_gpus_file(tmp_path):
    path = tmp_path / "gpus.json"
    path.write_text(json.dumps({"driver_version": "580.95.05", "cuda_version": "13.0", "gpus": [A6000, A6000]}))
    return str(path)


def smi(gpus_file, *args):
    env = dict(os.environ, DDTREE_LAB_GPUS_FILE=gpus_file)
    return subprocess.run([sys.executable, SMI, *args], capture_output=True, text=True, env=env, check=False, timeout=30)


def test_csv_noheader_nounits(gpus_file):
    out = smi(gpus_file, "--query-gpu=index,name,memory.total,driver_version,compute_cap", "--format=csv,noheader,nounits")
    assert out.returncode == 0
    assert out.stdout == "0, NVIDIA RTX A6000, 49140, 580.95.05, 8.6\n1, NVIDIA RTX A6000, 49140, 580.95.05, 8.6\n"


def test_csv_header_and_units(gpus_file):
    out = smi(gpus_file, "--query-gpu=index,name,memory.total", "--format=csv")
    assert out.stdout.splitlines() == ["index, name, memory.total [MiB]", "0, NVIDIA RTX A6000, 49140 MiB", "1, NVIDIA RTX A6000, 49140 MiB"]


def test_select_one_gpu(gpus_file):
    out = smi(gpus_file, "--query-gpu=index,memory.used,memory.free", "--format=csv,noheader", "-i", "1")
    assert out.stdout.startswith("1, 1 MiB, ") and out.stdout.count("\n") == 1


def test_unknown_field(gpus_file):
    out = smi(gpus_file, "--query-gpu=index,x", "--format=csv")
    assert out.returncode == 2
    assert 'Field "x" is not a valid field to query.' in out.stdout


def test_missing_config_is_no_driver(tmp_path):
    out = smi(str(tmp_path / "absent.json"), "-L")
    assert out.returncode == 9
    assert out.stdout.startswith("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver")


def test_human_forms_are_marked_simulated(gpus_file):
    listing = smi(gpus_file, "-L").stdout.splitlines()
    assert len(listing) == 2 and listing[0].startswith("GPU 0: NVIDIA RTX A6000 (UUID: GPU-") and "SIMULATED" in listing[0]
    full = smi(gpus_file, "-q").stdout
    assert "SIMULATED" in full and any(line.startswith("CUDA Version") and line.endswith(": 13.0") for line in full.splitlines())
    assert "SIMULATED" in smi(gpus_file).stdout
