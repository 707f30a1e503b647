"""The simulator's verdict on each rung of lab/scenarios/field-notes-ladder.yml (molecule/ladder
relies on it): pool failure, two graph-capture failures, the graphs rung's decode-graph capture
OOM, then a healthy start. The role's planner skips the first three (tests/unit), so on the lab only
the last two reach the simulator."""

import json
import os
import sys

import yaml

LAB = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROOT = os.path.dirname(LAB)
sys.path.insert(0, os.path.join(LAB, "sglang_sim"))

from sglang_sim import memory  # noqa: E402  pylint: disable=wrong-import-position

A6000_MIB = 49140


def _shape(name):
    with open(os.path.join(LAB, "models", name, "config.json"), encoding="utf-8") as handle:
        return memory.shape_from_config(json.load(handle))


def _load(*parts):
    with open(os.path.join(ROOT, *parts), encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def test_each_rung_fails_or_starts_as_the_scenario_says():
    base = _load("inventory", "group_vars", "gpu_a6000_tp2.yml")["sglang_service_envelope"]
    rungs = _load("lab", "scenarios", "field-notes-ladder.yml")["sglang_service_envelope_ladder"]
    verdicts = {}
    for rung in rungs:
        flags = {k: v for k, v in dict(base, **rung["envelope"]).items() if v is not None}
        env = memory.Envelope(
            tp_size=flags["tp_size"],
            mem_fraction_static=flags.get("mem_fraction_static"),
            context_length=flags.get("context_length"),
            max_running_requests=flags.get("max_running_requests"),
            chunked_prefill_size=flags.get("chunked_prefill_size"),
            disable_cuda_graph=bool(flags.get("disable_cuda_graph")),
            mamba_full_memory_ratio=flags.get("mamba_full_memory_ratio"),
            speculative=True,
        )
        verdicts[rung["name"]] = memory.plan_memory(A6000_MIB, _shape("Qwen3.6-27B"), _shape("Qwen3.6-27B-DFlash"), env).verdict
    assert verdicts == {
        "production": memory.VERDICT_POOL,
        "attempt-2": memory.VERDICT_DECODE_GRAPH,
        "attempt-3": memory.VERDICT_PIECEWISE_GRAPH,
        "graphs": memory.VERDICT_DECODE_GRAPH,
        "balanced": memory.VERDICT_OK,
    }
