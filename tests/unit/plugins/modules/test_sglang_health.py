# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from ansible.module_utils import basic
from ansible.module_utils.testing import patch_module_args

from ansible_collections.ddtree.sglang.tests.unit.plugins.modules.utils import ExitJson, FailJson, exits  # noqa: F401 pylint: disable=unused-import

from ansible_collections.ddtree.sglang.plugins.module_utils import proc_net
from ansible_collections.ddtree.sglang.plugins.modules import sglang_health

INVOCATION = 'd702c87bd75b4c0d814920a15dab0820'
PREFIX = '[2026-11-29 09:00:00 TP0] '


def show(active='active', sub='running', pid=4242, restarts=0, code=0, status=0, result='success'):
    return (
        'ActiveState=%s\nSubState=%s\nMainPID=%d\nNRestarts=%d\nExecMainCode=%d\nExecMainStatus=%d\nResult=%s\n'
        'InvocationID=%s\nLoadState=loaded\nExecMainStartTimestampMonotonic=0\n' % (active, sub, pid, restarts, code, status, result, INVOCATION)
    )


class FakeHost:
    """systemctl/journalctl answers scripted per poll; the last one repeats."""

    def __init__(self, states, journal_batches):
        self.states = list(states)
        self.batches = list(journal_batches)
        self.cursor = 0
        self.commands = []

    def run_command(self, module, args, **kwargs):
        self.commands.append(args)
        if args[0] == 'systemctl':
            state = self.states.pop(0) if len(self.states) > 1 else self.states[0]
            return 0, state, ''
        if args[0] == 'journalctl':
            batch = self.batches.pop(0) if self.batches else []
            out = ''
            for message in batch:
                self.cursor += 1
                out += (
                    json.dumps(
                        {'__CURSOR': 's=%d' % self.cursor, '__REALTIME_TIMESTAMP': '1795945048633054', '_SYSTEMD_INVOCATION_ID': INVOCATION, 'MESSAGE': message}
                    )
                    + '\n'
                )
            return 0, out.encode('utf-8'), b''
        raise AssertionError('unexpected command %r' % (args,))


@pytest.fixture
def host(monkeypatch):
    holder = {}

    def install(states, batches):
        fake = FakeHost(states, batches)

        def run_command(module, args, **kwargs):
            return fake.run_command(module, args, **kwargs)

        monkeypatch.setattr(basic.AnsibleModule, 'run_command', run_command)
        # the test's own HTTP server is not in a unit; ownership is tested on its own below
        monkeypatch.setattr(proc_net, 'port_owner', lambda port, cg, pid: (True, []))
        holder['fake'] = fake
        return fake

    return install


class Api(BaseHTTPRequestHandler):
    models_status = 200
    generate_statuses = [200]
    generate_text = ' Paris.'
    seen_auth = []
    # the key the server enforces (None: it serves anyone, as stock SGLang does with SGLANG_API_KEY)
    key = None

    def log_message(self, *args):
        pass

    def _send(self, status, body):
        payload = json.dumps(body).encode()
        self.send_response(status)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def refused(self):
        if Api.key is not None and self.headers.get('Authorization') != 'Bearer %s' % Api.key:
            self._send(401, {'error': 'Unauthorized'})
            return True
        return False

    def do_GET(self):
        Api.seen_auth.append(self.headers.get('Authorization'))
        if self.refused():
            return
        self._send(Api.models_status, {'object': 'list', 'data': [{'id': '/root/models/Qwen3.6-27B'}]})

    def do_POST(self):
        length = int(self.headers.get('Content-Length') or 0)
        json.loads(self.rfile.read(length))
        if self.refused():
            return
        status = Api.generate_statuses.pop(0) if len(Api.generate_statuses) > 1 else Api.generate_statuses[0]
        if status == 200:
            self._send(200, {'text': Api.generate_text, 'meta_info': {}})
        else:
            self._send(status, {'error': 'internal error'})


@pytest.fixture
def api():
    Api.models_status = 200
    Api.generate_statuses = [200]
    Api.generate_text = ' Paris.'
    Api.seen_auth = []
    Api.key = None
    server = HTTPServer(('127.0.0.1', 0), Api)
    thread = threading.Thread(target=server.serve_forever)
    thread.daemon = True
    thread.start()
    yield 'http://127.0.0.1:%d' % server.server_address[1]
    server.shutdown()
    server.server_close()


