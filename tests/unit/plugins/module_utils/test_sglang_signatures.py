# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.ddtree.sglang.plugins.module_utils import sglang_args
from ansible_collections.ddtree.sglang.plugins.module_utils import sglang_signatures as sig

# Every excerpt below names where its wording comes from: the source file and function that
# emits it ("owner/repo path::function") or a public issue where the line appears
# ("owner/repo#number"). Timestamps, sizes and paths are ours; the wording is theirs.
# Excerpts with no public source say so.

# SGLang's log prefix: sgl-project/sglang python/sglang/srt/utils/common.py::configure_logger
PREFIX = '[2026-11-29 09:00:00 TP0] '

START = [
    # sgl-project/sglang python/sglang/srt/model_executor/model_runner.py::ModelRunner.load_model (as in sgl-project/sglang#3784)
    PREFIX + 'Load weight begin. avail mem=46.91 GB',
    # sgl-project/sglang python/sglang/srt/model_loader/weight_utils.py::safetensors_weights_iterator (tqdm; sgl-project/sglang#8336)
    'Loading safetensors checkpoint shards: 100% Completed | 12/12 [00:21<00:00,  1.80s/it]',
    # sgl-project/sglang python/sglang/srt/model_executor/model_runner.py::ModelRunner.load_model (sgl-project/sglang#8336)
    PREFIX + 'Load weight end. type=Qwen3_5ForCausalLM, dtype=torch.bfloat16, avail mem=20.12 GB, mem usage=26.79 GB.',
]

POOL_FAILURE = START + [
    # sgl-project/sglang python/sglang/srt/managers/scheduler.py::run_scheduler_process (logger.error of the traceback)
    PREFIX + 'Scheduler hit an exception: Traceback (most recent call last):',
    'Traceback (most recent call last):',
    '  File "/root/ml-env/lib/python3.11/site-packages/sglang/srt/managers/scheduler.py", line 2871, in run_scheduler_process',
    '    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, moe_ep_rank, pp_rank, dp_rank)',
    '  File "/root/ml-env/lib/python3.11/site-packages/sglang/srt/model_executor/pool_configurator.py", line 74, in __post_init__',
    '    raise RuntimeError(msg)',
    # sgl-project/sglang python/sglang/srt/model_executor/pool_configurator.py::MemoryPoolConfig.__post_init__
    'RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. Current value: mem_fraction_static=0.88',
    # sgl-project/sglang python/sglang/srt/entrypoints/engine.py::_set_envs_and_config (sigquit_handler)
    '[2026-11-29 09:00:33] Received sigquit from a child process. It usually means the child failed.',
]

GRAPH_OOM = START + [
    # sgl-project/sglang python/sglang/srt/mem_cache/memory_pool.py::MHATokenToKVPool.__init__ (sgl-project/sglang#8336)
    PREFIX + 'KV Cache is allocated. #tokens: 120000, K size: 3.66 GB, V size: 3.66 GB',
    # sgl-project/sglang python/sglang/srt/model_executor/model_runner.py::ModelRunner.init_memory_pool (sgl-project/sglang#1751)
    PREFIX + 'Memory pool end. avail mem=4.10 GB',
    # sgl-project/sglang python/sglang/srt/model_executor/model_runner.py::ModelRunner.init_device_graphs
    # (init_cuda_graphs in older builds; sgl-project/sglang#1751)
    PREFIX + 'Capture cuda graph begin. This can take up to several minutes. avail mem=4.02 GB',
    'Traceback (most recent call last):',
    '  File "/root/ml-env/lib/python3.11/site-packages/sglang/srt/model_executor/cuda_graph_runner.py", line 412, in capture',
    # pytorch/pytorch c10/cuda/CUDACachingAllocator.cpp::DeviceCachingAllocator::malloc (pytorch/pytorch#103715)
    'torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.02 GiB. GPU 0 has a total capacity of 47.41 GiB',
    '',
    'During handling of the above exception, another exception occurred:',
    'Traceback (most recent call last):',
    # sgl-project/sglang python/sglang/srt/model_executor/cuda_graph_runner.py::CudaGraphRunner.__init__ (sgl-project/sglang#5285)
    'Exception: Capture cuda graph failed: CUDA out of memory. Tried to allocate 1.02 GiB.',
    # sgl-project/sglang python/sglang/srt/model_executor/cuda_graph_runner.py::CUDA_GRAPH_CAPTURE_FAILED_MSG
    'Possible solutions:',
    '1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)',
]

# No public source: the DDTree-patched build's warning as the field notes quote it; SGLang's
# own source and issues were searched for it without a match.
IGNORED_FLAG = 'disable_cuda_graph is ignored for piecewise cuda graph'

TRITON = START + [
    PREFIX + 'Memory pool end. avail mem=6.10 GB',
    PREFIX + IGNORED_FLAG,
    PREFIX + 'Capture cuda graph begin. This can take up to several minutes. avail mem=6.02 GB',
    'Traceback (most recent call last):',
    '  File "/root/ml-env/lib/python3.11/site-packages/triton/runtime/jit.py", line 591, in run',
    # triton-lang/triton python/triton/runtime/errors.py::OutOfResources.__init__, raised by
    # python/triton/compiler/compiler.py::CompiledKernel._init_handles (triton-lang/triton#8182)
    'triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: 167936, Hardware limit: 101376. '
    'Reducing block sizes or `num_stages` may help.',
    # sgl-project/sglang python/sglang/srt/model_executor/cuda_graph_runner.py::CudaGraphRunner.__init__ (str(e) of the above)
    'Exception: Capture cuda graph failed: out of resource: shared memory, Required: 167936, Hardware limit: 101376.',
]


