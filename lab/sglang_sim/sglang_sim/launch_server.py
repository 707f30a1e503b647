"""SIMULATED `python -m sglang.launch_server` for lab hosts without a GPU.

Parses the real flags, reads the GPUs from nvidia-smi and the model shapes from config.json,
replays SGLang's start-up (weights, pools, CUDA graphs, HTTP bind, warm-up) with its log
wording and the verdict of sglang_sim.memory, then serves SGLang's HTTP API with simulated
text. Fault knobs (environment): SGLANG_SIM_FAULT, SGLANG_SIM_FAULT_DELAY_S, SGLANG_SIM_TIME_SCALE,
SGLANG_SIM_LOAD_JITTER_S (loading the weights takes up to that many seconds more, uniformly at random, so that
what follows, a crash included, does not come at the same moment after every start);
SGLANG_SIM_FAULT=replay prints the real failure log in the file SGLANG_SIM_REPLAY (sglang_sim.replay);
SGLANG_SIM_GENERATE_S makes every generation take that long; otherwise a generation takes the time of the
SIMULATED throughput model (sglang_sim.throughput), and SGLANG_SIM_FAULT=slow serves healthy but with
SGLANG_SIM_SLOW_SHARE (default 0.3) fewer tokens/s. SIGTERM after ready is a graceful
stop: the listener closes, requests in flight finish, exit 0.
The API key comes from --api-key or, without it, from SGLANG_API_KEY (as with the DDTree patch set).
"""

import os
import random
import signal
import sys
import threading
import time
from dataclasses import dataclass

from . import __version__, failures, log, memory, replay, startup
from .args import build_parser, server_args_line
from .hardware import ConfigLoadError, NoDriverError, load_config, read_gpus
from .http_api import SimState, make_server

FAULTS = (
    "none",
    "crash_in_graph_capture",
    "triton_error_in_graph_capture",
    "hang_before_bind",
    "generate_fails",
    "slow_start",
    "crash_after_serving",
    "replay",
    "slow",
)
DEFAULT_FAULT_DELAY_S = 5.0
DEFAULT_SLOW_SHARE = 0.3
# SIMULATED noise (docs/dev/lab.md, from public SGLang figures): a server process's mean tokens/s spreads 0.5 % between
# restarts (SGLang's CI, sgl-project/sglang#40617: 0.1-0.8 %), each request's 2 %, so that a round of 24 requests
# spreads about as repeated runs on one server do (sgl-project/sglang#34072: 0.4 %)
DEFAULT_NOISE = (0.005, 0.02)
# seconds per phase at SGLANG_SIM_TIME_SCALE=1: about 3 s to ready, the pool verdict at about 2.1 s
PHASE_S = {"distributed": 0.2, "target_weights": 1.0, "draft_weights": 0.3, "pools": 0.3, "decode_graph": 0.4, "piecewise_graph": 0.3, "warmup": 0.3}
DRAFT_ALGORITHMS = ("EAGLE", "EAGLE3", "STANDALONE", "DFLASH", "DDTREE")
SHARED_MEMORY_LIMIT = {"9.0": 232448, "10.0": 232448}
CONSUMER_SHARED_MEMORY_LIMIT = 101376


