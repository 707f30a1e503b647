# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.ddtree.sglang.plugins.module_utils import sglang_signatures as sig

PREFIX = '[2026-11-29 09:00:00 TP0] '

START = [
    PREFIX + 'Load weight begin. avail mem=46.91 GB',
    'Loading safetensors checkpoint shards: 100% Completed | 12/12 [00:21<00:00,  1.80s/it]',
    PREFIX + 'Load weight end. type=Qwen3_5ForCausalLM, dtype=torch.bfloat16, avail mem=20.12 GB, mem usage=26.79 GB.',
]

POOL_FAILURE = START + [
    PREFIX + 'Scheduler hit an exception: Traceback (most recent call last):',
    'Traceback (most recent call last):',
    '  File "/root/ml-env/lib/python3.11/site-packages/sglang/srt/managers/scheduler.py", line 2871, in run_scheduler_process',
    '    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, moe_ep_rank, pp_rank, dp_rank)',
    '  File "/root/ml-env/lib/python3.11/site-packages/sglang/srt/model_executor/pool_configurator.py", line 211, in configure',
    '    raise RuntimeError(',
    'RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. Current value: mem_fraction_static=0.88',
    '[2026-11-29 09:00:33] Received sigquit from a child process. It usually means the child failed.',
]

GRAPH_OOM = START + [
    PREFIX + 'KV Cache is allocated. #tokens: 120000, K size: 3.66 GB, V size: 3.66 GB',
    PREFIX + 'Memory pool end. avail mem=4.10 GB',
    PREFIX + 'Capture cuda graph begin. This can take up to several minutes. avail mem=4.02 GB',
    'Traceback (most recent call last):',
    '  File "/root/ml-env/lib/python3.11/site-packages/sglang/srt/model_executor/cuda_graph_runner.py", line 412, in capture',
    'torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.02 GiB. GPU 0 has a total capacity of 47.41 GiB',
    '',
    'During handling of the above exception, another exception occurred:',
    'Traceback (most recent call last):',
    'Exception: Capture cuda graph failed: CUDA out of memory. Tried to allocate 1.02 GiB.',
    'Possible solutions:',
    '1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)',
]

