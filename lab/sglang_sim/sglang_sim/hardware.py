"""GPU and model facts for the SIMULATED server: GPUs from nvidia-smi, shapes from config.json."""

import json
import os
import subprocess
from dataclasses import dataclass

NVIDIA_SMI_QUERY = ["nvidia-smi", "--query-gpu=index,name,memory.total,compute_cap", "--format=csv,noheader,nounits"]


class NoDriverError(Exception):
    """nvidia-smi is missing or cannot reach a driver: torch would find no CUDA device."""


class ConfigLoadError(OSError):
    """transformers' OSError for a model dir without a readable config.json."""

    def __init__(self, path):
        super().__init__(
            f"Can't load the configuration of '{path}'. If you were trying to load it from the model hub, make sure you don't have "
            f"a local directory with the same name. Otherwise, make sure '{path}' is the correct path to a directory containing "
            f"a config.json file"
        )


@dataclass(frozen=True)
class Gpu:
    """One nvidia-smi row."""

    index: int
    name: str
    memory_total_mib: int
    compute_cap: str


def read_gpus(timeout=10):
    """Runs nvidia-smi (the simulated one on lab hosts) the way GPU fact gathering does."""
    try:
        proc = subprocess.run(NVIDIA_SMI_QUERY, capture_output=True, text=True, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise NoDriverError(str(exc)) from exc
    if proc.returncode != 0:
        raise NoDriverError((proc.stdout + proc.stderr).strip())
    gpus = []
    for line in proc.stdout.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 4:
            gpus.append(Gpu(int(parts[0]), parts[1], int(float(parts[2])), parts[3]))
    if not gpus:
        raise NoDriverError("no GPU listed")
    return gpus


def load_config(path):
    """config.json of a model dir, or ConfigLoadError worded as transformers words it."""
    try:
        with open(os.path.join(path, "config.json"), encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError) as exc:
        raise ConfigLoadError(path) from exc