def closed_port_url():
    server = HTTPServer(('127.0.0.1', 0), Api)
    port = server.server_address[1]
    server.server_close()
    return 'http://127.0.0.1:%d' % port


def run(args):
    with patch_module_args(args):
        sglang_health.main()


READY = [
    PREFIX + 'Load weight begin.',
    PREFIX + 'disable_cuda_graph is ignored for piecewise cuda graph',
    PREFIX + 'Load weight end.',
    PREFIX + 'Memory pool end.',
    'INFO:     Uvicorn running on http://127.0.0.1:30000',
    '[2026-11-29 09:00:09] The server is fired up and ready to roll!',
]


def test_healthy(host, api):
    host([show()], [READY])
    with pytest.raises(ExitJson) as e:
        run({'unit': 'sglang-qwen.service', 'base_url': api, 'timeout': 10, 'poll_interval': 0.05})
    result = e.value.args[0]
    assert result['healthy'] is True and result['verdict'] == 'healthy' and result['changed'] is False
    assert result['model_id'] == '/root/models/Qwen3.6-27B'
    assert result['generation_text'] == ' Paris.'
    assert result['phase'] == 'ready'
    assert result['ignored_flag_warnings'] == [PREFIX + 'disable_cuda_graph is ignored for piecewise cuda graph']
    assert result['unit_state']['MainPID'] == 4242


# vLLM's optional extension failing to import, a WARNING while the server goes on (sgl-project/sglang#1321)
VLLM_CORE_C_WARNING = (
    "WARNING 09-04 04:55:04 _core_ext.py:180] Failed to import from vllm._core_C with ImportError("
    "'/opt/conda/lib/python3.10/site-packages/vllm/_core_C.abi3.so: undefined symbol: "
    "_ZN5torch6detail10class_baseC2ERKSsS3_SsRKSt9type_infoS6_')"
)


def test_a_warning_never_fails_a_live_server(host, api):
    host([show()], [[VLLM_CORE_C_WARNING] + READY])
    with pytest.raises(ExitJson) as e:
        run({'unit': 'sglang-qwen.service', 'base_url': api, 'timeout': 10, 'poll_interval': 0.05})
    result = e.value.args[0]
    assert result['verdict'] == 'healthy' and result['cause'] == ''
    assert 'warnings' not in result, 'Ansible keeps warnings for its own list of strings'
    assert result['journal_warnings'] == [
        {'line': VLLM_CORE_C_WARNING, 'class': 'cuda_abi_mismatch'},
        {'line': PREFIX + 'disable_cuda_graph is ignored for piecewise cuda graph', 'class': 'flag_ignored'},
    ]


def test_evidence_waits_for_the_unit_and_then_names_the_cause(host):
    # constructed: an "[Errno 98]" line that is no exception line; the unit dies a poll later
    side = PREFIX + 'metrics exporter: [Errno 98] Address already in use'
    host([show(), show(), show(), show(active='failed', sub='failed', pid=0, code=1, status=1, result='exit-code')], [[side], [], []])
    with pytest.raises(FailJson) as e:
        run({'unit': 'x.service', 'base_url': closed_port_url(), 'timeout': 30, 'poll_interval': 0.05})
    result = e.value.args[0]
    assert result['cause'] == 'port_in_use'
    # decided by the unit's death, not by the line: the unit's reason is part of the diagnosis
    assert result['diagnosis'] == (
        'a port the server binds is already taken by another process (the main process exited with status 1 (ActiveState=failed, Result=exit-code))'
    )
    assert result['journal_warnings'] == [{'line': side, 'class': 'port_in_use'}]


