# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A file replaced whole: the new text and mode, no temporary left behind, the old file kept on a failed write."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import stat

import pytest

from ansible_collections.ddtree.sglang.plugins.module_utils.atomic_file import write_atomically


def test_the_file_is_replaced_with_its_mode_and_nothing_else_is_left(tmp_path):
    path = tmp_path / 'ddtree_sglang_sglang.prom'
    path.write_text('old\n')
    write_atomically(str(path), 'new\n', 0o644, '.ddtree_sglang_')
    assert path.read_text() == 'new\n'
    assert stat.S_IMODE(os.stat(str(path)).st_mode) == 0o644
    assert sorted(os.listdir(str(tmp_path))) == ['ddtree_sglang_sglang.prom']


def test_a_failed_write_keeps_the_old_file_and_removes_the_temporary(tmp_path):
    path = tmp_path / 'results.json'
    path.write_text('old\n')
    with pytest.raises(TypeError):
        write_atomically(str(path), None, 0o600, '.gate-')
    assert path.read_text() == 'old\n'
    assert sorted(os.listdir(str(tmp_path))) == ['results.json']