class Knobs:  # pylint: disable=too-few-public-methods
    """The simulation's fault knobs, read once from the environment."""

    def __init__(self, environ):
        self.fault = environ.get("SGLANG_SIM_FAULT", "none").strip() or "none"
        self.delay_s = float(environ.get("SGLANG_SIM_FAULT_DELAY_S", DEFAULT_FAULT_DELAY_S))
        self.time_scale = float(environ.get("SGLANG_SIM_TIME_SCALE", "1.0"))
        # read as text: main() refuses a value that is no number of seconds >= 0
        self.load_jitter_text = environ.get("SGLANG_SIM_LOAD_JITTER_S", "").strip() or "0"
        generate_s = environ.get("SGLANG_SIM_GENERATE_S", "").strip()
        self.generate_s = float(generate_s) if generate_s else None
        # read as text: main() refuses a value that is not a share in [0, 1)
        self.slow_share_text = environ.get("SGLANG_SIM_SLOW_SHARE", "").strip() or str(DEFAULT_SLOW_SHARE)
        # SIMULATED run-to-run noise: the spread of a process's speed and of each request's (docs/dev/lab.md)
        self.noise_text = (
            environ.get("SGLANG_SIM_NOISE_PROCESS", "").strip() or str(DEFAULT_NOISE[0]),
            environ.get("SGLANG_SIM_NOISE_REQUEST", "").strip() or str(DEFAULT_NOISE[1]),
        )

    def noise(self):
        """(process, request) spreads of tokens/s, or None when either is no number in [0, 0.5]."""
        try:
            spreads = tuple(float(text) for text in self.noise_text)
        except ValueError:
            return None
        return spreads if all(0 <= s <= 0.5 for s in spreads) else None

    def load_jitter_s(self):
        """The most seconds loading the weights takes on top of its phase, or None when it is no number >= 0."""
        try:
            jitter = float(self.load_jitter_text)
        except ValueError:
            return None
        return jitter if 0 <= jitter < float("inf") else None

    def slow_share(self):
        """The slow fault's share of tokens/s lost, or None when SGLANG_SIM_SLOW_SHARE is no share in [0, 1)."""
        try:
            share = float(self.slow_share_text)
        except ValueError:
            return None
        return share if 0 <= share < 1 else None

    def sleep(self, phase, extra=0.0):
        time.sleep(PHASE_S[phase] * self.time_scale + extra)


def _die_uncaught(frames_exc):
    """An exception in the main process before any child exists: Python prints it, exit 1."""
    frames, exc = frames_exc
    sys.stderr.write(log.traceback_text(frames, exc) + "\n")
    sys.stderr.flush()
    sys.exit(1)


def _scheduler_failure(tp_size, frames_exc, cause=None):
    """Every TP scheduler reports, SIGQUITs the launcher, which kills its own process tree."""
    frames, exc = frames_exc
    text = log.traceback_text(frames, exc)
    if cause:
        text = log.traceback_text(*cause) + "\n" + text
    for rank in range(tp_size):
        log.error(f"Scheduler hit an exception: {text}", rank=rank)
    log.error("Received sigquit from a child process. It usually means the child failed.")
    _kill_self()


def _kill_self():
    # SGLang's kill_process_tree ends with SIGKILL on itself: systemd sees status=9/KILL
    sys.stdout.flush()
    sys.stderr.flush()
    os.kill(os.getpid(), signal.SIGKILL)


# the bound server once ready, so that SIGTERM can stop it gracefully
SERVING = {}
# how often a draining server reports what is left (SGLang's sigterm_watchdog: every 5 s)
DRAIN_REPORT_S = 1.0


def _on_sigterm(_signum, _frame):
    log.warning("SIGTERM received. signum=15. Draining requests and shutting down...")
    server = SERVING.get("server")
    if server is None:
        # still starting: nothing to drain
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)  # pylint: disable=protected-access
    server.sim.draining = True
    # shutdown() waits for serve_forever, which runs in this (the main) thread
    threading.Thread(target=server.shutdown, daemon=True).start()


def _drain(server):
    """After serve_forever returned: no new connections, finish what is in flight, exit 0. systemd's
    TimeoutStopSec bounds it from outside (SIGKILL)."""
    server.server_close()
    sim = server.sim
    while not sim.wait_idle(DRAIN_REPORT_S):
        log.info(f"Gracefully exiting... Remaining number of requests {sim.in_flight}.")
    log.info("Gracefully exiting... Remaining number of requests 0.")
    log.uvicorn("INFO", "Shutting down")
    log.uvicorn("INFO", "Waiting for application shutdown.")
    log.uvicorn("INFO", "Application shutdown complete.")
    log.uvicorn("INFO", f"Finished server process [{os.getpid()}]")
    return 0