def test_pool_failure_is_reported_at_once(host):
    pool = [
        PREFIX + 'Load weight begin.',
        PREFIX + 'Load weight end.',
        'Traceback (most recent call last):',
        '  File "pool_configurator.py", line 211, in configure',
        'RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. Current value: mem_fraction_static=0.88',
    ]
    host([show(), show(), show(active='failed', sub='failed', pid=0, code=1, status=1, result='exit-code')], [[], pool])
    with pytest.raises(FailJson) as e:
        run({'unit': 'sglang-qwen.service', 'base_url': closed_port_url(), 'timeout': 30, 'poll_interval': 0.05})
    result = e.value.args[0]
    assert result['verdict'] == 'failed' and result['healthy'] is False
    assert result['cause'] == 'mem_pool_too_small'
    assert result['phase'] == 'sizing_pools'
    assert result['elapsed_s'] < 5
    assert '[mem_pool_too_small]' in result['msg'] and '0.88' in result['msg']
    assert result['fatal_lines'][0] == 'Traceback (most recent call last):'


def test_dead_unit_without_known_lines_is_process_exited(host):
    host([show(active='failed', sub='failed', pid=0, code=2, status=9, result='signal')], [[PREFIX + 'Load weight begin.']])
    with pytest.raises(FailJson) as e:
        run({'unit': 'x.service', 'base_url': closed_port_url(), 'timeout': 30})
    result = e.value.args[0]
    assert result['cause'] == 'process_exited'
    assert 'killed by SIGKILL' in result['diagnosis'] and 'loading_weights' in result['diagnosis']


def test_restart_is_a_failure(host):
    host([show(restarts=1), show(restarts=2)], [[]])
    with pytest.raises(FailJson) as e:
        run({'unit': 'x.service', 'base_url': closed_port_url(), 'timeout': 30, 'poll_interval': 0.05})
    assert e.value.args[0]['cause'] == 'restarted'


def test_unclassified_traceback_reported_when_the_unit_dies(host):
    lines = ['Traceback (most recent call last):', '  File "ddtree.py", line 1, in f', 'KeyError: 7']
    host([show(), show(active='failed', sub='failed', pid=0, code=1, status=1, result='exit-code')], [lines])
    with pytest.raises(FailJson) as e:
        run({'unit': 'x.service', 'base_url': closed_port_url(), 'timeout': 30, 'poll_interval': 0.05})
    result = e.value.args[0]
    assert result['cause'] == 'unclassified' and result['fatal_lines'][-1] == 'KeyError: 7'


def test_generation_5xx_after_one_retry(host, api):
    Api.generate_statuses = [500, 500]
    host([show()], [READY])
    with pytest.raises(FailJson) as e:
        run({'unit': 'x.service', 'base_url': api, 'timeout': 20, 'poll_interval': 0.05})
    result = e.value.args[0]
    assert result['cause'] == 'generation_failed' and 'HTTP 500' in result['diagnosis']
    assert result['model_id']


def test_generation_5xx_then_ok_is_healthy(host, api):
    Api.generate_statuses = [503, 200]
    host([show()], [READY])
    with pytest.raises(ExitJson) as e:
        run({'unit': 'x.service', 'base_url': api, 'timeout': 20, 'poll_interval': 0.05})
    assert e.value.args[0]['healthy'] is True


def test_generate_expect_mismatch(host, api):
    host([show()], [READY])
    with pytest.raises(FailJson) as e:
        run({'unit': 'x.service', 'base_url': api, 'timeout': 20, 'poll_interval': 0.05, 'generate_expect': 'Berlin'})
    assert e.value.args[0]['cause'] == 'generation_failed'


def test_timeout_names_the_phase(host):
    host([show()], [[PREFIX + 'Load weight begin.', PREFIX + 'Load weight end.', PREFIX + 'Memory pool end.', PREFIX + 'Capture cuda graph begin.']])
    with pytest.raises(FailJson) as e:
        run({'unit': 'x.service', 'base_url': closed_port_url(), 'timeout': 0.5, 'poll_interval': 0.05})
    result = e.value.args[0]
    assert result['verdict'] == 'timeout' and result['cause'] == 'timeout'
    assert 'stuck in capturing_cuda_graph for' in result['diagnosis']
    assert result['journal_tail'][-1].endswith('Capture cuda graph begin.')


