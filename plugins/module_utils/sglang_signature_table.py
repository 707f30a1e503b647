# -*- coding: utf-8 -*-
# Copyright: (c) 2026, ddtree.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""SGLang's failure wording, one entry per cause: the signature table sglang_signatures classifies with.

This is the only place where journal wording is mapped to a cause. Modules, filters and docs
refer to the ``id`` of an entry; add a signature here, with a real log that shows it (or the
source line that prints it) and a test, rather than matching log text anywhere else.

Over 400 lines on purpose: it is data, one entry per cause with the sources of its patterns,
read top to bottom; splitting it would scatter the causes a reader compares.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

# torch's caching allocator, the CUDA runtime, and torch_npu's allocator on Ascend (SGLang's NPU backend);
# NCCL's own allocation failure, which it reports as 'unhandled cuda error' with this as its last error (NVIDIA/nccl
# src/include/alloc.h::ncclCudaCallocDebug, RCCL's the same)
_OOM = (
    r'(?:CUDA out of memory|torch\.(?:cuda\.)?OutOfMemoryError|CUDA error: out of memory|cudaErrorMemoryAllocation|NPU out of memory\. Tried|'
    r'Failed to CUDA calloc \d+ bytes)'
)

# Fields of an entry:
#   id          stable name, returned as ``cause``
#   patterns    regexes searched in each journal MESSAGE line; named groups feed ``advice``. A pattern
#               may instead be a dict: {'re': regex, ...} with any of
#                 priority      weaker evidence of the same cause ranks lower than the entry
#                 fatal         False: a warning line of this cause (not a failure by itself)
#                 fatal_with    ids: that warning counts as fatal when a later fatal line of one of
#                               these ids shows the server died with it
#                 fatal_at_most {group: number}: fatal only when the group's number is at most this,
#                               a warning otherwise
#   phase       where in start-up this usually strikes (documentation and reporting)
#   when_phase  optional: only match while phase_of(lines so far) is one of these; with no phase
#               line yet, the frames of the traceback being printed stand in (_FRAME_PHASES)
#   fatal       True: the service is going down; False: a warning worth showing
#   priority    the most specific fatal match wins; cascades (child died, NCCL timeouts on
#               the other rank) rank below their causes
#   diagnosis   one line, what it means
#   advice      str.format template; {group} from the pattern (or from another line of the same
#               cause), then the unit's flags (sizing_values), then ``defaults``
SIGNATURES = (
    {
        'id': 'unrecognized_arguments',
        'ends': True,
        'patterns': (r'error: unrecognized arguments: (?P<args>.+)$',),
        'phase': 'starting',
        'fatal': True,
        'priority': 100,
        'diagnosis': 'the installed SGLang build does not know these flags: {args}',
        'advice': 'Remove {args} from the service flags, or install the SGLang build that has them '
        '(DDTree flags such as --speculative-ddtree-budget need the DDTree patch set). '
        'Check flags against the installed build before restarting.',
        'defaults': {'args': 'some flags'},
    },
    {
        'id': 'invalid_argument',
        'ends': True,
        'patterns': (
            r'error: argument (?P<arg>\S+?):? invalid choice: (?P<value>\S+)(?: \(choose from (?P<choices>.*)\))?',
            r'error: argument (?P<arg>\S+?): (?P<value>.+)$',
        ),
        'phase': 'starting',
        'fatal': True,
        'priority': 95,
        'diagnosis': 'SGLang rejected the value of {arg}: {value}',
        'advice': 'Fix the value of {arg} in the service flags. Accepted values: {choices}. '
        'A value such as DDTREE for --speculative-algorithm only exists in a patched build.',
        'defaults': {'arg': 'an argument', 'value': 'invalid value', 'choices': 'see --help of the installed build'},
    },
    {
        'id': 'disk_full',
        # ENOSPC's strerror as Python's OSError prints it ("[Errno 28] No space left on device: 'path'"), and as
        # ninja, nvcc or the hub's downloader write it without the errno
        'patterns': (r"(?:\[Errno 28\] )?No space left on device(?:: '(?P<path>[^']+)')?",),
        'phase': 'starting',
        'fatal': True,
        'priority': 93,  # a full disk breaks downloads, JIT builds and caches: it is their root cause
        'diagnosis': 'a disk of the host is full (ENOSPC) while writing {path}',
        'advice': 'Free space or move the writes (`df -h` on the host): downloads go to HF_HOME or --download-dir '
        '({download_dir}), JIT kernels and Triton to the service user\'s ~/.cache (FLASHINFER_WORKSPACE_BASE, '
        'TRITON_CACHE_DIR in sglang_service_environment), then restart.',
        'defaults': {'path': 'a file', 'download_dir': 'unset'},
    },
    {
        'id': 'driver_too_old',
        'patterns': (
            # pytorch/pytorch c10/cuda/CUDAFunctions.cpp (device_count_impl): cudaErrorInsufficientDriver
            {
                're': r'driver on your system is too old \(found version (?P<found>\d+)\)',
                'source': 'pytorch/pytorch c10/cuda/CUDAFunctions.cpp::device_count_impl (cudaErrorInsufficientDriver)',
            },
            # cudaGetErrorString(cudaErrorInsufficientDriver), and the enum's name as cuda-python / CuTe DSL print it
            {'re': r'CUDA driver version is insufficient for CUDA runtime version', 'source': 'CUDA runtime cudaGetErrorString(cudaErrorInsufficientDriver)'},
            {
                're': r'cudaErrorInsufficientDriver',
                'source': 'CUDA runtime error enum cudaErrorInsufficientDriver, by name as cuda-python and CuTe DSL print it',
            },
            # torch's "Unexpected error from cudaGetDeviceCount() ... Error 804: <cudaGetErrorString>" (same file):
            # cudaErrorCompatNotSupportedOnDevice, a CUDA newer than the driver on a card without forward compatibility
            r'Error (?P<error>804): forward compatibility was attempted on non supported HW',
        ),
        'phase': 'starting',
        'fatal': True,
        'priority': 92,
        'diagnosis': 'the NVIDIA driver is older than the CUDA runtime of the installed wheels needs (driver version {found}, CUDA error {error})',
        'advice': 'Upgrade the host\'s NVIDIA driver to one that supports the CUDA the torch / sgl-kernel / flashinfer wheels '
        'were built for (`nvidia-smi` shows the newest CUDA the driver supports), or install wheels built for an older '
        'CUDA. Error 804 (forward compatibility) on a GeForce or workstation card means the cuda-compat package '
        'cannot help: only a newer driver does.',
        'defaults': {'found': 'not printed', 'error': '35 (insufficient driver)'},
    },
    {
        'id': 'model_download_failed',
        'patterns': (
            # huggingface/huggingface_hub src/huggingface_hub/utils/_http.py::hf_raise_for_status (GatedRepoError)
            r'Cannot access gated repo for url (?P<url>https?://\S+?)\.?$',
            {
                're': r'GatedRepoError(?::\s*(?P<status>\d{3}) Client Error)?',
                'source': 'huggingface/huggingface_hub src/huggingface_hub/utils/_http.py::hf_raise_for_status (GatedRepoError)',
            },
            # psf/requests Response.raise_for_status on a hub URL (older huggingface_hub let it through)
            {
                're': r'(?P<status>401|403) Client Error: [\w ]+ for url: (?P<url>https://(?:huggingface\.co|hf\.co)/\S+)',
                'source': 'psf/requests src/requests/models.py::Response.raise_for_status on a Hub URL',
            },
            # huggingface/transformers src/transformers/utils/hub.py::cached_file (hub unreachable, nothing cached)
            {
                're': r"We couldn't connect to '(?P<url>[^']+)' to load this file",
                'source': 'huggingface/transformers src/transformers/utils/hub.py::cached_file (Hub unreachable, nothing cached)',
            },
            # SGLang's own lookup of a model that is neither local nor downloadable (sglang serve / generate)
            {
                're': r'Could not find model locally at (?P<url>\S+) and failed to download',
                'source': 'sgl-project/sglang python/sglang/cli/utils.py::_maybe_download_model',
            },
            # HF_HUB_OFFLINE=1 and a file the cache does not hold: the Hub is not even asked
            {
                're': r'OfflineModeIsEnabled(?:: Cannot reach (?P<url>\S+?):)?',
                'source': 'huggingface/huggingface_hub src/huggingface_hub/errors.py (OfflineModeIsEnabled, raised by '
                'utils/_http.py when HF_HUB_OFFLINE is set)',
            },
        ),
        'phase': 'starting',
        'fatal': True,
        'priority': 91,  # above model_config_error: "Can't load the configuration" follows a failed download
        'diagnosis': 'the model could not be downloaded from the Hugging Face Hub (HTTP {status}, {url}): gated, unauthorised or unreachable',
        'advice': 'A gated repo needs its licence accepted on the Hub and a token with access in the unit (HF_TOKEN in an '
        'EnvironmentFile, sglang_service_environment_files); a host without Hub access needs the model downloaded '
        'beforehand, --model-path ({model_path}) pointing at that directory and HF_HUB_OFFLINE=1.',
        'defaults': {'status': 'error', 'url': 'the Hub', 'model_path': 'now a Hub repo id'},
    },
    {
        'id': 'cuda_abi_mismatch',
        'patterns': (
            r'undefined symbol: ?(?P<symbol>\S*)',
            r'no kernel image is available for execution on the device',
            {'re': r'CUDA error: no kernel image', 'source': 'pytorch/pytorch c10/cuda/CUDAException.h (C10_CUDA_CHECK): cudaErrorNoKernelImageForDevice'},
            # the kernel's code object has no build for this GPU's architecture (ROCm's word for the same, and CUDA's)
            {
                're': r'(?:CUDA|HIP) error: invalid device function',
                'source': 'CUDA runtime cudaGetErrorString(cudaErrorInvalidDeviceFunction), HIP hipGetErrorString('
                'hipErrorInvalidDeviceFunction), as torch\'s C10_CUDA_CHECK prints them',
            },
            # ROCm's kernel library has no build for this GPU (the same fault on AMD: kernels missing for the arch)
            {'re': r'Unknown GPU architecture: (?P<symbol>gfx\w+)', 'source': 'ROCm/aiter aiter/jit/utils/chip_info.py::get_gfx_custom_op_core'},
            # the dynamic loader's error (dlopen) as Python's ImportError prints it: a CUDA library of the major version
            # the wheels were built for is missing (libnvrtc.so.12 on a CUDA 13 host)
            r'(?P<symbol>lib(?:cudart|nvrtc|cublas\w*|cusparse\w*|cusolver\w*|cufft\w*|curand|cudnn\w*|nccl|nvJitLink|cuda)'
            r'\.so[.\d]*): cannot open shared object file',
        ),
        'phase': 'starting',
        'fatal': True,
        'priority': 90,
        'diagnosis': 'compiled extensions do not match the installed torch/CUDA or this GPU (undefined symbol or missing kernel image)',
        'advice': 'Install a CUDA-ABI-matched wheel set (torch, sglang, sgl-kernel, flashinfer built for the same torch '
        'and CUDA, with kernels for this GPU\'s compute capability) and probe the imports before restarting. '
        'Symbol: {symbol}',
        'defaults': {'symbol': 'n/a'},
    },
    {
        'id': 'model_config_error',
        'patterns': (
            {
                're': r"Can't load the configuration of '(?P<path>[^']+)'",
                'source': 'huggingface/transformers src/transformers/configuration_utils.py::PretrainedConfig._get_config_dict',
            },
            {
                're': r"(?P<path>\S+) does not appear to have a file named config\.json",
                'source': 'huggingface/transformers src/transformers/utils/hub.py::cached_file (a directory without the file)',
            },
            {
                're': r'checkpoint you are trying to load has model type `(?P<model_type>[^`]+)`',
                'source': 'huggingface/transformers src/transformers/models/auto/configuration_auto.py::AutoConfig.from_pretrained',
            },
            # huggingface/huggingface_hub src/huggingface_hub/utils/_validators.py::validate_repo_id (HFValidationError):
            # a --model-path that is not a directory on the host is taken for a Hub repo id, and an absolute path is none.
            # Ranked below tokenizer_load_error: raised under SGLang's get_tokenizer, the path is --tokenizer-path's
            {'re': r"Repo id must be in the form 'repo_name' or 'namespace/repo_name': '(?P<path>[^']+)'", 'priority': 86},
            # the exception's class, whichever of validate_repo_id's checks failed (form, characters, length)
            {'re': r'huggingface_hub\.(?:utils\.)?(?:_validators\.|errors\.)?HFValidationError', 'priority': 86},
            # huggingface/transformers src/transformers/models/auto/configuration_auto.py::AutoConfig.from_pretrained: the
            # traceback's source line above the KeyError of a model_type this transformers does not know (newer builds
            # re-raise it as the "has model type" ValueError above)
            r'CONFIG_MAPPING\[config_dict\["model_type"\]\]',
            # a config class without an attribute SGLang's model code reads (a model type this SGLang does not support as
            # configured): Python's AttributeError through PretrainedConfig.__getattribute__
            {
                're': r"AttributeError: '(?P<model_type>\w+Config)' object has no attribute '\w+'",
                'source': 'huggingface/transformers src/transformers/configuration_utils.py::PretrainedConfig.__getattribute__',
            },
        ),
        'phase': 'starting',
        'fatal': True,
        'priority': 90,
        'diagnosis': 'the model path or its config.json cannot be loaded ({path})',
        'advice': 'Check that --model-path {path} (and --speculative-draft-model-path) exists on the host, holds a '
        'config.json readable by the service user, and that the installed transformers knows the architecture '
        '(model type {model_type}). A path that is not a directory on the host is read as a Hub repo id '
        '(HFValidationError).',
        'defaults': {'path': 'the model path', 'model_type': 'named in config.json'},
    },
    {
        'id': 'trust_remote_code_required',
        'patterns': (
            # huggingface/transformers src/transformers/dynamic_module_utils.py::resolve_trust_remote_code
            r'The repository for (?P<path>\S+) contains custom code which must be executed',
            r'(?:Loading (?P<path>\S+) )?requires you to execute (?:the \w+ file in that repo|custom code contained in the model repository)',
            r'(?:set the option|passing the argument) `trust_remote_code=True`',
            # sgl-project/sglang python/sglang/srt/utils/hf_transformers/tokenizer.py::_auto_tokenizer_from_pretrained
            {
                're': r'`--trust-remote-code` flag',
                'source': 'sgl-project/sglang python/sglang/srt/utils/hf_transformers/tokenizer.py::_auto_tokenizer_from_pretrained',
            },
        ),
        'phase': 'starting',
        'fatal': True,
        'priority': 89,  # above tokenizer_load_error: SGLang words this one as "Failed to load the tokenizer"
        'diagnosis': 'the model at {path} ships its own Python code and the server was started without --trust-remote-code',
        'advice': 'Read the custom code of {path} (its *.py files), then add trust_remote_code: true to the envelope '
        '(--trust-remote-code). Without a terminal, transformers\' "Do you wish to run the custom code?" prompt ends '
        'in EOFError or a timeout instead of asking.',
        'defaults': {'path': 'the model'},
    },
    {
        'id': 'unsupported_architecture',
        # sgl-project/sglang python/sglang/srt/models/registry.py::_ModelRegistry (vLLM's registry words it the same)
        # ("... are not supported for now."; a paste cut inside "now" still names the architectures)
        'patterns': (
            r'Model architectures (?P<architectures>\[[^\]]*\]) are not supported\b',
            {
                're': r'Unsupported architectures: (?P<architectures>[^.]+)\. Supported list:',
                'source': 'sgl-project/sglang python/sglang/srt/managers/router/model_runner.py::get_model_cls_by_arch_name (2024)',
            },
            # the Transformers fallback (--model-impl auto/transformers) finds no class of that name either
            {
                're': r"Cannot find model module\. '(?P<architectures>[^']+)' is not a registered model in the Transformers library",
                'source': 'sgl-project/sglang python/sglang/srt/model_loader/utils.py::resolve_transformers_arch',
            },
        ),
        'phase': 'starting',
        'fatal': True,
        'priority': 88,
        'diagnosis': 'the installed SGLang has no implementation of the model\'s architecture {architectures}',
        'advice': 'Install an SGLang release whose supported models list {architectures}, or try --model-impl transformers '
        '(the Transformers fallback) where the build has it; check that config.json of {model_path} names the '
        'architecture you expect.',
        'defaults': {'architectures': "in config.json's architectures", 'model_path': 'the model'},
    },
    {
        'id': 'tokenizer_load_error',
        'patterns': (
            # huggingface/tokenizers (serde, through Tokenizer.from_file): tokenizer.json written by a newer tokenizers
            r'data did not match any variant of untagged enum (?P<detail>\w+)',
            # sgl-project/sglang python/sglang/srt/utils/hf_transformers/tokenizer.py (_auto_tokenizer_from_pretrained,
            # get_tokenizer with fastokens)
            {
                're': r'Failed to load the tokenizer\.',
                'source': 'sgl-project/sglang python/sglang/srt/utils/hf_transformers/tokenizer.py::_auto_tokenizer_from_pretrained',
            },
            {
                're': r'fastokens failed to load tokenizer for',
                'source': 'sgl-project/sglang python/sglang/srt/utils/hf_transformers/tokenizer.py::get_tokenizer (fastokens)',
            },
            # huggingface/transformers src/transformers/tokenization_utils_base.py::from_pretrained and
            # tokenization_utils_fast.py::PreTrainedTokenizerFast.__init__
            r"Can't load tokenizer for '(?P<path>[^']+)'",
            {
                're': r"Couldn't instantiate the backend tokenizer",
                'source': 'huggingface/transformers src/transformers/tokenization_utils_fast.py::PreTrainedTokenizerFast.__init__',
            },
            # a load error raised under SGLang's own get_tokenizer is the tokenizer's (a --tokenizer-path that is no directory
            # and no repo id); the causes that say more (a download refused, remote code) rank above it
            {
                're': r'sglang/srt/utils/hf_transformers(?:_utils\.py|/tokenizer\.py)", line \d+, in get_tokenizer$',
                'source': 'sgl-project/sglang python/sglang/srt/utils/hf_transformers_utils.py::get_tokenizer (hf_transformers/tokenizer.py from 0.5.10)',
            },
        ),
        'phase': 'starting',
        'fatal': True,
        'priority': 87,
        'diagnosis': 'the tokenizer of {path} could not be loaded ({detail})',
        'advice': '"untagged enum ModelWrapper" means tokenizer.json was written by a newer tokenizers than the installed one: '
        'upgrade tokenizers / transformers in the service venv. Otherwise check --tokenizer-path ({tokenizer_path}) '
        'and the tokenizer files (tokenizer.json, tokenizer_config.json) next to --model-path {model_path}.',
        'defaults': {'path': 'the model', 'detail': 'see the fatal lines', 'tokenizer_path': 'unset: the model path', 'model_path': 'as in the unit'},
    },
    {
        'id': 'port_in_use',
        'patterns': (
            r'error while attempting to bind on address (?P<address>\(.*?\))?.*address already in use',
            # pytorch/pytorch torch/csrc/distributed/c10d/socket.cpp: "The server socket has failed to bind to
            # [::]:29500 (errno: 98 - Address already in use)." (the torch.distributed store's port)
            r'failed to bind to (?P<address>\S+) \(errno: 98 - Address already in use\)',
            r'\[Errno 98\].*',
            # the HTTP, metrics and NCCL ports, each waited for by name
            {
                're': r'(?P<address>\w+ at \d+) is not available in \d+ seconds\. \w+ is used by a process already',
                'source': 'sgl-project/sglang python/sglang/srt/utils/common.py::wait_port_available',
            },
            r'(?i)address already in use',
        ),
        'phase': 'binding',
        'fatal': True,
        'priority': 85,
        'diagnosis': 'a port the server binds is already taken by another process {address}',
        'advice': "Find the holder with `ss -ltnp` (often the previous SGLang unit still running under another name) "
        "and stop it, or change the port: --port ({port}) for the HTTP API, --nccl-port or --dist-init-addr "
        "({dist_init_addr}) for torch.distributed (29500 by default). Address: {address}",
        'defaults': {'address': ''},
    },
    {
        'id': 'kv_profile_too_small',
        # a warning (model_runner.py in 0.4.x), and SGLang goes on with the profiled value; at or below 0 no KV cache
        # fits at all (0.5.x then fails with "Not enough memory", older builds run on into a crash)
        'patterns': (
            {
                're': r'max_total_tokens=(?P<max_total_tokens>\d+) is larger than the profiled value (?P<profiled>-?\d+)',
                'fatal_at_most': {'profiled': 0},
                'source': 'sgl-project/sglang python/sglang/srt/mem_cache/kv_cache_configurator.py::_apply_token_constraints',
            },
        ),
        'phase': 'sizing_pools',
        'fatal': True,
        'priority': 81,  # above mem_pool_too_small, which follows it in 0.5.x and has no numbers
        'diagnosis': 'memory profiling left room for {profiled} KV-cache tokens, less than --max-total-tokens {max_total_tokens}: '
        'after the weights and activations, --mem-fraction-static {mem_fraction_static} leaves the KV cache no room',
        'advice': 'Raise --mem-fraction-static ({mem_fraction_static}, try {mem_fraction_static_up}), or lower --context-length '
        '{context_length} (try {context_length_down}) or --max-running-requests {max_running_requests} (try '
        '{max_running_requests_down}). A negative value ({profiled}) means weights plus activations already exceed the '
        'static fraction: spread the model over more GPUs (--tp-size {tp_size}) or use a smaller or quantized checkpoint.',
        'defaults': {'mem_fraction_static': 'unset (SGLang picks it)', 'mem_fraction_static_up': 'a higher value'},
    },
    {
        'id': 'mem_pool_too_small',
        'ends': True,
        # newer builds append "Current value: ..." (pool_configurator.py MemoryPoolConfig; 0.5.6 printed the
        # expression: "self.server_args.mem_fraction_static=0.2"), older ones stop at the period
        'patterns': (
            {
                're': r'Loaded weights leave no GPU memory for the KV cache under --mem-fraction-static=(?P<mem_fraction_static>[0-9.]+)'
                r'(?:\. Raise --mem-fraction-static above (?P<mem_fraction_static_up>[0-9.]+))?',
                'source': 'sgl-project/sglang python/sglang/srt KV-cache sizing after the weights load (rest_memory <= 0), '
                'the newer wording of the message below',
            },
            # (SGLang before 0.2 spelt it "Not enought memory": python/sglang/srt/managers/router/model_runner.py)
            r'Not enought? memory\. Please try to increase --mem-fraction-static\.'
            r'(?: Current value: (?:\w+\.)*mem_fraction_static=(?P<mem_fraction_static>[0-9.]+))?',
        ),
        'phase': 'sizing_pools',
        'fatal': True,
        'priority': 80,
        'diagnosis': 'memory-pool sizing failed: after weights, mem_fraction_static={mem_fraction_static} leaves no room '
        'for the KV cache and recurrent-state pools',
        'advice': 'Raise --mem-fraction-static above {mem_fraction_static} (try {mem_fraction_static_up}; leaves less headroom '
        'for CUDA graphs), or make the pools smaller: --context-length {context_length} (try {context_length_down}), '
        '--max-running-requests {max_running_requests} (try {max_running_requests_down}), '
        '--mamba-full-memory-ratio {mamba_full_memory_ratio} (try 0.5); a draft model (DFlash/DDTree) needs room of its own.',
        'defaults': {'mem_fraction_static': 'its current value'},
    },
    {
        'id': 'cuda_oom_graph_capture',
        'patterns': (
            {
                're': r'Capture cuda graph failed:.*' + _OOM,
                'source': 'sgl-project/sglang python/sglang/srt/model_executor/cuda_graph_runner.py::CudaGraphRunner.__init__',
            },
            _OOM,
        ),
        'when_phase': ('capturing_cuda_graph',),
        'phase': 'capturing_cuda_graph',
        'fatal': True,
        'priority': 78,
        'diagnosis': 'CUDA out of memory while capturing CUDA graphs',
        'advice': 'Lower --mem-fraction-static from {mem_fraction_static} (try {mem_fraction_static_down}) to leave more memory '
        'outside the static pools, or lower --cuda-graph-max-bs ({cuda_graph_max_bs}); --disable-cuda-graph also '
        'works if the build does not report it ignored.',
    },
    {
        'id': 'cuda_oom_loading_weights',
        'patterns': ({'re': _OOM, 'source': 'pytorch/pytorch c10/cuda/CUDACachingAllocator.cpp (torch.OutOfMemoryError)'},),
        'when_phase': ('starting', 'loading_weights'),
        'phase': 'loading_weights',
        'fatal': True,
        'priority': 76,
        'diagnosis': 'CUDA out of memory while loading weights: the model does not fit on the GPUs as split',
        'advice': 'Raise --tensor-parallel-size (more GPUs), use a quantized checkpoint, or free the GPUs '
        '(nvidia-smi shows other processes holding memory, e.g. the previous service).',
    },
    {
        'id': 'cuda_oom_sizing_pools',
        'patterns': (_OOM,),
        'when_phase': ('sizing_pools', 'pools_sized'),
        'phase': 'sizing_pools',
        'fatal': True,
        'priority': 76,
        'diagnosis': 'CUDA out of memory while allocating the KV cache / state pools',
        'advice': 'Lower --mem-fraction-static, or lower --context-length / --max-running-requests / --mamba-full-memory-ratio.',
    },
    {
        'id': 'cuda_oom_serving',
        'patterns': (_OOM,),
        'when_phase': ('binding', 'ready'),
        'phase': 'ready',
        'fatal': True,
        'priority': 75,
        'diagnosis': 'CUDA out of memory while serving requests',
        'advice': 'Lower --mem-fraction-static to leave activation headroom, or lower --max-running-requests / --chunked-prefill-size / --cuda-graph-max-bs.',
    },
    {
        'id': 'kv_cache_oom_serving',
        'patterns': (
            # sgl-project/sglang python/sglang/srt/mem_cache/allocation.py (alloc_for_extend / alloc_for_decode,
            # raised as RuntimeError; scheduler.py in 0.4.x): the three lines of one message
            r'(?P<stage>Decode|Prefill) out of memory\. Try to lower your batch size',
            r'^Try to allocate (?P<needed>\d+) tokens\.',
            r'^Ava(?:li|il)able tokens: (?P<available>\d+)',  # "Avaliable" in 0.4.x
            {
                're': r'alloc_req_slots runs out of memory',
                'source': 'sgl-project/sglang python/sglang/srt/managers/schedule_batch.py::ScheduleBatch.alloc_req_slots',
            },
            # retraction left one request and the pool has no token for it (an assertion, so the scheduler dies)
            {
                're': r'No space left for only one request',
                'source': 'sgl-project/sglang python/sglang/srt/managers/schedule_batch.py::ScheduleBatch.retract_decode',
            },
            # a warning ("Decode out of memory happened." before 0.5): SGLang retracts requests and re-queues them, the
            # server goes on
            {
                're': r'(?:Decode out of memory happened|KV cache pool is full\. Retract requests)\. #retracted_reqs: (?P<retracted>\d+)',
                'fatal': False,
                'fatal_with': ('child_process_died',),
                'source': 'sgl-project/sglang python/sglang/srt/managers/scheduler.py::update_running_batch',
            },
        ),
        'phase': 'ready',
        'fatal': True,
        'priority': 74,
        'diagnosis': 'the KV cache pool is full while serving: {stage} needed {needed} tokens and {available} were free',
        'advice': 'Lower --max-running-requests ({max_running_requests}, try {max_running_requests_down}) or '
        '--chunked-prefill-size ({chunked_prefill_size}), or raise --mem-fraction-static ({mem_fraction_static}, try '
        '{mem_fraction_static_up}) for a larger pool; retraction warnings before it show the pool was short for a while.',
        'defaults': {
            'stage': 'a batch',
            'needed': 'more',
            'available': 'fewer',
            'mem_fraction_static': 'unset (SGLang picks it)',
            'mem_fraction_static_up': 'a higher value',
        },
    },
    {
        'id': 'triton_error',
        # older Triton raised OutOfResources as triton.runtime.autotuner.OutOfResources (InternLM/lmdeploy#2451);
        # a kernel that does not compile for this Triton raises triton/compiler/errors.py::CompilationError
        'patterns': (
            r'triton\.(?:runtime\.(?:errors|autotuner)|compiler\.errors)\.(?P<triton_error>\w+)(?::\s*(?P<detail>.*))?',
            # the same exception re-raised by torch inductor, which names its class without the module
            {
                're': r'(?P<triton_error>OutOfResources): out of resource: (?P<detail>.+)',
                'source': 'triton-lang/triton python/triton/runtime/errors.py::OutOfResources ("out of resource: {name}, Required: ..., Hardware limit: ...")',
            },
            # the MLIR pipeline of a kernel that does not lower for this GPU
            {'re': r'PassManager::run failed', 'source': 'triton-lang/triton python/src/ir.cc (PassManager.run)'},
            # ROCm's launcher refuses the launch (the CUDA launcher's errors are cuda_illegal_memory_access's)
            {'re': r'Triton Error \[HIP\]: +Code: \d+, Messs?age: (?P<detail>.+)', 'source': 'triton-lang/triton third_party/amd/backend/driver.c::hipAssert'},
        ),
        'phase': 'capturing_cuda_graph',
        'fatal': True,
        'priority': 70,
        'diagnosis': 'a Triton kernel failed ({triton_error}: {detail})',
        'advice': 'The kernel configuration does not fit this GPU (OutOfResources: shared memory). Try another attention / '
        'linear-attention backend, a smaller --cuda-graph-max-bs, or a build tuned for this GPU; check that '
        '--disable-cuda-graph is not reported ignored.',
        'defaults': {'triton_error': 'Triton error', 'detail': ''},
    },
    {
        'id': 'jit_build_failed',
        'patterns': (
            # Python's subprocess when the build tool is not on PATH (flashinfer python/flashinfer/jit/cpp_ext.py::run_ninja,
            # torch/utils/cpp_extension.py), and torch's own check for it
            {
                're': r"No such file or directory: '(?P<tool>ninja|nvcc)'",
                'source': "Python's subprocess (FileNotFoundError) from flashinfer python/flashinfer/jit/cpp_ext.py::run_ninja",
            },
            {'re': r'Ninja is required to load C\+\+ extensions', 'source': 'pytorch/pytorch torch/utils/cpp_extension.py::verify_ninja_availability'},
            {'re': r'Ninja build failed\.', 'source': 'flashinfer-ai/flashinfer python/flashinfer/jit/cpp_ext.py::run_ninja'},
            {'re': r"Error building extension '(?P<extension>[^']+)'", 'source': 'pytorch/pytorch torch/utils/cpp_extension.py::_run_ninja_build'},
            {
                're': r"Command '\['(?P<tool>ninja)'[^\]]*\]' returned non-zero exit status (?P<status>\d+)",
                'source': 'pytorch/pytorch torch/utils/cpp_extension.py::_run_ninja_build (subprocess.run check=True)',
            },
            # SGLang's jit_kernel builds through tvm-ffi
            {'re': r'(?P<tool>ninja) exited with status (?P<status>\d+)', 'source': 'apache/tvm-ffi python/tvm_ffi/cpp/extension.py::build_ninja'},
            {'re': r'^ninja: build stopped: subcommand failed', 'source': "ninja-build/ninja src/build.cc (a failed build's last line)"},
            # Triton compiles its driver's C stub with the host's compiler on first use (no gcc, no Python headers)
            {'re': r'triton/runtime/build\.py", line \d+, in _build\b', 'source': 'triton-lang/triton python/triton/runtime/build.py::_build'},
        ),
        'phase': 'capturing_cuda_graph',
        'fatal': True,
        'priority': 68,  # above cuda_graph_capture_failed and child_process_died: SGLang wraps the build error in both
        'diagnosis': 'a just-in-time kernel build failed ({tool}; extension {extension}, exit status {status})',
        'advice': 'SGLang builds flashinfer / sgl-kernel kernels on first use: the service venv needs ninja (its bin/ on the '
        'unit\'s PATH) and a CUDA toolkit whose nvcc and headers match the wheels (CUDA_HOME in '
        'sglang_service_environment); read the ninja output above for the failing command (status 139 is nvcc '
        'crashing). Building the kernels once before the restart, or AOT wheels, keeps the compiler off the server.',
        'defaults': {'tool': 'ninja / nvcc', 'extension': 'see the fatal lines', 'status': 'n/a'},
    },
    {
        'id': 'host_oom_killed',
        'patterns': (
            # systemd's own line in the unit's journal: the unit is going down
            {
                're': r'A process of this unit has been killed by the (?P<evidence>OOM killer)',
                'ends': True,
                'source': "systemd/systemd src/core/unit.c::unit_check_oom, in the unit's own journal",
            },
            {'re': r'(?P<evidence>Out of memory: Killed process)', 'source': 'torvalds/linux mm/oom_kill.c::__oom_kill_process'},
            # the kernel's report as dmesg prints it (cgroup v1: "Task in <cgroup> killed as a result of limit of <cgroup>")
            {'re': r'(?P<evidence>oom-kill:constraint=)', 'source': 'torvalds/linux mm/oom_kill.c::dump_oom_summary'},
            {'re': r'(?P<evidence>killed as a result of limit of) ', 'source': 'torvalds/linux mm/memcontrol.c::mem_cgroup_print_oom_context (cgroup v1)'},
            # a child refused memory before the killer came: ENOMEM as CPython's OSError words it
            {
                're': r'OSError: (?P<evidence>\[Errno 12\] Cannot allocate memory)',
                'source': 'the C library\'s strerror(ENOMEM) in CPython\'s OSError (Objects/exceptions.c::OSError_str)',
            },
            # bash's job status, docker's exit code 137 and Ray's actor-death message are not matched: no journal of a
            # systemd unit holds them (the unit's own journal has systemd's line above)
        ),
        'phase': 'loading_weights',
        'fatal': True,
        'priority': 60,
        'diagnosis': 'the server was killed for lack of host memory (host RAM or the container\'s memory limit, not GPU memory); the log says "{evidence}"',
        'advice': 'Give the host (or the container) more RAM or swap, or load weights with less host memory (fewer loader '
        'workers, safetensors, fewer TP ranks per host: --tp-size {tp_size}); check other processes on the host and '
        '`journalctl -k` for the OOM killer\'s report.',
        'defaults': {'evidence': 'the OOM killer'},
    },
    {
        'id': 'cuda_illegal_memory_access',
        # torch's wording of a kernel fault ("CUDA error: <cudaGetErrorString>"), and flashinfer's FLASHINFER_CUDA_CALL
        # ("CUDA Error: ..."): the errors that leave the CUDA context unusable; in SGLang usually a kernel bug of one
        # attention or speculative-decoding path (sgl-project/sglang#5029 shows it during graph capture), or a
        # peer-to-peer fault between GPUs
        'patterns': (
            # Triton's launcher words the driver API's same errors "Triton Error [CUDA]: <cuGetErrorString>"
            # (triton-lang/triton third_party/nvidia/backend/driver.c::gpuAssert)
            # FlashMLA's CHECK_CUDA names the file and line between: "CUDA error (csrc/...cu:589): <cudaGetErrorString>"
            # (deepseek-ai/FlashMLA csrc/utils.h::CHECK_CUDA, built into sgl-kernel)
            {
                're': r'(?:CUDA [Ee]rror(?: \([^)]*\))?|Triton Error \[CUDA\]): (?P<error>an illegal memory access was encountered|'
                r'an illegal instruction was encountered|misaligned address|unspecified launch failure|'
                r'device-side assert triggered|Invalid access of peer GPU memory over nvlink or a hardware error|'
                r'uncorrectable ECC error encountered)',
                'source': 'CUDA runtime cudaGetErrorString of cudaErrorIllegalAddress, cudaErrorIllegalInstruction, '
                'cudaErrorMisalignedAddress, cudaErrorLaunchFailure, cudaErrorAssert, cudaErrorContained and '
                'cudaErrorECCUncorrectable',
            },
            # the custom all-reduce's own check prints the same strings: "Failed: Cuda error <file>:<line> '<error>'"
            {
                're': r"Failed: Cuda error \S+:\d+ '(?P<error>an illegal memory access was encountered|an illegal instruction was "
                r"encountered|unspecified launch failure|uncorrectable ECC error encountered)'",
                'source': 'sgl-project/sglang sgl-kernel/csrc/allreduce/custom_all_reduce.cuh (CUDACHECK)',
            },
            {'re': r'cudaErrorIllegalAddress', 'source': 'CUDA runtime error enum cudaErrorIllegalAddress, by name (flashinfer)'},
            # the same fault on AMD GPUs, as the ROCm runtime aborts the queue
            {
                're': r'(?P<error>HSA_STATUS_ERROR_(?:EXCEPTION|MEMORY_APERTURE_VIOLATION|MEMORY_FAULT|ILLEGAL_INSTRUCTION)): ',
                'source': 'ROCm ROCR-Runtime hsa_status_string (HSA_STATUS_ERROR_EXCEPTION: a hardware exception, '
                'MEMORY_APERTURE_VIOLATION: an address beyond the largest legal one, MEMORY_FAULT, ILLEGAL_INSTRUCTION)',
            },
            # and as its GPU page-fault handler reports a kernel's bad address before it aborts the process
            {
                're': r'(?P<error>Memory access fault by GPU node-\d+) \(Agent handle: \S+\) on address \S+\. Reason: ',
                'source': 'ROCm ROCR-Runtime core/runtime/runtime.cpp::Runtime::VMFaultHandler',
            },
        ),
        'phase': 'ready',
        'fatal': True,
        'priority': 55,  # above cuda_graph_capture_failed: inside a capture, the illegal access is the root cause
        'diagnosis': 'a CUDA kernel faulted: {error} (the GPU context is lost; the server cannot continue)',
        'advice': 'A kernel bug, not a sizing problem: rerun with CUDA_LAUNCH_BLOCKING=1 in the unit environment to find the '
        'kernel, then try another --attention-backend, --disable-cuda-graph, or a build with the fix; if it started '
        'with the speculative algorithm ({speculative_algorithm}), try without it. A peer-memory fault over NVLink '
        'points at the interconnect: check `nvidia-smi -q` for Xid and NVLink errors.',
        'defaults': {'error': 'an illegal memory access was encountered'},
    },
    {
        'id': 'cuda_graph_capture_failed',
        'patterns': (
            r'Capture cuda graph failed(?::\s*(?P<detail>.*))?',
            # cudaGetErrorString(cudaErrorStreamCaptureUnsupported) as torch raises it, and torch's
            # aten/src/ATen/cuda/CUDAGeneratorImpl.cpp ("Cannot call CUDAGeneratorImpl::current_seed during CUDA graph capture")
            {
                're': r'(?P<detail>operation not permitted when stream is capturing)',
                'source': 'CUDA runtime cudaGetErrorString(cudaErrorStreamCaptureUnsupported)',
            },
            r'(?P<detail>Cannot call \S+ during CUDA graph capture)',
            {'re': r'(?P<detail>cudaErrorStreamCapture\w+)', 'source': 'CUDA runtime error enums cudaErrorStreamCapture*, by name'},
        ),
        'phase': 'capturing_cuda_graph',
        'fatal': True,
        'priority': 50,
        'diagnosis': 'CUDA graph capture failed: {detail}',
        'advice': 'Read the lines above it for the root cause. Lower --cuda-graph-max-bs ({cuda_graph_max_bs}) or '
        '--mem-fraction-static; an operation that cannot be captured (RNG seed, a sync) points at --enable-torch-compile '
        'or the attention backend; --disable-cuda-graph only helps if the build does not report it ignored.',
        'defaults': {'detail': 'see the lines above'},
    },
    {
        'id': 'distributed_init_timeout',
        'patterns': (
            # pytorch/pytorch torch/csrc/distributed/c10d/socket.cpp (SocketImpl::waitForInput, SocketConnectOp) and
            # TCPStore.cpp (the server waiting for its clients)
            r'\[c10d\] waitForInput: socket .*remote=(?P<remote>\S+?)\) timed out after (?P<timeout>\d+m?s)',
            {
                're': r'The client socket has timed out after (?P<timeout>\d+m?s) while trying to connect to \((?P<remote>[^)]+)\)',
                'source': 'pytorch/pytorch torch/csrc/distributed/c10d/socket.cpp::SocketConnectOp',
            },
            {
                're': r'Timed out after (?P<timeout>\d+) seconds waiting for clients\. (?P<joined>\d+)/(?P<world>\d+) clients joined',
                'source': 'pytorch/pytorch torch/csrc/distributed/c10d/TCPStore.cpp (the server waiting for its clients)',
            },
            # the store's errors name the timeout only in their words; any other is a failed rendezvous (nccl_distributed_init)
            {
                're': r'torch\.distributed\.(?:DistStoreError|DistNetworkError): .*(?:timed out|[Tt]imeout)',
                'source': 'pytorch/pytorch torch/csrc/distributed/c10d/exception.h (DistStoreError, DistNetworkError) with the '
                'timeout words of TCPStore.cpp and socket.cpp',
            },
        ),
        'phase': 'starting',
        'fatal': True,
        'priority': 42,  # above nccl_distributed_init: the store rendezvous comes before any NCCL communicator
        'diagnosis': 'torch.distributed rendezvous timed out: a rank waited {timeout} for the c10d store at {remote}',
        'advice': 'Every node must reach --dist-init-addr ({dist_init_addr}) on that port: check firewalls and that the name '
        'resolves to the same address (IPv4 or IPv6) everywhere, that all --nnodes ({nnodes}) nodes run with the same '
        '--dist-init-addr and distinct --node-rank, and that node 0 is up; --dist-timeout ({dist_timeout}) only helps '
        'a node that is merely slow.',
        'defaults': {'timeout': 'its timeout', 'remote': 'the rendezvous address'},
    },
    {
        'id': 'nccl_distributed_init',
        'patterns': (
            r'NCCL error',
            {
                're': r'nccl(?:InternalError|UnhandledCudaError|SystemError|InvalidUsage|RemoteError)',
                'source': "NVIDIA/nccl src/nccl.h.in (ncclResult_t names as torch's NCCL error messages carry them)",
            },
            {
                're': r'ProcessGroupNCCL.*(?:[Tt]imeout|timed out|Watchdog caught)',
                'source': 'pytorch/pytorch torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp (watchdog thread)',
            },
            # torch's what() line of the same timeout names no file
            {
                're': r'Watchdog caught collective operation timeout',
                'source': 'pytorch/pytorch torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp (WorkNCCL timeout what())',
            },
            {
                're': r'torch\.distributed\.DistBackendError',
                'source': 'pytorch/pytorch torch/csrc/distributed/c10d/exception.h (DistBackendError, raised by ProcessGroupNCCL)',
            },
            # the c10d store's other failures: a peer that closed the socket ("failed to recv, got 0 bytes"), a store that
            # answered a ping with another nonce (two jobs on one --dist-init-addr port)
            {
                're': r'torch\.distributed\.(?:DistStoreError|DistNetworkError)(?!: .*(?:timed out|[Tt]imeout))',
                'source': 'pytorch/pytorch torch/csrc/distributed/c10d/exception.h (DistStoreError, DistNetworkError)',
            },
            {
                're': r'Ping failed, invalid nonce returned',
                'source': 'pytorch/pytorch torch/csrc/distributed/c10d/TCPStore.cpp (TCPClient ping, TORCH_CHECK on the nonce)',
            },
            # the CPU process group (gloo) of the same ranks: a peer's socket read or write failed (timed out, reset)
            {
                're': r'gloo/transport/tcp/pair\.cc:\d+\] (?:Read|Write) error',
                'source': 'pytorch/gloo gloo/transport/tcp/pair.cc (Pair::read, Pair::write: signalException)',
            },
            # bootstrap cannot reach a peer (a warning-level line: it names the peer for the advice of a later error)
            {'re': r'NCCL WARN \w+: Connect to (?P<peer>\S+) failed', 'source': 'NVIDIA/nccl src/misc/socket.cc::socketStartConnect / socketPollConnect'},
        ),
        'phase': 'starting',
        'fatal': True,
        'priority': 40,
        'diagnosis': 'NCCL / distributed initialisation failed or timed out between tensor-parallel ranks',
        'advice': 'Check that --tensor-parallel-size matches the GPUs the unit can see (CUDA_VISIBLE_DEVICES), that '
        '--nccl-port / --dist-init-addr are free, and try NCCL_P2P_DISABLE=1 on cards without P2P; when NCCL cannot '
        'connect to a peer (the log names: {peer}) it usually picked the wrong interface: set NCCL_SOCKET_IFNAME. '
        'NCCL errors on one rank often follow a crash on another, so read the lines above.',
        'defaults': {'peer': 'none'},
    },
    {
        'id': 'scheduler_watchdog',
        # no 'ends': a soft watchdog (soft=True) prints the same line and its py-spy dump, and the server goes on
        'patterns': (
            r'[Ww]atchdog timeout',
            # the watchdog (utils/watchdog.py) dumps the schedulers' stacks when a batch hangs past --watchdog-timeout
            {'re': r'Pyspy dump for PID \d+', 'source': 'sgl-project/sglang python/sglang/srt/utils/common.py::pyspy_dump_schedulers'},
        ),
        'phase': 'ready',
        'fatal': True,
        'priority': 30,
        'diagnosis': 'the scheduler watchdog fired: a forward batch hung longer than --watchdog-timeout',
        'advice': 'Usually a stuck NCCL collective or GPU hang: look for errors above it and in `dmesg` (Xid). '
        'Raise --watchdog-timeout only if the model is legitimately that slow.',
    },
    {
        'id': 'warmup_failed',
        'patterns': (
            # sgl-project/sglang python/sglang/srt/entrypoints/http_server.py::_execute_server_warmup
            # (_wait_and_warmup before 0.5): the server's requests to its own API, then it kills itself
            {'re': r'Initialization failed\. warmup error', 'ends': True},
            # the warmup's own frame in a traceback (an answer it could not read, a request that raised)
            {
                're': r'sglang/srt/(?:entrypoints/http_server|server)\.py", line \d+, in (?:_execute_server_warmup|_wait_and_warmup)\b',
                'source': 'sgl-project/sglang python/sglang/srt/entrypoints/http_server.py::_execute_server_warmup (server.py::_wait_and_warmup before 0.4)',
            },
            # the diffusion server's own words
            {
                're': r'Server warmup failed; aborting startup',
                'ends': True,
                'source': 'sgl-project/sglang python/sglang/multimodal_gen/runtime/entrypoints/http_server.py',
            },
            r'AssertionError: res=<Response \[(?P<status>\d{3})\]>',
            # urllib3's debug line of that request: an absolute URL in the request line means it went to an HTTP proxy,
            # which answered instead of the server
            {
                're': r'(?P<proxy>https?://\S+) "GET (?P<url>https?://\S+/(?:get_)?model_info) HTTP/1\.[01]" (?P<status>[345]\d\d)\b',
                'source': 'urllib3/urllib3 src/urllib3/connectionpool.py::_make_request (its debug line of the warmup request)',
            },
        ),
        'phase': 'binding',
        'fatal': True,
        'priority': 20,  # below the kernel and memory causes: a crash during warmup also fails the warmup
        'diagnosis': 'SGLang\'s own warmup request to {host}:{port} failed (HTTP {status}); a 403/502/503 there usually comes '
        'from an HTTP proxy in the service\'s environment ({proxy}), not from SGLang',
        'advice': 'Keep the server\'s requests to itself off the proxy: add NO_PROXY and no_proxy={no_proxy_hosts} to '
        'sglang_service_environment (the unit\'s Environment=), or unset http_proxy / https_proxy there, then restart.',
        'defaults': {'status': 'error', 'proxy': 'http_proxy / https_proxy'},
    },
    {
        'id': 'child_process_died',
        'ends': True,
        # start-up wording (launch_server; 0.4.x builds spelled it "proces"), the running server's handler
        # (http_server.py / tokenizer_manager.py), and 0.4.x's SIGCHLD handler (engine.py::_set_envs_and_config),
        # which logs the raw wait status
        'patterns': (
            r'Received sigquit from a child proces(?:s)?\b',
            {
                're': r'SIGQUIT received\. .*It usually means one child failed',
                'source': 'sgl-project/sglang python/sglang/srt/entrypoints/http_server.py (the SIGQUIT handler)',
            },
            {
                're': r'Child process unexpectedly failed with an exit code (?P<exit_code>\d+)',
                'source': 'sgl-project/sglang python/sglang/srt/entrypoints/engine.py::_set_envs_and_config (0.4.x SIGCHLD handler)',
            },
            # logger.error(f"Scheduler hit an exception: {traceback}") (and the data-parallel controller's and detokenizer's
            # copies), then the parent is sent SIGQUIT
            {
                're': r'(?:Scheduler|DataParallelController|DetokenizerManager|TpModelWorkerClient) hit an exception',
                'source': 'sgl-project/sglang python/sglang/srt/managers/scheduler.py::run_scheduler_process',
            },
            # a scheduler's pipe closed before it said ready, then "Exit code: N" (multimodal_gen's launcher too)
            {'re': r'Rank \d+ scheduler is dead\.', 'source': 'sgl-project/sglang python/sglang/srt/entrypoints/engine.py::_launch_subprocesses'},
            # 0.5.x from 2026: the launcher waits for every scheduler's ready message and raises this when one exited first
            {
                're': r'Rank \d+ scheduler died during initialization \(exit code: (?P<exit_code>-?\d+)\)',
                'source': 'sgl-project/sglang python/sglang/srt/entrypoints/engine.py::_scheduler_died_error',
            },
        ),
        'phase': 'starting',
        'fatal': True,
        'priority': 10,
        'diagnosis': 'an SGLang child process (scheduler or detokenizer) died',
        'advice': 'The cause is printed by the child before this line; read the traceback above. Wait status: {exit_code} '
        '(9, or -9 as Python\'s launcher reports a signal, is SIGKILL: look for the OOM killer in `journalctl -k`; 256 is an '
        'exit with status 1).',
        'defaults': {'exit_code': 'not printed'},
    },
    {
        'id': 'startup_check_refused',
        # SGLang 0.5.23's ServerArgs.resolve_once() raises in one of its steps (sglang/srt/arg_groups/*_hook.py, or
        # ModelConfig._derive_context_length for a context past the model's): the innermost frame names the check,
        # the exception line after it says why (merged in as {reason})
        'patterns': (
            {
                're': r'sglang/srt/(?P<file>arg_groups/(?!pipeline\.py|resolution_hooks\.py)\w+\.py|configs/model_config\.py)", '
                r'line (?P<line>\d+), in (?P<func>\w+)',
                'source': 'sgl-project/sglang 0.5.23 python/sglang/srt/arg_groups/*_hook.py (ServerArgs.resolve_once), as the lab\'s real wheel raises them',
            },
            # before resolve_once (0.5.x to 0.5.12): ServerArgs.__post_init__ runs its _handle_* steps and check_server_args
            {
                're': r'sglang/srt/(?P<file>server_args\.py)", line (?P<line>\d+), in (?P<func>_handle_\w+|check_server_args|_check_\w+)\b',
                'source': 'sgl-project/sglang 0.5.x python/sglang/srt/server_args.py (ServerArgs.__post_init__, its _handle_* steps and check_server_args)',
            },
            # the --attention-backend chosen does not fit the model or the GPU: the backend's factory refuses it (0.5.23's
            # registry, e.g. fa3's "FlashAttention v3 Backend requires SM>=80 and SM<=90"), or ModelRunner did before it
            {
                're': r'sglang/srt/(?P<file>layers/attention/attention_registry\.py)", line (?P<line>\d+), in (?P<func>create_\w+_backend)\b',
                'source': 'sgl-project/sglang 0.5.23 python/sglang/srt/layers/attention/attention_registry.py (create_flashattention_v3_backend '
                'and the other backends\' factories assert or raise ValueError on a model or GPU they do not serve)',
            },
            {
                're': r'sglang/srt/(?P<file>model_executor/model_runner\.py)", line (?P<line>\d+), in (?P<func>_get_attention_backend_from_str)\b',
                'source': 'sgl-project/sglang 0.5.x python/sglang/srt/model_executor/model_runner.py (ModelRunner._get_attention_backend_from_str, '
                'the same checks before the registry)',
            },
            {'re': r'(?:^|\s)(?:ValueError|AssertionError|NotImplementedError): (?P<reason>.+)$', 'fatal': False},
        ),
        'phase': 'starting',
        'fatal': True,
        # a check refuses with ValueError, AssertionError or NotImplementedError (its reason): another exception under a
        # check's frame comes from what the check imported or called (a library that failed to import), not from the check
        'requires': ('reason',),
        'priority': 30,  # below every specific cause: the frames of a model load pass model_config.py too
        'diagnosis': 'SGLang refused its flags at start-up in {func} (sglang/srt/{file}:{line}): {reason}',
        'advice': 'SGLang says: {reason} Change what it names in the host group\'s sglang_service_envelope (or the unit\'s '
        'environment it names). The flag check runs the checks of the flags before a restart where the release can import '
        'them (its checks_skipped lists those it could not); preflight mirrors the ones that need the model '
        '(docs/preflight-parity.md); an attention backend\'s check of the GPU runs only on the GPU, at start-up.',
        'defaults': {'reason': 'see the exception line', 'func': 'a start-up check', 'file': 'arg_groups', 'line': '?'},
    },
    {
        'id': 'flag_ignored',
        'patterns': (
            {
                're': r'(?P<flag>\w+) is ignored (?:for|because|when|since) (?P<reason>.*)$',
                'source': "the DDTree patch set's warning as the field notes quote it (docs/background.md)",
            },
        ),
        'phase': 'starting',
        'fatal': False,
        'priority': 0,
        'diagnosis': 'the installed build ignores {flag} ({reason})',
        'advice': 'Do not count on {flag} taking effect with this build; remove it or change the setting that overrides it.',
        'defaults': {'flag': 'a flag', 'reason': ''},
    },
)