def test_mem_pool_signature_extracts_value_and_names_the_knobs():
    cause, diagnosis, advice, fatal_lines = sig.diagnose(POOL_FAILURE)
    assert cause == 'mem_pool_too_small'
    assert '0.88' in diagnosis
    assert 'above 0.88' in advice
    for knob in ('--mem-fraction-static', '--context-length', '--max-running-requests', '--mamba-full-memory-ratio'):
        assert knob in advice
    # the whole traceback through the exception line, plus the parent's notice
    assert fatal_lines[0] == 'Traceback (most recent call last):' or fatal_lines[0].endswith('Traceback (most recent call last):')
    assert POOL_FAILURE[-2] in fatal_lines
    assert POOL_FAILURE[-1] in fatal_lines


def test_mem_pool_older_wording_without_value():
    # sgl-project/sglang python/sglang/srt/model_executor/model_runner.py::ModelRunner.init_memory_pool (0.4.x builds,
    # before pool_configurator.py added the current value)
    cause, diagnosis, advice, _lines = sig.diagnose(['RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.'])
    assert cause == 'mem_pool_too_small'
    assert 'its current value' in advice


def test_oom_during_graph_capture_beats_generic_capture_failure():
    matches = [m['id'] for m in sig.classify(GRAPH_OOM)]
    assert 'cuda_graph_capture_failed' in matches
    cause, _d, advice, fatal_lines = sig.diagnose(GRAPH_OOM)
    assert cause == 'cuda_oom_graph_capture'
    assert '--cuda-graph-max-bs' in advice
    assert any('Capture cuda graph failed' in line for line in fatal_lines)


@pytest.mark.parametrize(
    'context, expected',
    [
        ([PREFIX + 'Load weight begin. avail mem=46.91 GB'], 'cuda_oom_loading_weights'),
        ([], 'cuda_oom_loading_weights'),
        (START, 'cuda_oom_sizing_pools'),
        (START + [PREFIX + 'Capture cuda graph begin.'], 'cuda_oom_graph_capture'),
        # Capture cuda graph end: model_runner.py::ModelRunner.init_device_graphs; Uvicorn running on: encode/uvicorn
        # uvicorn/server.py::Server._log_started_message; fired up: sgl-project/sglang
        # python/sglang/srt/entrypoints/http_server.py::_wait_and_warmup
        (
            START
            + [
                PREFIX + 'Capture cuda graph end. Time elapsed: 12.1 s.',
                'INFO:     Uvicorn running on http://127.0.0.1:30000',
                PREFIX + 'The server is fired up and ready to roll!',
            ],
            'cuda_oom_serving',
        ),
        # piecewise (extend) graphs are captured after the decode graphs ended: still capture, not serving
        (
            START
            + [
                PREFIX + 'Capture cuda graph begin. This can take up to several minutes.',
                PREFIX + 'Capture cuda graph end. Time elapsed: 12.1 s.',
                PREFIX + 'Capture cuda graph begin. Piecewise (extend) graphs, num_tokens: [4096, 2048].',
            ],
            'cuda_oom_graph_capture',
        ),
        # sglang 0.5.23 model_runner_components/cuda_graph_setup.py: "Capture {role} decode {CUDA graph} begin."
        (START + [PREFIX + 'Capture target decode CUDA graph begin. backend=full, num_tokens_per_req=1, avail mem=9.1 GB'], 'cuda_oom_graph_capture'),
        (
            START
            + [
                PREFIX + 'Capture target decode CUDA graph end. bs=[1, 2, 4], elapsed=8.2 s',
                PREFIX + 'Capture target prefill CUDA graph begin. backend=full, num_tokens=[512], avail mem=2.0 GB',
            ],
            'cuda_oom_graph_capture',
        ),
    ],
)
def test_cuda_oom_is_told_apart_by_phase(context, expected):
    # pytorch/pytorch c10/cuda/CUDACachingAllocator.cpp::DeviceCachingAllocator::malloc (pytorch/pytorch#103715)
    line = 'torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.'
    assert sig.diagnose(context + [line])[0] == expected


def test_triton_error_and_ignored_flag_warning():
    cause, diagnosis, _advice, _lines = sig.diagnose(TRITON)
    assert cause == 'triton_error'
    assert 'OutOfResources' in diagnosis
    assert sig.warnings(TRITON) == [PREFIX + IGNORED_FLAG]


def test_ignored_flag_alone_is_not_fatal():
    lines = START + [PREFIX + IGNORED_FLAG]
    assert sig.diagnose(lines) == (None, None, None, [])
    matches = sig.classify(lines)
    assert [m['fatal'] for m in matches] == [False]
    assert matches[0]['groups']['flag'] == 'disable_cuda_graph'


def test_warnings_drop_copies_from_other_ranks():
    line = IGNORED_FLAG
    assert sig.warnings([line, line]) == [line]


