# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Shared by the module tests: exit_json / fail_json raise, so a test can read the result."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible.module_utils import basic


class ExitJson(Exception):
    pass


class FailJson(Exception):
    pass


@pytest.fixture(autouse=True)
def exits(monkeypatch):
    def exit_json(self, **kwargs):
        raise ExitJson(kwargs)

    def fail_json(self, msg, **kwargs):
        kwargs['msg'] = msg
        raise FailJson(kwargs)

    monkeypatch.setattr(basic.AnsibleModule, 'exit_json', exit_json)
    monkeypatch.setattr(basic.AnsibleModule, 'fail_json', fail_json)
