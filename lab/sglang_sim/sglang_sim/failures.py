"""The failure texts of the SIMULATED server, worded as real SGLang / torch / triton word them.

Each function returns (frames, exception lines) for log.traceback_text; the file paths point
into the venv's sglang package as a real traceback would.
"""

import sys

_SITE = f"{sys.prefix}/lib/python{sys.version_info.major}.{sys.version_info.minor}/site-packages"
_SRT = f"{_SITE}/sglang/srt"

# URLs of the originals are left out: lab files name no internet hosts
CUDA_GRAPH_CAPTURE_FAILED_MSG = [
    "Possible solutions:",
    "1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)",
    "2. set --cuda-graph-max-bs to a smaller value (e.g., 16)",
    "3. disable torch compile by not using --enable-torch-compile",
    "4. disable CUDA graph by --disable-cuda-graph. (Not recommended. Huge performance loss)",
    "Open an issue on GitHub ",
]
PIECEWISE_CUDA_GRAPH_CAPTURE_FAILED_MSG = [
    "Piecewise CUDA Graph is enabled by default as an experimental feature.",
    "To work around this error, add --disable-piecewise-cuda-graph to your launch command.",
    "Please report this issue on GitHub",
]

_SCHEDULER_INIT = [
    (f"{_SRT}/managers/scheduler.py", 2907, "run_scheduler_process", "scheduler = Scheduler("),
    (f"{_SRT}/managers/scheduler.py", 331, "__init__", "self.init_model_worker()"),
    (f"{_SRT}/managers/scheduler.py", 474, "init_model_worker", "self.tp_worker = TpModelWorker("),
    (f"{_SRT}/managers/tp_worker.py", 237, "__init__", "self._model_runner = ModelRunner("),
    (f"{_SRT}/model_executor/model_runner.py", 322, "__init__", "self.initialize(min_per_gpu_memory)"),
]


def pool_not_enough_memory(mem_fraction_static):
    frames = _SCHEDULER_INIT + [
        (f"{_SRT}/model_executor/model_runner.py", 486, "initialize", "self.init_memory_pool(min_per_gpu_memory)"),
        (f"{_SRT}/model_executor/model_runner.py", 1874, "init_memory_pool", "raise RuntimeError("),
    ]
    return frames, [f"RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. Current value: mem_fraction_static={mem_fraction_static}"]


def _oom_line(tried_gib, total_gib, free_gib, graph_pool_gib):
    in_use = total_gib - free_gib
    return (
        f"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {tried_gib:.2f} GiB. GPU 0 has a total capacity of "
        f"{total_gib:.2f} GiB of which {free_gib * 1024:.2f} MiB is free. Including non-PyTorch memory, this process has "
        f"{in_use:.2f} GiB memory in use. Of the allocated memory {in_use - 0.6:.2f} GiB is allocated by PyTorch, with "
        f"{graph_pool_gib:.2f} GiB allocated in private pools (e.g., CUDA Graphs), and 254.31 MiB is reserved by PyTorch but "
        f"unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True "
        f"to avoid fragmentation."
    )


def graph_capture_oom(piecewise, tried_gib, total_gib, free_gib, graph_pool_gib):
    """torch OOM inside capture, re-raised by the runner with its 'Possible solutions' list."""
    if piecewise:
        runner, init, line = "piecewise_cuda_graph_runner.py", "init_piecewise_cuda_graphs", 2049
        hint = PIECEWISE_CUDA_GRAPH_CAPTURE_FAILED_MSG
    else:
        runner, init, line = "cuda_graph_runner.py", "init_device_graphs", 2011
        hint = CUDA_GRAPH_CAPTURE_FAILED_MSG
    oom = _oom_line(tried_gib, total_gib, free_gib, graph_pool_gib)
    frames = _SCHEDULER_INIT + [
        (f"{_SRT}/model_executor/model_runner.py", 525, "initialize", f"self.{init}()"),
        (f"{_SRT}/model_executor/model_runner.py", line, init, "self.graph_runner = CudaGraphRunner(self)"),
        (f"{_SRT}/model_executor/{runner}", 381, "__init__", "self.capture()"),
        (f"{_SRT}/model_executor/{runner}", 502, "capture", "raise Exception("),
    ]
    return frames, [f"Exception: Capture cuda graph failed: {oom.split(': ', 1)[1]}"] + hint


def graph_capture_oom_cause(tried_gib, total_gib, free_gib, graph_pool_gib):
    """The chained torch traceback printed above the runner's re-raise, as Python chains them."""
    frames = [
        (f"{_SRT}/model_executor/cuda_graph_runner.py", 494, "capture", ") = self.capture_one_batch_size(bs, forward)"),
        (f"{_SRT}/model_executor/cuda_graph_runner.py", 671, "capture_one_batch_size", "run_once()"),
        (f"{_SITE}/torch/cuda/graphs.py", 186, "__exit__", "self.cuda_graph.capture_end()"),
    ]
    return frames, [_oom_line(tried_gib, total_gib, free_gib, graph_pool_gib), "", "During handling of the above exception, another exception occurred:", ""]


