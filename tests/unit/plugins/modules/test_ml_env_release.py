# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Releases on a real temporary directory: query, current link, prune protection."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

import pytest

from ansible.module_utils.testing import patch_module_args

from ansible_collections.ddtree.sglang.tests.unit.plugins.modules.utils import ExitJson, FailJson, exits  # noqa: F401 pylint: disable=unused-import

from ansible_collections.ddtree.sglang.plugins.modules import ml_env_release


def make_release(root, rid, mtime, complete=True, ours=True):
    path = root / 'releases' / rid
    (path / 'bin').mkdir(parents=True)
    if ours:
        (path / 'ddtree-requirements').mkdir()
    if complete:
        (path / 'ddtree-release.json').write_text(json.dumps({'id': rid}))
    os.utime(str(path), (mtime, mtime))
    return path


def run(args):
    with patch_module_args(args):
        with pytest.raises((ExitJson, FailJson)) as res:
            ml_env_release.main()
    return res.type, res.value.args[0]


IDS = ['%016x' % n for n in range(1, 7)]


def test_query_reports_manifest_and_completeness(tmp_path):
    make_release(tmp_path, IDS[0], 100)
    make_release(tmp_path, IDS[1], 200, complete=False)
    kind, res = run({'root': str(tmp_path), 'release': IDS[0]})
    assert kind is ExitJson and not res['changed']
    assert res['release']['complete'] and res['release']['manifest'] == {'id': IDS[0]}
    assert [r['id'] for r in res['releases']] == [IDS[1], IDS[0]]
    assert not res['releases'][0]['complete']


def test_current_refuses_incomplete_then_switches(tmp_path):
    make_release(tmp_path, IDS[0], 100, complete=False)
    kind, res = run({'root': str(tmp_path), 'release': IDS[0], 'state': 'current'})
    assert kind is FailJson and 'not complete' in res['msg']
    make_release(tmp_path, IDS[1], 100)
    kind, res = run({'root': str(tmp_path), 'release': IDS[1], 'state': 'current'})
    assert res['changed'] and res['current'] == IDS[1]
    assert os.readlink(str(tmp_path / 'current')) == 'releases/' + IDS[1]
    kind, res = run({'root': str(tmp_path), 'release': IDS[1], 'state': 'current'})
    assert not res['changed']


def test_prune_keeps_newest_current_and_referenced(tmp_path):
    for n, rid in enumerate(IDS):
        make_release(tmp_path, rid, 100 + n)
    os.symlink('releases/' + IDS[0], str(tmp_path / 'current'))
    units = tmp_path / 'units'
    units.mkdir()
    (units / 'sglang.service').write_text('ExecStart=%s/releases/%s/bin/python -m x\n' % (tmp_path, IDS[1]))
    kind, res = run({'root': str(tmp_path), 'release': IDS[5], 'state': 'pruned', 'keep': 2, 'referenced_in': [str(units)]})
    # IDS[5] named, IDS[0] current, IDS[1] referenced; newest two others (4, 3) kept; 2 goes
    assert res['removed'] == [IDS[2]]
    assert not (tmp_path / 'releases' / IDS[2]).exists()
    assert (tmp_path / 'releases' / IDS[1]).exists()


def test_prune_leaves_a_release_another_run_builds(tmp_path):
    make_release(tmp_path, IDS[0], 100)
    os.symlink('releases/' + IDS[0], str(tmp_path / 'current'))
    make_release(tmp_path, IDS[1], 200, complete=False)  # a failed build of long ago
    building = make_release(tmp_path, IDS[2], 300, complete=False)
    os.utime(str(building), None)  # being built now
    kind, res = run({'root': str(tmp_path), 'release': IDS[0], 'state': 'pruned', 'keep': 0, 'referenced_in': [], 'unfinished_grace_s': 600})
    assert res['removed'] == [IDS[1]]
    assert building.exists()


def test_switches_at_once_use_their_own_temp_links(tmp_path, monkeypatch):
    for n, rid in enumerate(IDS[:2]):
        make_release(tmp_path, rid, 100 + n)
    # a temp link another switch left (or is about to rename) is neither reused nor removed
    os.symlink('releases/' + IDS[0], str(tmp_path / 'current.new'))
    ml_env_release.set_current(str(tmp_path), IDS[1])
    assert os.readlink(str(tmp_path / 'current')) == 'releases/' + IDS[1]
    assert sorted(os.listdir(str(tmp_path))) == ['current', 'current.new', 'releases']


def test_absent_refuses_referenced_and_current(tmp_path):
    make_release(tmp_path, IDS[0], 100)
    os.symlink('releases/' + IDS[0], str(tmp_path / 'current'))
    kind, res = run({'root': str(tmp_path), 'release': IDS[0], 'state': 'absent'})
    assert kind is FailJson and 'current' in res['msg']
    make_release(tmp_path, IDS[1], 100, complete=False)
    kind, res = run({'root': str(tmp_path), 'release': IDS[1], 'state': 'absent'})
    assert res['removed'] == [IDS[1]] and not (tmp_path / 'releases' / IDS[1]).exists()


def test_check_mode_changes_nothing(tmp_path):
    for n, rid in enumerate(IDS[:3]):
        make_release(tmp_path, rid, 100 + n)
    kind, res = run({'root': str(tmp_path), 'state': 'pruned', 'keep': 1, '_ansible_check_mode': True})
    assert res['changed'] and res['removed'] == [IDS[1], IDS[0]]
    assert (tmp_path / 'releases' / IDS[0]).exists()


def test_bad_release_id(tmp_path):
    kind, res = run({'root': str(tmp_path), 'release': '../etc'})
    assert kind is FailJson and 'hex' in res['msg']


def test_a_hex_named_directory_without_the_collection_marks_is_never_touched(tmp_path):
    make_release(tmp_path, IDS[0], 100)
    os.symlink('releases/' + IDS[0], str(tmp_path / 'current'))
    operator = make_release(tmp_path, IDS[1], 100, complete=False, ours=False)  # an operator's data, long ago
    (operator / 'data.bin').write_text('keep')
    kind, res = run({'root': str(tmp_path), 'release': IDS[0], 'state': 'pruned', 'keep': 0, 'referenced_in': [], 'unfinished_grace_s': 0})
    assert res['removed'] == [] and [r['id'] for r in res['releases']] == [IDS[0]]
    kind, res = run({'root': str(tmp_path), 'release': IDS[1], 'state': 'absent'})
    assert kind is FailJson and res['msg'] == (
        '%s is not a release of this collection (neither ddtree-release.json nor ddtree-requirements/ in it): refusing to '
        'remove it; move it out of %s/releases' % (operator, tmp_path)
    )
    assert (operator / 'data.bin').exists()