def _envelope(args, draft_cfg):
    return memory.Envelope(
        tp_size=args.tp_size,
        mem_fraction_static=args.mem_fraction_static,
        context_length=args.context_length,
        max_running_requests=args.max_running_requests,
        max_total_tokens=args.max_total_tokens,
        chunked_prefill_size=args.chunked_prefill_size,
        cuda_graph_max_bs=args.cuda_graph_max_bs,
        disable_cuda_graph=args.disable_cuda_graph,
        disable_piecewise_cuda_graph=args.disable_piecewise_cuda_graph,
        mamba_full_memory_ratio=args.mamba_full_memory_ratio,
        speculative=args.speculative_algorithm is not None,
        num_draft_tokens=args.speculative_num_draft_tokens or (draft_cfg or {}).get("block_size"),
        kv_cache_dtype=args.kv_cache_dtype,
    )


def _load_configs(args):
    target = load_config(args.model_path)
    draft = None
    if args.speculative_algorithm in DRAFT_ALGORITHMS and args.speculative_draft_model_path:
        draft = load_config(args.speculative_draft_model_path)
    return target, draft


def _startup_warnings(args, plan, target_shape):
    if args.speculative_algorithm and args.max_running_requests is None:
        log.warning(f"Max running requests is reset to {plan.max_running_requests} for speculative decoding.")
    if args.disable_cuda_graph and target_shape.is_hybrid and not args.disable_piecewise_cuda_graph:
        log.warning("disable_cuda_graph is ignored for piecewise cuda graph")


def _load_weights(args, plan, cfgs, knobs):
    gpu = plan.gpu_mem_gib
    log.info("Init torch distributed begin.", rank=0)
    knobs.sleep("distributed")
    log.info(f"Init torch distributed ends. mem usage={plan.overhead_gib - memory.CUDA_CONTEXT_GIB:.2f} GB", rank=0)
    avail = gpu - plan.overhead_gib
    log.info(f"Load weight begin. avail mem={avail:.2f} GB", rank=0)
    knobs.sleep("target_weights", (knobs.delay_s if knobs.fault == "slow_start" else 0.0) + random.uniform(0.0, knobs.load_jitter_s()))
    avail -= plan.target_weights_gib
    dtype = cfgs[0].get("torch_dtype", "bfloat16")
    log.info(
        f"Load weight end. type={cfgs[0]['architectures'][0]}, dtype=torch.{dtype}, avail mem={avail:.2f} GB, mem usage={plan.target_weights_gib:.2f} GB.",
        rank=0,
    )
    if cfgs[1] is not None:
        log.info(f"Load weight begin. avail mem={avail:.2f} GB", rank=0)
        knobs.sleep("draft_weights")
        avail -= plan.draft_weights_gib
        log.info(
            f"Load weight end. type={cfgs[1]['architectures'][0]}, dtype=torch.{cfgs[1].get('torch_dtype', dtype)}, "
            f"avail mem={avail:.2f} GB, mem usage={plan.draft_weights_gib:.2f} GB.",
            rank=0,
        )
    if args.speculative_algorithm == "DDTREE":
        mode = "shadow-linear (DFlash-linear results)" if args.speculative_ddtree_shadow_linear else "tree verify"
        budget = args.speculative_ddtree_budget or plan.num_draft_tokens
        log.info(f"DDTree speculative decoding: budget={budget}, mode={mode}", rank=0)


def _allocate_pools(args, plan, knobs):
    knobs.sleep("pools")
    if not plan.ok and plan.verdict == memory.VERDICT_POOL:
        _scheduler_failure(args.tp_size, failures.pool_not_enough_memory(plan.mem_fraction_static))
    gib = memory.GIB
    if plan.mamba_slots:
        log.info(
            f"Mamba Cache is allocated. max_mamba_cache_size: {plan.mamba_slots}, "
            f"conv_state size: {plan.mamba_slots * plan.mamba_conv_bytes / gib:.2f}GB, "
            f"ssm_state size: {plan.mamba_slots * plan.mamba_ssm_bytes / gib:.2f}GB ",
            rank=0,
        )
    half = plan.max_total_num_tokens * plan.kv_bytes_per_token / 2 / gib
    log.info(f"KV Cache is allocated. #tokens: {plan.max_total_num_tokens}, K size: {half:.2f} GB, V size: {half:.2f} GB", rank=0)
    log.info(f"Memory pool end. avail mem={plan.avail_after_pool_gib:.2f} GB", rank=0)


def _capture_sizes(limit, start=1):
    sizes, size = [], start
    while size < limit:
        sizes.append(size)
        size *= 2
    return sizes + [limit]