@pytest.mark.parametrize(
    'lines, expected, needle, source',
    [
        (
            [
                'usage: launch_server.py [-h] --model-path MODEL_PATH',
                'launch_server.py: error: unrecognized arguments: --mamba-scheduler-strategy extra_buffer',
            ],
            'unrecognized_arguments',
            '--mamba-scheduler-strategy extra_buffer',
            'python/cpython Lib/argparse.py::ArgumentParser.parse_args; the line in sgl-project/sglang#555',
        ),
        (
            [
                'usage: launch_server.py [-h]',
                "launch_server.py: error: argument --speculative-algorithm: invalid choice: 'DDTREE' "
                "(choose from 'EAGLE', 'EAGLE3', 'NEXTN', 'STANDALONE', 'NGRAM')",
            ],
            'invalid_argument',
            '--speculative-algorithm',
            'python/cpython Lib/argparse.py::ArgumentParser._check_value (3.11 wording); the choices from sgl-project/sglang '
            'python/sglang/srt/server_args.py::ServerArgs.add_cli_args',
        ),
        (
            ["ImportError: /usr/local/lib/python3.11/dist-packages/sgl_kernel/common_ops.abi3.so: undefined symbol: _ZN5torch3jit17parseSchemaOrNameERKSsb"],
            'cuda_abi_mismatch',
            '_ZN5torch3jit17parseSchemaOrNameERKSsb',
            'sgl-project/sglang#5100',
        ),
        (
            ['RuntimeError: CUDA error: no kernel image is available for execution on the device'],
            'cuda_abi_mismatch',
            'compute capability',
            'sgl-project/sglang#17911',
        ),
        (
            ["OSError: Can't load the configuration of '/root/models/Qwen3.6-27B'. If you were trying to load it from the model hub"],
            'model_config_error',
            '/root/models/Qwen3.6-27B',
            'huggingface/transformers src/transformers/configuration_utils.py::PretrainedConfig._get_config_dict',
        ),
        (
            ["ERROR:    [Errno 98] error while attempting to bind on address ('127.0.0.1', 30000): address already in use"],
            'port_in_use',
            "('127.0.0.1', 30000)",
            'encode/uvicorn uvicorn/server.py::Server.startup',
        ),
        (
            ['[2026-11-29 09:10:00 TP0] Scheduler watchdog timeout (self.watchdog_timeout=300, self.soft=False)'],
            'scheduler_watchdog',
            'watchdog',
            'sgl-project/sglang python/sglang/srt/utils/watchdog.py::ProcessWatchdog._watchdog_once',
        ),
        (
            [
                'torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.cpp:76, unhandled cuda error '
                '(run with NCCL_DEBUG=INFO for details), NCCL version 2.20.5'
            ],
            'nccl_distributed_init',
            'NCCL_P2P_DISABLE',
            'sgl-project/sglang#1116',
        ),
        (
            [
                '[rank1]:[E1129 09:00:00.715298746 ProcessGroupNCCL.cpp:607] [Rank 1] Watchdog caught collective operation timeout: '
                'WorkNCCL(SeqNum=9141, OpType=_ALLGATHER_BASE, NumelIn=19008, NumelOut=152064, Timeout(ms)=600000) ran for 600020 '
                'milliseconds before timing out.'
            ],
            'nccl_distributed_init',
            'tensor-parallel',
            'pytorch/pytorch torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp::WorkNCCL::checkTimeout; sgl-project/sglang#1693, sgl-project/sglang#3784',
        ),
        (
            [
                "  what():  [PG 3 Rank 5] Process group watchdog thread terminated with exception: [Rank 5] Watchdog caught collective "
                "operation timeout: WorkNCCL(SeqNum=9141, OpType=_ALLGATHER_BASE, NumelIn=19008, NumelOut=152064, Timeout(ms)=600000) "
                "ran for 600020 milliseconds before timing out."
            ],
            'nccl_distributed_init',
            'tensor-parallel',
            'sgl-project/sglang#1693',
        ),
        (
            ['[2026-11-29 09:00:10] Received sigquit from a child process. It usually means the child failed.'],
            'child_process_died',
            'traceback',
            'sgl-project/sglang python/sglang/srt/entrypoints/engine.py::_set_envs_and_config (sigquit_handler)',
        ),
        # inside a capture the illegal access is the root cause, the capture only its context
        (
            ['Exception: Capture cuda graph failed: RuntimeError: CUDA error: an illegal memory access was encountered'],
            'cuda_illegal_memory_access',
            'CUDA_LAUNCH_BLOCKING=1',
            'sgl-project/sglang#5029',
        ),
        (
            ['Exception: Capture cuda graph failed: RuntimeError: Cannot call CUDAGeneratorImpl::current_seed during CUDA graph capture.'],
            'cuda_graph_capture_failed',
            'cuda-graph-max-bs',
            'pytorch/pytorch aten/src/ATen/cuda/CUDAGeneratorImpl.cpp (the capture check), wrapped by sgl-project/sglang '
            'python/sglang/srt/model_executor/cuda_graph_runner.py::CudaGraphRunner.__init__',
        ),
        (
            ['sglang-qwen.service: A process of this unit has been killed by the OOM killer.'],
            'host_oom_killed',
            'RAM',
            'systemd/systemd src/core/unit.c::unit_check_oom (PID 1 about a unit whose process the kernel OOM-killed)',
        ),
        (
            [
                'triton.runtime.autotuner.OutOfResources: out of resource: shared memory, Required: 108672, Hardware limit: 101376. '
                'Reducing block sizes or `num_stages` may help.'
            ],
            'triton_error',
            'OutOfResources',
            'InternLM/lmdeploy#2451 (older Triton: the class under triton.runtime.autotuner)',
        ),
    ],
)
def test_each_signature(lines, expected, needle, source):
    assert source, 'every excerpt names where its wording comes from'
    cause, diagnosis, advice, fatal_lines = sig.diagnose(lines)
    assert cause == expected
    assert needle in diagnosis + ' ' + advice
    assert fatal_lines
    assert '{' not in diagnosis + advice, 'template left unfilled'


def test_argparse_usage_is_part_of_the_fatal_lines():
    lines = ['some earlier line', 'usage: launch_server.py [-h] --model-path MODEL_PATH', 'launch_server.py: error: unrecognized arguments: --x']
    assert sig.diagnose(lines)[3] == lines[1:]


def test_child_death_ranks_below_its_cause():
    # triton-lang/triton#8182 and sgl-project/sglang python/sglang/srt/entrypoints/engine.py::_set_envs_and_config
    lines = [
        'Traceback (most recent call last):',
        'triton.runtime.errors.OutOfResources: out of resource: shared memory',
        'Received sigquit from a child process. It usually means the child failed.',
    ]
    assert sig.diagnose(lines)[0] == 'triton_error'


