# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The readers of module sglang_host_facts, on files in a temporary directory and canned commands."""

from __future__ import annotations

import hashlib
import json
import os
import pwd

from ansible_collections.ddtree.sglang.plugins.module_utils import host_facts

CSV = (
    '0, NVIDIA RTX A6000, GPU-bd272f1a-08c5-5163-af85-026ab8815bae, 49140, 580.95.05, 8.6\n'
    '1, NVIDIA RTX A6000, GPU-82a5e7c3-d04a-5cb1-aab2-0bc0efa8622e, 49140, 580.95.05, 8.6\n'
)
Q = 'Driver Version : 580.95.05\nCUDA Version : 13.0\nSimulation : SIMULATED\n'


def runner(answers):
    calls = []

    def run(argv):
        calls.append(argv)
        for prefix, answer in answers:
            if argv[: len(prefix)] == prefix:
                return answer
        raise AssertionError('unexpected command %r' % (argv,))

    run.calls = calls
    return run


def test_gpus_as_gpu_facts_returns_them():
    run = runner([(['/usr/bin/nvidia-smi', '-q'], (0, Q, '')), (['/usr/bin/nvidia-smi'], (0, CSV, ''))])
    facts, error = host_facts.read_gpus(run, '/usr/bin/nvidia-smi')
    assert error is None
    assert facts['count'] == 2 and facts['gpu_classes'] == ['NVIDIA RTX A6000']
    assert facts['driver_version'] == '580.95.05' and facts['cuda_version'] == '13.0' and facts['simulated'] is True
    assert facts['gpus'][1] == {
        'index': 1,
        'name': 'NVIDIA RTX A6000',
        'uuid': 'GPU-82a5e7c3-d04a-5cb1-aab2-0bc0efa8622e',
        'memory_total_mib': 49140,
        'compute_cap': '8.6',
        'minor_number': None,
        'device_node': '/dev/nvidia1',
    }


def test_no_nvidia_smi_and_no_driver_are_reported_not_raised():
    assert 'nvidia-smi not found on this host' in host_facts.read_gpus(runner([]), None)[1]
    run = runner([(['nvidia-smi'], (9, '', "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver"))])
    facts, error = host_facts.read_gpus(run, 'nvidia-smi')
    assert facts is None and error.startswith('nvidia-smi --query-gpu failed (rc=9): NVIDIA-SMI has failed')


def test_an_old_driver_is_asked_again_without_compute_cap():
    old = '0, Tesla V100, GPU-1, 16160, 470.1\n'
    answers = [
        (['nvidia-smi', '-q'], (0, '', '')),
        (['nvidia-smi', '--query-gpu=index,name,uuid,memory.total,driver_version,compute_cap'], (2, 'Field "compute_cap" is not a valid field to query.', '')),
        (['nvidia-smi'], (0, old, '')),
    ]
    run = runner(answers)
    facts, error = host_facts.read_gpus(run, 'nvidia-smi')
    assert error is None and facts['gpus'][0]['compute_cap'] is None and facts['driver_version'] == '470.1'


def test_model_dirs(tmp_path):
    model = tmp_path / 'model'
    model.mkdir()
    (model / 'config.json').write_text(json.dumps({'num_parameters': 27e9}))
    checkpoint = tmp_path / 'checkpoint'
    checkpoint.mkdir()
    (checkpoint / 'config.json').write_text('{"hidden_size": 8}')
    (checkpoint / 'a.safetensors').write_bytes(b'x' * 10)
    (checkpoint / 'b.safetensors').write_bytes(b'x' * 5)
    (checkpoint / 'notes.txt').write_bytes(b'x' * 100)
    broken = tmp_path / 'broken'
    broken.mkdir()
    (broken / 'config.json').write_text('{')
    assert host_facts.model_dir_facts(str(model)) == {'isdir': True, 'config': {'num_parameters': 27e9}}
    assert host_facts.model_dir_facts(str(checkpoint)) == {'isdir': True, 'config': {'hidden_size': 8}, 'safetensors_bytes': 15}
    assert 'is not JSON' in host_facts.model_dir_facts(str(broken))['error']
    missing = host_facts.model_dir_facts(str(tmp_path / 'nowhere'))
    assert missing['isdir'] is False and missing['error'].endswith('config.json: No such file or directory')


