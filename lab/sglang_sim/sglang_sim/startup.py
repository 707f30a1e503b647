"""SGLang 0.5.23's start-up checks that the SIMULATED server must make too (it must not start what
the real server refuses). Each is a check of ServerArgs.resolve_once() (sglang/srt/arg_groups/
and sglang/srt/configs/model_config.py); the messages are SGLang's own, word for word, and
lab/tests/test_startup_parity.py finds each in the real 0.5.23 source at the line named here.
"""

import sys

_SITE = f"{sys.prefix}/lib/python{sys.version_info.major}.{sys.version_info.minor}/site-packages"
_SRT = f"{_SITE}/sglang/srt"

# launch_server.py -> run_server -> ServerArgs.resolve_once -> run_resolution_pipeline
_RESOLVE = [
    (f"{_SITE}/sglang/launch_server.py", 84, "<module>", "run_server(server_args)"),
    (f"{_SITE}/sglang/launch_server.py", 29, "run_server", "server_args.resolve_once()"),
    (f"{_SRT}/server_args.py", 277, "resolve_once", "run_resolution_pipeline(self)"),
]
_HOOK = (f"{_SRT}/arg_groups/resolution_hooks.py", 139, "run_hook", "step(server_args)")

# (hook file, line of the raise, function, the pipeline's line that runs the step, the step's name)
SSL = ("serving_hook.py", 51, "handle_ssl_validation", 125)
FLEX = ("attention_hook.py", 161, "handle_attention_backend_compatibility", 242)
DFLASH_PP = ("speculative_hook.py", 320, "_handle_dflash", 306)
DFLASH_DRAFT = ("speculative_hook.py", 325, "_handle_dflash", 306)
CONTEXT = ("../configs/model_config.py", 1314, "_derive_context_length", 132)

CONTEXT_LENGTH_KEYS = ("max_sequence_length", "seq_length", "max_seq_len", "model_max_length", "max_position_embeddings")


def derived_context_length(config):
    """sglang/srt/utils/hf_transformers/common.py::get_context_length of a config.json (its text_config
    for a multimodal one)."""
    text = config.get("text_config") or config
    rope = text.get("rope_scaling") or {}
    factor = rope.get("factor", 1) if rope else 1
    if "original_max_position_embeddings" in rope or rope.get("rope_type") == "llama3":
        factor = 1
    for key in CONTEXT_LENGTH_KEYS:
        if text.get(key) is not None:
            return int(factor * text[key])
    return 2048


def _context_message(reason, context_length, derived):
    msg = (
        f"Warning: {reason} context_length ({context_length}) is greater than the derived context_length ({derived}). "
        f"This may lead to incorrect model outputs or CUDA errors. Note that the derived context_length may differ "
        f"from max_position_embeddings in the model's config."
    )
    return f"{msg} To allow overriding this maximum, set the env var SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1"


def _truthy(value):
    return str(value or "").strip().lower() in ("1", "true", "yes", "on")


def refusal(args, target_cfg, environ):
    """The first start-up check the flags fail, in the pipeline's order: (check, exception line), or None."""
    if getattr(args, "ssl_keyfile", None) and not getattr(args, "ssl_certfile", None):
        return SSL, "ValueError: --ssl-keyfile requires --ssl-certfile to be specified as well."
    if not _truthy(environ.get("SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN")) and args.context_length is not None:
        derived = derived_context_length(target_cfg)
        if args.context_length > derived:
            return CONTEXT, "ValueError: " + _context_message("User-specified", args.context_length, derived)
    if args.attention_backend == "flex_attention" and args.speculative_algorithm is not None:
        return FLEX, "AssertionError: Speculative decoding is currently not supported with Flex Attention backend"
    if args.speculative_algorithm == "DFLASH":
        if args.pp_size != 1:
            return DFLASH_PP, "ValueError: Currently DFLASH speculative decoding only supports pp_size == 1."
        if args.speculative_draft_model_path is None:
            return DFLASH_DRAFT, "ValueError: DFLASH speculative decoding requires setting --speculative-draft-model-path."
    return None


def traceback_frames(check):
    """The frames of a traceback for the check's exception: the call path from launch_server to the
    step, then the raising line (the exception line itself is SGLang's, verbatim)."""
    path, line, function, pipeline_line = check
    step = {"_handle_dflash": "handle_speculative_decoding", "_derive_context_length": "handle_missing_default_values"}.get(function, function)
    frames = list(_RESOLVE) + [(f"{_SRT}/arg_groups/pipeline.py", pipeline_line, "run_resolution_pipeline", f"run_hook({step}, server_args)"), _HOOK]
    source = "raise ValueError(" if path != "attention_hook.py" else "assert cfg.speculative_algorithm is None, ("
    return frames + [(f"{_SRT}/arg_groups/{path}".replace("arg_groups/../", ""), line, function, source)]


def simulated_refusal(args):
    """What the simulator refuses on its own, where the real server starts and fails later: a line of its own
    (SIMULATED, never SGLang's words), or None. DDTREE without a drafter: the DDTree patch set's worker is the DFlash
    worker, which drafts with --speculative-draft-model-path, and 0.5.23's hook checks only DFLASH, so the real
    server passes its start-up checks; preflight refuses it (docs/preflight-parity.md) and so does the simulator."""
    if args.speculative_algorithm == "DDTREE" and not args.speculative_draft_model_path:
        return "SIMULATED sglang_sim: --speculative-algorithm DDTREE needs --speculative-draft-model-path (DDTree drafts with the DFlash drafter); not starting"
    return None