def test_unknown_traceback_is_unclassified_and_kept():
    # No public source on purpose: an invented DDTree assertion, to test what no signature knows
    lines = START + [
        'Traceback (most recent call last):',
        '  File "/root/ml-env/lib/python3.11/site-packages/sglang/srt/speculative/ddtree_worker.py", line 88, in build_tree',
        '    assert budget > 0',
        'AssertionError: ddtree budget must be positive',
        'some later noise',
    ]
    cause, diagnosis, _advice, fatal_lines = sig.diagnose(lines)
    assert cause == sig.UNCLASSIFIED
    assert 'AssertionError: ddtree budget must be positive' in diagnosis
    assert fatal_lines[0] == 'Traceback (most recent call last):'
    assert fatal_lines[-1] == 'AssertionError: ddtree budget must be positive'


def test_unknown_traceback_without_its_traceback_line_is_unclassified():
    # a paste (or a cut journal) that lost the "Traceback" line: the frames above the exception stand in for it
    lines = START + [
        'File "/root/ml-env/lib/python3.11/site-packages/sglang/srt/speculative/ddtree_worker.py", line 88, in build_tree',
        '    assert budget > 0',
        'AssertionError: ddtree budget must be positive',
        '[detail] a continuation line',
    ]
    cause, diagnosis, _advice, fatal_lines = sig.diagnose(lines)
    assert (cause, fatal_lines) == (sig.UNCLASSIFIED, lines[-4:-1])
    assert diagnosis.endswith('no known signature: AssertionError: ddtree budget must be positive')


def test_long_unclassified_traceback_is_trimmed_but_keeps_its_ends():
    lines = ['Traceback (most recent call last):'] + ['  File "x.py", line %d, in f' % i for i in range(100)] + ['ValueError: boom']
    block = sig.last_traceback(lines)
    assert block[0] == lines[0] and block[-1] == 'ValueError: boom' and len(block) <= 25


def test_nothing_fatal():
    assert sig.diagnose(START) == (None, None, None, [])
    assert sig.diagnose([]) == (None, None, None, [])


@pytest.mark.parametrize(
    'lines, expected',
    [
        ([], 'starting'),
        (['usage: x'], 'starting'),
        (START[:1], 'loading_weights'),
        (START, 'sizing_pools'),
        (START + [PREFIX + 'KV Cache is allocated. #tokens: 1000'], 'pools_sized'),
        (START + [PREFIX + 'Memory pool end. avail mem=4.10 GB'], 'pools_sized'),
        (START + [PREFIX + 'Capture cuda graph begin. This can take up to several minutes.'], 'capturing_cuda_graph'),
        (START + [PREFIX + 'Capture cuda graph end. Time elapsed: 3.2 s'], 'binding'),
        (START + [PREFIX + 'Capture target decode CUDA graph begin. backend=full'], 'capturing_cuda_graph'),
        (START + [PREFIX + 'Capture target decode CUDA graph end. elapsed=8.2 s'], 'binding'),
        # a capture after serving started is not start-up capture
        (START + [PREFIX + 'The server is fired up and ready to roll!', PREFIX + 'Capture cuda graph begin.'], 'ready'),
        (START + ['INFO:     Uvicorn running on http://127.0.0.1:30000 (Press CTRL+C to quit)'], 'binding'),
        (START + ['[2026-11-29 09:01:00] The server is fired up and ready to roll!'], 'ready'),
        # TP1 still loading while TP0 is capturing: the furthest phase counts
        ([PREFIX + 'Capture cuda graph begin.', '[2026-11-29 09:00:00 TP1] Load weight begin.'], 'capturing_cuda_graph'),
    ],
)
def test_phase_of(lines, expected):
    # the phase lines' sources are cited with START, GRAPH_OOM and test_cuda_oom_is_told_apart_by_phase
    assert sig.phase_of(lines) == expected


def test_table_is_well_formed():
    ids = [entry['id'] for entry in sig.SIGNATURES]
    assert len(ids) == len(set(ids))
    for entry in sig.SIGNATURES:
        assert set(('id', 'patterns', 'phase', 'fatal', 'priority', 'diagnosis', 'advice')) <= set(entry)
        assert entry['phase'] in sig.PHASES
        for phase in entry.get('when_phase', ()):
            assert phase in sig.PHASES
    assert sig.signature('mem_pool_too_small')['fatal'] is True
    assert sig.signature('flag_ignored')['fatal'] is False
    assert sig.signature('nope') is None


def test_render_survives_missing_and_bad_templates():
    assert sig.render('raise {x} above {y}', {'x': 'a'}, {'y': 'b'}) == 'raise a above b'
    assert sig.render('unbalanced {', {}) == 'unbalanced {'


# --- advice names the unit's own numbers -------------------------------------------------

FIELD_NOTES_UNIT = '''[Service]
Environment=PYTHONUNBUFFERED=1
ExecStart=/root/ml-env/bin/python -m sglang.launch_server --model-path /root/models/Qwen3.6-27B --tp-size 2 \
--mem-fraction-static 0.88 --context-length 131072 --speculative-algorithm DDTREE --speculative-ddtree-shadow-linear \
--served-model-name "Qwen 3.6 (27B)" --host 127.0.0.1 --port 30000
'''.replace('\\\n', '')


def test_server_args_from_the_unit():
    from ansible_collections.ddtree.sglang.plugins.module_utils.systemd import exec_start_argv

    args = sglang_args.server_args_from_argv(exec_start_argv(FIELD_NOTES_UNIT))
    assert args['mem_fraction_static'] == '0.88'
    assert args['context_length'] == '131072'
    assert args['speculative_ddtree_shadow_linear'] is True
    assert args['served_model_name'] == 'Qwen 3.6 (27B)'
    assert sglang_args.server_args_from_argv(['python', '-m', 'x', '--port=3']) == {'port': '3'}


