# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The probe programs' functions, called in this interpreter (the modules' tests run them whole,
in a subprocess, as the target does)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import argparse
import inspect
import io
import json
import logging
import types

from ansible_collections.ddtree.sglang.plugins.module_utils.probes import flag_check, ml_env, probe_argv


def _server_args_module(resolves_later=True):
    """A stand-in sglang.srt.server_args: a parser from ServerArgs.add_cli_args, prepare_server_args."""
    target = types.ModuleType('fake_server_args')

    class ServerArgs:
        def __init__(self, **kwargs):
            self.__dict__.update(kwargs)

        @staticmethod
        def add_cli_args(parser):
            parser.add_argument('--model-path', required=True)
            parser.add_argument('--tp-size', type=int, default=1)
            parser.add_argument('--speculative-ddtree-budget', type=int)
            parser.add_argument('--port', type=int, default=30000)

    def prepare_server_args(argv):
        parser = argparse.ArgumentParser(prog='sglang serve')
        ServerArgs.add_cli_args(parser)
        raw = parser.parse_args(argv)
        logging.getLogger('fake').warning('prepared')
        return ServerArgs(**vars(raw))

    if resolves_later:
        ServerArgs.resolve_once = lambda self: None
    target.ServerArgs = ServerArgs
    target.prepare_server_args = prepare_server_args
    return target


def _result():
    return {
        'valid': False,
        'unknown_flags': [],
        'error': None,
        'error_flag': None,
        'error_value': None,
        'warnings': [],
        'sglang_version': None,
        'server_args': {},
        'checks': [],
        'checks_skipped': [],
        'prefix': '',
        'probe_error': None,
    }


def test_flag_probe_accepts_known_flags_and_summarises_them():
    result = _result()
    originals = (argparse.ArgumentParser.parse_known_args, argparse.ArgumentParser.error, argparse.ArgumentParser.exit)
    flag_check.probe({'argv': ['--model-path', '/m', '--tp-size', '2', '--speculative-ddtree-budget', '8'], 'module': 'fake'}, result, _server_args_module())
    assert result['valid'] is True and result['error'] is None and result['unknown_flags'] == []
    assert result['checks'] == ['argparse', 'server_args']
    assert result['server_args'] == {'model_path': '/m', 'tp_size': 2, 'speculative_ddtree_budget': 8, 'port': 30000}
    # argparse is itself again afterwards
    assert (argparse.ArgumentParser.parse_known_args, argparse.ArgumentParser.error, argparse.ArgumentParser.exit) == originals


def test_flag_probe_names_unknown_flags_and_the_parser_error():
    result = _result()
    flag_check.probe({'argv': ['--model-path', '/m', '--speculative-ddtree-budgt', '8'], 'module': 'fake'}, result, _server_args_module())
    assert result['valid'] is False
    assert result['unknown_flags'] == ['--speculative-ddtree-budgt']
    assert result['error'] == 'sglang serve: error: unrecognized arguments: --speculative-ddtree-budgt 8'


def test_flag_probe_without_resolve_once_parses_only():
    result = _result()
    flag_check.probe({'argv': ['--model-path', '/m'], 'module': 'fake'}, result, _server_args_module(resolves_later=False))
    assert result['valid'] is True and result['checks'] == ['argparse']
    assert result['checks_skipped'][0].startswith('server_args: this SGLang resolves its arguments')


def test_flag_probe_without_server_args():
    result = _result()
    flag_check.probe({'argv': [], 'module': 'nothing'}, result, types.ModuleType('nothing'))
    assert result['probe_error'] == 'nothing has no ServerArgs' and result['valid'] is False


def test_unknown_flags_allows_unique_abbreviations():
    parser = argparse.ArgumentParser()
    parser.add_argument('--model-path')
    parser.add_argument('--model-impl')
    assert flag_check.unknown_flags(parser, ['--model-p', 'x', '--model', 'y', '--nope=1', '--', '--after']) == ['--model', '--nope']


def test_plain_and_clean():
    assert flag_check.plain((1, 'a', None, 2.5, object)) == [1, 'a', None, 2.5, "<class 'object'>"]
    assert flag_check.clean('\x1b[1;33mwarned\x1b[0m ') == 'warned'


def test_ml_env_import_records():
    ok = ml_env.import_record('json')
    assert ok['ok'] is True and ok['name'] == 'json' and ok['file'].endswith('json/__init__.py')
    missing = ml_env.import_record('no_such_module_ddtree')
    assert missing['ok'] is False and missing['error_type'] == 'ModuleNotFoundError'
    assert missing['error'] == "No module named 'no_such_module_ddtree'" and missing['distributions'] == []


def test_ml_env_probe_events_in_order():
    out = io.StringIO()
    ml_env.probe(ml_env.Emitter(out, 'M '), ['json'], False)
    lines = out.getvalue().splitlines()
    assert all(line.startswith('M ') for line in lines)
    events = [json.loads(line[2:]) for line in lines]
    assert [(e['event'], e.get('name')) for e in events] == [
        ('start', None),
        ('step', 'json'),
        ('import', 'json'),
        ('step', 'torch report'),
        ('torch', None),
        ('done', None),
    ]
    # no torch in this interpreter: no version, and no error either (torch is simply not installed)
    assert events[4]['version'] is None and events[4]['error'] is None and events[4]['devices'] == []


def test_probe_sources_are_whole_programs():
    for probe in (flag_check, ml_env):
        source = inspect.getsource(probe)
        compile(source, probe.__name__, 'exec')
        assert source.rstrip().endswith('main(sys.argv[1:])' if probe is ml_env else 'main()')


def test_probe_argv_sends_the_source_under_timeout():
    source = inspect.getsource(ml_env)
    assert probe_argv('/r/bin/python', ml_env, ['M ', '[]', '0'], isolated=True) == ['/r/bin/python', '-I', '-c', source, 'M ', '[]', '0']
    assert probe_argv('/r/bin/python', flag_check, timeout_bin='/usr/bin/timeout', timeout=180.0) == [
        '/usr/bin/timeout',
        '--kill-after=10',
        '180',
        '/r/bin/python',
        '-c',
        inspect.getsource(flag_check),
    ]
