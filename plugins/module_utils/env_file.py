# -*- coding: utf-8 -*-
# Copyright: (c) 2026, ddtree.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reading the root-only EnvironmentFile the role writes secrets to."""

from __future__ import annotations

import errno


def parse_env_file(text):
    """Assignments of a systemd EnvironmentFile: NAME=value lines, '#'/';' comments, a value in
    single quotes taken verbatim, in double quotes with backslash escapes; the last one wins."""
    values = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in '#;' or '=' not in line:
            continue
        name, value = line.split('=', 1)
        name = name.strip()
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] == "'":
            value = value[1:-1]
        elif len(value) >= 2 and value[0] == value[-1] == '"':
            out, chars = [], iter(value[1:-1])
            for char in chars:
                out.append(next(chars, '') if char == '\\' else char)
            value = ''.join(out)
        values[name] = value
    return values


def read_env_file(path, missing_ok=False):
    """The assignments of the EnvironmentFile at ``path`` ({} with missing_ok when there is no such
    file). Other read errors raise OSError for the caller's message."""
    try:
        with open(path, 'rb') as handle:
            text = handle.read().decode('utf-8', 'replace')
    except (IOError, OSError) as e:
        if missing_ok and e.errno == errno.ENOENT:
            return {}
        raise
    return parse_env_file(text)


def read_env_value(path, name, missing_ok=False):
    """``name``'s value in the EnvironmentFile at ``path``; None when the file sets none (or, with
    missing_ok, when there is no such file). Other read errors raise OSError for the caller's message."""
    return read_env_file(path, missing_ok).get(name) or None