def test_pool_advice_names_the_unit_values_and_the_direction():
    from ansible_collections.ddtree.sglang.plugins.module_utils.systemd import exec_start_argv

    args = sglang_args.server_args_from_argv(exec_start_argv(FIELD_NOTES_UNIT))
    line = 'RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. Current value: mem_fraction_static=0.88'
    cause, _diagnosis, advice, _lines = sig.diagnose([line], args)
    assert cause == 'mem_pool_too_small'
    assert 'above 0.88 (try 0.91' in advice
    assert '--context-length 131072 (try 32768)' in advice
    assert '--max-running-requests unset (SGLang picks it) (try 4)' in advice


def test_graph_oom_advice_lowers_the_fraction_it_ran_with():
    lines = [
        'Capture cuda graph begin. This can take up to several minutes. avail mem=2.40 GB',
        'torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.',
    ]
    cause, _diagnosis, advice, _lines = sig.diagnose(lines, {'mem_fraction_static': '0.95', 'cuda_graph_max_bs': '32'})
    assert cause == 'cuda_oom_graph_capture'
    assert 'from 0.95 (try 0.90)' in advice
    assert '--cuda-graph-max-bs (32)' in advice


def test_illegal_memory_access_while_serving_is_its_own_cause():
    # torch's cudaErrorIllegalAddress text, as in sgl-project/sglang#5029; the SIGQUIT line is
    # python/sglang/srt/entrypoints/http_server.py's handler once the server runs
    lines = [
        '[2026-11-29 10:00:00 TP0] Scheduler hit an exception: Traceback (most recent call last):',
        '  File "/x/scheduler.py", line 1, in event_loop_overlap',
        'RuntimeError: CUDA error: an illegal memory access was encountered',
        '[2026-11-29 10:00:00] SIGQUIT received. signum=3, frame=None. It usually means one child failed.',
    ]
    cause, _diagnosis, advice, fatal_lines = sig.diagnose(lines, {'speculative_algorithm': 'DDTREE'})
    assert cause == 'cuda_illegal_memory_access'
    assert 'CUDA_LAUNCH_BLOCKING=1' in advice and '(DDTREE)' in advice
    assert fatal_lines[-1].endswith('It usually means one child failed.')


# --- signatures learnt from the real-failure corpus (fixtures/real_failures, test_real_failures.py) ---


def test_unclassified_quotes_the_exception_not_a_caret_line():
    # No public source on purpose: invented frames; the ^ lines are how Python 3.11 marks the blamed code
    lines = [
        'Traceback (most recent call last):',
        '  File "/venv/lib/python3.11/site-packages/sglang/srt/speculative/ddtree_worker.py", line 88, in build_tree',
        '    tree = make_tree(budget)',
        '           ^^^^^^^^^^^^^^^^^',
        '[rank0]:   File "/venv/lib/python3.11/site-packages/sglang/srt/speculative/ddtree_tree.py", line 9, in make_tree',
        '[rank0]:     return Tree(budget)',
        '[rank0]:            ~~~~^^^^^^^^',
        'ValueError: ddtree budget must be positive',
        '',
        '[rank0]:     ^^^^',
    ]
    cause, diagnosis, _advice, fatal_lines = sig.diagnose(lines)
    assert cause == sig.UNCLASSIFIED
    assert diagnosis.endswith('ValueError: ddtree budget must be positive')
    assert fatal_lines[-1] == 'ValueError: ddtree budget must be positive'


def test_unclassified_cut_traceback_quotes_its_last_real_line():
    # a journal that ends inside a traceback (the unit was killed mid-print): no exception line at all (the scheduler's
    # own "Scheduler hit an exception: Traceback ..." would name child_process_died)
    lines = [
        'Traceback (most recent call last):',
        '  File "/venv/lib/python3.11/site-packages/sglang/srt/managers/scheduler.py", line 1748, in run_scheduler_process',
        '    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, dp_rank)',
        '                ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^',
        '',
    ]
    cause, diagnosis, _advice, fatal_lines = sig.diagnose(lines)
    assert cause == sig.UNCLASSIFIED
    assert 'scheduler = Scheduler(' in diagnosis and 'no exception line' in diagnosis
    assert '^' not in diagnosis
    assert fatal_lines[-1].strip().startswith('scheduler = Scheduler(')


@pytest.mark.parametrize(
    'line, filler',
    [
        ('    ^^^^^^', True),
        ('', True),
        ('   ', True),
        ('[rank1]:     ~~~~^^^^', True),
        ('(WorkerDict pid=1)    ^^^', True),
        ('deepseek-v32-exp  |     ^^^^', True),
        ('[2026-02-26 15:56:59] ERROR:    ~~~^^^', True),
        ('ValueError: bad (x)', False),
        ('    main()', False),
        ('    x = y[0]', False),
        ('RuntimeError: ^', False),
    ],
)
def test_caret_and_blank_lines_are_filler(line, filler):
    assert sig._is_filler(line) is filler  # pylint: disable=protected-access


KV_PROFILE = '[2026-11-29 09:00:20 TP0] max_total_tokens=131072 is larger than the profiled value %s. Use the profiled value instead.'


def test_kv_profile_negative_is_fatal_with_both_numbers():
    # sgl-project/sglang python/sglang/srt/mem_cache/kv_cache_configurator.py::_apply_token_constraints
    args = {'mem_fraction_static': '0.90', 'context_length': '131072', 'tp_size': '8'}
    cause, diagnosis, advice, _lines = sig.diagnose(START + [KV_PROFILE % '-561981'], args)
    assert cause == 'kv_profile_too_small'
    assert '-561981' in diagnosis and '131072' in diagnosis and '0.90' in diagnosis
    assert '--mem-fraction-static (0.90, try 0.93)' in advice
    assert '--context-length 131072 (try 32768)' in advice and '--tp-size 8' in advice