@dataclass(frozen=True)
class Capture:
    """What a CUDA graph capture phase reads."""

    args: object
    plan: memory.MemoryPlan
    gpu: object
    knobs: Knobs


def _graph_failure(cap, piecewise, avail):
    """The configured fault, or the memory rule's OOM, inside one capture."""
    args, plan = cap.args, cap.plan
    if cap.knobs.fault == "triton_error_in_graph_capture":
        limit = SHARED_MEMORY_LIMIT.get(cap.gpu.compute_cap, CONSUMER_SHARED_MEMORY_LIMIT)
        _scheduler_failure(args.tp_size, failures.triton_out_of_resources(limit + 45056, limit))
    size = plan.piecewise_graph_gib if piecewise else plan.decode_graph_gib
    free = max(avail - plan.workspace_gib, 0.01)
    # the graph pool asks for its buffers at once; a forced fault may hit with room to spare
    tried = size if size > free else free + 0.02
    captured = plan.decode_graph_gib if piecewise and plan.decode_graph else 0.0
    oom = (tried, plan.gpu_mem_gib, free, captured)
    _scheduler_failure(args.tp_size, failures.graph_capture_oom(piecewise, *oom), cause=failures.graph_capture_oom_cause(*oom))


def _capture(cap, piecewise, avail):
    """One capture phase; returns what is free afterwards."""
    plan, knobs = cap.plan, cap.knobs
    size = plan.piecewise_graph_gib if piecewise else plan.decode_graph_gib
    if piecewise:
        tokens = _capture_sizes(plan.chunked_prefill_size, 4)
        log.info(f"Capture cuda graph begin. Piecewise (extend) graphs, num_tokens: {tokens}. avail mem={avail:.2f} GB", rank=0)
    else:
        log.info(f"Capture cuda graph begin. This can take up to several minutes. avail mem={avail:.2f} GB", rank=0)
        log.info(f"Capture cuda graph bs {_capture_sizes(plan.cuda_graph_bs)}", rank=0)
    knobs.sleep("piecewise_graph" if piecewise else "decode_graph")
    need = plan.workspace_gib + size
    first = not piecewise or plan.decode_graph is False
    forced = knobs.fault in ("crash_in_graph_capture", "triton_error_in_graph_capture") and first
    if forced or need > avail:
        _graph_failure(cap, piecewise, avail)
    label = "Piecewise (extend) graphs. " if piecewise else ""
    elapsed = PHASE_S["piecewise_graph" if piecewise else "decode_graph"] * knobs.time_scale
    log.info(f"Capture cuda graph end. {label}Time elapsed: {elapsed:.2f} s. mem usage={size:.2f} GB. avail mem={avail - size:.2f} GB.", rank=0)
    return avail - size


