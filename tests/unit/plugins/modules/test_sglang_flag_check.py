# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The flag check: masking, the probe's answer, the message, and the probe itself against a
stand-in SGLang whose parser works like 0.5.23's (prepare_server_args + a record resolved later).
The real SGLang is asked in lab/tests/test_sglang_flag_check.py."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from ansible.module_utils.testing import patch_module_args

from ansible_collections.ddtree.sglang.tests.unit.plugins.modules.utils import ExitJson, FailJson, exits  # noqa: F401 pylint: disable=unused-import

from ansible_collections.ddtree.sglang.plugins.module_utils import flag_check as fcu
from ansible_collections.ddtree.sglang.plugins.module_utils import sglang_args
from ansible_collections.ddtree.sglang.plugins.modules import sglang_flag_check as fc

SECRET = 'sk-live-5f0c2a9e7b3d'
ADMIN = 'adm-91c4e07d2b'

# Deliberately small: only the shapes of SGLang the probe relies on (argparse parser built by
# ServerArgs.add_cli_args, prepare_server_args with basicConfig(force=True), a deprecated flag
# that logs a warning, SpeculativeAlgorithm.from_string raising ValueError).
FAKE_SERVER_ARGS = '''
import argparse
import logging
import warnings

logger = logging.getLogger(__name__)


class Deprecated(argparse.Action):
    def __init__(self, option_strings, dest, nargs=0, **kwargs):
        super().__init__(option_strings, dest, nargs=0, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        logger.warning("\\033[1;33m'%s' is deprecated and will be removed in a future release.\\033[0m" % option_string)
        setattr(namespace, self.dest, True)


class ServerArgs:
    def __init__(self, **kwargs):
        self.__dict__.update(kwargs)

    def resolve_once(self):
        raise RuntimeError("a flag check must never resolve (needs GPUs and the model)")

    @staticmethod
    def add_cli_args(parser):
        parser.add_argument("--model-path", "--model", required=True)
        parser.add_argument("--tp-size", "--tensor-parallel-size", type=int, default=1)
        parser.add_argument("--mem-fraction-static", type=float)
        parser.add_argument("--context-length", type=int)
        parser.add_argument("--load-format", choices=["auto", "pt"], default="auto")
        parser.add_argument("--speculative-algorithm")
        parser.add_argument("--speculative-ddtree-budget", type=int)
        parser.add_argument("--api-key")
        parser.add_argument("--admin-api-key")
        parser.add_argument("--log-level", default="info")
        parser.add_argument("--disable-cuda-graph", action=Deprecated)
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=30000)


def prepare_server_args(argv):
    parser = argparse.ArgumentParser(prog="sglang serve")
    ServerArgs.add_cli_args(parser)
    raw = parser.parse_args(argv)
    logging.basicConfig(level=getattr(logging, raw.log_level.upper()), force=True)
    if raw.api_key:
        logger.warning("an API key is set: %s", raw.api_key)
    if raw.context_length and raw.context_length > 65536:
        warnings.warn("context_length %d is beyond what this stand-in was tested with" % raw.context_length)
    return ServerArgs(**vars(raw))
'''

FAKE_SPEC_INFO = '''
import warnings
warnings.warn("importing torch is noisy", UserWarning)


class SpeculativeAlgorithm:
    KNOWN = ("EAGLE", "DFLASH", "DDTREE")

    @classmethod
    def from_string(cls, name):
        if name.upper() not in cls.KNOWN:
            raise ValueError("Unknown speculative algorithm name: %s" % name)
        return name.upper()
'''


@pytest.fixture
def fake_sglang(tmp_path):
    """A stand-in sglang package on PYTHONPATH, no distribution metadata (version from sglang.version)."""
    files = {
        'sglang/__init__.py': '',
        'sglang/version.py': '__version__ = "0.5.23"\n',
        'sglang/srt/__init__.py': '',
        'sglang/srt/server_args.py': FAKE_SERVER_ARGS,
        'sglang/srt/speculative/__init__.py': '',
        'sglang/srt/speculative/spec_info.py': FAKE_SPEC_INFO,
    }
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return {'PYTHONPATH': str(tmp_path)}


@pytest.fixture
def fake_python(fake_sglang, tmp_path):
    """An interpreter that finds the stand-in sglang by itself, as a release's finds its own: the module leaves the
    unit's PYTHONPATH out of root's probe."""
    script = tmp_path / 'release-python'
    script.write_text('#!/bin/sh\nPYTHONPATH=%s exec %s "$@"\n' % (fake_sglang['PYTHONPATH'], sys.executable))
    script.chmod(0o755)
    return str(script)


