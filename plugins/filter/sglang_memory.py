# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Memory-fit planner: does an SGLang envelope fit the GPUs, and what is the largest one that does.

Over 400 lines with a reason: the plan follows SGLang's start-up accounting step by step (sglang_memory_plan, in
the order SGLang sizes weights, state pools, KV pool and requests), and the search for a fitting envelope
(sglang_memory_recommend) asks that plan; they share the constants and helpers above them.

Pure Python, controller side. The arithmetic re-derives SGLang's own start-up accounting (0.5.x,
hybrid GDN / mamba models, DFlash-style drafter); it does not import SGLang. The functions it
follows, by file (python/sglang/srt/...):

- model_executor/model_runner.py::ModelRunner.initialize: ``min_per_gpu_memory =
  init_torch_distributed()`` is the free memory *before* weights load (card minus CUDA context
  and NCCL buffers); it is the ``total_gpu_memory`` handed to ``init_memory_pool``.
- model_executor/model_runner_kv_cache_mixin.py::ModelRunnerKVCacheMixin.profile_max_num_token:
  ``rest = available_after_load - total_gpu_memory * (1 - mem_fraction_static)``, i.e.
  ``total * f - weights``; for hybrid models ``handle_max_mamba_cache`` takes its share first;
  then ``max_total_num_tokens = rest // cell_size``.
- same file, ``get_cell_size_per_token``: ``kv_heads_per_rank * (head_dim + v_head_dim) *
  layers * kv_dtype_bytes``, counting only the full-attention layers of a hybrid model
  (``mambaish.full_attention_layer_ids``); kv heads per rank is ``max(1, kv_heads // tp)``
  (configs/model_config.py::ModelConfig.get_num_kv_heads).
- model_executor/pool_configurator.py::DefaultPoolConfigurator.__init__ with
  speculative/dflash_utils.py::scale_kv_cell_size_per_token_for_dflash: a DFlash drafter's KV
  pool is budgeted in the same per-token cell (target cell + draft cell).
- same mixin, ``handle_max_mamba_cache``: with speculative decoding it first reserves
  ``mamba_cache_per_req * max_running_requests * speculative_num_draft_tokens`` (intermediate
  states), then sizes the state pool: ``--max-mamba-cache-size`` if set; else
  ``max_running_requests`` when the radix cache is disabled; else the share
  ``rest * r / (1 + r)`` with ``r = --mamba-full-memory-ratio``.
- configs/qwen3_next.py (``hybrid_gdn_params`` / ``mamba_cache_per_req``) and
  configs/mamba_utils.py::Mamba2CacheParams.mamba_cache_per_req: per request and rank, each
  linear-attention layer holds a conv window ``(2*k_heads*k_dim + v_heads*v_dim)/tp x
  (kernel - 1)`` in bf16 and a temporal state ``v_heads/tp x k_dim x v_dim`` in the ssm dtype
  (``SGLANG_MAMBA_SSM_DTYPE``, float32 by default).
- same mixin, ``init_memory`` / ``calculate_mamba_ratio``: ``max_num_reqs`` is capped at
  ``max_mamba_cache_size // ratio`` (1 without radix cache, else 3, plus 1 with the
  ``extra_buffer`` strategy and speculative decoding, plus 2 without); ``max_total_num_tokens <= 0``
  raises ``Not enough memory. Please try to increase --mem-fraction-static``.
- server_args.py::ServerArgs._handle_speculative_decoding: ``max_running_requests`` defaults
  to 48 with speculative decoding.

