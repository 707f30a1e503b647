"""launch_server flags of a DDTree-patched SGLang 0.5.x build (SIMULATED: parsed, not executed).

Names, types, choices and defaults follow sglang.srt.server_args so that a unit file that
the simulator accepts is one the real parser would accept, plus the DDTree patch set's flags.
"""

import argparse

SPECULATIVE_ALGORITHMS = ["EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "NGRAM", "DFLASH", "DDTREE"]
MAMBA_SCHEDULER_STRATEGIES = ["auto", "no_buffer", "extra_buffer"]
LOG_LEVELS = ["debug", "info", "warning", "error", "critical"]
KV_CACHE_DTYPES = ["auto", "fp8_e5m2", "fp8_e4m3", "bf16", "bfloat16", "fp4_e2m1"]
DTYPES = ["auto", "half", "float16", "bfloat16", "float", "float32"]
REDACTED = "***"


def _model_args(parser):
    parser.add_argument(
        "--model-path", "--model", type=str, required=True, help="The path of the model weights. This can be a local folder or a Hugging Face repo ID."
    )
    parser.add_argument("--tokenizer-path", type=str, default=None, help="The path of the tokenizer.")
    parser.add_argument("--trust-remote-code", action="store_true", help="Whether or not to allow for custom models defined on the Hub.")
    parser.add_argument("--dtype", type=str, default="auto", choices=DTYPES, help="Data type for model weights and activations.")
    parser.add_argument("--quantization", type=str, default=None, help="The quantization method.")
    parser.add_argument("--kv-cache-dtype", type=str, default="auto", choices=KV_CACHE_DTYPES, help="Data type for kv cache storage.")
    parser.add_argument(
        "--context-length",
        type=int,
        default=None,
        help="The model's maximum context length. Defaults to None (will use the value from the model's config.json instead).",
    )
    parser.add_argument("--served-model-name", type=str, default=None, help="Override the model name returned by the v1/models endpoint in OpenAI API server.")
    parser.add_argument("--random-seed", type=int, default=None, help="The random seed.")


def _server_args(parser):
    parser.add_argument("--host", type=str, default="127.0.0.1", help="The host of the HTTP server.")
    parser.add_argument("--port", type=int, default=30000, help="The port of the HTTP server.")
    parser.add_argument("--api-key", type=str, default=None, help="Set API key of the server. It is also used in the OpenAI API compatible server.")
    parser.add_argument("--ssl-keyfile", type=str, default=None, help="The file path to the SSL key file.")
    parser.add_argument("--ssl-certfile", type=str, default=None, help="The file path to the SSL cert file.")
    parser.add_argument("--log-level", type=str, default="info", choices=LOG_LEVELS, help="The logging level of all loggers.")
    parser.add_argument("--enable-metrics", action="store_true", help="Enable log prometheus metrics.")
    parser.add_argument(
        "--watchdog-timeout",
        type=float,
        default=300,
        help="Set watchdog timeout in seconds. If a forward batch takes longer than this, the server will crash to prevent hanging.",
    )
    parser.add_argument("--reasoning-parser", type=str, default=None, help="Specify the parser for reasoning models.")
    parser.add_argument("--tool-call-parser", type=str, default=None, help="Specify the parser for handling tool-call interactions.")
    parser.add_argument("--skip-server-warmup", action="store_true", help="If set, skip warmup.")


def _memory_args(parser):
    parser.add_argument(
        "--mem-fraction-static",
        type=float,
        default=None,
        help="The fraction of the memory used for static allocation (model weights and KV cache memory pool).",
    )
    parser.add_argument("--max-running-requests", type=int, default=None, help="The maximum number of running requests.")
    parser.add_argument("--max-total-tokens", type=int, default=None, help="The maximum number of tokens in the memory pool.")
    parser.add_argument("--chunked-prefill-size", type=int, default=None, help="The maximum number of tokens in a chunk for the chunked prefill.")
    parser.add_argument("--max-prefill-tokens", type=int, default=16384, help="The maximum number of tokens in a prefill batch.")
    parser.add_argument("--disable-radix-cache", action="store_true", help="Disable RadixAttention for prefix caching.")
    parser.add_argument("--mamba-full-memory-ratio", type=float, default=0.9, help="The ratio of mamba state memory to full kv cache memory.")
    parser.add_argument(
        "--mamba-scheduler-strategy", type=str, default="auto", choices=MAMBA_SCHEDULER_STRATEGIES, help="The strategy to use for mamba scheduler."
    )


def _parallel_args(parser):
    parser.add_argument("--tp-size", "--tensor-parallel-size", "--tp", dest="tp_size", type=int, default=1, help="The tensor parallelism size.")
    parser.add_argument("--pp-size", "--pipeline-parallel-size", "--pp", dest="pp_size", type=int, default=1, help="The pipeline parallelism size.")
    parser.add_argument("--dp-size", "--data-parallel-size", "--dp", dest="dp_size", type=int, default=1, help="The data parallelism size.")
    parser.add_argument("--nnodes", type=int, default=1, help="The number of nodes.")
    parser.add_argument("--node-rank", type=int, default=0, help="The node rank.")
    parser.add_argument(
        "--dist-init-addr",
        "--nccl-init-addr",
        type=str,
        default=None,
        help="The host address for initializing distributed backend (e.g., `192.168.0.2:25000`).",
    )


def _kernel_args(parser):
    parser.add_argument("--attention-backend", type=str, default=None, help="Choose the kernels for attention layers.")
    parser.add_argument("--cuda-graph-max-bs", type=int, default=None, help="Set the maximum batch size for cuda graph.")
    parser.add_argument("--disable-cuda-graph", action="store_true", help="Disable cuda graph.")
    parser.add_argument("--disable-piecewise-cuda-graph", action="store_true", help="Disable piecewise cuda graph for extend/prefill.")
    parser.add_argument("--enable-torch-compile", action="store_true", help="Optimize the model with torch.compile. Experimental feature.")


def _speculative_args(parser):
    parser.add_argument("--speculative-algorithm", type=str, default=None, choices=SPECULATIVE_ALGORITHMS, help="Speculative algorithm.")
    parser.add_argument(
        "--speculative-draft-model-path",
        "--speculative-draft-model",
        type=str,
        default=None,
        help="The path of the draft model weights. This can be a local folder or a Hugging Face repo ID.",
    )
    parser.add_argument("--speculative-num-steps", type=int, default=None, help="The number of steps sampled from draft model in Speculative Decoding.")
    parser.add_argument("--speculative-eagle-topk", type=int, default=None, help="The number of tokens sampled from the draft model in eagle2 each step.")
    parser.add_argument(
        "--speculative-num-draft-tokens", type=int, default=None, help="The number of tokens sampled from the draft model in Speculative Decoding."
    )
    # the DDTree patch set (not in upstream SGLang)
    parser.add_argument("--speculative-ddtree-budget", type=int, default=None, help="DDTree: number of draft-tree nodes verified per target pass.")
    parser.add_argument(
        "--speculative-ddtree-shadow-linear",
        action="store_true",
        help="DDTree: run the DDTree code path but keep DFlash-linear results (guarded rollout mode).",
    )


def build_parser():
    """The argparse parser; prog matches the real module's so usage/error lines read the same."""
    parser = argparse.ArgumentParser(prog="launch_server.py")
    for add in (_model_args, _server_args, _memory_args, _parallel_args, _kernel_args, _speculative_args):
        add(parser)
    return parser


def public_args(args):
    """The parsed flags as a dict, with the API key redacted (it must never reach the journal)."""
    values = dict(vars(args))
    if values.get("api_key") is not None:
        values["api_key"] = REDACTED
    return values


def server_args_line(args):
    body = ", ".join(f"{key}={value!r}" for key, value in public_args(args).items())
    return f"server_args=ServerArgs({body})"