TIMEOUT = shutil.which('timeout')


def run(args, data, cwd, environ_update):
    """What AnsibleModule.run_command does for the probe, without a module."""
    done = subprocess.run(args, input=data, cwd=cwd, env=dict(os.environ, **environ_update), capture_output=True, text=True, check=False)
    return done.returncode, done.stdout, done.stderr


def probe(env, *argv):
    return fcu.run_probe(run, TIMEOUT, sys.executable, list(argv), environment=env, timeout=60)


# --- pure parts ------------------------------------------------------------------------------


def test_mask_argv_hides_secret_values_in_both_spellings():
    argv = [
        '--model-path',
        '/m',
        '--api-key',
        SECRET,
        '--admin-api-key=' + ADMIN,
        '--tp-size',
        '2',
        '--ssl-keyfile-password',
        'pw',
        '--hf-token',
        'hf_x',
        '--max-total-tokens',
        '4096',
        '--api-k',
        'abbrev',
    ]
    masked = fcu.mask_argv(argv)
    assert masked == [
        '--model-path',
        '/m',
        '--api-key',
        fcu.MASK,
        '--admin-api-key=' + fcu.MASK,
        '--tp-size',
        '2',
        '--ssl-keyfile-password',
        fcu.MASK,
        '--hf-token',
        fcu.MASK,
        '--max-total-tokens',
        '4096',
        '--api-k',
        fcu.MASK,
    ]
    assert fcu.secret_values(argv) == [SECRET, ADMIN, 'pw', 'hf_x', 'abbrev']


def test_secret_flag_at_the_end_has_no_value():
    assert fcu.mask_argv(['--api-key']) == ['--api-key'] and fcu.secret_values(['--api-key']) == []


def test_secret_flags_are_words_not_substrings():
    for flag in ('--max-total-tokens', '--tokenizer-path', '--ssl-keyfile', '--ssl-keyfile=/k.pem', '--a', 'api-key'):
        assert not sglang_args.is_secret_flag(flag), flag
    # argparse takes a unique prefix of --api-key as --api-key
    for flag in ('--api-key', '--watermark-config', '--hf-token', '--db-password', '--client-secret-file', '--admin-api', '--api'):
        assert sglang_args.is_secret_flag(flag), flag


def test_scrub_reaches_nested_strings():
    value = {'error': 'unrecognized arguments: --api-keys ' + SECRET, 'list': [SECRET + '!'], 'n': 3, 'b': None}
    assert fcu.scrub(value, [SECRET]) == {'error': 'unrecognized arguments: --api-keys ' + fcu.MASK, 'list': [fcu.MASK + '!'], 'n': 3, 'b': None}


def test_parse_probe_output_takes_the_last_marked_line():
    answer = {'valid': True, 'unknown_flags': []}
    out = 'noise\n%s{"valid": false}\nmore noise\n%s%s\n' % (fcu.RESULT_MARK, fcu.RESULT_MARK, json.dumps(answer))
    assert fcu.parse_probe_output(out) == answer


@pytest.mark.parametrize('out', ['', 'Traceback (most recent call last):\n', fcu.RESULT_MARK + '{not json', fcu.RESULT_MARK + '[1, 2]'])
def test_parse_probe_output_refuses_what_is_no_answer(out):
    with pytest.raises(fcu.ProbeError):
        fcu.parse_probe_output(out)


def test_release_of():
    assert fcu.release_of('/opt/ddtree/ml-env/releases/abc/bin/python') == '/opt/ddtree/ml-env/releases/abc'
    assert fcu.release_of('/opt/x/bin/python', '/opt/ddtree/ml-env/releases/abc') == '/opt/ddtree/ml-env/releases/abc'
    assert fcu.release_of('/usr/local/python3') == '/usr/local'


def test_message_for_unknown_ddtree_flags():
    result = {
        'sglang_version': '0.5.23',
        'unknown_flags': ['--speculative-ddtree-budget'],
        'error': 'sglang serve: error: unrecognized arguments: --speculative-ddtree-budget 8',
    }
    msg = fcu.build_message(result, '/opt/ddtree/ml-env/releases/3f9a')
    assert msg.startswith(
        'The installed sglang 0.5.23 in /opt/ddtree/ml-env/releases/3f9a does not know '
        '--speculative-ddtree-budget: sglang serve: error: unrecognized arguments: --speculative-ddtree-budget 8'
    )
    assert 'lacks the DDTree patch' in msg and msg.endswith('(refused before the service was touched)')


