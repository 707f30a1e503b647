# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The service role's checks on the controller: each wrong value gives one message that names the
variable and what it allows (the words tests/bad_inputs.yml expects), and a healthy plan none."""

from __future__ import annotations

import copy

import pytest

from ansible_collections.ddtree.sglang.plugins.filter.sglang_validate import derived_context_length, sglang_service_problems

ENVELOPE = {
    'model_path': '/srv/models/Qwen3.6-27B',
    'served_model_name': 'Qwen3.6-27B',
    'tp_size': 2,
    'mem_fraction_static': 0.85,
    'context_length': 32768,
    'speculative_draft_model_path': '/srv/models/Qwen3.6-27B-DFlash',
}
VALUES = {
    'sglang_service_name': 'sglang-qwen',
    'sglang_service_envelope': ENVELOPE,
    'sglang_service_host': '127.0.0.1',
    'sglang_service_port': 30000,
    'sglang_service_python': '/opt/ddtree/ml-env/current/bin/python',
    'sglang_service_launcher_module': 'sglang.launch_server',
    'sglang_service_environment': {},
    'sglang_service_environment_files': [],
    'sglang_service_state_dir': '/var/lib/ddtree-sglang',
    'sglang_service_gpu_class': {'name': 'NVIDIA RTX A6000', 'count': 2, 'memory_total_mib': 49140, 'compute_cap': '8.6'},
    'sglang_service_verdict_timeout': 900,
    'sglang_service_verdict_prompt': 'Hello',
    'sglang_service_verdict_max_tokens': 8,
    'sglang_service_verdict_expect': '',
    'sglang_service_verdict_settle_s': 5,
    'sglang_service_verdict_progress_s': 30,
    'sglang_service_memory_check': 'refuse',
    'sglang_service_safety_timer_s': 1200,
    'sglang_service_stop_timeout_s': 60,
    'sglang_service_user': 'sglang',
    'sglang_service_supplementary_groups': ['video', 'render'],
    'sglang_service_hardening': 'strict',
    'sglang_service_read_write_paths': [],
    'sglang_service_expose_api': False,
    'sglang_service_api_key_set': False,
    'sglang_service_api_key_waived': False,
    'sglang_service_secrets_valid': True,
    'sglang_service_multinode_group': '',
    'sglang_service_dist_init_port': 25000,
    'sglang_service_node_address': 'ddtree-lab-ct129',
    '__sglang_service_home_roots': ['/root', '/home', '/run/user'],
    '__sglang_service_unit': 'sglang-qwen.service',
    '__sglang_service_user_dirs': ['/var/lib/sglang', '/var/cache/sglang'],
    '__sglang_service_control_dir': '/etc/ddtree-sglang',
    'ml_env_root': '/opt/ddtree/ml-env',
    'sglang_service_gate': False,
    'sglang_service_gate_workload': {},
    'sglang_service_gate_min_ratio': 1.0,
    'sglang_service_gate_max_p99_ttft_ms': 0,
    'sglang_service_gate_max_p99_itl_ms': 0,
}
GPUS = {'count': 2, 'gpu_classes': ['NVIDIA RTX A6000'], 'gpus': [], 'driver_version': '580.95.05', 'cuda_version': '13.0', 'simulated': True}
HOST = {
    'gpus': GPUS,
    'models': {'/srv/models/Qwen3.6-27B': {'isdir': True}, '/srv/models/Qwen3.6-27B-DFlash': {'isdir': True}},
    'paths': {'/opt/ddtree/ml-env/current/bin/python': {'exists': True}},
    'port': {'in_use': False, 'msg': 'sglang-qwen.service holds port 30000'},
    'ml_env': {'current': 'abcdef0123456789', 'releases': {'abcdef0123456789': {'complete': True}}},
    'commands': {'systemctl': '/usr/bin/systemctl', 'journalctl': '/usr/bin/journalctl'},
}
GROUPS = ['gpu_a6000_tp2', 'lab', 'sglang_servers']
INVENTORY = {'all': ['ct129'], 'sglang_servers': ['ct129'], 'gpu_a6000_tp2': ['ct129'], 'pair': ['ct129', 'ct130']}


def problems(host='healthy', group_names=None, check_python=True, **changes):
    host = HOST if host == 'healthy' else host
    group_names = GROUPS if group_names is None else group_names
    values = copy.deepcopy(VALUES)
    values.update(changes)
    return sglang_service_problems(values, copy.deepcopy(host) if host is not None else None, 'ct129', group_names, INVENTORY, check_python=check_python)


def envelope(**changes):
    value = dict(ENVELOPE)
    value.update(changes)
    return value


def one(found):
    assert len(found) == 1, found
    return found[0]


def test_a_healthy_plan_has_no_problem():
    assert problems() == []
    assert problems(host=None) == []


@pytest.mark.parametrize(
    'changes, words',
    [
        ({'sglang_service_name': 'sglang qwen'}, ['sglang_service_name', 'letters, digits', 'without ".service"', 'got "sglang qwen"']),
        ({'sglang_service_name': 'sglang-qwen.service'}, ['without ".service"']),
        ({'sglang_service_envelope': {'served_model_name': 'x', 'tp_size': 2}}, ['sglang_service_envelope', 'holding model_path', 'absolute path']),
        (
            {'sglang_service_envelope': envelope(mem_fraction_static=1.5)},
            ['sglang_service_envelope.mem_fraction_static', 'must be a number in (0, 1)', 'got 1.5'],
        ),
        ({'sglang_service_envelope': envelope(mem_fraction_static=True)}, ['must be a number in (0, 1)', 'got true']),
        (
            {'sglang_service_envelope': envelope(context_length=0, max_running_requests='four')},
            [
                'sglang_service_envelope.max_running_requests, sglang_service_envelope.context_length must be a positive integer',
                '{"max_running_requests": "four", "context_length": 0}',
            ],
        ),
        ({'sglang_service_envelope': envelope(port=30001)}, ['must not hold host or port', 'sglang_service_port (1-65535)']),
        ({'sglang_service_envelope': envelope(**{'Mem-Fraction': 0.5})}, ["'Mem-Fraction' is not a flag name"]),
        ({'sglang_service_envelope': envelope(api_key='x')}, ['sglang_service_envelope.api_key', 'puts it on the command line']),
        (
            {'sglang_service_envelope': envelope(admin_api_key='x', ssl_keyfile_password='y')},
            ['sglang_service_envelope.admin_api_key, sglang_service_envelope.ssl_keyfile_password puts it on the command line'],
        ),
        ({'sglang_service_host': '127.example.com', 'sglang_service_expose_api': False}, ['127.example.com, which is not a loopback']),
        (
            {'sglang_service_state_dir': '/var/lib/sglang'},
            [
                'sglang_service_state_dir (/var/lib/sglang) overlaps what the service user sglang may write: /var/lib/sglang (its '
                'StateDirectory=). Root runs the restore script'
            ],
        ),
        (
            {'sglang_service_read_write_paths': ['-/etc/ddtree-sglang/x']},
            [
                'the control directory (/etc/ddtree-sglang) overlaps what the service user sglang may write: /etc/ddtree-sglang/x '
                '(sglang_service_read_write_paths)'
            ],
        ),
        ({'sglang_service_host': '0.0.0.0'}, ['not a loopback address', 'sglang_service_expose_api: true', 'allowed values: true, false']),
        ({'sglang_service_host': '0.0.0.0', 'sglang_service_expose_api': True}, ['without a key', 'sglang_service_api_key_waived: true']),
        ({'sglang_service_host': 'a b'}, ['sglang_service_host', 'an IP address or a host name']),
        ({'sglang_service_port': 70000}, ['sglang_service_port', '1-65535', 'got 70000']),
        ({'sglang_service_port': True}, ['sglang_service_port must be a TCP port']),
        ({'sglang_service_multinode_group': 'pair_nowhere'}, ['which holds this host', '(no such group)']),
        (
            {'sglang_service_multinode_group': 'gpu_a6000_tp2', 'sglang_service_envelope': envelope(nnodes=2)},
            ['must not hold nnodes, node_rank or dist_init_addr'],
        ),
        ({'sglang_service_dist_init_port': 70000}, ['sglang_service_dist_init_port', 'got 70000']),
        ({'sglang_service_node_address': 'a b'}, ['sglang_service_node_address', 'host name or IP address']),
        ({'sglang_service_python': 'bin/python'}, ['sglang_service_python', 'must be an absolute path']),
        ({'sglang_service_launcher_module': 'sglang..x'}, ['dotted Python module name']),
        ({'sglang_service_environment': {'1X': 'y'}}, ["names of letters, digits and '_'"]),
        ({'sglang_service_environment': {'X': 'a\nb'}}, ['one-line strings or numbers']),
        ({'sglang_service_environment': {'SGLANG_API_KEY': 'k'}}, ['SGLANG_API_KEY', 'put it into the unit file']),
        ({'sglang_service_environment_files': ['env']}, ['sglang_service_environment_files must hold absolute paths', 'got "env"']),
        ({'sglang_service_state_dir': 'ddtree-sglang'}, ['sglang_service_state_dir must hold absolute paths', '"ddtree-sglang"']),
        (
            {'sglang_service_gpu_class': {'name': 'x', 'count': 0, 'memory_total_mib': 1, 'compute_cap': '8.6'}},
            ['must be {} or exactly {name:', 'count: <GPUs, 1 or more>'],
        ),
        ({'sglang_service_gpu_class': {'name': 'x', 'gpus': 2}}, ['"gpus": 2']),
        ({'sglang_service_verdict_timeout': 0}, ['sglang_service_verdict_timeout must be 1 or more seconds, got 0']),
        ({'sglang_service_verdict_prompt': '  '}, ['sglang_service_verdict_prompt must be a non-empty string']),
        ({'sglang_service_verdict_max_tokens': 0}, ['must be 1 or more tokens']),
        ({'sglang_service_verdict_expect': ['a']}, ['sglang_service_verdict_expect must be a string']),
        ({'sglang_service_verdict_settle_s': -1}, ['sglang_service_verdict_settle_s must be 0 or more seconds']),
        ({'sglang_service_gate_workload': {'requests': 0}}, ['sglang_service_gate_workload: workload requests is 0; allowed: a whole number from 1 to 1024.']),
        (
            {'sglang_service_gate_workload': [1]},
            ['sglang_service_gate_workload must be a dict with the keys concurrency, requests, rounds, seed, warmup_requests'],
        ),
        ({'sglang_service_gate_min_ratio': 'fast'}, ['sglang_service_gate_min_ratio must be a number above 0', 'got "fast"']),
        ({'sglang_service_gate_min_ratio': -1.1}, ['sglang_service_gate_min_ratio must be a number above 0', 'got -1.1']),
        ({'sglang_service_gate_max_p99_itl_ms': -1}, ['sglang_service_gate_max_p99_itl_ms must be 0 (no limit) or more milliseconds']),
        ({'sglang_service_gate_confidence': 1}, ['sglang_service_gate_confidence must be a number above 0.5 and below 1', 'got 1.']),
        ({'sglang_service_gate_noise_cv': '2%'}, ['sglang_service_gate_noise_cv must be a number from 0 to 0.5', 'got "2%".']),
        (
            {'sglang_service_gate_max_p99_ttft_ms': 500},
            ['sglang_service_gate_max_p99_ttft_ms needs at least 100 requests over the rounds to judge a p99 (requests x rounds is 24 x 3 = 72)'],
        ),
        ({'sglang_service_verdict_progress_s': -1}, ['sglang_service_verdict_progress_s must be 0 or more seconds']),
        (
            {'sglang_service_safety_timer_s': 900},
            ['must exceed sglang_service_verdict_timeout + sglang_service_verdict_settle_s + sglang_service_stop_timeout_s + 60 s', '(1025.0 s;', 'got 900'],
        ),
        ({'sglang_service_safety_timer_s': 1025}, ['(1025.0 s;', 'got 1025']),
        ({'sglang_service_gate_request_timeout_s': '60\n'}, ['sglang_service_gate_request_timeout_s must be an integer of seconds in 1-3600']),
        ({'sglang_service_gate_request_timeout_s': 0}, ['sglang_service_gate_request_timeout_s must be an integer of seconds in 1-3600']),
        ({'sglang_service_stop_timeout_s': 0}, ['sglang_service_stop_timeout_s must be an integer of seconds in 1-3600']),
        ({'sglang_service_stop_timeout_s': True}, ['sglang_service_stop_timeout_s must be an integer of seconds in 1-3600']),
        (
            {'sglang_service_host_lock_lease_s': 1200},
            ['sglang_service_host_lock_lease_s must be an integer of seconds above sglang_service_safety_timer_s (1200;', 'got 1200'],
        ),
        ({'sglang_service_host_lock_lease_s': '1h'}, ['sglang_service_host_lock_lease_s must be an integer', 'got "1h"']),
        ({'sglang_service_memory_check': False}, ['must be refuse, warn or "off"']),
        ({'sglang_service_user': 'Sglang'}, ['lowercase letters, digits']),
        ({'sglang_service_supplementary_groups': ['GPU users']}, ['lowercase letters, digits', 'GPU users']),
        ({'sglang_service_secrets_valid': False}, ['contains a single quote', 'Allowed: printable characters']),
    ],
)
def test_a_wrong_variable_gives_one_message_with_its_words(changes, words):
    message = one(problems(**changes))
    for word in words:
        assert word in message


def test_the_sandbox_refuses_a_model_it_would_hide():
    host = copy.deepcopy(HOST)
    host['models']['/root/models/q'] = {'isdir': True}
    message = one(problems(host=host, sglang_service_envelope=envelope(model_path='/root/models/q')))
    assert 'it would need /root/models/q' in message and 'allowed values: strict, baseline, none' in message


def test_a_missing_model_directory_is_named_before_the_sandbox_that_would_hide_it():
    found = problems(sglang_service_envelope=envelope(model_path='/root/models/q'))
    assert len(found) == 2, found
    assert found[0] == (
        'sglang_service_envelope.model_path names /root/models/q, which is not a directory on ct129. '
        'Allowed: an existing directory holding the model\'s config.json.'
    )
    assert 'it would need /root/models/q' in found[1]


def test_hidden_paths_do_not_matter_without_hardening():
    assert problems(sglang_service_hardening='none', sglang_service_envelope=envelope(model_path='/root/models/q')) == [
        'sglang_service_envelope.model_path names /root/models/q, which is not a directory on ct129. '
        'Allowed: an existing directory holding the model\'s config.json.'
    ]


def test_the_host_is_only_judged_when_the_variables_are_right():
    # the envelope is wrong, so its tp_size against the GPUs says nothing
    found = problems(sglang_service_envelope=envelope(tp_size=3, context_length=0))
    assert found == ['sglang_service_envelope.context_length must be a positive integer (1, 2, 3, ...); got {"context_length": 0}.']


def test_gpu_groups():
    assert 'is in 2 GPU-class groups (gpu_a6000_tp2, gpu_rtxpro6000_tp8)' in one(
        problems(group_names=['gpu_a6000_tp2', 'gpu_rtxpro6000_tp8', 'sglang_servers'])
    )
    assert 'is in 0 GPU-class groups (none)' in one(problems(group_names=['sglang_servers']))
    assert problems(group_names=['lab']) == []


@pytest.mark.parametrize(
    'changes, words',
    [
        ({'tp_size': 3}, ['tp_size=3 x', 'has 2 (NVIDIA RTX A6000)', 'Allowed: tp_size x dp_size dividing', '(1, 2)']),
        ({'tp_size': 2, 'dp_size': 2}, ['tp_size=2 x', 'dp_size=2', '(1, 2)']),
    ],
)
def test_tensor_parallelism_must_divide_the_gpus(changes, words):
    message = one(problems(sglang_service_envelope=envelope(**changes)))
    for word in words:
        assert word in message


def test_the_gpu_class_must_be_the_hosts():
    assert one(problems(sglang_service_gpu_class=dict(VALUES['sglang_service_gpu_class'], count=8))) == (
        'sglang_service_gpu_class expects 8 x NVIDIA RTX A6000; ct129 has 2 x NVIDIA RTX A6000. Put the host in the group of its GPU class.'
    )


def test_missing_model_directories_are_named():
    host = copy.deepcopy(HOST)
    host['models']['/srv/models/Qwen3.6-27B-DFlash'] = {'isdir': False}
    assert one(problems(host=host)) == (
        'sglang_service_envelope.speculative_draft_model_path names /srv/models/Qwen3.6-27B-DFlash, which is not a directory '
        'on ct129. Allowed: an existing directory holding the model\'s config.json.'
    )


def test_the_interpreter_must_exist_where_it_is_looked_for():
    host = copy.deepcopy(HOST)
    host['paths'] = {'/usr/local/bin/no-such-python': {'exists': False}}
    assert 'sglang_service_python /usr/local/bin/no-such-python does not exist on ct129' in one(
        problems(host=host, sglang_service_python='/usr/local/bin/no-such-python')
    )
    # a release's interpreter before ml_env built it is not looked for
    assert problems(host=host, check_python=False, sglang_service_python='/usr/local/bin/no-such-python') == []


def test_a_release_interpreter_counts_when_the_release_is_complete():
    release = '/opt/ddtree/ml-env/releases/abcdef0123456789/bin/python'
    assert problems(sglang_service_python=release) == []
    assert 'does not exist' in one(problems(sglang_service_python=release.replace('abcdef', 'fedcba')))


def test_a_port_held_by_another_process_is_refused():
    host = copy.deepcopy(HOST)
    host['port'] = {'in_use': True, 'msg': 'PID 7 (python3, bad-input-squatter.service) listens on port 30000, not sglang-qwen.service'}
    assert one(problems(host=host)) == (
        'sglang_service_port 30000 is in use on ct129: PID 7 (python3, bad-input-squatter.service) listens on port 30000, not '
        'sglang-qwen.service. Allowed: a port (1-65535) that no process but sglang-qwen.service listens on; stop the other process '
        'or choose another sglang_service_port.'
    )


def test_unreadable_gpus_are_the_problem():
    host = dict(HOST, gpus=None, gpus_error='nvidia-smi not found on this host')
    assert problems(host=host) == ['nvidia-smi not found on this host']


MODEL_CONFIG = {'architectures': ['Qwen3NextForCausalLM'], 'max_position_embeddings': 262144}


def with_model_config(config):
    host = copy.deepcopy(HOST)
    host['models']['/srv/models/Qwen3.6-27B']['config'] = config
    return host


def test_a_context_longer_than_the_model_is_refused_as_sglang_does():
    assert one(problems(host=with_model_config(MODEL_CONFIG), sglang_service_envelope=envelope(context_length=524288))) == (
        'sglang_service_envelope.context_length 524288 is more than the model\'s context length 262144 (/srv/models/Qwen3.6-27B\'s '
        'config.json); SGLang refuses it at start-up (model_config.ModelConfig._derive_context_length). Allowed: 1-262144, or set '
        'SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN: "1" in sglang_service_environment to let SGLang run past the model\'s length.'
    )


def test_sglangs_own_switch_lets_a_longer_context_pass():
    assert (
        problems(
            host=with_model_config(MODEL_CONFIG),
            sglang_service_envelope=envelope(context_length=524288),
            sglang_service_environment={'SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN': '1'},
        )
        == []
    )
    assert problems(host=with_model_config(MODEL_CONFIG), sglang_service_envelope=envelope(context_length=262144)) == []


@pytest.mark.parametrize(
    'config, derived',
    [
        ({'max_position_embeddings': 32768, 'rope_scaling': {'factor': 4.0, 'rope_type': 'yarn'}}, 131072),
        ({'max_position_embeddings': 32768, 'rope_scaling': {'factor': 4.0, 'original_max_position_embeddings': 8192}}, 32768),
        ({'max_position_embeddings': 131072, 'rope_scaling': {'factor': 8.0, 'rope_type': 'llama3'}}, 131072),
        ({'seq_length': 4096, 'max_position_embeddings': 8192}, 4096),
        ({'text_config': {'max_position_embeddings': 65536}}, 65536),
        ({}, 2048),
    ],
)
def test_the_models_context_length_is_derived_as_sglang_derives_it(config, derived):
    assert derived_context_length(config) == derived


@pytest.mark.parametrize(
    'changes, message',
    [
        (
            {'speculative_algorithm': 'DFLASH', 'tp_size': 1, 'pp_size': 2},
            'sglang_service_envelope.pp_size is 2 with speculative_algorithm DFLASH; SGLang refuses it at start-up ("Currently DFLASH '
            'speculative decoding only supports pp_size == 1", speculative_hook._handle_dflash). Allowed: pp_size 1 (or leave it out) '
            'with DFLASH.',
        ),
        (
            {'speculative_algorithm': 'DFLASH', 'speculative_draft_model_path': None},
            'sglang_service_envelope has speculative_algorithm DFLASH without speculative_draft_model_path; SGLang refuses it at '
            'start-up (speculative_hook._handle_dflash). Allowed: the absolute path of the drafter\'s directory.',
        ),
        (
            {'speculative_algorithm': 'DDTREE', 'attention_backend': 'flex_attention'},
            'sglang_service_envelope.attention_backend flex_attention does not take speculative decoding (DDTREE); SGLang refuses it at '
            'start-up (attention_hook.handle_attention_backend_compatibility). Allowed: another attention_backend, or no '
            'speculative_algorithm.',
        ),
        (
            {'ssl_keyfile': '/etc/ssl/private/sglang.key'},
            'sglang_service_envelope.ssl_keyfile needs ssl_certfile too; SGLang refuses a key without its certificate at start-up '
            '(serving_hook.handle_ssl_validation).',
        ),
    ],
)
def test_sglangs_start_up_refusals_are_refused_before_the_restart(changes, message):
    env = envelope(**changes)
    if env.get('speculative_draft_model_path') is None:
        env.pop('speculative_draft_model_path')
    assert one(problems(sglang_service_envelope=env)) == message


@pytest.mark.parametrize(
    'changes, refused',
    [
        ({'tp_size': 2, 'pp_size': 2}, True),
        ({'tp_size': 1, 'pp_size': 2}, False),
        ({'tp_size': 2, 'dp_size': 2, 'enable_dp_attention': True}, False),
        ({'tp_size': 2, 'dp_size': 2}, True),
    ],
)
def test_pipeline_stages_count_and_dp_attention_shares_the_gpus(changes, refused):
    assert bool(problems(sglang_service_envelope=envelope(**changes))) is refused


def test_unit_values_with_line_breaks_and_system_state_dirs_are_refused():
    assert one(problems(sglang_service_read_write_paths=['/srv/cache\nExecStartPre=+/bin/sh'])).startswith(
        'sglang_service_read_write_paths must hold values without spaces, tabs, line breaks'
    )
    assert one(problems(sglang_service_environment_files=['-/etc/a b.env'])).startswith('sglang_service_environment_files must hold values without spaces')
    assert one(problems(sglang_service_state_dir='/var/lib')) == (
        'sglang_service_state_dir must be a directory of its own, at least two levels below / (such as /opt/ddtree/<name>): '
        'the collection creates, prunes and deletes entries below it; /var/lib is a system or shared directory.'
    )


def with_user(**facts):
    host = copy.deepcopy(HOST)
    host['user'] = dict({'name': 'sglang', 'exists': True, 'groups_existing': ['video', 'render']}, **facts)
    return host


@pytest.mark.parametrize(
    'facts',
    [
        {'uid': 1000, 'shell': '/bin/bash', 'comment': 'Alice,,,'},
        {'uid': 1001, 'shell': '/usr/sbin/nologin', 'comment': ''},
        {'uid': 998, 'shell': '/bin/sh', 'comment': ''},
    ],
)
def test_an_existing_login_account_is_not_taken_over(facts):
    # the rule both roles share (module_utils/service_account.py, its own tests): one message naming the variable
    message = one(problems(host=with_user(home='/home/alice', **facts), sglang_service_user='alice'))
    assert message.startswith('sglang_service_user alice is an existing account that is not the system user the role would make: ')
    # the home the role gives its account: StateDirectory=, as the role's vars derive it (VALUES: /var/lib/sglang)
    assert 'home /home/alice (not /var/lib/sglang)' in message


def test_the_roles_mark_no_longer_excuses_a_login_shell():
    message = one(problems(host=with_user(uid=1005, shell='/bin/bash', comment='ddtree.sglang service user', home='/var/lib/sglang')))
    assert 'uid 1005 (not a system uid, 1-999)' in message and 'shell /bin/bash (a login shell)' in message


@pytest.mark.parametrize(
    'facts',
    [
        {'uid': 998, 'shell': '/usr/sbin/nologin', 'comment': '', 'home': '/var/lib/sglang'},
        {'uid': 120, 'shell': '/bin/false', 'comment': 'ddtree.sglang service user', 'home': '/var/lib/sglang/'},
    ],
)
def test_system_accounts_of_the_roles_shape_pass(facts):
    assert problems(host=with_user(**facts)) == []


# INI :vars and -e name=value give strings; Python's truth of "false" and "no" is True
@pytest.mark.parametrize('word', ['false', 'no', '0', 'False', 'off'])
def test_a_string_false_keeps_the_api_on_loopback_only(word):
    assert one(problems(sglang_service_host='0.0.0.0', sglang_service_expose_api=word)).startswith(
        'sglang_service_host is 0.0.0.0, which is not a loopback address'
    )
    assert one(problems(sglang_service_host='0.0.0.0', sglang_service_expose_api=True, sglang_service_api_key_waived=word)).startswith(
        'the API would listen on 0.0.0.0:30000 without a key.'
    )


@pytest.mark.parametrize('word', ['true', 'yes', '1'])
def test_a_string_true_is_true(word):
    assert problems(sglang_service_host='0.0.0.0', sglang_service_expose_api=word, sglang_service_api_key_waived=word) == []


def test_a_boolean_no_parser_takes_is_refused_naming_it():
    assert one(problems(sglang_service_expose_api='perhaps')) == (
        'sglang_service_expose_api must be a boolean (allowed values: true, false; yes/no, on/off and 1/0 are read the same); got "perhaps".'
    )


@pytest.mark.parametrize(
    'name, value, words',
    [
        # int() strips a line break, and the number reaches the restore script and the unit
        ('sglang_service_safety_timer_s', '1500\n', 'sglang_service_safety_timer_s must exceed'),
        ('sglang_service_safety_timer_s', ' 1500', 'sglang_service_safety_timer_s must exceed'),
        ('sglang_service_verdict_timeout', '900\n', 'sglang_service_verdict_timeout must be 1 or more seconds'),
        ('sglang_service_verdict_settle_s', '5\n', 'sglang_service_verdict_settle_s must be 0 or more seconds'),
        ('sglang_service_stop_timeout_s', '60\n', 'sglang_service_stop_timeout_s must be an integer of seconds in 1-3600'),
        ('sglang_service_port', '30000\n', 'sglang_service_port must be a TCP port in 1-65535'),
    ],
)
def test_a_number_with_a_line_break_or_a_space_is_refused(name, value, words):
    assert words in one(problems(**{name: value}))


@pytest.mark.parametrize(
    'name, value',
    [
        ('sglang_service_safety_timer_s', '1500'),
        ('sglang_service_verdict_timeout', '900'),
        ('sglang_service_verdict_settle_s', '2.5'),
        ('sglang_service_port', '30000'),
    ],
)
def test_a_number_given_as_digits_passes(name, value):
    assert problems(**{name: value}) == []


def test_ddtree_needs_its_drafter_as_dflash_does():
    without = dict(ENVELOPE, speculative_algorithm='DDTREE')
    del without['speculative_draft_model_path']
    assert one(problems(sglang_service_envelope=without)) == (
        'sglang_service_envelope has speculative_algorithm DDTREE without speculative_draft_model_path; DDTree drafts with the '
        'DFlash drafter, which needs its model. Allowed: the absolute path of the drafter\'s directory.'
    )
    assert problems(sglang_service_envelope=dict(ENVELOPE, speculative_algorithm='DDTREE')) == []


@pytest.mark.parametrize('name', ['WANDB_API_KEY', 'AWS_SECRET_ACCESS_KEY', 'DB_PASSWORD', 'github_token', 'HF_TOKEN'])
def test_any_secret_looking_environment_name_is_refused(name):
    message = one(problems(sglang_service_environment={name: 'v', 'CUDA_VISIBLE_DEVICES': '0,1'}))
    assert (
        "sglang_service_environment's %s (a name of a secret: *_KEY, *_TOKEN, *_SECRET, *PASSWORD*) would put it into the unit file (mode 0644)" % name
    ) in message


@pytest.mark.parametrize('name', ['CUDA_VISIBLE_DEVICES', 'TOKENIZERS_PARALLELISM', 'SGLANG_KEYS_DIR_MODE', 'MONKEY'])
def test_names_that_only_hold_the_letters_pass(name):
    assert problems(sglang_service_environment={name: '1'}) == []


def test_the_safety_timer_margin_counts_the_gate_longest_run():
    # the gate runs between the healthy verdict and the confirmation: 1 warmup wave + 3 rounds of 4 request waves of 60 s
    gate = {'sglang_service_gate': 'yes', 'sglang_service_gate_workload': {'requests': 16, 'concurrency': 4}, 'sglang_service_gate_request_timeout_s': 60}
    assert problems(**dict(gate, sglang_service_safety_timer_s=1806)) == []
    assert one(problems(**dict(gate, sglang_service_safety_timer_s=1805))) == (
        'sglang_service_safety_timer_s must exceed sglang_service_verdict_timeout + sglang_service_verdict_settle_s + '
        'sglang_service_stop_timeout_s + 60 s + the gate\'s longest run (780.0 s: its warmup and every round\'s requests, '
        'sglang_service_gate_workload\'s concurrency at a time, each taking sglang_service_gate_request_timeout_s) '
        '(1805.0 s; default sglang_service_verdict_timeout + 300 + the gate\'s longest run), a whole number of seconds, '
        'or the host would restore the old unit while the verdict or the gate still runs; got 1805.'
    )
    # "false" from INI :vars is off: no gate in the margin
    gate_off = dict(gate)
    gate_off.update(sglang_service_gate='false', sglang_service_safety_timer_s=1026)
    assert problems(**gate_off) == []


def _paths(**loose):
    """The host read's paths of the state and control directories and their parents: root's 0755, but ``loose``."""
    found = dict(HOST['paths'])
    for path in ('/', '/var', '/var/lib', '/var/lib/ddtree-sglang', '/etc', '/etc/ddtree-sglang'):
        found[path] = {'exists': True, 'isdir': True, 'uid': 0, 'mode': '0755'}
    for path, facts in loose.items():
        found[path.replace('_', '/')] = dict(found.get(path.replace('_', '/'), {'exists': True, 'isdir': True}), **facts)
    return found


def test_root_control_directories_and_their_parents_must_be_root_only_on_the_host():
    host = dict(HOST, paths=_paths())
    assert problems(host=host) == []
    # a parent the deploy user owns: it could swap the state dir for one holding its own "last known good" unit
    host = dict(HOST, paths=dict(_paths(), **{'/var/lib': {'exists': True, 'isdir': True, 'uid': 1000, 'mode': '0755'}}))
    assert one(problems(host=host)) == (
        'sglang_service_state_dir (/var/lib/ddtree-sglang) is not root\'s alone on the host: /var/lib (uid 1000, mode 0755). '
        'Root restores the units kept there into /etc/systemd/system and runs the restore script, so whoever can write there '
        'could plant one. Allowed: a directory whose every existing parent up to / is owned by root and not writable by group '
        'or others (chown root and chmod go-w, or choose another directory such as /var/lib/ddtree-sglang).'
    )
    # group-writable control directory; a state dir not there yet is judged by its parents
    paths = dict(_paths(), **{'/etc/ddtree-sglang': {'exists': True, 'isdir': True, 'uid': 0, 'mode': '0775'}, '/var/lib/ddtree-sglang': {'exists': False}})
    assert one(problems(host=dict(HOST, paths=paths))).startswith(
        'the control directory (/etc/ddtree-sglang) is not root\'s alone on the host: /etc/ddtree-sglang (uid 0, mode 0775).'
    )


def test_path_and_parents_lists_each_once_up_to_the_root():
    from ansible_collections.ddtree.sglang.plugins.plugin_utils.safe_values import path_and_parents

    assert path_and_parents(['/var/lib/ddtree-sglang', '/var/lib/x', 'relative', None]) == ['/var/lib/ddtree-sglang', '/var/lib', '/var', '/', '/var/lib/x']


def test_the_gate_prompts_file_is_read_before_the_host_is_touched(tmp_path):
    prompts = tmp_path / 'prompts.jsonl'
    prompts.write_text('{"prompt": "Alice", "output_tokens": 64}\n{"prompt": "Rabbit", "output_tokens": 0}\n')
    gate = {
        'sglang_service_gate': 'true',
        '__sglang_service_gate_prompts_path': str(prompts),
        'sglang_service_safety_timer_s': 3000,
        'sglang_service_host_lock_lease_s': 3600,
    }
    assert one(problems(**gate)) == (
        'sglang_service_gate_prompts_file: %s line 2: output_tokens is 0; allowed: a whole number '
        'from 1 to 4096 (one {"prompt": text, "output_tokens": n} a line).' % prompts
    )
    gate['__sglang_service_gate_prompts_path'] = str(tmp_path / 'missing.jsonl')
    assert one(problems(**gate)) == (
        'sglang_service_gate_prompts_file must name a readable file of JSON lines on the controller; '
        '%s: No such file or directory.' % (tmp_path / 'missing.jsonl')
    )
    # the gate off: the file is not read
    gate_off = dict(gate)
    gate_off['sglang_service_gate'] = 'false'
    assert problems(**gate_off) == []
    # the role's own prompts pass
    import os

    role_file = os.path.join(os.path.dirname(__file__), '..', '..', '..', '..', 'roles', 'sglang_service', 'files', 'gate_prompts.jsonl')
    gate['__sglang_service_gate_prompts_path'] = role_file
    assert problems(**gate) == []


def test_a_host_without_systemd_s_commands_is_refused_naming_the_package():
    host = dict(HOST, commands={'systemctl': '/usr/bin/systemctl', 'journalctl': None})
    assert problems(host) == [
        "journalctl is not on ct129: the verdict reads the service's journal. Install the package systemd (Debian/Ubuntu and "
        'RHEL family) (a host that boots with systemd has it).'
    ]