def test_a_fifo_or_a_huge_file_planted_as_config_json_is_neither_waited_on_nor_read(tmp_path):
    # root reads config.json: a FIFO would hang the host read (open blocks until a writer comes)
    fifo = tmp_path / 'fifo-model'
    fifo.mkdir()
    os.mkfifo(str(fifo / 'config.json'))
    assert host_facts.model_dir_facts(str(fifo)) == {'isdir': True, 'error': '%s: not a regular file' % (fifo / 'config.json')}
    # a link to a regular file is read (the Hub cache links snapshots to blobs)
    linked = tmp_path / 'linked'
    linked.mkdir()
    (tmp_path / 'blob').write_text('{"num_parameters": 1}')
    os.symlink(str(tmp_path / 'blob'), str(linked / 'config.json'))
    assert host_facts.model_dir_facts(str(linked)) == {'isdir': True, 'config': {'num_parameters': 1}}
    huge = tmp_path / 'huge'
    huge.mkdir()
    with open(str(huge / 'config.json'), 'wb') as handle:
        handle.truncate(host_facts.CONFIG_MAX_BYTES + 1)
    assert host_facts.model_dir_facts(str(huge))['error'] == '%s: larger than %d bytes' % (huge / 'config.json', host_facts.CONFIG_MAX_BYTES)


def test_paths_and_sha256(tmp_path):
    script = tmp_path / 'python'
    script.write_text('#!/bin/sh\n')
    os.chmod(str(script), 0o755)
    assert host_facts.path_facts(str(script))['executable'] is True
    assert host_facts.path_facts(str(script))['mode'] == '0755'
    assert host_facts.path_facts(str(tmp_path))['executable'] is False
    assert host_facts.path_facts(str(tmp_path / 'no'))['exists'] is False
    assert host_facts.sha256_of(str(script)) == hashlib.sha256(b'#!/bin/sh\n').hexdigest()
    assert host_facts.sha256_of(str(tmp_path / 'no')) is None


def test_releases(tmp_path):
    releases = tmp_path / 'releases'
    done = releases / 'abcdef0123456789'
    done.mkdir(parents=True)
    (done / 'ddtree-release.json').write_text('{"id": "abcdef0123456789"}')
    (releases / '0123456789abcdef').mkdir()
    (releases / 'not-a-release').mkdir()
    os.symlink('releases/abcdef0123456789', str(tmp_path / 'current'))
    assert host_facts.release_facts(str(tmp_path)) == {
        'current': 'abcdef0123456789',
        'releases': {'abcdef0123456789': {'complete': True, 'manifest': {'id': 'abcdef0123456789'}}, '0123456789abcdef': {'complete': False, 'manifest': None}},
    }
    assert host_facts.release_facts(str(tmp_path / 'none')) == {'current': None, 'releases': {}}


def test_users_and_groups():
    found = host_facts.user_facts('root', ['root', 'no-such-group-xyz'])
    assert found['exists'] is True and found['group'] == 'root' and found['groups_existing'] == ['root']
    assert found['home'] == pwd.getpwnam('root').pw_dir and isinstance(found['groups'], list)
    assert host_facts.user_facts('no-such-user-xyz', [])['exists'] is False
    assert found['uid'] == 0 and found['comment'] == pwd.getpwnam('root').pw_gecos


def test_the_confirmation_record_is_read_with_the_unit(tmp_path):
    unit = tmp_path / 'sglang-qwen.service'
    unit.write_text('[Service]\n')
    record = tmp_path / 'sglang-qwen.service.json'

    def run(argv):
        return 1, '', 'not in a test'

    assert host_facts.unit_facts(run, '', str(unit), str(record))['confirmed'] is None
    record.write_text(json.dumps({'sha256': hashlib.sha256(b'[Service]\n').hexdigest(), 'release': 'abcdef0123456789'}))
    found = host_facts.unit_facts(run, '', str(unit), str(record))
    assert found['confirmed']['sha256'] == found['sha256'] and found['confirmed']['release'] == 'abcdef0123456789'
    record.write_text('not json')
    assert host_facts.unit_facts(run, '', str(unit), str(record))['confirmed'] is None
    assert 'confirmed' not in host_facts.unit_facts(run, '', str(unit))


