# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno

import pytest

from ansible_collections.ddtree.sglang.plugins.module_utils.env_file import parse_env_file, read_env_value


@pytest.mark.parametrize(
    'text, expected',
    [
        ("A=1\nB='two words'\n", {'A': '1', 'B': 'two words'}),
        ('# comment\n; comment\n\nC = "x\\"y"\n', {'C': 'x"y'}),
        ("K='first'\nK='second'\n", {'K': 'second'}),
        ("no assignment\nD=\n", {'D': ''}),
        ("E='a=b'\n", {'E': 'a=b'}),
    ],
)
def test_parse_env_file(text, expected):
    assert parse_env_file(text) == expected


def test_read_env_value(tmp_path):
    env = tmp_path / 'sglang.env'
    env.write_text('# secrets\nSGLANG_API_KEY="sk-\\"q"\nOTHER=\n')
    assert read_env_value(str(env), 'SGLANG_API_KEY') == 'sk-"q'
    assert read_env_value(str(env), 'OTHER') is None
    assert read_env_value(str(env), 'ABSENT') is None


def test_a_missing_file_is_none_only_when_allowed(tmp_path):
    missing = str(tmp_path / 'nope.env')
    assert read_env_value(missing, 'SGLANG_API_KEY', missing_ok=True) is None
    with pytest.raises(OSError) as caught:
        read_env_value(missing, 'SGLANG_API_KEY')
    assert caught.value.errno == errno.ENOENT
    # a directory is not a missing file: still an error with missing_ok
    with pytest.raises(OSError):
        read_env_value(str(tmp_path), 'SGLANG_API_KEY', missing_ok=True)