@pytest.mark.parametrize('profiled', ['400000', '1'])
def test_kv_profile_positive_is_only_a_warning(profiled):
    lines = START + [KV_PROFILE % profiled]
    assert sig.diagnose(lines) == (None, None, None, [])
    assert [m['fatal'] for m in sig.classify(lines)] == [False]
    assert sig.warnings(lines) == [], 'not an ignored flag'


# sgl-project/sglang python/sglang/srt/managers/scheduler.py (update_running_batch), 0.4.x and 0.5.23 wording
RETRACT = [
    '[2026-11-29 10:00:00 TP0] Decode out of memory happened. #retracted_reqs: 1, #new_token_ratio: 0.1474 -> 0.1845',
    '[2026-11-29 10:00:01 TP0] KV cache pool is full. Retract requests. #retracted_reqs: 2, #new_tokens_gained: 512, #new_token_ratio: 0.1845 -> 0.2300',
]


def test_retraction_alone_is_sglang_coping_not_a_failure():
    assert sig.diagnose(RETRACT) == (None, None, None, [])
    assert sig.warnings(RETRACT) == []


def test_retraction_is_the_cause_when_the_server_dies_with_it():
    # sgl-project/sglang python/sglang/srt/entrypoints/engine.py::_set_envs_and_config (sigquit_handler)
    lines = RETRACT + ['[2026-11-29 10:00:05] Received sigquit from a child process. It usually means the child failed.']
    cause, _diagnosis, advice, fatal_lines = sig.diagnose(lines, {'max_running_requests': '64'})
    assert cause == 'kv_cache_oom_serving'
    assert '--max-running-requests (64, try 32)' in advice
    assert fatal_lines[-1] == lines[-1]


def test_decode_out_of_memory_error_takes_its_numbers_from_its_three_lines():
    # sgl-project/sglang python/sglang/srt/mem_cache/allocation.py (alloc_for_decode): one message, three journal lines
    lines = [
        '[2026-11-29 10:00:00 TP0] Decode out of memory. Try to lower your batch size.',
        'Try to allocate 168 tokens.',
        'Available tokens: 3200 (available_size=3200 + evictable_size=0)',
    ]
    cause, diagnosis, _advice, _lines = sig.diagnose(lines)
    assert cause == 'kv_cache_oom_serving'
    assert diagnosis == 'the KV cache pool is full while serving: Decode needed 168 tokens and 3200 were free'


def _oom_under(*funcs):
    # frames as Python prints them; the OOM line is torch's (c10/cuda/CUDACachingAllocator.cpp)
    frames = []
    for func in funcs:
        frames += ['  File "/venv/lib/python3.11/site-packages/sglang/srt/x.py", line 1, in %s' % func, '    call()']
    return ['Traceback (most recent call last):'] + frames + ['torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.']


@pytest.mark.parametrize(
    'funcs, expected',
    [
        # sglang function names: managers/tp_worker_overlap_thread.py, managers/scheduler.py, mem_cache/memory_pool.py,
        # model_executor/model_runner.py, model_executor/cuda_graph_runner.py
        (('forward_thread_func', 'forward_batch_generation'), 'cuda_oom_serving'),
        (('run_scheduler_process', 'event_loop_overlap', 'run_batch', 'forward'), 'cuda_oom_serving'),
        (('initialize', 'init_memory_pool', '__init__', '_create_buffers'), 'cuda_oom_sizing_pools'),
        (('initialize', 'load_model', 'load_weights'), 'cuda_oom_loading_weights'),
        # capture runs the model's forward: the start-up frame decides
        (('init_device_graphs', '__init__', 'capture', 'capture_one_batch_size', 'forward'), 'cuda_oom_graph_capture'),
        ((), 'cuda_oom_loading_weights'),
    ],
)
def test_oom_phase_from_the_traceback_frames(funcs, expected):
    assert sig.diagnose(_oom_under(*funcs))[0] == expected


def test_phase_lines_outrank_frames():
    # a "Load weight end" line means pools are being sized, whatever frames the traceback shows
    assert sig.diagnose(START + _oom_under('forward_thread_func'))[0] == 'cuda_oom_sizing_pools'


def test_a_new_traceback_forgets_the_frames_of_the_last():
    lines = _oom_under('forward_thread_func')[:-1] + ['ValueError: x'] + _oom_under()
    assert sig.diagnose(lines)[0] == 'cuda_oom_loading_weights'


WARMUP = [
    # sgl-project/sglang python/sglang/srt/entrypoints/http_server.py::_execute_server_warmup
    '[2026-11-29 09:02:00] Initialization failed. warmup error: Traceback (most recent call last):',
    '  File "/venv/lib/python3.11/site-packages/sglang/srt/entrypoints/http_server.py", line 2376, in _execute_server_warmup',
    '    assert res.status_code == 200, f"{res=}, {res.text=}"',
    "AssertionError: res=<Response [502]>, res.text=''",
]


def test_warmup_failure_names_the_status_and_the_unit_address():
    cause, diagnosis, advice, fatal_lines = sig.diagnose(WARMUP, {'host': '0.0.0.0', 'port': '30001'})
    assert cause == 'warmup_failed'
    assert 'HTTP 502' in diagnosis and '0.0.0.0:30001' in diagnosis
    assert 'no_proxy=0.0.0.0,127.0.0.1,localhost' in advice and 'NO_PROXY' in advice
    assert fatal_lines[0] == WARMUP[0] and fatal_lines[-1] == WARMUP[-1]