def _compile_kernels(tp_size):
    """Triton JIT-compiles the model's kernels on first use and caches them in TRITON_CACHE_DIR
    (default ~/.triton/cache); a cache it cannot write kills the schedulers. The simulated cache
    entry shows where a sandboxed service's kernels go."""
    cache = os.environ.get("TRITON_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".triton", "cache")
    try:
        os.makedirs(cache, exist_ok=True)
        with open(os.path.join(cache, "sglang_sim-kernels.txt"), "w", encoding="utf-8") as entry:
            entry.write("SIMULATED Triton cache entry (chunk_gated_delta_rule_fwd)\n")
    except OSError as exc:
        _scheduler_failure(tp_size, failures.triton_cache_unwritable(exc))


def _capture_graphs(args, plan, gpu, knobs):
    _compile_kernels(args.tp_size)
    avail = plan.avail_after_pool_gib
    forced = knobs.fault in ("crash_in_graph_capture", "triton_error_in_graph_capture")
    cap = Capture(args, plan, gpu, knobs)
    if plan.decode_graph:
        avail = _capture(cap, False, avail)
    if plan.piecewise_graph or (forced and not plan.decode_graph):
        avail = _capture(cap, True, avail)
    log.info(
        f"max_total_num_tokens={plan.max_total_num_tokens}, chunked_prefill_size={plan.chunked_prefill_size}, "
        f"max_prefill_tokens={args.max_prefill_tokens}, max_running_requests={plan.max_running_requests}, "
        f"context_len={plan.context_length}, available_gpu_mem={avail - plan.workspace_gib:.2f} GB",
        rank=0,
    )


def _bind(args, sim):
    log.uvicorn("INFO", f"Started server process [{os.getpid()}]")
    log.uvicorn("INFO", "Waiting for application startup.")
    log.uvicorn("INFO", "Application startup complete.")
    try:
        server = make_server(sim, args.host, args.port)
    except OSError as exc:
        reason = (exc.strerror or str(exc)).lower()
        log.uvicorn("ERROR", f"[Errno {exc.errno}] error while attempting to bind on address ({args.host!r}, {args.port}): {reason}")
        log.uvicorn("INFO", "Waiting for application shutdown.")
        log.uvicorn("INFO", "Application shutdown complete.")
        sys.exit(1)
    log.uvicorn("INFO", f"Uvicorn running on http://{args.host}:{args.port} (Press CTRL+C to quit)")
    return server


def _warmup(args, knobs):
    """SGLang warms up through its own API before announcing readiness."""
    if args.skip_server_warmup:
        log.info("The server is fired up and ready to roll!")
        return
    knobs.sleep("warmup")
    log.access(("127.0.0.1", 40112), "GET /get_model_info HTTP/1.1", 200, "OK")
    log.info("Prefill batch, #new-seq: 1, #new-token: 6, #cached-token: 0, token usage: 0.00, #running-req: 0, #queue-req: 0, ", rank=0)
    log.access(("127.0.0.1", 40118), "POST /generate HTTP/1.1", 200, "OK")
    log.info("The server is fired up and ready to roll!")


def _crash_after_serving(tp_size):
    frames, exc = failures.scheduler_crash()
    for rank in range(tp_size):
        log.error(f"Scheduler hit an exception: {log.traceback_text(frames, exc)}", rank=rank)
    log.error("SIGQUIT received. signum=3, frame=None. It usually means one child failed.")
    _kill_self()


def _plan(args, cfgs, gpus):
    target_shape = memory.shape_from_config(cfgs[0])
    draft_shape = memory.shape_from_config(cfgs[1]) if cfgs[1] is not None else None
    gpu_mib = min(g.memory_total_mib for g in gpus[: args.tp_size])
    return target_shape, memory.plan_memory(gpu_mib, target_shape, draft_shape, _envelope(args, cfgs[1]))


def run(args, knobs):
    """The start-up sequence; returns the bound server once ready."""
    try:
        cfgs = _load_configs(args)
    except ConfigLoadError as exc:
        _die_uncaught(failures.config_load(str(exc)))
    refused = startup.refusal(args, cfgs[0], os.environ)
    if refused is not None:
        # ServerArgs.resolve_once() raises in the launcher's own process, before any scheduler
        _die_uncaught((startup.traceback_frames(refused[0]), [refused[1]]))
    own = startup.simulated_refusal(args)
    if own is not None:
        sys.stderr.write(own + "\n")
        sys.exit(1)
    try:
        gpus = read_gpus()
    except NoDriverError:
        _die_uncaught(failures.no_driver())
    target_shape, plan = _plan(args, cfgs, gpus)
    _startup_warnings(args, plan, target_shape)
    log.info(server_args_line(args))
    if args.tp_size * args.dp_size // max(args.nnodes, 1) > len(gpus):
        time.sleep(PHASE_S["distributed"] * knobs.time_scale)
        _scheduler_failure(args.tp_size, failures.invalid_device_ordinal())
    _load_weights(args, plan, cfgs, knobs)
    _allocate_pools(args, plan, knobs)
    if knobs.fault == "hang_before_bind":
        threading.Event().wait()
    _capture_graphs(args, plan, gpus[0], knobs)
    sim = SimState(
        args,
        cfgs[0],
        plan.context_length,
        knobs.fault,
        knobs.time_scale,
        max_running_requests=plan.max_running_requests,
        generate_s=knobs.generate_s,
        compute_cap=gpus[0].compute_cap,
        slow_share=knobs.slow_share() if knobs.fault == "slow" else 0.0,
        noise=knobs.noise(),
    )
    if args.node_rank >= 1:
        return _bind_health_only(args, sim)
    server = _bind(args, sim)
    _warmup(args, knobs)
    return server


# SGLang's launch_dummy_health_check_server: what a node_rank > 0 serves on its port
HEALTH_ONLY_ROUTES = ("/health", "/health_generate")


def _bind_health_only(args, sim):
    """A node of a multi-node server with node_rank > 0 runs no tokenizer and no API: SGLang starts
    only a health server on the same port (uvicorn at log level warning, so no lines) and blocks."""
    try:
        server = make_server(sim, args.host, args.port)
    except OSError as exc:
        reason = (exc.strerror or str(exc)).lower()
        log.uvicorn("ERROR", f"[Errno {exc.errno}] error while attempting to bind on address ({args.host!r}, {args.port}): {reason}")
        sys.exit(1)
    handler = server.RequestHandlerClass
    handler.GET_ROUTES = {path: route for path, route in handler.GET_ROUTES.items() if path in HEALTH_ONLY_ROUTES}
    handler.POST_ROUTES = {}
    return server


def api_key_from_environment(args, environ):
    """The DDTree patch set's rule: without --api-key, SGLANG_API_KEY from the environment (so a
    unit can keep the key in a root-only EnvironmentFile instead of its command line).
    SGLANG_SIM_STOCK_AUTH=1 plays a build without the patch set: stock SGLang reads --api-key
    only, so a key in the environment is ignored and the API serves anyone."""
    if environ.get("SGLANG_SIM_STOCK_AUTH", "").strip() == "1":
        return args
    if args.api_key is None:
        args.api_key = environ.get("SGLANG_API_KEY") or None
    return args


def main(argv=None):
    args = api_key_from_environment(build_parser().parse_args(argv), os.environ)
    knobs = Knobs(os.environ)
    if knobs.fault not in FAULTS:
        sys.stderr.write(f"sglang_sim: SGLANG_SIM_FAULT={knobs.fault!r} is not one of {', '.join(FAULTS)}\n")
        return 2
    if knobs.slow_share() is None:
        sys.stderr.write(f"sglang_sim: SGLANG_SIM_SLOW_SHARE={knobs.slow_share_text!r} is not a share of tokens/s in [0, 1)\n")
        return 2
    if knobs.load_jitter_s() is None:
        sys.stderr.write(f"sglang_sim: SGLANG_SIM_LOAD_JITTER_S={knobs.load_jitter_text!r} is not a number of seconds >= 0\n")
        return 2
    if knobs.noise() is None:
        sys.stderr.write(f"sglang_sim: SGLANG_SIM_NOISE_PROCESS, SGLANG_SIM_NOISE_REQUEST={knobs.noise_text!r} are not spreads in [0, 0.5]\n")
        return 2
    signal.signal(signal.SIGTERM, _on_sigterm)
    log.info(f"SIMULATED SGLang server (sglang_sim {__version__}; no GPU, no weights; fault={knobs.fault}, time_scale={knobs.time_scale})")
    if knobs.fault == "replay":
        path = os.environ.get("SGLANG_SIM_REPLAY", "")
        try:
            record = replay.load(path, os.environ.get("SGLANG_SIM_REPLAY_ID"), os.environ.get("SGLANG_SIM_REPLAY_END"))
        except (OSError, ValueError) as exc:
            sys.stderr.write(f"sglang_sim: SGLANG_SIM_REPLAY: {exc}\n")
            return 2
        kind = "healthy" if record.get("end") == "serve" else "failure"
        log.info(f"SIMULATED replay of a real {kind} log: {record.get('id', '?')} ({record.get('url', 'no url')})")
        code = replay.replay(record, knobs.time_scale)
        if code is None:
            threading.Event().wait()
        if code:
            return code
    server = run(args, knobs)
    SERVING["server"] = server
    if knobs.fault == "crash_after_serving":
        threading.Timer(knobs.delay_s, _crash_after_serving, args=(args.tp_size,)).start()
    server.serve_forever(poll_interval=0.2)
    return _drain(server)


if __name__ == "__main__":
    sys.exit(main())