def triton_out_of_resources(required, limit):
    frames = _SCHEDULER_INIT + [
        (f"{_SRT}/model_executor/model_runner.py", 525, "initialize", "self.init_piecewise_cuda_graphs()"),
        (f"{_SRT}/layers/attention/fla/chunk.py", 211, "chunk_gated_delta_rule_fwd", "o = chunk_fwd_o("),
        (f"{_SITE}/triton/runtime/jit.py", 757, "run", "launch_metadata = kernel.launch_metadata(grid, stream, *non_constexpr_vals)"),
        (f"{_SITE}/triton/compiler/compiler.py", 475, "_init_handles", "raise OutOfResources(self.metadata.shared, max_shared, \"shared memory\")"),
    ]
    return frames, [
        f"triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: {required}, Hardware limit: {limit}. "
        "Reducing block sizes or `num_stages` may help."
    ]


def triton_cache_unwritable(exc):
    """Triton's FileCacheManager creates its cache directory before the first kernel compiles."""
    frames = _SCHEDULER_INIT + [
        (f"{_SRT}/model_executor/model_runner.py", 525, "initialize", "self.init_piecewise_cuda_graphs()"),
        (f"{_SRT}/layers/attention/fla/chunk.py", 211, "chunk_gated_delta_rule_fwd", "o = chunk_fwd_o("),
        (f"{_SITE}/triton/runtime/jit.py", 744, "run", "kernel = self._do_compile(key, signature, device, constexprs, options, attrs, warmup)"),
        (f"{_SITE}/triton/runtime/cache.py", 61, "__init__", "os.makedirs(self.cache_dir, exist_ok=True)"),
    ]
    return frames, [f"{type(exc).__name__}: [Errno {exc.errno}] {exc.strerror}: {exc.filename!r}"]


def invalid_device_ordinal():
    frames = _SCHEDULER_INIT[:1] + [
        (f"{_SRT}/managers/scheduler.py", 2894, "run_scheduler_process", "torch.get_device_module(\"cuda\").set_device(gpu_id)"),
        (f"{_SITE}/torch/cuda/__init__.py", 567, "set_device", "torch._C._cuda_setDevice(device)"),
    ]
    return frames, [
        "torch.AcceleratorError: CUDA error: invalid device ordinal",
        "GPU device may be out of range, do you have enough GPUs?",
        "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.",
        "For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
        "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.",
    ]


def no_driver():
    frames = [
        (f"{_SITE}/sglang/launch_server.py", 29, "<module>", "run_server(server_args)"),
        (f"{_SRT}/server_args.py", 612, "__post_init__", "gpu_mem = get_device_memory_capacity(self.device)"),
        (f"{_SITE}/torch/cuda/__init__.py", 372, "_lazy_init", "torch._C._cuda_init()"),
    ]
    return frames, ["RuntimeError: Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU and installed a driver."]


def config_load(message):
    frames = [
        (f"{_SITE}/sglang/launch_server.py", 24, "<module>", "server_args = prepare_server_args(sys.argv[1:])"),
        (f"{_SRT}/server_args.py", 4012, "prepare_server_args", "return ServerArgs.from_cli_args(raw_args)"),
        (f"{_SRT}/server_args.py", 688, "__post_init__", "self._handle_model_specific_adjustments()"),
        (f"{_SRT}/utils/hf_transformers_utils.py", 231, "get_config", "config = AutoConfig.from_pretrained("),
        (f"{_SITE}/transformers/configuration_utils.py", 743, "_get_config_dict", "raise OSError("),
    ]
    return frames, [f"OSError: {message}"]


def scheduler_crash():
    frames = [
        (f"{_SRT}/managers/scheduler.py", 2921, "run_scheduler_process", "scheduler.event_loop_overlap()"),
        (f"{_SRT}/managers/scheduler.py", 1062, "event_loop_overlap", "batch_result = self.run_batch(batch)"),
        (f"{_SRT}/managers/scheduler.py", 2068, "run_batch", "batch_result = self.draft_worker.forward_batch_generation(batch)"),
        (f"{_SRT}/speculative/dflash_worker.py", 388, "forward_batch_generation", "self.verify(batch, spec_info)"),
    ]
    return frames, [
        "RuntimeError: CUDA error: an illegal memory access was encountered",
        "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.",
        "For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
    ]


def generate_request(fault_label):
    frames = [
        (f"{_SITE}/uvicorn/protocols/http/httptools_impl.py", 409, "run_asgi", "result = await app(  # type: ignore[func-returns-value]"),
        (f"{_SRT}/entrypoints/http_server.py", 591, "generate_request", "ret = await _global_state.tokenizer_manager.generate_request("),
        (f"{_SRT}/managers/tokenizer_manager.py", 512, "generate_request", "async for response in self._wait_one_response(obj, state, request):"),
    ]
    return frames, [f"RuntimeError: generation failed in the scheduler [{fault_label}]"]