What SGLang measures at run time instead of computing (CUDA context, NCCL buffers, activations,
CUDA graph captures) is an explicit option here with a documented default; the drafter's weights
load after the target's pools are sized, so they come out of the ``1 - mem_fraction_static``
share together with that reserve.
"""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

GIB = 1 << 30
MIB = 1 << 20

DTYPE_BYTES = {
    "float32": 4,
    "fp32": 4,
    "float": 4,
    "bfloat16": 2,
    "bf16": 2,
    "float16": 2,
    "fp16": 2,
    "half": 2,
    "fp8_e4m3": 1,
    "fp8_e5m2": 1,
    "float8_e4m3fn": 1,
    "float8_e5m2": 1,
    "fp8": 1,
}

DEFAULTS = {
    # SGLang's measured quantities, made explicit (GiB per GPU)
    "cuda_context_gib": 0.75,  # CUDA context + allocator slack before any tensor
    "nccl_gib": 0.25,  # NCCL / custom all-reduce buffers, only when tp_size > 1
    "reserve_gib": 2.5,  # activations, sampler, CUDA graph and piecewise graph captures
    # SGLang's own defaults
    "mem_fraction_static": 0.88,
    "mamba_full_memory_ratio": 0.9,
    "spec_max_running_requests": 48,
    "page_size": 1,
}

PLAN_OPTIONS = frozenset(("cuda_context_gib", "nccl_gib", "reserve_gib", "target_weights_bytes", "draft_weights_bytes", "mamba_ssm_dtype"))


def _fail(msg):
    raise AnsibleFilterError(f"sglang_memory: {msg}")


def _text_config(config, what):
    if not isinstance(config, dict):
        _fail(f"{what} must be a dict (the model's config.json), got {type(config).__name__}")
    # multimodal wrappers (Qwen3.5/3.6 VL checkpoints) keep the language model under text_config
    inner = config.get("text_config")
    if isinstance(inner, dict):
        merged = dict(config)
        merged.update(inner)
        return merged
    return config


def _int(config, key, what, default=None):
    value = config.get(key, default)
    if value is None or isinstance(value, bool):
        _fail(f"{what} has no integer {key!r}")
    try:
        return int(value)
    except (TypeError, ValueError):
        _fail(f"{what}.{key} is not an integer: {value!r}")
    return None  # unreachable


def _dtype_bytes(name, what):
    if name is None:
        return 2
    key = str(name).lower().replace("torch.", "")
    if key not in DTYPE_BYTES:
        _fail(f"{what}: unknown dtype {name!r} (known: {', '.join(sorted(DTYPE_BYTES))})")
    return DTYPE_BYTES[key]


def _model_dtype_bytes(config, envelope, what):
    dtype = envelope.get("dtype")
    if dtype in (None, "auto"):
        dtype = config.get("torch_dtype", config.get("dtype"))
    return _dtype_bytes(dtype, what)


def _layer_split(config, what):
    """Return (full attention layer count, linear attention layer count)."""
    layers = _int(config, "num_hidden_layers", what)
    types = config.get("layer_types") or config.get("layers_block_type")
    if isinstance(types, list) and types:
        full = sum(1 for t in types if str(t) in ("full_attention", "attention"))
        linear = sum(1 for t in types if str(t) in ("linear_attention", "mamba", "gdn"))
        return full, linear
    interval = config.get("full_attention_interval")
    if interval:
        # Qwen3-Next: layer i is full attention when (i + 1) % interval == 0
        full = sum(1 for i in range(layers) if (i + 1) % int(interval) == 0)
        return full, layers - full
    return layers, 0


def _head_dim(config, what):
    if config.get("head_dim"):
        return int(config["head_dim"])
    return _int(config, "hidden_size", what) // _int(config, "num_attention_heads", what)


def _kv_cell_bytes(config, layers, tp, kv_bytes, what):
    # model_runner_kv_cache_mixin.py::get_cell_size_per_token (MHA/GQA branch),
    # model_config.py::get_num_kv_heads: max(1, kv_heads // tp); v_head_dim == head_dim for MHA
    kv_heads = _int(config, "num_key_value_heads", what, config.get("num_attention_heads"))
    head_dim = _head_dim(config, what)
    v_head_dim = int(config.get("v_head_dim") or head_dim)
    return max(1, kv_heads // tp) * (head_dim + v_head_dim) * layers * kv_bytes


def _state_bytes_per_request(config, linear_layers, tp, ssm_bytes, what):
    # configs/qwen3_next.py::hybrid_gdn_params + mamba_cache_per_req
    if linear_layers == 0:
        return 0
    k_heads = _int(config, "linear_num_key_heads", what)
    v_heads = _int(config, "linear_num_value_heads", what)
    k_dim = _int(config, "linear_key_head_dim", what)
    v_dim = _int(config, "linear_value_head_dim", what)
    kernel = _int(config, "linear_conv_kernel_dim", what)
    for name, heads in (("linear_num_key_heads", k_heads), ("linear_num_value_heads", v_heads)):
        if heads % tp:
            _fail(f"{what}.{name}={heads} is not divisible by tp_size={tp} (SGLang's divide() asserts)")
    conv_dim = 2 * k_heads * k_dim + v_heads * v_dim
    conv = (conv_dim // tp) * (kernel - 1) * 2  # CONV_DTYPE is bfloat16
    temporal = (v_heads // tp) * k_dim * v_dim * ssm_bytes
    return (conv + temporal) * linear_layers


def _weights_bytes(config, override, dtype_bytes, what):
    if override is not None:
        return int(override)
    params = config.get("num_parameters")
    if params is None:
        _fail(
            f"{what} has no num_parameters: pass the checkpoint size as {'draft' if 'draft' in what else 'target'}_weights_bytes (sum of its safetensors files)"
        )
    return int(params) * dtype_bytes


def _gpu_memory_bytes(gpu, tp):
    """(min memory of the GPUs used in bytes, GPU count) from gpu_facts output or a gpu_class dict."""
    if not isinstance(gpu, dict):
        _fail(f"gpu must be gpu_facts' result or a gpu class dict, got {type(gpu).__name__}")
    if isinstance(gpu.get("gpus"), list) and gpu["gpus"]:
        sizes = [g.get("memory_total_mib") for g in gpu["gpus"][:tp]]
        if any(s is None for s in sizes):
            _fail("gpu_facts reported a GPU without memory_total_mib")
        count = int(gpu.get("count", len(gpu["gpus"])))
        return int(min(int(s) for s in sizes)) * MIB, count
    if gpu.get("memory_total_mib") is None:
        _fail("gpu has neither gpus[].memory_total_mib (gpu_facts) nor memory_total_mib (gpu class)")
    return int(gpu["memory_total_mib"]) * MIB, int(gpu.get("count", 1))


def _num_draft_tokens(envelope, draft):
    if envelope.get("speculative_num_draft_tokens"):
        return int(envelope["speculative_num_draft_tokens"])
    # DFlash verifies one block of block_size tokens; DDTree a tree of speculative_ddtree_budget
    # nodes: take the larger (16 for the Qwen3.6 DFlash drafter with budget 16)
    candidates = [int(envelope.get("speculative_ddtree_budget") or 0)]
    if draft:
        candidates.append(int(draft.get("block_size") or 0))
    return max(candidates) or 1


def _gib(value):
    return round(value / GIB, 2)


def sglang_memory_plan(envelope, model_config, gpu, draft_config=None, **options):
    """Per-GPU memory plan of an SGLang envelope; see sglang_memory_plan.yml.

    SGLang's start-up accounting, one step a function in the order SGLang sizes things: the envelope's numbers,
    the budget before and after the weights, the cost of one token and one request, the pools, the requests they
    admit, then what does not fit. Each step adds its figures to ``s`` (the plan's scratch)."""
    if not isinstance(envelope, dict):
        _fail(f"envelope must be a dict of SGLang flags, got {type(envelope).__name__}")
    unknown = set(options) - PLAN_OPTIONS
    if unknown:
        _fail(f"unknown option(s) {', '.join(sorted(unknown))}; known: {', '.join(sorted(PLAN_OPTIONS))}")
    opt = dict(DEFAULTS)
    opt.update({k: v for k, v in options.items() if v is not None})
    target = _text_config(model_config, "model_config")
    draft = _text_config(draft_config, "draft_config") if draft_config else None
    s = {"reasons": [], "warnings": []}
    _plan_envelope(s, envelope, target, draft, opt)
    _plan_budget(s, envelope, gpu, target, draft, opt)
    _plan_cells(s, target, draft)
    _plan_pools(s, envelope)
    _plan_requests(s, envelope)
    _plan_verdict(s, opt)
    plan = {key: s[key] for key in PLAN_KEYS}
    plan["fits"] = not s["reasons"]
    plan["reasons"], plan["warnings"] = s["reasons"], s["warnings"]
    plan["gib"] = {k[: -len("_bytes")]: _gib(v) for k, v in plan.items() if k.endswith("_bytes")}
    return plan


# the plan's figures, in the order the plan lists them (then fits, reasons, warnings, gib)
PLAN_KEYS = (
    "tp_size", "mem_fraction_static", "context_length", "max_running_requests", "max_running_requests_effective",
    "speculative_num_draft_tokens", "full_attention_layers", "linear_attention_layers", "gpu_memory_bytes",
    "runtime_overhead_bytes", "available_before_load_bytes", "static_budget_bytes", "target_weights_bytes",
    "draft_weights_bytes", "rest_after_weights_bytes", "kv_bytes_per_token", "target_kv_bytes_per_token",
    "draft_kv_bytes_per_token", "state_bytes_per_request", "spec_state_bytes", "state_pool_slots", "state_pool_bytes",
    "kv_pool_bytes", "max_total_num_tokens", "full_context_requests", "outside_pool_bytes", "reserve_bytes", "headroom_bytes",
)  # fmt: skip


def _plan_envelope(s, envelope, target, draft, opt):
    """The envelope's numbers, with SGLang's defaults where it leaves them unset."""
    s["tp_size"] = int(envelope.get("tp_size") or envelope.get("tensor_parallel_size") or 1)
    f = float(envelope.get("mem_fraction_static") or opt["mem_fraction_static"])
    if not 0 < f < 1:
        _fail(f"mem_fraction_static must be in (0, 1), got {f}")
    s["mem_fraction_static"] = f
    s["page"] = int(envelope.get("page_size") or opt["page_size"])
    model_len = int(target.get("max_position_embeddings") or 0)
    context = int(envelope.get("context_length") or model_len or 0)
    if context <= 0:
        _fail("no context_length in the envelope and no max_position_embeddings in model_config")
    if model_len and context > model_len:
        s["warnings"].append(f"context_length {context} exceeds the model's max_position_embeddings {model_len}")
    s["context_length"] = context
    s["speculative"] = speculative = bool(envelope.get("speculative_algorithm"))
    s["requested_mrr"] = requested_mrr = envelope.get("max_running_requests")
    # server_args.py::_handle_speculative_decoding: 48 when speculative decoding leaves it unset
    s["max_running_requests"] = int(requested_mrr) if requested_mrr else (opt["spec_max_running_requests"] if speculative else None)
    s["speculative_num_draft_tokens"] = _num_draft_tokens(envelope, draft) if speculative else 0
    s["radix_off"] = bool(envelope.get("disable_radix_cache"))
    s["ratio_r"] = float(envelope.get("mamba_full_memory_ratio") or opt["mamba_full_memory_ratio"])


def _plan_budget(s, envelope, gpu, target, draft, opt):
    """The memory before the weights load, the static budget, the weights, and what is left for the pools."""
    tp = s["tp_size"]
    gpu_bytes, gpu_count = _gpu_memory_bytes(gpu, tp)
    if gpu_count < tp:
        s["reasons"].append(f"tp_size {tp} needs {tp} GPUs, the host has {gpu_count}")
    # model_runner.py::init_torch_distributed -> min_per_gpu_memory (before weights)
    overhead = int((opt["cuda_context_gib"] + (opt["nccl_gib"] if tp > 1 else 0)) * GIB)
    before_load = gpu_bytes - overhead
    dtype_bytes = _model_dtype_bytes(target, envelope, "model_config")
    kv_dtype = envelope.get("kv_cache_dtype")
    s["kv_bytes"] = dtype_bytes if kv_dtype in (None, "auto") else _dtype_bytes(kv_dtype, "kv_cache_dtype")
    s["ssm_bytes"] = _dtype_bytes(opt.get("mamba_ssm_dtype") or target.get("mamba_ssm_dtype") or "float32", "mamba_ssm_dtype")
    target_weights = _weights_bytes(target, opt.get("target_weights_bytes"), dtype_bytes, "model_config") // tp
    draft_weights = 0
    if draft:
        draft_weights = _weights_bytes(draft, opt.get("draft_weights_bytes"), _model_dtype_bytes(draft, {}, "draft_config"), "draft_config") // tp
    # profile_max_num_token: rest = (before_load - weights) - before_load * (1 - f)
    static_budget = int(before_load * s["mem_fraction_static"])
    s.update(
        gpu_memory_bytes=gpu_bytes,
        runtime_overhead_bytes=overhead,
        available_before_load_bytes=before_load,
        static_budget_bytes=static_budget,
        target_weights_bytes=target_weights,
        draft_weights_bytes=draft_weights,
        rest_after_weights_bytes=static_budget - target_weights,
    )


def _plan_cells(s, target, draft):
    """What one token of KV cache and one request's recurrent state cost per GPU."""
    tp = s["tp_size"]
    full_layers, linear_layers = _layer_split(target, "model_config")
    target_cell = _kv_cell_bytes(target, full_layers, tp, s["kv_bytes"], "model_config")
    draft_cell = 0
    if draft and s["speculative"]:
        # pool_configurator.py + dflash_utils.py::scale_kv_cell_size_per_token_for_dflash
        draft_cell = _kv_cell_bytes(draft, _int(draft, "num_hidden_layers", "draft_config"), tp, s["kv_bytes"], "draft_config")
    s.update(
        full_attention_layers=full_layers,
        linear_attention_layers=linear_layers,
        target_kv_bytes_per_token=target_cell,
        draft_kv_bytes_per_token=draft_cell,
        kv_bytes_per_token=target_cell + draft_cell,
        state_bytes_per_request=_state_bytes_per_request(target, linear_layers, tp, s["ssm_bytes"], "model_config"),
    )


def _plan_pools(s, envelope):
    """The speculative intermediate states, the state pool, then the KV pool from what is left."""
    state_per_req, mrr, cell = s["state_bytes_per_request"], s["max_running_requests"], s["kv_bytes_per_token"]
    rest = s["rest_after_weights_bytes"]
    spec_state = 0
    mamba_slots = 0
    if state_per_req:
        # handle_max_mamba_cache: intermediate states for verification first
        if s["speculative"]:
            spec_state = state_per_req * mrr * s["speculative_num_draft_tokens"]
            rest -= spec_state
        if envelope.get("max_mamba_cache_size"):
            mamba_slots = int(envelope["max_mamba_cache_size"])
        elif s["radix_off"] and mrr is not None:
            mamba_slots = mrr
        else:
            mamba_slots = max(0, int(rest * s["ratio_r"] / (1 + s["ratio_r"])) // state_per_req)
        rest -= mamba_slots * state_per_req
    tokens = max(0, rest) // cell if cell else 0
    if envelope.get("max_total_tokens"):
        tokens = min(tokens, int(envelope["max_total_tokens"]))
    tokens = tokens // s["page"] * s["page"]
    s.update(
        spec_state_bytes=spec_state,
        state_pool_slots=mamba_slots,
        state_pool_bytes=mamba_slots * state_per_req,
        max_total_num_tokens=tokens,
        kv_pool_bytes=tokens * cell,
        full_context_requests=tokens // s["context_length"],
    )


def _plan_requests(s, envelope):
    """The requests the pools admit: SGLang's max_num_reqs, capped by the state pool, and the running-request cap."""
    tokens, mrr = s["max_total_num_tokens"], s["max_running_requests"]
    # init_memory: max_num_reqs, capped by the state pool (calculate_mamba_ratio)
    if mrr is None:
        max_num_reqs = min(max(int(tokens / s["context_length"] * 512), 2048), 4096)
    else:
        max_num_reqs = mrr
    if s["state_bytes_per_request"]:
        mamba_ratio = 1
        if not s["radix_off"]:
            mamba_ratio = 3
            if envelope.get("mamba_scheduler_strategy") == "extra_buffer":
                mamba_ratio += 1 if s["speculative"] else 2
        max_num_reqs = min(max_num_reqs, s["state_pool_slots"] // mamba_ratio)
    # model_runner.py::initialize: max_running_requests = min(mrr or tokens // 2, pool size)
    s["max_running_requests_effective"] = min(mrr if mrr is not None else tokens // 2, max_num_reqs)


def _plan_verdict(s, opt):
    """What does not fit: the pools, the context, the state pool, and the room outside the static pool."""
    reasons, warnings = s["reasons"], s["warnings"]
    tokens, context, effective_mrr = s["max_total_num_tokens"], s["context_length"], s["max_running_requests_effective"]
    rest_after_weights, spec_state, requested_mrr = s["rest_after_weights_bytes"], s["spec_state_bytes"], s["requested_mrr"]
    if rest_after_weights - spec_state <= 0 or tokens <= 0:
        reasons.append(
            "Not enough memory for the KV/state pools (SGLang: 'Not enough memory. Please try to increase "
            f"--mem-fraction-static', mem_fraction_static={s['mem_fraction_static']}): static budget {_gib(s['static_budget_bytes'])} GiB - weights "
            f"{_gib(s['target_weights_bytes'])} GiB - speculative intermediate states {_gib(spec_state)} GiB "
            f"({s['max_running_requests']} requests x {s['speculative_num_draft_tokens']} draft tokens) leaves {_gib(rest_after_weights - spec_state)} GiB"
        )
    elif tokens < context:
        reasons.append(f"KV pool holds {tokens} tokens, fewer than context_length {context}")
    if s["state_bytes_per_request"] and tokens > 0 and effective_mrr < 1:
        reasons.append(f"state pool of {s['state_pool_slots']} slots cannot hold one running request")
    elif requested_mrr and effective_mrr < int(requested_mrr):
        warnings.append(f"SGLang caps max_running_requests {requested_mrr} at {effective_mrr} (state pool {s['state_pool_slots']} slots)")
    outside = s["available_before_load_bytes"] - s["static_budget_bytes"]
    headroom = outside - s["draft_weights_bytes"] - int(opt["reserve_gib"] * GIB)
    if headroom < 0:
        reasons.append(
            f"outside the static pool {_gib(outside)} GiB per GPU holds the drafter's weights {_gib(s['draft_weights_bytes'])} GiB "
            f"but not the {opt['reserve_gib']} GiB reserve for activations and CUDA graphs: lower mem_fraction_static"
        )
    s.update(outside_pool_bytes=outside, reserve_bytes=int(opt["reserve_gib"] * GIB), headroom_bytes=headroom)


def _fits_with(plan, context, mrr):
    # every admitted request may grow to the full context: the KV pool must hold them all
    return plan["fits"] and plan["max_total_num_tokens"] >= context * mrr and plan["max_running_requests_effective"] >= mrr


def _most_requests_at(base, context, cap, floor, model_config, gpu, draft_config, options):
    """The envelope and plan with the most running requests (cap down to floor) that fit at context, or None."""
    for mrr in range(cap, max(1, int(floor)) - 1, -1):
        candidate = dict(base, context_length=context, max_running_requests=mrr)
        plan = sglang_memory_plan(candidate, model_config, gpu, draft_config, **options)
        if _fits_with(plan, context, mrr):
            return candidate, plan
    return None


def _found(candidate, plan, tried, kept_context):
    return {
        "fits": True,
        "context_length": candidate["context_length"],
        "max_running_requests": candidate["max_running_requests"],
        "mem_fraction_static": plan["mem_fraction_static"],
        "envelope": candidate,
        "plan": plan,
        "tried": tried,
        "kept_context": kept_context,
    }


def _request_cap(base, max_running_requests):
    return int(
        max_running_requests or base.get("max_running_requests") or (DEFAULTS["spec_max_running_requests"] if base.get("speculative_algorithm") else 256)
    )


def _recommend_at(base, model_config, gpu, draft_config, min_context_length, max_running_requests, min_running_requests, options):
    """Largest power-of-two context, then the most requests: below the envelope's own context_length
    when it has one (the caller found that not one request fits there), else from the model's limit."""
    wanted = int(base.get("context_length") or 0)
    if wanted > 0:
        context, tried = 1 << ((wanted - 1).bit_length() - 1), [wanted]
    else:
        ceiling = int(_text_config(model_config, "model_config").get("max_position_embeddings") or 0)
        if ceiling <= 0:
            _fail("no max_position_embeddings in model_config and no context_length in the envelope")
        context, tried = 1 << (ceiling.bit_length() - 1), []
    cap = _request_cap(base, max_running_requests)
    while context >= int(min_context_length):
        found = _most_requests_at(base, context, cap, min_running_requests, model_config, gpu, draft_config, options)
        if found:
            return _found(found[0], found[1], tried, False)
        tried.append(context)
        context //= 2
    plan = sglang_memory_plan(dict(base, context_length=int(min_context_length), max_running_requests=1), model_config, gpu, draft_config, **options)
    return {
        "fits": False,
        "context_length": None,
        "max_running_requests": None,
        "mem_fraction_static": plan["mem_fraction_static"],
        "envelope": None,
        "plan": plan,
        "tried": tried,
        "kept_context": False,
    }


def _with_fraction(envelope, fraction):
    base = dict(envelope)
    if fraction is not None:
        base["mem_fraction_static"] = float(fraction)
    return base


def sglang_memory_recommend(
    envelope,
    model_config,
    gpu,
    draft_config=None,
    mem_fraction_static=None,
    min_context_length=4096,
    max_running_requests=None,
    min_running_requests=1,
    **options,
):
    """The envelope's own context_length with the most running requests that fit there; a shorter
    context only when not one request fits there; see the .yml."""
    if not isinstance(envelope, dict):
        _fail(f"envelope must be a dict of SGLang flags, got {type(envelope).__name__}")
    # a list of fractions is tried in order: no context fits at a fraction that leaves too little
    # room outside the static pool, however short, so a lower one is the only way out
    fractions = list(mem_fraction_static) if isinstance(mem_fraction_static, (list, tuple)) else [mem_fraction_static]
    if not fractions:
        _fail("mem_fraction_static is an empty list")
    wanted = int(envelope.get("context_length") or 0)
    if wanted > 0:
        # the operator's context_length is the question asked: at any fraction before a shorter one,
        # with as many running requests as fit there (one is enough to keep it)
        for index, fraction in enumerate(fractions):
            base = _with_fraction(envelope, fraction)
            found = _most_requests_at(base, wanted, _request_cap(base, max_running_requests), 1, model_config, gpu, draft_config, options)
            if found:
                return dict(_found(found[0], found[1], [], True), fractions_tried=fractions[: index + 1])
    first = None
    for index, fraction in enumerate(fractions):
        result = _recommend_at(
            _with_fraction(envelope, fraction), model_config, gpu, draft_config, min_context_length, max_running_requests, min_running_requests, options
        )
        result["fractions_tried"] = fractions[: index + 1]
        if result["fits"]:
            return result
        first = first or result
    first["fractions_tried"] = fractions
    return first


def _mib(value):
    return round(value / MIB, 1)


def sglang_memory_summary(plan, recommendation=None, envelope=None):
    """The planner's numbers in one paragraph; see sglang_memory_summary.yml."""
    if not isinstance(plan, dict):
        _fail(f"plan must be the dict sglang_memory_plan returns, got {type(plan).__name__}")
    if "error" in plan:
        return f"No memory plan: {plan['error']}."
    p, g, r = plan, plan["gib"], recommendation or {}
    envelope = envelope or {}
    mrr = p["max_running_requests"]
    text = (
        f"Per GPU ({g['gpu_memory']} GiB, tp_size {p['tp_size']}): static pool {g['static_budget']} GiB "
        f"(mem_fraction_static {p['mem_fraction_static']} of the {g['available_before_load']} GiB left by the "
        f"CUDA context and NCCL); weights {g['target_weights']} GiB leave {g['rest_after_weights']} GiB; "
        f"KV cache {p['kv_bytes_per_token']} bytes per token ({p['target_kv_bytes_per_token']} model + "
        f"{p['draft_kv_bytes_per_token']} drafter); recurrent state {_mib(p['state_bytes_per_request'])} MiB per "
        f"running request"
    )
    if p.get("spec_state_bytes"):
        text += f", {g['spec_state']} GiB for {mrr} requests x {p['speculative_num_draft_tokens']} draft tokens while verifying"
    text += (
        f"; state pool {p['state_pool_slots']} slots ({g['state_pool']} GiB); KV pool {p['max_total_num_tokens']} "
        f"tokens ({g['kv_pool']} GiB) = {p['full_context_requests']} requests at context_length "
        f"{p['context_length']}, {p['max_running_requests_effective']} running (max_running_requests "
        f"{mrr if mrr is not None else 'unset'}); outside the pool {g['outside_pool']} GiB for the drafter's "
        f"{g['draft_weights']} GiB and the {g['reserve']} GiB reserve (activations, CUDA graphs): headroom "
        f"{g['headroom']} GiB."
    )
    if not p["fits"]:
        text += f" Does not fit: {'; '.join(p['reasons'])}."
    if p.get("warnings"):
        text += f" Warnings: {'; '.join(p['warnings'])}."
    if r.get("fits"):
        f, n = r["mem_fraction_static"], r["max_running_requests"]
        flags = f"(--mem-fraction-static {f} --context-length {r['context_length']} --max-running-requests {n})"
        if r.get("kept_context"):
            text += (
                f" At context_length {r['context_length']} as set, "
                f"{'1 running request fits' if n == 1 else f'{n} running requests fit'} "
                f"at mem_fraction_static {f} {flags}."
            )
        else:
            # a recommendation says kept_context false when it looked at the envelope's own context first
            if r.get("kept_context") is False and envelope.get("context_length"):
                text += f" Not one request fits at context_length {envelope['context_length']}."
            text += f" Largest that fits: context_length {r['context_length']} x max_running_requests {n} at mem_fraction_static {f} {flags}."
    elif r:
        tried = ", ".join(str(x) for x in r["fractions_tried"])
        text += f" Nothing fits at mem_fraction_static {tried} with {envelope.get('max_running_requests') or 1} or more running requests."
    return text


class FilterModule:
    """Ansible filters: sglang_memory_plan, sglang_memory_recommend, sglang_memory_summary."""

    def filters(self):
        return {
            "sglang_memory_plan": sglang_memory_plan,
            "sglang_memory_recommend": sglang_memory_recommend,
            "sglang_memory_summary": sglang_memory_summary,
        }