def test_not_failing_when_asked(host):
    host(
        [show(active='failed', sub='failed', pid=0, code=1, status=2, result='exit-code')],
        [['usage: launch_server.py [-h]', 'launch_server.py: error: unrecognized arguments: --speculative-ddtree-budget 64']],
    )
    with pytest.raises(ExitJson) as e:
        run({'unit': 'x.service', 'base_url': closed_port_url(), 'fail_on_unhealthy': False})
    result = e.value.args[0]
    assert result['healthy'] is False and result['cause'] == 'unrecognized_arguments'
    assert '--speculative-ddtree-budget 64' in result['diagnosis']


def test_unit_not_found(host):
    host(['LoadState=not-found\nActiveState=inactive\nSubState=dead\nInvocationID=\n'], [])
    with pytest.raises(FailJson) as e:
        run({'unit': 'nope.service'})
    assert e.value.args[0]['cause'] == 'unit_not_found'


def test_api_key_is_sent_and_never_returned(host, api, tmp_path):
    key_file = tmp_path / 'key'
    key_file.write_text('s3cr3t-key\n')
    Api.key = 's3cr3t-key'
    host([show()], [READY])
    with pytest.raises(ExitJson) as e:
        run({'unit': 'x.service', 'base_url': api, 'timeout': 10, 'poll_interval': 0.05, 'api_key_file': str(key_file)})
    assert e.value.args[0]['verdict'] == 'healthy'
    # the signed models, then the unsigned one that proves the key is enforced
    assert Api.seen_auth == ['Bearer s3cr3t-key', None]
    assert 's3cr3t-key' not in json.dumps(e.value.args[0])


def test_a_key_the_server_ignores_fails_the_verdict(host, api, tmp_path):
    key_file = tmp_path / 'key'
    key_file.write_text('s3cr3t-key\n')
    host([show()], [READY])
    with pytest.raises(FailJson) as e:
        run({'unit': 'x.service', 'base_url': api, 'timeout': 10, 'poll_interval': 0.05, 'api_key_file': str(key_file)})
    assert e.value.args[0]['cause'] == 'api_key_not_enforced'
    assert e.value.args[0]['diagnosis'].startswith('/v1/models answered 200 to a request without the API key')
    assert 's3cr3t-key' not in json.dumps(e.value.args[0])


def test_unauthorized_fails_fast(host, api):
    Api.models_status = 401
    host([show()], [READY])
    with pytest.raises(FailJson) as e:
        run({'unit': 'x.service', 'base_url': api, 'timeout': 20, 'poll_interval': 0.05})
    assert e.value.args[0]['cause'] == 'http_unauthorized'
    assert e.value.args[0]['elapsed_s'] < 5


def test_missing_api_key_file(host):
    host([show()], [[]])
    with pytest.raises(FailJson) as e:
        run({'unit': 'x.service', 'api_key_file': '/nonexistent/key'})
    assert 'cannot read api_key_file' in e.value.args[0]['msg']


def test_api_key_from_the_units_environment_file(host, api, tmp_path):
    env_file = tmp_path / 'sglang-qwen.env'
    env_file.write_text("# managed\nHF_TOKEN='hf_not-this-one'\nSGLANG_API_KEY='env-s3cr3t key'\n")
    Api.key = 'env-s3cr3t key'
    host([show()], [READY])
    with pytest.raises(ExitJson) as e:
        run({'unit': 'x.service', 'base_url': api, 'timeout': 10, 'poll_interval': 0.05, 'api_key_env_file': str(env_file)})
    assert 'Bearer env-s3cr3t key' in Api.seen_auth
    assert 'env-s3cr3t' not in json.dumps(e.value.args[0])


def test_environment_file_without_the_key_sends_none(host, api, tmp_path):
    env_file = tmp_path / 'sglang-qwen.env'
    env_file.write_text("# no secrets\nHF_TOKEN=hf_x\n")
    Api.seen_auth = []
    host([show()], [READY])
    with pytest.raises(ExitJson):
        run({'unit': 'x.service', 'base_url': api, 'timeout': 10, 'poll_interval': 0.05, 'api_key_env_file': str(env_file)})
    assert not [header for header in Api.seen_auth if header]


def test_missing_api_key_env_file(host):
    host([show()], [[]])
    with pytest.raises(FailJson) as e:
        run({'unit': 'x.service', 'api_key_env_file': '/nonexistent/x.env'})
    assert 'cannot read api_key_env_file' in e.value.args[0]['msg']


