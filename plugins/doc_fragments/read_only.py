# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Attributes of a module that only reads the host."""

from __future__ import annotations


class ModuleDocFragment(object):
    DOCUMENTATION = r'''
options: {}
attributes:
  check_mode:
    description: Can run in check mode; it only reads, so it does the same as without.
    support: full
  diff_mode:
    description: Returns no diff; nothing is changed.
    support: none
'''