def test_what_the_user_cannot_use_is_worded_as_the_role_words_it():
    run = runner(
        [
            (host_facts.user_access_argv('sglang', ['test', '-r', '/srv/a']), (1, '', '')),
            (host_facts.user_access_argv('sglang', ['test', '-r', '/srv/b']), (0, '', '')),
            (host_facts.user_access_argv('sglang', ['/opt/py']), (126, '', '/opt/py: Permission denied\n')),
        ]
    )
    assert host_facts.user_access(run, 'sglang', ['/srv/a', '/srv/b'], '/opt/py') == ['/srv/a', '/opt/py (/opt/py: Permission denied)']
    assert run.calls[0] == ['setpriv', '--reuid', 'sglang', '--regid', 'sglang', '--init-groups', '--', 'test', '-r', '/srv/a', '-a', '-x', '/srv/a']


def test_interpreter_version():
    assert host_facts.interpreter_version(runner([(['/usr/bin/python3'], (0, '3.11.2 x86_64\n', ''))]), '/usr/bin/python3') == ('3.11.2 x86_64', None)

    def missing(argv):
        raise OSError(2, 'No such file or directory')

    version, error = host_facts.interpreter_version(missing, '/usr/bin/python2.7')
    assert version is None and 'No such file or directory' in error


def _proc(tmp_path, listeners, pids):
    """A /proc with net/tcp listing ``listeners`` (port: inode) and ``pids`` (pid: (comm, [inodes], cgroup))."""
    net = tmp_path / 'net'
    net.mkdir()
    lines = ['  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode']
    for n, (port, inode) in enumerate(sorted(listeners.items())):
        lines.append('   %d: 0100007F:%04X 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 %s 1' % (n, port, inode))
    (net / 'tcp').write_text('\n'.join(lines) + '\n')
    for pid, (comm, inodes, cgroup) in pids.items():
        base = tmp_path / str(pid)
        (base / 'fd').mkdir(parents=True)
        (base / 'comm').write_text(comm + '\n')
        (base / 'cgroup').write_text(cgroup)
        for fd, inode in enumerate(inodes):
            os.symlink('socket:[%s]' % inode, str(base / 'fd' / str(fd)))
    return str(tmp_path)


def test_port_held_by_another_process(tmp_path):
    proc = _proc(
        tmp_path,
        {30000: '555'},
        {7: ('python3', ['555'], '0::/system.slice/bad-input-squatter.service\n'), 9: ('sglang', ['1'], '0::/system.slice/sglang-qwen.service\n')},
    )
    found = host_facts.port_check(30000, {9}, 'sglang-qwen.service', proc)
    assert found['in_use'] is True
    assert found['msg'] == 'PID 7 (python3, bad-input-squatter.service) listens on port 30000, not sglang-qwen.service'


def test_port_held_by_the_unit_or_free(tmp_path):
    proc = _proc(tmp_path, {30000: '555'}, {9: ('sglang', ['555'], '0::/system.slice/sglang-qwen.service\n')})
    found = host_facts.port_check(30000, {9}, 'sglang-qwen.service', proc)
    assert (found['in_use'], found['unit_holds'], found['msg']) == (False, True, 'sglang-qwen.service holds port 30000')
    assert host_facts.port_check(30001, {9}, 'sglang-qwen.service', proc)['msg'] == 'nothing listens on port 30001'


def test_interpreter_facts_read_the_version_line_and_whether_a_venv_can_be_made():
    run = runner([(['/usr/bin/python3'], (0, '3.11.2 x86_64\nvenv\n', ''))])
    assert host_facts.interpreter_facts(run, '/usr/bin/python3') == ('3.11.2 x86_64', None, True)
    run = runner([(['/usr/bin/python3'], (0, '3.11.2 x86_64\nno-venv\n', ''))])
    assert host_facts.interpreter_facts(run, '/usr/bin/python3') == ('3.11.2 x86_64', None, False)
    # the release id's input stays the version line alone
    assert host_facts.interpreter_version(run, '/usr/bin/python3') == ('3.11.2 x86_64', None)
