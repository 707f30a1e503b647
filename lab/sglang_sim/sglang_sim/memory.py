"""Per-GPU memory rule of the SGLang simulator (a SIMULATION, not SGLang's own arithmetic).

Real SGLang sizes its pools from what the CUDA allocator reports after loading weights; the
lab has no GPU, so this module replays the same budget on paper. It is pure (no I/O) so
that the calibration to the field notes is a unit test.

All sizes are per GPU (per tensor-parallel rank) in GiB; SGLang prints GiB labelled "GB".

1. overhead  O = CUDA context (0.75) + NCCL buffers when TP > 1 (0.25)
2. weights   W = (target params + draft params) x dtype bytes / TP
3. pool      R = G x mem_fraction_static - O - W        (R <= 0: not enough memory)
   split by r = mamba_full_memory_ratio (default 0.9): mamba share R x r / (1 + r), KV share
   the rest.
4. recurrent state per request (GDN layers, sharded by TP):
   S = linear layers x (conv_dim/TP x (kernel - 1) x dtype bytes + v_heads/TP x k_dim x v_dim x ssm bytes)
   and with speculative decoding each slot also keeps one intermediate state per draft token:
   slot = S x (1 + D), D = --speculative-num-draft-tokens (default: the drafter's block_size).
   Slots allocated = floor(mamba share / slot), the rest of R goes to the KV pool; the pool must
   hold max_running_requests + 1 slots (the +1 is SGLang's padding slot). max_running_requests defaults to 48 with
   speculative decoding, as SGLang does; without it, to what the pool holds.
5. KV bytes per token = full-attention layers x max(1, kv_heads/TP) x head_dim x 2 (K, V) x kv bytes,
   plus the same for the drafter's layers. max_total_num_tokens = floor(KV pool / that), capped by
   --max-total-tokens; the
   pool must hold at least one request at full --context-length.
6. outside the pool (what is left of G after the pools, about G x (1 - mem_fraction_static)):
   workspace = 0.5 + chunked_prefill x hidden x 2 B x 28, then the decode CUDA graphs
   (unless --disable-cuda-graph) = 0.5 + 0.4 with a drafter + bs x (1 + D) x hidden x 2 B x 256,
   then, for hybrid models, the piecewise (extend) CUDA graphs, which --disable-cuda-graph does
   NOT turn off (only --disable-piecewise-cuda-graph does) = 0.4 + chunked_prefill x hidden x 2 B x 24.
   Each capture that does not fit is a CUDA out-of-memory during graph capture.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

GIB = 1 << 30
MIB = 1 << 20

CUDA_CONTEXT_GIB = 0.75
NCCL_GIB = 0.25
DEFAULT_MAMBA_FULL_MEMORY_RATIO = 0.9
DEFAULT_MEM_FRACTION_STATIC = 0.88
SPEC_DEFAULT_MAX_RUNNING_REQUESTS = 48
DEFAULT_NUM_DRAFT_TOKENS = 16
MAX_RUNNING_REQUESTS_CAP = 4096

WORKSPACE_FIXED_GIB = 0.5
WORKSPACE_BYTES_PER_TOKEN_HIDDEN = 2 * 28
DECODE_GRAPH_FIXED_GIB = 0.5
DECODE_GRAPH_DRAFT_GIB = 0.4
DECODE_GRAPH_BYTES_PER_TOKEN_HIDDEN = 2 * 256
PIECEWISE_GRAPH_FIXED_GIB = 0.4
PIECEWISE_GRAPH_BYTES_PER_TOKEN_HIDDEN = 2 * 24

DTYPE_BYTES = {"bfloat16": 2, "float16": 2, "half": 2, "float32": 4, "float": 4, "fp8_e4m3": 1, "fp8_e5m2": 1}

VERDICT_OK = "ok"
VERDICT_POOL = "pool"
VERDICT_DECODE_GRAPH = "decode_graph"
VERDICT_PIECEWISE_GRAPH = "piecewise_graph"


@dataclass(frozen=True)
class ModelShape:  # pylint: disable=too-many-instance-attributes
    """The facts of one config.json that the rule reads."""

    num_parameters: int
    dtype_bytes: int
    hidden_size: int
    full_attention_layers: int
    kv_heads: int
    head_dim: int
    linear_layers: int = 0
    linear_key_heads: int = 0
    linear_value_heads: int = 0
    linear_key_head_dim: int = 0
    linear_value_head_dim: int = 0
    conv_kernel: int = 4
    ssm_dtype_bytes: int = 4
    block_size: Optional[int] = None
    context_length: int = 32768

    @property
    def is_hybrid(self) -> bool:
        return self.linear_layers > 0


def _layer_kinds(cfg: dict) -> list:
    if isinstance(cfg.get("layer_types"), list):
        return ["full" if "full" in str(kind) else "linear" for kind in cfg["layer_types"]]
    layers = int(cfg["num_hidden_layers"])
    interval = cfg.get("full_attention_interval")
    if not interval:
        return ["full"] * layers
    return ["full" if (i + 1) % int(interval) == 0 else "linear" for i in range(layers)]


def shape_from_config(cfg: dict) -> ModelShape:
    """Reads an HF-style (hybrid) config dict; KeyError names a missing field."""
    kinds = _layer_kinds(cfg)
    heads = int(cfg.get("num_attention_heads", 1))
    hidden = int(cfg["hidden_size"])
    return ModelShape(
        num_parameters=int(cfg["num_parameters"]),
        dtype_bytes=DTYPE_BYTES[str(cfg.get("torch_dtype", "bfloat16"))],
        hidden_size=hidden,
        full_attention_layers=kinds.count("full"),
        kv_heads=int(cfg.get("num_key_value_heads", heads)),
        head_dim=int(cfg.get("head_dim") or hidden // heads),
        linear_layers=kinds.count("linear"),
        linear_key_heads=int(cfg.get("linear_num_key_heads", 0)),
        linear_value_heads=int(cfg.get("linear_num_value_heads", 0)),
        linear_key_head_dim=int(cfg.get("linear_key_head_dim", 0)),
        linear_value_head_dim=int(cfg.get("linear_value_head_dim", 0)),
        conv_kernel=int(cfg.get("linear_conv_kernel_dim", 4)),
        ssm_dtype_bytes=DTYPE_BYTES[str(cfg.get("mamba_ssm_dtype", "float32"))],
        block_size=cfg.get("block_size"),
        context_length=int(cfg.get("max_position_embeddings", 32768)),
    )


@dataclass(frozen=True)
class Envelope:  # pylint: disable=too-many-instance-attributes
    """The launch flags that matter for memory (None = SGLang's default)."""

    tp_size: int = 1
    mem_fraction_static: Optional[float] = None
    context_length: Optional[int] = None
    max_running_requests: Optional[int] = None
    max_total_tokens: Optional[int] = None
    chunked_prefill_size: Optional[int] = None
    cuda_graph_max_bs: Optional[int] = None
    disable_cuda_graph: bool = False
    disable_piecewise_cuda_graph: bool = False
    mamba_full_memory_ratio: Optional[float] = None
    speculative: bool = False
    num_draft_tokens: Optional[int] = None
    kv_cache_dtype: str = "auto"


@dataclass
class MemoryPlan:  # pylint: disable=too-many-instance-attributes
    """Every number of the rule, per GPU, plus the verdict and where start-up stops."""

    gpu_mem_gib: float
    mem_fraction_static: float
    overhead_gib: float
    target_weights_gib: float
    draft_weights_gib: float
    pool_budget_gib: float
    mamba_share_gib: float = 0.0
    kv_share_gib: float = 0.0
    mamba_slot_bytes: int = 0
    mamba_state_bytes: int = 0
    mamba_conv_bytes: int = 0
    mamba_ssm_bytes: int = 0
    mamba_slots: int = 0
    required_mamba_slots: int = 0
    kv_bytes_per_token: int = 0
    target_kv_bytes_per_token: int = 0
    max_total_num_tokens: int = 0
    context_length: int = 0
    max_running_requests: int = 0
    num_draft_tokens: int = 0
    chunked_prefill_size: int = 0
    cuda_graph_bs: int = 0
    avail_after_pool_gib: float = 0.0
    workspace_gib: float = 0.0
    decode_graph_gib: float = 0.0
    piecewise_graph_gib: float = 0.0
    decode_graph: bool = True
    piecewise_graph: bool = False
    verdict: str = VERDICT_OK
    reason: str = ""
    notes: list = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.verdict == VERDICT_OK

    @property
    def weights_gib(self) -> float:
        return self.target_weights_gib + self.draft_weights_gib


def _per_rank(heads: int, tp_size: int) -> int:
    # SGLang replicates KV heads when there are fewer of them than TP ranks
    return max(1, heads // tp_size)


def kv_bytes_per_token(shape: ModelShape, tp_size: int, kv_dtype_bytes: int) -> int:
    return shape.full_attention_layers * _per_rank(shape.kv_heads, tp_size) * shape.head_dim * 2 * kv_dtype_bytes


def recurrent_state_bytes(shape: ModelShape, tp_size: int) -> tuple:
    """(conv bytes, ssm bytes) of one request's GDN state on one rank."""
    if not shape.is_hybrid:
        return 0, 0
    conv_dim = (2 * shape.linear_key_heads * shape.linear_key_head_dim + shape.linear_value_heads * shape.linear_value_head_dim) // tp_size
    conv = shape.linear_layers * conv_dim * (shape.conv_kernel - 1) * shape.dtype_bytes
    v_heads = _per_rank(shape.linear_value_heads, tp_size)
    ssm = shape.linear_layers * v_heads * shape.linear_key_head_dim * shape.linear_value_head_dim * shape.ssm_dtype_bytes
    return conv, ssm


def default_chunked_prefill_size(gpu_mem_gib: float) -> int:
    # SGLang picks a smaller prefill chunk on smaller cards
    return 4096 if gpu_mem_gib < 64 else 8192


def _kv_dtype_bytes(env: Envelope, shape: ModelShape) -> int:
    if env.kv_cache_dtype in ("auto", None):
        return shape.dtype_bytes
    return DTYPE_BYTES.get(env.kv_cache_dtype, shape.dtype_bytes)


def _start_plan(gpu_mem_mib: float, target: ModelShape, draft: Optional[ModelShape], env: Envelope) -> MemoryPlan:
    gpu = gpu_mem_mib / 1024.0
    mfs = env.mem_fraction_static if env.mem_fraction_static is not None else DEFAULT_MEM_FRACTION_STATIC
    overhead = CUDA_CONTEXT_GIB + (NCCL_GIB if env.tp_size > 1 else 0.0)
    target_w = target.num_parameters * target.dtype_bytes / env.tp_size / GIB
    draft_w = draft.num_parameters * draft.dtype_bytes / env.tp_size / GIB if draft else 0.0
    return MemoryPlan(
        gpu_mem_gib=gpu,
        mem_fraction_static=mfs,
        overhead_gib=overhead,
        target_weights_gib=target_w,
        draft_weights_gib=draft_w,
        pool_budget_gib=gpu * mfs - overhead - target_w - draft_w,
        context_length=env.context_length or target.context_length,
        chunked_prefill_size=env.chunked_prefill_size or default_chunked_prefill_size(gpu),
        decode_graph=not env.disable_cuda_graph,
        piecewise_graph=target.is_hybrid and not env.disable_piecewise_cuda_graph,
    )


def _size_pools(plan: MemoryPlan, target: ModelShape, draft: Optional[ModelShape], env: Envelope) -> None:
    ratio = env.mamba_full_memory_ratio if env.mamba_full_memory_ratio is not None else DEFAULT_MAMBA_FULL_MEMORY_RATIO
    speculative = env.speculative
    draft_block = (draft.block_size if draft else None) or DEFAULT_NUM_DRAFT_TOKENS
    plan.num_draft_tokens = (env.num_draft_tokens or draft_block) if speculative else 0
    budget = max(plan.pool_budget_gib, 0.0)
    plan.mamba_share_gib = budget * ratio / (1 + ratio) if target.is_hybrid else 0.0
    plan.mamba_conv_bytes, plan.mamba_ssm_bytes = recurrent_state_bytes(target, env.tp_size)
    plan.mamba_state_bytes = plan.mamba_conv_bytes + plan.mamba_ssm_bytes
    plan.mamba_slot_bytes = plan.mamba_state_bytes * (1 + plan.num_draft_tokens)
    if target.is_hybrid:
        plan.mamba_slots = int(plan.mamba_share_gib * GIB // plan.mamba_slot_bytes)
    # like SGLang, what the whole state slots do not use goes to the KV pool
    plan.kv_share_gib = budget - plan.mamba_slots * plan.mamba_slot_bytes / GIB

    kv_bytes = _kv_dtype_bytes(env, target)
    plan.target_kv_bytes_per_token = kv_bytes_per_token(target, env.tp_size, kv_bytes)
    plan.kv_bytes_per_token = plan.target_kv_bytes_per_token + (kv_bytes_per_token(draft, env.tp_size, kv_bytes) if draft else 0)
    plan.max_total_num_tokens = int(plan.kv_share_gib * GIB // plan.kv_bytes_per_token)
    if env.max_total_tokens:
        plan.max_total_num_tokens = min(plan.max_total_num_tokens, env.max_total_tokens)

    if env.max_running_requests:
        plan.max_running_requests = env.max_running_requests
    elif speculative:
        plan.max_running_requests = SPEC_DEFAULT_MAX_RUNNING_REQUESTS
        plan.notes.append(f"max_running_requests is unset; speculative decoding defaults it to {SPEC_DEFAULT_MAX_RUNNING_REQUESTS}")
    else:
        by_tokens = max(plan.max_total_num_tokens // 2, 1)
        by_state = plan.mamba_slots - 1 if target.is_hybrid else MAX_RUNNING_REQUESTS_CAP
        plan.max_running_requests = max(1, min(by_tokens, by_state, MAX_RUNNING_REQUESTS_CAP))
    plan.required_mamba_slots = plan.max_running_requests + 1 if target.is_hybrid else 0


def _pool_failure(plan: MemoryPlan) -> str:
    if plan.pool_budget_gib <= 0:
        return (
            f"weights ({plan.weights_gib:.2f} GiB) and overhead ({plan.overhead_gib:.2f} GiB) leave nothing of "
            f"{plan.mem_fraction_static} x {plan.gpu_mem_gib:.2f} GiB for the pools"
        )
    if plan.mamba_slots < plan.required_mamba_slots:
        need = plan.required_mamba_slots * plan.mamba_slot_bytes / GIB
        return (
            f"recurrent-state pool holds {plan.mamba_slots} slots of {plan.mamba_slot_bytes / MIB:.1f} MiB "
            f"({plan.mamba_share_gib:.2f} GiB) but max_running_requests={plan.max_running_requests} needs "
            f"{plan.required_mamba_slots} ({need:.2f} GiB)"
        )
    if plan.max_total_num_tokens < plan.context_length:
        return (
            f"KV pool holds {plan.max_total_num_tokens} tokens ({plan.kv_share_gib:.2f} GiB) but one request "
            f"at context_length={plan.context_length} needs {plan.context_length}"
        )
    return ""


def _size_graphs(plan: MemoryPlan, target: ModelShape, draft: Optional[ModelShape], env: Envelope) -> None:
    hidden = target.hidden_size
    plan.cuda_graph_bs = env.cuda_graph_max_bs or min(plan.max_running_requests, SPEC_DEFAULT_MAX_RUNNING_REQUESTS)
    tokens_per_step = plan.cuda_graph_bs * (1 + plan.num_draft_tokens)
    plan.workspace_gib = WORKSPACE_FIXED_GIB + plan.chunked_prefill_size * hidden * WORKSPACE_BYTES_PER_TOKEN_HIDDEN / GIB
    plan.decode_graph_gib = (
        DECODE_GRAPH_FIXED_GIB + (DECODE_GRAPH_DRAFT_GIB if draft else 0.0) + tokens_per_step * hidden * DECODE_GRAPH_BYTES_PER_TOKEN_HIDDEN / GIB
    )
    plan.piecewise_graph_gib = PIECEWISE_GRAPH_FIXED_GIB + plan.chunked_prefill_size * hidden * PIECEWISE_GRAPH_BYTES_PER_TOKEN_HIDDEN / GIB
    used = plan.max_total_num_tokens * plan.kv_bytes_per_token / GIB + plan.mamba_slots * plan.mamba_slot_bytes / GIB
    plan.avail_after_pool_gib = plan.gpu_mem_gib - plan.overhead_gib - plan.weights_gib - used


def _graph_failure(plan: MemoryPlan) -> tuple:
    need = plan.workspace_gib
    if plan.decode_graph:
        need += plan.decode_graph_gib
        if need > plan.avail_after_pool_gib:
            return VERDICT_DECODE_GRAPH, f"decode CUDA graphs need {need:.2f} GiB outside the pool, {plan.avail_after_pool_gib:.2f} GiB is free"
    if plan.piecewise_graph:
        need += plan.piecewise_graph_gib
        if need > plan.avail_after_pool_gib:
            return VERDICT_PIECEWISE_GRAPH, f"piecewise CUDA graphs need {need:.2f} GiB outside the pool, {plan.avail_after_pool_gib:.2f} GiB is free"
    return VERDICT_OK, ""


def plan_memory(gpu_mem_mib: float, target: ModelShape, draft: Optional[ModelShape], env: Envelope) -> MemoryPlan:
    """Applies the rule to one GPU of gpu_mem_mib MiB; the first stage that does not fit sets the verdict."""
    plan = _start_plan(gpu_mem_mib, target, draft, env)
    _size_pools(plan, target, draft, env)
    reason = _pool_failure(plan)
    if reason:
        plan.verdict, plan.reason = VERDICT_POOL, reason
        return plan
    _size_graphs(plan, target, draft, env)
    plan.verdict, plan.reason = _graph_failure(plan)
    return plan