def test_api_key_file_and_env_file_exclude_each_other(host):
    host([show()], [[]])
    with pytest.raises(FailJson) as e:
        run({'unit': 'x.service', 'api_key_file': '/k', 'api_key_env_file': '/e'})
    assert 'mutually exclusive' in e.value.args[0]['msg']


def test_answers_from_another_server_are_not_healthy(host, api, monkeypatch):
    host([show()], [[PREFIX + 'Load weight begin.']])
    monkeypatch.setattr(proc_net, 'port_owner', lambda port, cg, pid: (False, [999]))
    with pytest.raises(FailJson) as e:
        run({'unit': 'sglang-qwen-ddtree.service', 'base_url': api, 'timeout': 10, 'poll_interval': 0.05})
    result = e.value.args[0]
    assert result['cause'] == 'port_in_use' and result['healthy'] is False
    assert 'PID 999' in result['diagnosis'] and 'loading_weights' in result['diagnosis']
    assert 'ss -ltnp' in result['advice']


# --- slices (slice_s + _resume, driven by the action plugin) and the settle window ----------


def journal_calls(fake):
    return [c for c in fake.commands if c[0] == 'journalctl']


def test_slice_without_verdict_is_pending_with_progress_and_resume(host):
    host([show(restarts=3)], [[PREFIX + 'Load weight begin.', PREFIX + 'Load weight end.', PREFIX + 'Capture cuda graph begin.']])
    with pytest.raises(ExitJson) as e:
        run({'unit': 'sglang-qwen.service', 'base_url': closed_port_url(), 'timeout': 30, 'poll_interval': 0.05, 'slice_s': 0.3})
    result = e.value.args[0]
    assert result['verdict'] == 'pending' and result['healthy'] is False and not result.get('failed')
    assert 0.3 <= result['elapsed_s'] < 3
    assert result['phase'] == 'capturing_cuda_graph'
    assert result['progress'].startswith('sglang-qwen.service: capturing_cuda_graph, ')
    assert '(pid 4242), API not answering yet' in result['progress']
    resume = result['resume']
    assert resume['baseline_restarts'] == 3 and resume['first_pid'] == 4242 and resume['invocation_id'] == INVOCATION
    assert resume['api']['stage'] == 'models' and resume['slices'] == 1
    json.dumps(resume)  # travels through the controller as JSON


def test_resumed_slice_keeps_the_baseline_and_rereads_the_journal(host):
    # slice 1 saw the unit with NRestarts=0; one automatic restart later, a fresh baseline
    # would hide it, the resumed one does not
    fake = host([show(restarts=1)], [[PREFIX + 'Load weight begin.']])
    resume = {'started': 0.0, 'slices': 1, 'invocation_id': INVOCATION, 'baseline_restarts': 0, 'first_pid': 4242, 'api': {'stage': 'models'}, 'healthy': {}}
    with pytest.raises(FailJson) as e:
        run({'unit': 'x.service', 'base_url': closed_port_url(), 'timeout': 1e9, 'poll_interval': 0.05, 'slice_s': 5, '_resume': resume})
    assert e.value.args[0]['cause'] == 'restarted'
    first = journal_calls(fake)[0]
    assert not any(arg.startswith('--after-cursor') for arg in first)  # the invocation from its start


def test_resumed_slice_sees_lines_of_earlier_slices(host):
    # the traceback began in an earlier slice; the exception line arrives in this one
    start = [
        PREFIX + 'Load weight begin.',
        PREFIX + 'Load weight end.',
        'Traceback (most recent call last):',
        '  File "pool_configurator.py", line 211, in configure',
    ]
    pool = ['RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. Current value: mem_fraction_static=0.88']
    host([show()], [start + pool])
    resume = {'started': 0.0, 'slices': 2, 'invocation_id': INVOCATION, 'baseline_restarts': 0, 'first_pid': 4242, 'api': {'stage': 'models'}, 'healthy': {}}
    with pytest.raises(FailJson) as e:
        run({'unit': 'x.service', 'base_url': closed_port_url(), 'timeout': 1e9, 'poll_interval': 0.05, 'slice_s': 5, '_resume': resume})
    result = e.value.args[0]
    assert result['cause'] == 'mem_pool_too_small' and result['phase'] == 'sizing_pools'
    assert result['fatal_lines'][0] == 'Traceback (most recent call last):'
    assert result['elapsed_s'] >= 0  # counted from the first slice's start (monotonic 0.0 here)