def test_message_for_a_bad_value_names_the_flag():
    result = {
        'sglang_version': '0.5.23',
        'unknown_flags': [],
        'error': "sglang serve: error: argument --tp-size/--tensor-parallel-size: invalid int value: 'two'",
    }
    msg = fcu.build_message(result, '/r')
    assert msg.startswith("The installed sglang 0.5.23 in /r refuses --tp-size: sglang serve: error: argument")
    assert 'DDTree' not in msg


def test_message_for_an_unknown_algorithm_and_for_both_kinds():
    algo = {
        'sglang_version': '0.5.23',
        'unknown_flags': [],
        'error': 'Unknown speculative algorithm name: DDTREE',
        'error_flag': '--speculative-algorithm',
        'error_value': 'DDTREE',
    }
    assert fcu.build_message(algo, '/r').startswith(
        'The installed sglang 0.5.23 in /r refuses --speculative-algorithm DDTREE: Unknown speculative algorithm name: DDTREE; '
        'this build lacks the DDTree patch'
    )
    both = {'sglang_version': None, 'unknown_flags': ['--foo'], 'error': "sglang serve: error: argument --load-format: invalid choice: 'x'"}
    assert fcu.build_message(both, '/r').startswith(
        "The installed sglang (version unknown) in /r does not know --foo and refuses --load-format: sglang serve: error:"
    )


def test_error_flag_of():
    assert fcu.error_flag_of('sglang serve: error: argument --tp-size/--tensor-parallel-size: invalid int value') == '--tp-size'
    assert fcu.error_flag_of('sglang serve: error: unrecognized arguments: --x') is None
    assert fcu.error_flag_of(None) is None


# --- the probe, run by this interpreter against the stand-in --------------------------------


def test_probe_accepts_known_flags_and_reports_values(fake_sglang):
    answer = probe(
        fake_sglang,
        '--model-path',
        '/m',
        '--tp-size',
        '2',
        '--speculative-algorithm',
        'DDTREE',
        '--speculative-ddtree-budget',
        '16',
        '--context-length',
        '32768',
    )
    assert answer['valid'] is True and answer['error'] is None and answer['unknown_flags'] == []
    assert answer['sglang_version'] == '0.5.23'
    assert answer['checks'] == ['argparse', 'server_args', 'speculative_algorithm']
    assert answer['server_args']['tp_size'] == 2 and answer['server_args']['speculative_ddtree_budget'] == 16
    assert answer['server_args']['mem_fraction_static'] is None
    # the import of spec_info warns; that is about the environment, not the flags
    assert answer['warnings'] == []


def test_probe_reports_every_unknown_flag(fake_sglang):
    answer = probe(fake_sglang, '--model-path', '/m', '--speculative-ddtree-shadow-linear', '--bogus=1', '--tp', '2')
    assert answer['valid'] is False
    assert answer['unknown_flags'] == ['--speculative-ddtree-shadow-linear', '--bogus']
    assert answer['error'] == 'sglang serve: error: unrecognized arguments: --speculative-ddtree-shadow-linear --bogus=1'


def test_probe_lists_unknown_flags_even_when_another_error_comes_first(fake_sglang):
    answer = probe(fake_sglang, '--model-path', '/m', '--load-format', 'npcache', '--nope')
    assert answer['unknown_flags'] == ['--nope']
    assert "argument --load-format: invalid choice: 'npcache'" in answer['error']


def test_probe_refuses_a_bad_type_and_a_missing_required_flag(fake_sglang):
    assert "invalid int value: 'two'" in probe(fake_sglang, '--model-path', '/m', '--tp-size', 'two')['error']
    assert 'the following arguments are required: --model-path' in probe(fake_sglang, '--tp-size', '2')['error']


def test_probe_refuses_an_unknown_algorithm(fake_sglang):
    answer = probe(fake_sglang, '--model-path', '/m', '--speculative-algorithm', 'NOPE')
    assert answer['valid'] is False and answer['error'] == 'Unknown speculative algorithm name: NOPE'
    assert answer['error_flag'] == '--speculative-algorithm' and answer['error_value'] == 'NOPE'