def test_warmup_through_a_proxy_is_seen_at_its_first_answer():
    # urllib3 src/urllib3/connectionpool.py::_make_request (debug): an absolute URL in the request line went to a proxy
    line = '[2026-11-29 09:01:03] http://10.0.0.1:3128 "GET http://127.0.0.1:30000/model_info HTTP/1.1" 403 3582'
    cause, diagnosis, advice, _lines = sig.diagnose([line])
    assert cause == 'warmup_failed'
    assert 'HTTP 403' in diagnosis and 'http://10.0.0.1:3128' in diagnosis
    assert 'no_proxy=127.0.0.1,localhost' in advice
    # the server's own access log line of a direct request is no proxy
    direct = '[2026-11-29 09:01:03] INFO:     127.0.0.1:40112 - "GET /model_info HTTP/1.1" 200 OK'
    assert sig.diagnose([direct])[0] is None


@pytest.mark.parametrize(
    'lines, expected, source',
    [
        # a JIT build failing inside the capture, then the parent's notice: the build is the cause
        (
            [
                'Exception: Capture cuda graph failed: Ninja build failed. Ninja output:',
                'Received sigquit from a child process. It usually means the child failed.',
            ],
            'jit_build_failed',
            'flashinfer python/flashinfer/jit/cpp_ext.py::run_ninja, wrapped by cuda_graph_runner.py',
        ),
        (
            ["FileNotFoundError: [Errno 2] No such file or directory: 'ninja'"],
            'jit_build_failed',
            'python/cpython Lib/subprocess.py (_execute_child) from flashinfer python/flashinfer/jit/cpp_ext.py::run_ninja',
        ),
        # the disk is the root cause of the failing build
        (
            ["RuntimeError: Error building extension 'batch_prefill'", "OSError: [Errno 28] No space left on device: '/root/.cache/x.o'"],
            'disk_full',
            'pytorch/pytorch torch/utils/cpp_extension.py::_run_ninja_build; glibc strerror(ENOSPC)',
        ),
        # the store timeout, then NCCL's error on the rank that gave up: the rendezvous is the cause
        (
            [
                '[E socket.cpp:957] [c10d] The client socket has timed out after 60s while trying to connect to (10.0.0.2, 29400).',
                'torch.distributed.DistNetworkError: The client socket has timed out after 60s while trying to connect to (10.0.0.2, 29400).',
                'torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.cpp:76, unhandled system error',
            ],
            'distributed_init_timeout',
            'pytorch/pytorch torch/csrc/distributed/c10d/socket.cpp (SocketConnectOp)',
        ),
        (
            [
                'RuntimeError: The server socket has failed to listen on any local network address. The server socket has failed to '
                'bind to [::]:29500 (errno: 98 - Address already in use).'
            ],
            'port_in_use',
            'pytorch/pytorch torch/csrc/distributed/c10d/socket.cpp (SocketListenOp)',
        ),
        (
            [
                'RuntimeError: Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions before calling NumCudaDevices() '
                'that might have already set an error? Error 804: forward compatibility was attempted on non supported HW'
            ],
            'driver_too_old',
            'pytorch/pytorch c10/cuda/CUDAFunctions.cpp (device_count_impl) with cudaGetErrorString',
        ),
        (
            ["ValueError: Model architectures ['Glm4ForCausalLM'] are not supported for now. Supported architectures: ['LlamaForCausalLM']"],
            'unsupported_architecture',
            'sgl-project/sglang python/sglang/srt/models/registry.py',
        ),
        (
            [
                'RuntimeError: Failed to load the tokenizer. If the tokenizer is a custom tokenizer not yet available in the HuggingFace '
                'transformers library, consider setting `trust_remote_code=True` in LLM or using the `--trust-remote-code` flag in the CLI.'
            ],
            'trust_remote_code_required',
            'sgl-project/sglang python/sglang/srt/utils/hf_transformers/tokenizer.py',
        ),
        (
            ['[2026-11-29 09:00:05] Child process unexpectedly failed with an exit code 9. pid=149'],
            'child_process_died',
            'sgl-project/sglang python/sglang/srt/entrypoints/engine.py::_set_envs_and_config (0.4.x sigchld_handler)',
        ),
        (
            ["Message: 'Received sigquit from a child proces. It usually means the child failed.'"],
            'child_process_died',
            'sgl-project/sglang python/sglang/srt/entrypoints/engine.py::sigquit_handler (0.4.x spelling)',
        ),
    ],
)
def test_cause_over_its_cascade(lines, expected, source):
    assert source
    cause, diagnosis, advice, _lines = sig.diagnose(lines)
    assert cause == expected
    assert '{' not in diagnosis + advice


def test_lines_no_unit_journal_holds_name_nothing():
    # docker compose's "exited with code 137" follows SGLang's own SIGKILL of its tree after a failure it printed; a
    # systemd unit's journal never holds docker's, bash's or Ray's lines, so they are not matched
    lines = ['[2026-11-29 09:10:00 TP0] Scheduler watchdog timeout (self.watchdog_timeout=300, self.soft=False)', 'sglang-1 exited with code 137']
    assert sig.diagnose(lines)[0] == 'scheduler_watchdog'
    assert sig.diagnose(lines[1:])[0] is None
    assert sig.diagnose(['run.sh: line 12:  4242 Killed                  python -m sglang.launch_server'])[0] is None


# the lab simulator's traceback for a start-up check of SGLang 0.5.23 (lab/sglang_sim/sglang_sim/startup.py):
# frames of the call path, then SGLang's own exception line (speculative_hook.py:325)
_SITE = '/opt/ddtree/ml-env/current/lib/python3.11/site-packages'
STARTUP_REFUSAL = [
    'Traceback (most recent call last):',
    '  File "%s/sglang/launch_server.py", line 29, in run_server' % _SITE,
    '    server_args.resolve_once()',
    '  File "%s/sglang/srt/arg_groups/pipeline.py", line 306, in run_resolution_pipeline' % _SITE,
    '    run_hook(handle_speculative_decoding, server_args)',
    '  File "%s/sglang/srt/arg_groups/resolution_hooks.py", line 139, in run_hook' % _SITE,
    '    step(server_args)',
    '  File "%s/sglang/srt/arg_groups/speculative_hook.py", line 325, in _handle_dflash' % _SITE,
    '    raise ValueError(',
    'ValueError: DFLASH speculative decoding requires setting --speculative-draft-model-path.',
]