def test_new_invocation_between_slices_is_a_restart(host):
    other = 'e' * 32
    fake = host([show().replace(INVOCATION, other)], [[]])
    resume = {'started': 0.0, 'slices': 1, 'invocation_id': INVOCATION, 'baseline_restarts': 0, 'first_pid': 0, 'api': {}, 'healthy': {}}
    with pytest.raises(FailJson) as e:
        run({'unit': 'x.service', 'base_url': closed_port_url(), 'timeout': 1e9, 'slice_s': 5, '_resume': resume})
    result = e.value.args[0]
    assert result['cause'] == 'restarted' and other in result['diagnosis']
    # the journal read is the judged (old) invocation's
    assert '_SYSTEMD_INVOCATION_ID=%s' % INVOCATION in journal_calls(fake)[0]


def test_resumed_probe_goes_on_with_the_generation(host, api):
    Api.models_status = 500  # would never get past /v1/models; an earlier slice already did
    host([show()], [READY])
    resume = {
        'started': 0.0,
        'slices': 1,
        'invocation_id': INVOCATION,
        'baseline_restarts': 0,
        'first_pid': 4242,
        'api': {'stage': 'generate', 'model_id': '/root/models/Qwen3.6-27B', 'generate_failures': 0},
        'healthy': {},
    }
    with pytest.raises(ExitJson) as e:
        run({'unit': 'x.service', 'base_url': api, 'timeout': 1e9, 'poll_interval': 0.05, 'slice_s': 5, '_resume': resume})
    result = e.value.args[0]
    assert result['verdict'] == 'healthy' and result['model_id'] == '/root/models/Qwen3.6-27B'
    assert Api.seen_auth == []  # no GET /v1/models


def test_generation_failures_count_across_slices(host, api):
    Api.generate_statuses = [500]
    host([show()], [READY])
    resume = {
        'started': 0.0,
        'slices': 1,
        'invocation_id': INVOCATION,
        'baseline_restarts': 0,
        'first_pid': 4242,
        'api': {'stage': 'generate', 'model_id': 'm', 'generate_failures': 1},
        'healthy': {},
    }
    with pytest.raises(FailJson) as e:
        run({'unit': 'x.service', 'base_url': api, 'timeout': 1e9, 'poll_interval': 0.05, 'slice_s': 5, '_resume': resume})
    assert e.value.args[0]['cause'] == 'generation_failed' and 'after 2 attempts' in e.value.args[0]['diagnosis']


def test_crash_inside_a_slice_is_decided_at_once(host):
    pool = [
        PREFIX + 'Load weight begin.',
        PREFIX + 'Load weight end.',
        'Traceback (most recent call last):',
        'RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. Current value: mem_fraction_static=0.88',
    ]
    host([show(), show(), show(), show(active='failed', sub='failed', pid=0, code=1, status=1, result='exit-code')], [[], [], pool])
    with pytest.raises(FailJson) as e:
        run({'unit': 'x.service', 'base_url': closed_port_url(), 'timeout': 30, 'poll_interval': 0.05, 'slice_s': 5})
    result = e.value.args[0]
    assert result['cause'] == 'mem_pool_too_small' and result['elapsed_s'] < 2


def test_settle_window_passes(host, api):
    host([show()], [READY])
    with pytest.raises(ExitJson) as e:
        run({'unit': 'x.service', 'base_url': api, 'timeout': 10, 'poll_interval': 0.05, 'settle_s': 0.5})
    result = e.value.args[0]
    assert result['verdict'] == 'healthy' and result['settled_s'] >= 0.5
    assert result['time_to_healthy_s'] is not None and result['generation_text'] == ' Paris.'


def test_no_settle_window_by_default(host, api):
    host([show()], [READY])
    with pytest.raises(ExitJson) as e:
        run({'unit': 'x.service', 'base_url': api, 'timeout': 10, 'poll_interval': 0.05})
    assert e.value.args[0]['settled_s'] < 0.3


