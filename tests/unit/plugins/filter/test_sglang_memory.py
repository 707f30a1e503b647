# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Memory-fit planner: hand-worked arithmetic and the field notes' data points.

The planner follows SGLang's own accounting (model_runner_kv_cache_mixin.py, pool_configurator.py;
see the filter's module docstring). The lab's SGLang simulator (lab/sglang_sim/memory.py,
``plan_memory()``) uses its own simplified, calibrated rule; the two are independent and are not
expected to agree on intermediate numbers, only on the field notes' verdicts.
"""

from __future__ import annotations

import json
import pathlib

import pytest

from ansible.errors import AnsibleFilterError
from ansible_collections.ddtree.sglang.plugins.filter.sglang_memory import (
    FilterModule,
    sglang_memory_plan,
    sglang_memory_recommend,
    sglang_memory_summary,
)

GIB = 1 << 30
MIB = 1 << 20


def _lab_models():
    here = pathlib.Path(__file__).resolve()
    for parent in here.parents:
        models = parent / "lab" / "models"
        if (models / "Qwen3.6-27B" / "config.json").is_file():
            return models
    return None


LAB_MODELS = _lab_models()
needs_lab = pytest.mark.skipif(LAB_MODELS is None, reason="lab/models not in this copy of the collection")


@pytest.fixture(name="target")
def fixture_target():
    return json.loads((LAB_MODELS / "Qwen3.6-27B" / "config.json").read_text())


@pytest.fixture(name="draft")
def fixture_draft():
    return json.loads((LAB_MODELS / "Qwen3.6-27B-DFlash" / "config.json").read_text())


CT129_GPUS = {"name": "NVIDIA RTX A6000", "count": 2, "memory_total_mib": 49140, "compute_cap": "8.6"}
CT200_GPUS = {"name": "NVIDIA RTX PRO 6000 Blackwell Workstation Edition", "count": 8, "memory_total_mib": 97887, "compute_cap": "12.0"}
DDTREE = {"speculative_algorithm": "DDTREE", "speculative_draft_model_path": "/root/models/Qwen3.6-27B-DFlash", "speculative_ddtree_budget": 16}

TINY = {
    "num_hidden_layers": 8,
    "full_attention_interval": 4,  # layers 3 and 7 full, 6 linear
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 128,
    "linear_num_key_heads": 2,
    "linear_num_value_heads": 4,
    "linear_key_head_dim": 64,
    "linear_value_head_dim": 64,
    "linear_conv_kernel_dim": 4,
    "torch_dtype": "bfloat16",
    "num_parameters": 2**30,
    "max_position_embeddings": 65536,
}


def test_hand_worked_tiny_hybrid_model():
    envelope = {"tp_size": 1, "mem_fraction_static": 0.8, "context_length": 8192, "mamba_full_memory_ratio": 1.0}
    gpu = {"count": 1, "gpus": [{"index": 0, "memory_total_mib": 10240}]}  # gpu_facts shape, 10 GiB
    plan = sglang_memory_plan(envelope, TINY, gpu, cuda_context_gib=1.0, reserve_gib=0.5)

    before_load = 10 * GIB - 1 * GIB  # 9663676416: no NCCL at TP 1
    static = int(before_load * 0.8)  # 7730941132 (7.2 GiB)
    weights = 2**30 * 2  # 1 Gi parameters x bf16 = 2147483648
    rest = static - weights  # 5583457484
    cell = 2 * (128 + 128) * 2 * 2  # kv heads x (k + v dim) x 2 full layers x 2 B = 2048
    conv = (2 * 2 * 64 + 4 * 64) * (4 - 1) * 2  # conv_dim 512 x (kernel - 1) x bf16 = 3072
    temporal = 4 * 64 * 64 * 4  # v heads x k dim x v dim x fp32 = 65536
    state = (conv + temporal) * 6  # 6 linear layers = 411648
    slots = int(rest * 1.0 / (1 + 1.0)) // state  # ratio 1: half the rest -> 6781 slots
    tokens = (rest - slots * state) // cell  # 2792072396 // 2048 = 1363316
    assert (before_load, static, rest, cell, state, slots, tokens) == (9663676416, 7730941132, 5583457484, 2048, 411648, 6781, 1363316)

    assert plan["available_before_load_bytes"] == before_load
    assert plan["static_budget_bytes"] == static
    assert plan["target_weights_bytes"] == weights
    assert plan["rest_after_weights_bytes"] == rest
    assert (plan["full_attention_layers"], plan["linear_attention_layers"]) == (2, 6)
    assert plan["kv_bytes_per_token"] == cell
    assert plan["state_bytes_per_request"] == state
    assert plan["state_pool_slots"] == slots
    assert plan["max_total_num_tokens"] == tokens
    # no max_running_requests: init_memory's min(max(tokens / context * 512, 2048), 4096) = 4096,
    # capped by the state pool at slots // 3 (radix cache on) = 2260
    assert plan["max_running_requests_effective"] == 6781 // 3 == 2260
    # outside the pool: 9 GiB x 0.2 = 1932735284, minus the 0.5 GiB reserve
    assert plan["outside_pool_bytes"] == before_load - static == 1932735284
    assert plan["headroom_bytes"] == 1932735284 - GIB // 2
    assert plan["fits"] and plan["reasons"] == []
    assert plan["gib"]["static_budget"] == 7.2


@needs_lab
def test_hand_worked_per_token_and_per_request_sizes_of_qwen36(target, draft):
    plan2 = sglang_memory_plan(dict(DDTREE, tp_size=2, max_running_requests=4, context_length=32768, mem_fraction_static=0.85), target, CT129_GPUS, draft)
    # TP 2: conv (2*16*128 + 32*128)/2 = 4096 ch x 3 x 2 B = 24576; ssm 32/2 x 128 x 128 x 4 B = 1048576
    assert plan2["state_bytes_per_request"] == (24576 + 1048576) * 48 == 51511296
    # KV: 16 full layers x 4/2 heads x (256 + 256) x 2 B = 32768; DFlash 5 x 8/2 x (128 + 128) x 2 B = 10240
    assert plan2["target_kv_bytes_per_token"] == 32768
    assert plan2["draft_kv_bytes_per_token"] == 10240
    assert plan2["speculative_num_draft_tokens"] == 16
    # weights: 26.9e9 x 2 B / 2 ranks; the drafter 1.6e9 x 2 B / 2
    assert plan2["target_weights_bytes"] == 26_900_000_000
    assert plan2["draft_weights_bytes"] == 1_600_000_000

    plan8 = sglang_memory_plan(dict(DDTREE, tp_size=8), target, CT200_GPUS, draft)
    # TP 8: conv 8192/8 x 3 x 2 = 6144; ssm 4 x 128 x 128 x 4 = 262144; KV heads max(1, 4 // 8) = 1
    assert plan8["state_bytes_per_request"] == (6144 + 262144) * 48 == 12877824
    assert plan8["kv_bytes_per_token"] == 16 * 1 * 512 * 2 + 5 * 1 * 256 * 2 == 18944


@needs_lab
def test_ct129_production_envelope_does_not_fit(target, draft):
    """Field notes attempt 1: 0.88, context 131072, max running requests unset -> 'Not enough memory'."""
    envelope = dict(DDTREE, tp_size=2, mem_fraction_static=0.88, context_length=131072)
    plan = sglang_memory_plan(envelope, target, CT129_GPUS, draft)
    assert not plan["fits"]
    assert plan["max_running_requests"] == 48  # SGLang's default with speculative decoding
    # 48 requests x 16 draft tokens of intermediate state alone (36.84 GiB) exceed the 16.30 GiB left
    assert plan["spec_state_bytes"] == 51511296 * 48 * 16
    assert plan["gib"]["rest_after_weights"] == 16.3
    assert plan["max_total_num_tokens"] == 0
    assert "Not enough memory" in plan["reasons"][0]
    assert "mem_fraction_static=0.88" in plan["reasons"][0]


@needs_lab
def test_ct129_fourth_attempt_fits(target, draft):
    """Field notes attempt 4: 0.85, context 32768, 4 running, ratio 0.5, extra_buffer -> healthy."""
    envelope = dict(
        DDTREE,
        tp_size=2,
        mem_fraction_static=0.85,
        context_length=32768,
        max_running_requests=4,
        disable_cuda_graph=True,
        mamba_full_memory_ratio=0.5,
        mamba_scheduler_strategy="extra_buffer",
    )
    plan = sglang_memory_plan(envelope, target, CT129_GPUS, draft)
    assert plan["fits"], plan["reasons"]
    assert plan["warnings"] == []
    assert plan["max_running_requests_effective"] == 4
    assert plan["state_pool_slots"] == 82
    assert plan["max_total_num_tokens"] == 196815
    assert plan["full_context_requests"] == 6  # 196815 // 32768
    assert plan["gib"]["headroom"] > 0


@needs_lab
def test_ct129_second_attempt_leaves_no_room_outside_the_pool(target, draft):
    """Field notes attempt 2 (0.95) sized its pools, then died later: the planner flags the reserve."""
    envelope = dict(DDTREE, tp_size=2, mem_fraction_static=0.95, context_length=32768, max_running_requests=4)
    plan = sglang_memory_plan(envelope, target, CT129_GPUS, draft)
    assert plan["max_total_num_tokens"] >= 32768
    assert not plan["fits"]
    assert "reserve" in plan["reasons"][0]


@needs_lab
def test_ct200_production_envelope_fits(target, draft):
    """ct200: 8 x 96 GB, TP 8, 0.88, context 131072 -> healthy."""
    envelope = dict(DDTREE, tp_size=8, mem_fraction_static=0.88, context_length=131072)
    plan = sglang_memory_plan(envelope, target, CT200_GPUS, draft)
    assert plan["fits"], plan["reasons"]
    assert plan["max_running_requests_effective"] == 48
    assert plan["max_total_num_tokens"] == 2021949
    assert plan["state_pool_slots"] == 2676


@needs_lab
def test_gpu_facts_and_gpu_class_give_the_same_plan(target, draft):
    facts = {"count": 2, "gpus": [{"index": i, "memory_total_mib": 49140, "compute_cap": "8.6"} for i in range(2)]}
    envelope = dict(DDTREE, tp_size=2, mem_fraction_static=0.85, context_length=32768, max_running_requests=4)
    assert sglang_memory_plan(envelope, target, facts, draft) == sglang_memory_plan(envelope, target, CT129_GPUS, draft)


@needs_lab
def test_too_few_gpus_is_a_reason(target, draft):
    plan = sglang_memory_plan(dict(DDTREE, tp_size=8), target, CT129_GPUS, draft)
    assert any("needs 8 GPUs" in r for r in plan["reasons"])


@needs_lab
def test_recommend_ct129_at_085_wants_four_requests(target, draft):
    envelope = dict(DDTREE, tp_size=2, mamba_full_memory_ratio=0.5)
    rec = sglang_memory_recommend(envelope, target, CT129_GPUS, draft, mem_fraction_static=0.85, min_running_requests=4)
    assert rec["fits"]
    assert (rec["context_length"], rec["max_running_requests"]) == (32768, 5)
    assert rec["tried"] == [262144, 131072, 65536]
    assert rec["envelope"]["mem_fraction_static"] == 0.85
    assert rec["envelope"]["context_length"] == 32768
    assert rec["plan"]["max_total_num_tokens"] >= 32768 * 5


@needs_lab
def test_recommend_ct200_production_fraction(target, draft):
    rec = sglang_memory_recommend(dict(DDTREE, tp_size=8), target, CT200_GPUS, draft, mem_fraction_static=0.88)
    assert rec["fits"] and rec["context_length"] == 262144 and rec["max_running_requests"] == 8


def test_recommend_reports_when_nothing_fits():
    gpu = {"count": 1, "memory_total_mib": 2048}  # 2 GiB cannot hold 2 GiB of weights
    rec = sglang_memory_recommend({"tp_size": 1}, TINY, gpu, mem_fraction_static=0.9)
    assert not rec["fits"] and rec["envelope"] is None
    assert "Not enough memory" in rec["plan"]["reasons"][0]


def test_weights_bytes_option_replaces_num_parameters():
    config = {k: v for k, v in TINY.items() if k != "num_parameters"}
    with pytest.raises(AnsibleFilterError, match="target_weights_bytes"):
        sglang_memory_plan({"tp_size": 1}, config, {"memory_total_mib": 10240})
    plan = sglang_memory_plan({"tp_size": 1}, config, {"memory_total_mib": 10240}, target_weights_bytes=3 * GIB)
    assert plan["target_weights_bytes"] == 3 * GIB


@pytest.mark.parametrize(
    "args, match",
    [
        ((["--tp-size"], TINY, {"memory_total_mib": 1}), "envelope must be a dict"),
        (({"mem_fraction_static": 1.5}, TINY, {"memory_total_mib": 1}), r"in \(0, 1\)"),
        (({}, TINY, {"name": "x"}), "memory_total_mib"),
        (({"tp_size": 3}, TINY, {"memory_total_mib": 10240, "count": 4}), "not divisible by tp_size=3"),
    ],
)
def test_bad_inputs_are_refused(args, match):
    with pytest.raises(AnsibleFilterError, match=match):
        sglang_memory_plan(*args)


def test_unknown_option_is_refused():
    with pytest.raises(AnsibleFilterError, match="unknown option"):
        sglang_memory_plan({}, TINY, {"memory_total_mib": 10240}, reserve=1)


def test_filters_are_registered():
    assert set(FilterModule().filters()) == {"sglang_memory_plan", "sglang_memory_recommend", "sglang_memory_summary"}


@needs_lab
def test_recommend_tries_fractions_in_order(target, draft):
    """At 0.95 nothing fits however short the context (the reserve outside the pool); 0.9 does."""
    envelope = dict(DDTREE, tp_size=2, context_length=32768, max_running_requests=4, mem_fraction_static=0.95)
    rec = sglang_memory_recommend(envelope, target, CT129_GPUS, draft, mem_fraction_static=[0.95, 0.9, 0.88], min_running_requests=4)
    assert rec["fits"] and rec["fractions_tried"] == [0.95, 0.9]
    assert (rec["mem_fraction_static"], rec["context_length"], rec["max_running_requests"]) == (0.9, 32768, 4)
    nothing = sglang_memory_recommend(envelope, target, CT129_GPUS, draft, mem_fraction_static=[0.97, 0.96])
    assert not nothing["fits"] and nothing["fractions_tried"] == [0.97, 0.96]
    assert nothing["mem_fraction_static"] == 0.97  # the plan that shows why is the first fraction's
    with pytest.raises(AnsibleFilterError, match="empty list"):
        sglang_memory_recommend(envelope, target, CT129_GPUS, draft, mem_fraction_static=[])


def _repo_file(*parts):
    here = pathlib.Path(__file__).resolve()
    for parent in here.parents:
        if parent.joinpath(*parts).is_file():
            return parent.joinpath(*parts)
    return None


LADDER = _repo_file("lab", "scenarios", "field-notes-ladder.yml")
CT129_GROUP = _repo_file("inventory", "group_vars", "gpu_a6000_tp2.yml")


@needs_lab
@pytest.mark.skipif(LADDER is None or CT129_GROUP is None, reason="lab scenarios or inventory not in this copy")
def test_field_notes_ladder_on_ct129(target, draft):
    """The rungs molecule/ladder deploys: the planner skips the field notes' attempts 1-3 and lets
    the graphs rung through (its graph capture fails at run time, which only the verdict sees)."""
    yaml = pytest.importorskip("yaml")
    base = yaml.safe_load(CT129_GROUP.read_text())["sglang_service_envelope"]
    rungs = yaml.safe_load(LADDER.read_text())["sglang_service_envelope_ladder"]
    plans = {}
    for rung in rungs:
        # the role's patch: combine, then a null drops the flag
        envelope = {k: v for k, v in dict(base, **rung["envelope"]).items() if v is not None}
        plans[rung["name"]] = sglang_memory_plan(envelope, target, CT129_GPUS, draft)
    assert [plans[n]["fits"] for n in ("production", "attempt-2", "attempt-3", "graphs", "balanced")] == [False, False, False, True, True]
    assert "Not enough memory" in plans["production"]["reasons"][0]
    assert plans["production"]["max_running_requests"] == 48
    assert all("reserve" in plans[n]["reasons"][0] for n in ("attempt-2", "attempt-3"))
    assert plans["balanced"]["max_running_requests_effective"] == 4


# The summary's text as the role's former Jinja (__sglang_service_memory_summary in vars/main.yml)
# rendered it on localhost for the same plans, recommendations and envelopes.
JINJA_SUMMARIES = json.loads((pathlib.Path(__file__).parent / "fixtures" / "jinja_reports.json").read_text())["memory_summary"]


@pytest.mark.parametrize("case", JINJA_SUMMARIES, ids=[f"case{i}" for i in range(len(JINJA_SUMMARIES))])
def test_summary_same_as_the_former_jinja(case):
    assert sglang_memory_summary(case["plan"], case["recommendation"], case["envelope"]) == case["expected"]


def test_summary_of_a_plan_with_an_error():
    assert sglang_memory_summary({"error": "no config.json", "fits": False}) == "No memory plan: no config.json."


def test_summary_of_the_hand_worked_plan():
    plan = sglang_memory_plan(
        {"tp_size": 1, "mem_fraction_static": 0.8, "context_length": 8192, "mamba_full_memory_ratio": 1.0},
        TINY,
        {"count": 1, "gpus": [{"index": 0, "memory_total_mib": 10240}]},
        cuda_context_gib=1.0,
        reserve_gib=0.5,
    )
    assert sglang_memory_summary(plan, {}, {}) == (
        "Per GPU (10.0 GiB, tp_size 1): static pool 7.2 GiB (mem_fraction_static 0.8 of the 9.0 GiB left by the "
        "CUDA context and NCCL); weights 2.0 GiB leave 5.2 GiB; KV cache 2048 bytes per token (2048 model + 0 "
        "drafter); recurrent state 0.4 MiB per running request; state pool 6781 slots (2.6 GiB); KV pool 1363316 "
        "tokens (2.6 GiB) = 166 requests at context_length 8192, 2260 running (max_running_requests unset); "
        "outside the pool 1.8 GiB for the drafter's 0.0 GiB and the 0.5 GiB reserve (activations, CUDA graphs): "
        "headroom 1.3 GiB."
    )


def test_summary_rejects_a_non_plan():
    with pytest.raises(AnsibleFilterError, match="plan must be"):
        sglang_memory_summary("plan")


H200 = {"name": "NVIDIA H200", "count": 1, "memory_total_mib": 143771, "compute_cap": "9.0"}


@needs_lab
def test_recommend_keeps_the_operators_context_on_one_h200(target, draft):
    """A new group: 1 x H200, Qwen3.6-27B with its DFlash drafter at 0.85 / 65536 does not fit as set
    (48 running requests' speculative state), but 7 requests fit at the context the operator asked for."""
    envelope = dict(DDTREE, tp_size=1, mem_fraction_static=0.85, context_length=65536, mamba_full_memory_ratio=0.5)
    plan = sglang_memory_plan(envelope, target, H200, draft)
    assert not plan["fits"] and plan["max_running_requests"] == 48
    rec = sglang_memory_recommend(envelope, target, H200, draft, mem_fraction_static=[0.85, 0.8, 0.75, 0.7])
    assert (
        rec["fits"],
        rec["kept_context"],
        rec["context_length"],
        rec["max_running_requests"],
        rec["mem_fraction_static"],
        rec["fractions_tried"],
        rec["tried"],
    ) == (True, True, 65536, 7, 0.85, [0.85], [])
    eight = sglang_memory_plan(dict(envelope, max_running_requests=8), target, H200, draft)
    assert not eight["fits"] or eight["max_total_num_tokens"] < 65536 * 8  # 7 is the most, not just some
    text = sglang_memory_summary(plan, rec, envelope)
    assert text.endswith(
        " At context_length 65536 as set, 7 running requests fit at mem_fraction_static 0.85 "
        "(--mem-fraction-static 0.85 --context-length 65536 --max-running-requests 7)."
    )
    assert "Largest that fits" not in text


@needs_lab
def test_recommend_proposes_a_shorter_context_only_when_not_one_request_fits(target, draft):
    """On ct129's two A6000s no fraction holds one request at the model's 262144 tokens with its
    KV and state: only then does the planner go shorter, starting below the operator's context."""
    envelope = dict(DDTREE, tp_size=2, mem_fraction_static=0.85, context_length=262144, mamba_full_memory_ratio=0.5)
    rec = sglang_memory_recommend(envelope, target, CT129_GPUS, draft, mem_fraction_static=0.85, min_running_requests=4)
    assert (rec["fits"], rec["kept_context"], rec["context_length"], rec["max_running_requests"], rec["tried"]) == (
        True,
        False,
        32768,
        5,
        [262144, 131072, 65536],
    )
    text = sglang_memory_summary(sglang_memory_plan(envelope, target, CT129_GPUS, draft), rec, envelope)
    assert (
        " Not one request fits at context_length 262144. Largest that fits: context_length 32768 x max_running_requests 5 at mem_fraction_static 0.85" in text
    )