def test_probe_captures_warnings_of_parsing(fake_sglang):
    answer = probe(fake_sglang, '--model-path', '/m', '--disable-cuda-graph', '--context-length', '131072')
    assert answer['valid'] is True
    # logged before prepare_server_args' basicConfig(force=True), warned after it; ANSI colours gone
    assert answer['warnings'] == [
        "'--disable-cuda-graph' is deprecated and will be removed in a future release.",
        'UserWarning: context_length 131072 is beyond what this stand-in was tested with',
    ]


def test_probe_never_answers_with_a_secret(fake_sglang):
    answer = probe(fake_sglang, '--model-path', '/m', '--api-key', SECRET, '--admin-api-key=' + ADMIN)
    text = json.dumps(answer)
    assert SECRET not in text and ADMIN not in text
    assert answer['warnings'] == ['an API key is set: ' + fcu.MASK]
    answer = probe(fake_sglang, '--model-path', '/m', '--api-keys', 'typo', '--api-key', SECRET)
    assert SECRET not in json.dumps(answer)


def test_probe_keeps_secrets_off_its_command_line(fake_sglang):
    seen = []

    def spy(args, data, cwd, environ_update):
        seen.append((args, data, cwd))
        return run(args, data, cwd, environ_update)

    fcu.run_probe(spy, TIMEOUT, sys.executable, ['--model-path', '/m', '--api-key', SECRET], environment=fake_sglang)
    ((args, data, cwd),) = seen
    assert SECRET not in ' '.join(args) and SECRET in data
    assert args[:3] == [TIMEOUT, '--kill-after=10', '180'] and args[3:5] == [sys.executable, '-c']
    # a private working directory, gone afterwards: no stray sglang/ in the cwd shadows the release's
    assert not os.path.exists(cwd)


def test_probe_without_sglang_says_so(tmp_path):
    answer = fcu.run_probe(run, TIMEOUT, sys.executable, ['--model-path', '/m'], module='no_such_sglang.server_args', timeout=60)
    assert answer['probe_error'].startswith("cannot import no_such_sglang.server_args: ModuleNotFoundError")


def test_probe_that_does_not_answer(tmp_path):
    script = tmp_path / 'python'
    script.write_text('#!/bin/sh\necho "Traceback: boom" >&2\nexit 3\n')
    script.chmod(0o755)
    with pytest.raises(fcu.ProbeError, match=r'no answer \(exit status 3\): Traceback: boom'):
        fcu.run_probe(run, TIMEOUT, str(script), ['--model-path', '/m'], timeout=30)


def test_probe_timeout(tmp_path):
    script = tmp_path / 'python'
    script.write_text('#!/bin/sh\nexec sleep 30\n')
    script.chmod(0o755)
    with pytest.raises(fcu.ProbeError, match='no answer within 1 s'):
        fcu.run_probe(run, TIMEOUT, str(script), ['--model-path', '/m'], timeout=1)


# --- the module ------------------------------------------------------------------------------


def _module(args):
    with patch_module_args(args):
        fc.main()


def test_module_fails_naming_flag_version_and_release(fake_python):
    args = {'python': fake_python, 'argv': ['--model-path', '/m', '--speculative-ddtree-shadow-linear', '--api-key', SECRET], 'env': {'SGLANG_TEST': '1'}}
    with pytest.raises(FailJson) as e:
        _module(args)
    result = e.value.args[0]
    assert result['msg'].startswith('The installed sglang 0.5.23 in %s does not know --speculative-ddtree-shadow-linear: ' % sys.prefix)
    assert result['msg'].endswith('(refused before the service was touched)')
    assert result['valid'] is False and result['unknown_flags'] == ['--speculative-ddtree-shadow-linear']
    assert result['release_path'] == sys.prefix and result['changed'] is False
    assert result['argv'][-2:] == ['--api-key', fcu.MASK]
    assert SECRET not in json.dumps(result)
    assert result['invocation']['module_args']['env'] == 'VALUE_SPECIFIED_IN_NO_LOG_PARAMETER'


def test_module_returns_without_failing_when_asked(fake_python):
    args = {'python': fake_python, 'argv': ['--model-path', '/m', '--speculative-algorithm', 'NOPE'], 'fail_on_invalid': False}
    with pytest.raises(ExitJson) as e:
        _module(args)
    result = e.value.args[0]
    assert result['valid'] is False and result['error_flag'] == '--speculative-algorithm'