def test_death_inside_the_settle_window_fails(host, api):
    crash = [
        PREFIX + 'Scheduler hit an exception: Traceback (most recent call last):',
        'RuntimeError: CUDA error: an illegal memory access was encountered',
        '[2026-11-29 09:00:12] Received sigquit from a child process. It usually means the child failed.',
    ]
    # ten quiet polls after READY (the generation answers meanwhile), then the crash
    host([show()] * 14 + [show(active='activating', sub='auto-restart', pid=0, code=2, status=9, result='signal')], [READY] + [[]] * 10 + [crash])
    with pytest.raises(FailJson) as e:
        run({'unit': 'x.service', 'base_url': api, 'timeout': 10, 'poll_interval': 0.05, 'settle_s': 30})
    result = e.value.args[0]
    assert result['verdict'] == 'failed' and result['healthy'] is False
    assert result['cause'] == 'cuda_illegal_memory_access'
    assert 'settle window' in result['diagnosis']
    assert 0 < result['settled_s'] < 5
    assert result['generation_text'] == ' Paris.'  # what it had answered before it died
    assert result['fatal_lines'][-1].endswith('It usually means the child failed.')


def test_settle_window_goes_on_in_the_next_slice(host, api):
    host([show()], [READY])
    with pytest.raises(ExitJson) as e:
        run({'unit': 'x.service', 'base_url': api, 'timeout': 10, 'poll_interval': 0.05, 'settle_s': 30, 'slice_s': 0.3})
    first = e.value.args[0]
    assert first['verdict'] == 'pending' and 'settling' in first['progress']
    assert first['resume']['healthy']['model_id'] == '/root/models/Qwen3.6-27B'
    resume = dict(first['resume'])
    resume['healthy'] = dict(resume['healthy'], at=resume['healthy']['at'] - 30)  # the window has passed
    host([show()], [READY])
    with pytest.raises(ExitJson) as e:
        # no HTTP in a settle slice: the closed port does not matter
        run({'unit': 'x.service', 'base_url': closed_port_url(), 'timeout': 10, 'poll_interval': 0.05, 'settle_s': 30, 'slice_s': 0.3, '_resume': resume})
    result = e.value.args[0]
    assert result['verdict'] == 'healthy' and result['settled_s'] >= 30
    assert result['model_id'] == '/root/models/Qwen3.6-27B' and result['generation_text'] == ' Paris.'
    assert result['time_to_healthy_s'] == first['resume']['healthy']['time_to_healthy_s']


@pytest.mark.parametrize('name', ['slice_s', 'settle_s'])
def test_negative_seconds_are_refused(host, name):
    host([show()], [[]])
    with pytest.raises(FailJson) as e:
        run({'unit': 'x.service', name: -1})
    assert name in e.value.args[0]['msg']


class HealthOnly(BaseHTTPRequestHandler):
    """A node of a multi-node SGLang with node_rank > 0: SGLang's dummy health server only."""

    paths = []

    def log_message(self, *args):
        pass

    def do_GET(self):
        HealthOnly.paths.append(self.path)
        self.send_response(200 if self.path in ('/health', '/health_generate', '/ping') else 404)
        self.send_header('Content-Length', '0')
        self.end_headers()

    do_POST = do_GET


def test_health_check_for_a_node_without_the_api(host):
    HealthOnly.paths = []
    server = HTTPServer(('127.0.0.1', 0), HealthOnly)
    thread = threading.Thread(target=server.serve_forever)
    thread.daemon = True
    thread.start()
    try:
        host([show()], [READY[:4]])
        with pytest.raises(ExitJson) as e:
            run(
                {
                    'unit': 'sglang-qwen.service',
                    'base_url': 'http://127.0.0.1:%d' % server.server_address[1],
                    'timeout': 10,
                    'poll_interval': 0.05,
                    'api_check': 'health',
                }
            )
    finally:
        server.shutdown()
        server.server_close()
    result = e.value.args[0]
    assert result['healthy'] is True and result['verdict'] == 'healthy'
    assert result['model_id'] == '' and result['generation_text'] == ''
    assert set(HealthOnly.paths) == {'/health'}