def test_a_start_up_check_names_its_step_and_sglangs_reason():
    cause, diagnosis, advice, fatal_lines = sig.diagnose(STARTUP_REFUSAL)
    assert cause == 'startup_check_refused'
    assert diagnosis == (
        'SGLang refused its flags at start-up in _handle_dflash (sglang/srt/arg_groups/speculative_hook.py:325): '
        'DFLASH speculative decoding requires setting --speculative-draft-model-path.'
    )
    assert advice.startswith('SGLang says: DFLASH speculative decoding requires setting --speculative-draft-model-path. Change ')
    assert fatal_lines[-1] == STARTUP_REFUSAL[-1]


def test_a_value_error_outside_sglangs_argument_code_is_no_start_up_check():
    lines = STARTUP_REFUSAL[:3] + ['  File "%s/torch/cuda/__init__.py", line 372, in _lazy_init' % _SITE, '    raise ValueError(', 'ValueError: something else']
    assert sig.diagnose(lines)[0] == 'unclassified'


# The rule of when a line decides alone (sglang_signatures, "When one journal line decides"), one test a branch.
# vLLM's optional extension failing to import, logged as a WARNING while the server goes on (sgl-project/sglang#1321)
VLLM_CORE_C_WARNING = (
    "WARNING 09-04 04:55:04 _core_ext.py:180] Failed to import from vllm._core_C with ImportError("
    "'/opt/conda/lib/python3.10/site-packages/vllm/_core_C.abi3.so: undefined symbol: "
    "_ZN5torch6detail10class_baseC2ERKSsS3_SsRKSt9type_infoS6_')"
)


@pytest.mark.parametrize(
    'line',
    [
        VLLM_CORE_C_WARNING,
        # constructed in the shapes of the loggers named in the rule
        'WARNING:root:Failed to import from vllm._C with ImportError("undefined symbol: cuGreenCtxCreate")',
        '2025-01-01 12:00:00,123 - sglang.srt.x - WARNING - undefined symbol: cuGreenCtxCreate',
        '[rank0]:[W1203 12:00:00.123456 ProcessGroupNCCL.cpp:4561] undefined symbol: cuGreenCtxCreate',
        '(SGLangEngine pid=7) [W socket.cpp:663] [c10d] address already in use',
        'W1203 12:00:00.123456 1234 op.cc:12] undefined symbol: cuGreenCtxCreate',
        'node1:1234:1234 [0] NCCL WARN Cuda failure \'out of memory\'',
        '/venv/lib/python3.11/site-packages/x.py:12: UserWarning: CUDA out of memory while probing, retrying',
        '[2025-01-01 12:00:00] Ignore import error when loading sglang.srt.models.x: undefined symbol: cuGreenCtxCreate',
    ],
)
def test_a_warning_level_line_never_fails_nor_names_the_cause(line):
    assert sig.is_warning_level(line)
    assert sig.deciding([line]) is None
    assert sig.diagnose([line])[0] is None
    assert [n['line'] for n in sig.notable_lines([line])] == [line]


def test_a_warning_keeps_its_class_in_the_notable_lines():
    assert sig.notable_lines([VLLM_CORE_C_WARNING]) == [{'line': VLLM_CORE_C_WARNING, 'class': 'cuda_abi_mismatch'}]


@pytest.mark.parametrize(
    'line',
    [
        '[2025-01-01 12:00:00 TP0] Load weight begin. avail mem=10.00 GB',
        'RuntimeError: a WARNING in the message is no level',
        '[2025-01-01 12:00:00] ERROR: deprecated flags do not warn here',
    ],
)
def test_other_lines_are_no_warnings(line):
    assert not sig.is_warning_level(line)


# constructed: a side component's line about a port, no exception line and no SGLang message it goes down with
SIDE_PORT_LINE = '[2025-01-01 12:00:00] metrics exporter: [Errno 98] Address already in use, trying the next port'


def test_evidence_names_the_cause_of_a_dead_server_but_does_not_decide():
    assert sig.deciding([SIDE_PORT_LINE]) is None
    assert sig.diagnose([SIDE_PORT_LINE])[0] == 'port_in_use'
    assert sig.notable_lines([SIDE_PORT_LINE]) == [{'line': SIDE_PORT_LINE, 'class': 'port_in_use'}]


@pytest.mark.parametrize(
    'lines, expected',
    [
        # the exception line that closes a traceback
        (
            [
                'Traceback (most recent call last):',
                '  File "server.py", line 1, in bind',
                'OSError: [Errno 98] error while attempting to bind on address (\'0.0.0.0\', 30000): address already in use',
            ],
            'port_in_use',
        ),
        # messages SGLang goes down with ('ends')
        (['[2025-01-01 12:00:00] Received sigquit from a child process. It usually means the child failed.'], 'child_process_died'),
        (['launch_server.py: error: unrecognized arguments: --speculative-ddtree-budget 8'], 'unrecognized_arguments'),
        (['[2025-01-01 12:00:00 TP0] Scheduler hit an exception: Traceback (most recent call last):'], 'child_process_died'),
    ],
)
def test_an_error_that_ends_sglang_decides_at_once(lines, expected):
    assert sig.deciding(lines)['id'] == expected
    assert sig.notable_lines(lines) == []