TRITON = START + [
    PREFIX + 'Memory pool end. avail mem=6.10 GB',
    PREFIX + 'disable_cuda_graph is ignored for piecewise cuda graph',
    PREFIX + 'Capture cuda graph begin. This can take up to several minutes. avail mem=6.02 GB',
    'Traceback (most recent call last):',
    '  File "/root/ml-env/lib/python3.11/site-packages/triton/runtime/jit.py", line 591, in run',
    'triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: 167936, Hardware limit: 101376. '
    'Reducing block sizes or `num_stages` may help.',
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


def test_mem_pool_paraphrase_without_value():
    cause, diagnosis, advice, _lines = sig.diagnose(['RuntimeError: Not enough memory; increase --mem-fraction-static'])
    assert cause == 'mem_pool_too_small'
    assert 'its current value' in advice


def test_oom_during_graph_capture_beats_generic_capture_failure():
    matches = [m['id'] for m in sig.classify(GRAPH_OOM)]
    assert 'cuda_graph_capture_failed' in matches
    cause, _d, advice, fatal_lines = sig.diagnose(GRAPH_OOM)
    assert cause == 'cuda_oom_graph_capture'
    assert '--cuda-graph-max-bs' in advice
    assert any('Capture cuda graph failed' in line for line in fatal_lines)


@pytest.mark.parametrize('context, expected', [
    ([PREFIX + 'Load weight begin. avail mem=46.91 GB'], 'cuda_oom_loading_weights'),
    ([], 'cuda_oom_loading_weights'),
    (START, 'cuda_oom_sizing_pools'),
    (START + [PREFIX + 'Capture cuda graph begin.'], 'cuda_oom_graph_capture'),
    (START + [PREFIX + 'Capture cuda graph end. Time elapsed: 12.1 s.', 'INFO:     Uvicorn running on http://127.0.0.1:30000',
              PREFIX + 'The server is fired up and ready to roll!'], 'cuda_oom_serving'),
])
def test_cuda_oom_is_told_apart_by_phase(context, expected):
    line = 'torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.'
    assert sig.diagnose(context + [line])[0] == expected


def test_triton_error_and_ignored_flag_warning():
    cause, diagnosis, _advice, _lines = sig.diagnose(TRITON)
    assert cause == 'triton_error'
    assert 'OutOfResources' in diagnosis
    assert sig.warnings(TRITON) == [PREFIX + 'disable_cuda_graph is ignored for piecewise cuda graph']


def test_ignored_flag_alone_is_not_fatal():
    lines = START + [PREFIX + 'disable_cuda_graph is ignored for piecewise cuda graph']
    assert sig.diagnose(lines) == (None, None, None, [])
    matches = sig.classify(lines)
    assert [m['fatal'] for m in matches] == [False]
    assert matches[0]['groups']['flag'] == 'disable_cuda_graph'


def test_warnings_drop_copies_from_other_ranks():
    line = 'disable_cuda_graph is ignored for piecewise cuda graph'
    assert sig.warnings([line, line]) == [line]


@pytest.mark.parametrize('lines, expected, needle', [
    (['usage: launch_server.py [-h] --model-path MODEL_PATH',
      'launch_server.py: error: unrecognized arguments: --mamba-scheduler-strategy extra_buffer'],
     'unrecognized_arguments', '--mamba-scheduler-strategy extra_buffer'),
    (['usage: launch_server.py [-h]',
      "launch_server.py: error: argument --speculative-algorithm: invalid choice: 'DDTREE' (choose from 'EAGLE', 'EAGLE3', 'NEXTN', 'DFLASH')"],
     'invalid_argument', '--speculative-algorithm'),
    (["ImportError: /root/ml-env/lib/python3.11/site-packages/sgl_kernel/common_ops.abi3.so: undefined symbol: _ZN3c104cuda9SetDeviceEi"],
     'cuda_abi_mismatch', '_ZN3c104cuda9SetDeviceEi'),
    (['RuntimeError: CUDA error: no kernel image is available for execution on the device'], 'cuda_abi_mismatch', 'compute capability'),
    (["OSError: Can't load the configuration of '/root/models/Qwen3.6-27B'. If you were trying to load it from the model hub"],
     'model_config_error', '/root/models/Qwen3.6-27B'),
    (["ERROR:    [Errno 98] error while attempting to bind on address ('127.0.0.1', 30000): address already in use"],
     'port_in_use', "('127.0.0.1', 30000)"),
    (['[2026-11-29 09:10:00 TP0] Scheduler watchdog timeout (self.watchdog_timeout=300, self.soft=False)'], 'scheduler_watchdog', 'watchdog'),
    (['torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, unhandled cuda error'],
     'nccl_distributed_init', 'NCCL_P2P_DISABLE'),
    (['[rank1]:[E1129 09:00:00] [PG 0 Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1) ProcessGroupNCCL timed out'],
     'nccl_distributed_init', 'tensor-parallel'),
    (['[2026-11-29 09:00:10] Received sigquit from a child process. It usually means the child failed.'], 'child_process_died', 'traceback'),
    (['Exception: Capture cuda graph failed: an illegal memory access was encountered'], 'cuda_graph_capture_failed', 'cuda-graph-max-bs'),
    (['sglang-qwen.service: A process of this unit has been killed by the OOM killer.'], 'host_oom_killed', 'RAM'),
])
def test_each_signature(lines, expected, needle):
    cause, diagnosis, advice, fatal_lines = sig.diagnose(lines)
    assert cause == expected
    assert needle in diagnosis + ' ' + advice
    assert fatal_lines
    assert '{' not in diagnosis + advice, 'template left unfilled'


def test_argparse_usage_is_part_of_the_fatal_lines():
    lines = ['some earlier line', 'usage: launch_server.py [-h] --model-path MODEL_PATH',
             'launch_server.py: error: unrecognized arguments: --x']
    assert sig.diagnose(lines)[3] == lines[1:]


def test_child_death_ranks_below_its_cause():
    lines = ['Traceback (most recent call last):', 'triton.runtime.errors.OutOfResources: out of resource: shared memory',
             'Received sigquit from a child process. It usually means the child failed.']
    assert sig.diagnose(lines)[0] == 'triton_error'


def test_unknown_traceback_is_unclassified_and_kept():
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


def test_long_unclassified_traceback_is_trimmed_but_keeps_its_ends():
    lines = ['Traceback (most recent call last):'] + ['  File "x.py", line %d, in f' % i for i in range(100)] + ['ValueError: boom']
    block = sig.last_traceback(lines)
    assert block[0] == lines[0] and block[-1] == 'ValueError: boom' and len(block) <= 25


def test_nothing_fatal():
    assert sig.diagnose(START) == (None, None, None, [])
    assert sig.diagnose([]) == (None, None, None, [])


@pytest.mark.parametrize('lines, expected', [
    ([], 'starting'),
    (['usage: x'], 'starting'),
    (START[:1], 'loading_weights'),
    (START, 'sizing_pools'),
    (START + [PREFIX + 'KV Cache is allocated. #tokens: 1000'], 'pools_sized'),
    (START + [PREFIX + 'Memory pool end. avail mem=4.10 GB'], 'pools_sized'),
    (START + [PREFIX + 'Capture cuda graph begin. This can take up to several minutes.'], 'capturing_cuda_graph'),
    (START + [PREFIX + 'Capture cuda graph end. Time elapsed: 3.2 s'], 'binding'),
    (START + ['INFO:     Uvicorn running on http://127.0.0.1:30000 (Press CTRL+C to quit)'], 'binding'),
    (START + ['[2026-11-29 09:01:00] The server is fired up and ready to roll!'], 'ready'),
    # TP1 still loading while TP0 is capturing: the furthest phase counts
    ([PREFIX + 'Capture cuda graph begin.', '[2026-11-29 09:00:00 TP1] Load weight begin.'], 'capturing_cuda_graph'),
])
def test_phase_of(lines, expected):
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
