# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters that turn a host group's SGLang envelope into the server's command line.

The flag list is built here and nowhere else: the unit template, preflight and tests
all call these filters.
"""

from __future__ import annotations

import re

from ansible.errors import AnsibleFilterError

ENVELOPE_KEY = re.compile(r"^[a-z][a-z0-9_]*$")
# systemd splits ExecStart= itself (no shell), honouring quotes and backslash escapes;
# a word needs quoting when it holds whitespace, quotes, backslashes or ';' alone.
SYSTEMD_SAFE_WORD = re.compile(r"^[A-Za-z0-9_@%+=:,./-]+\Z")  # \Z: "$" would let a trailing line break through


def _kind(value):
    # Ansible hands filters its own subclasses (_AnsibleLazyTemplateDict, ...); name the YAML kind
    for kind, name in ((dict, "dict"), (list, "list"), (tuple, "list"), (bool, "boolean"), (str, "string"),
                       (int, "integer"), (float, "float")):
        if isinstance(value, kind):
            return name
    return "null" if value is None else type(value).__name__


def _scalar_text(key, value):
    if isinstance(value, bool):
        raise AnsibleFilterError(f"sglang_service_envelope.{key}: a list may not hold booleans")
    if isinstance(value, (int, float, str)):
        text = str(value)
        if "\n" in text or "\r" in text or "\x00" in text:
            raise AnsibleFilterError(f"sglang_service_envelope.{key}: value must be a single line without NUL bytes")
        return text
    raise AnsibleFilterError(
        f"sglang_service_envelope.{key}: value {value!r} has type {_kind(value)}; "
        "allowed: string, integer, float, boolean, or a list of those (not booleans)"
    )


def sglang_argv(envelope):
    """Render an envelope dict to SGLang argv tokens.

    ``mem_fraction_static: 0.85`` -> ``--mem-fraction-static 0.85``; ``true`` -> bare flag;
    ``false`` / ``null`` -> omitted; a list repeats the flag once per item.
    """
    if not isinstance(envelope, dict):
        raise AnsibleFilterError(f"sglang_service_envelope must be a dict of SGLang flags, got {_kind(envelope)}")
    argv = []
    for key, value in envelope.items():
        if not isinstance(key, str) or not ENVELOPE_KEY.match(key):
            raise AnsibleFilterError(
                f"sglang_service_envelope key {key!r} is not a flag name: use lowercase words joined by '_' "
                "(mem_fraction_static for --mem-fraction-static)"
            )
        flag = "--" + key.replace("_", "-")
        if value is None or value is False:
            continue
        if value is True:
            argv.append(flag)
        elif isinstance(value, (list, tuple)):
            for item in value:
                argv.extend([flag, _scalar_text(key, item)])
        else:
            argv.extend([flag, _scalar_text(key, value)])
    return argv


def systemd_quote(argv, environment=False):
    """Join argv into an ExecStart= command line that systemd splits back exactly.

    Also doubles '%' and '$' so systemd neither expands specifiers nor environment variables. With
    environment=True the words are Environment= assignments: systemd expands specifiers there but no
    variables, so '$' stays single.
    """
    if isinstance(argv, str):
        raise AnsibleFilterError("systemd_quote expects a list of words, not a string")
    words = []
    for word in argv:
        text = str(word).replace("%", "%%")
        if not environment:
            text = text.replace("$", "$$")
        if SYSTEMD_SAFE_WORD.match(text):
            words.append(text)
        else:
            if any(c in text for c in "\n\r\x00"):
                raise AnsibleFilterError(f"systemd_quote: {word!r} holds a line break or NUL byte")
            words.append('"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"')
    return " ".join(words)


class FilterModule:
    """SGLang command-line filters."""

    def filters(self):
        return {"sglang_argv": sglang_argv, "systemd_quote": systemd_quote}