def test_module_passes_and_warns(fake_python):
    args = {
        'python': fake_python,
        'argv': ['--model-path', '/m', '--disable-cuda-graph'],
        'env': {'LD_PRELOAD': '/srv/models/evil.so', 'PYTHONSTARTUP': '/srv/models/evil.py', 'SGLANG_TEST': '1'},
    }
    with pytest.raises(ExitJson) as e:
        _module(args)
    result = e.value.args[0]
    assert result['env_left_out'] == ['LD_PRELOAD', 'PYTHONSTARTUP']
    assert result['valid'] is True and result['sglang_version'] == '0.5.23'
    assert result['sglang_warnings'] == ["'--disable-cuda-graph' is deprecated and will be removed in a future release."]
    assert result['server_args']['model_path'] == '/m'


def test_module_without_interpreter(tmp_path):
    python = str(tmp_path / 'releases' / 'abc' / 'bin' / 'python')
    with pytest.raises(FailJson) as e:
        _module({'python': python, 'argv': ['--model-path', '/m']})
    assert e.value.args[0]['msg'] == (
        'No interpreter at %s, so the flags cannot be checked: is the release %s built?' % (python, os.path.dirname(os.path.dirname(python)))
    )
    with pytest.raises(ExitJson) as e:
        _module({'python': python, 'argv': ['--model-path', '/m'], '_ansible_check_mode': True})
    assert e.value.args[0]['skipped'] is True


def test_module_without_sglang_fails_even_when_told_not_to(tmp_path):
    args = {'python': sys.executable, 'argv': ['--model-path', '/m'], 'module': 'no_such_sglang.server_args', 'fail_on_invalid': False}
    with pytest.raises(FailJson) as e:
        _module(args)
    assert e.value.args[0]['msg'].startswith("Cannot ask the sglang of %s about the unit's flags: cannot import" % sys.prefix)


def test_one_list_names_the_secret_args_of_sglang_and_the_router():
    args = {
        'api_key': 'a',
        'admin_api_key': 'b',
        'ssl_keyfile_password': 'c',
        'control_plane_api_keys': 'd',
        'ssl_keyfile': '/k.pem',
        'max_total_tokens': 8,
        'tokenizer_path': '/t',
        'retry_max_retries': 3,
    }
    assert sglang_args.secret_arg_names(args) == ['admin_api_key', 'api_key', 'control_plane_api_keys', 'ssl_keyfile_password']
    assert sglang_args.secret_arg_names(['api_key']) == []


def test_scrub_masks_secret_flag_values_written_in_text():
    text = "launch_server --api-key k1 --ssl-keyfile /k.pem --admin-api-key='k 2' --control-plane-api-keys=k3 --max-total-tokens 4096"
    assert fcu.scrub_text(text) == (
        "launch_server --api-key ******** --ssl-keyfile /k.pem --admin-api-key=******** --control-plane-api-keys=******** --max-total-tokens 4096"
    )
    assert fcu.scrub({'d': [text]}, [])['d'][0] == fcu.scrub_text(text)


def test_every_value_of_a_secret_flag_that_takes_several_is_masked():
    # the router's --api-keys and --control-plane-api-keys take several keys: each is a secret
    argv = ['--control-plane-api-keys', 'k1', 'k2', '--port', '30000', '--api-key', 's1', 'x', '--api-keys=k3']
    assert fcu.mask_argv(argv) == ['--control-plane-api-keys', fcu.MASK, fcu.MASK, '--port', '30000', '--api-key', fcu.MASK, 'x', '--api-keys=' + fcu.MASK]
    assert fcu.secret_values(argv) == ['k1', 'k2', 's1', 'k3']
    text = 'router ran with --control-plane-api-keys k1 k2 k3 --port 30000 --api-key s1 then failed'
    assert fcu.scrub_text(text) == ('router ran with --control-plane-api-keys %s %s %s --port 30000 --api-key %s then failed' % ((fcu.MASK,) * 4))


def test_module_keeps_the_units_pythonpath_out_of_roots_probe(fake_sglang):
    # the unit's PYTHONPATH names code root would import: left out, the probe finds no sglang there
    args = {'python': sys.executable, 'argv': ['--model-path', '/m'], 'env': fake_sglang}
    with pytest.raises(FailJson) as e:
        _module(args)
    assert "cannot import sglang.srt.server_args: ModuleNotFoundError" in e.value.args[0]['msg']
