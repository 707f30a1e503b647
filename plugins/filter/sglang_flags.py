# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters that turn a host group's SGLang envelope into the server's command line.

The flag list is built here and nowhere else: the unit template, preflight and tests
all call these filters.
"""

from __future__ import annotations

import re

from ansible.errors import AnsibleFilterError

from ansible_collections.ddtree.sglang.plugins.module_utils.sglang_args import envelope_argv

# systemd splits ExecStart= itself (no shell), honouring quotes and backslash escapes;
# a word needs quoting when it holds whitespace, quotes, backslashes or ';' alone.
SYSTEMD_SAFE_WORD = re.compile(r"^[A-Za-z0-9_@%+=:,./-]+\Z")  # \Z: "$" would let a trailing line break through


def sglang_argv(envelope):
    """Render an envelope dict to SGLang argv tokens (module_utils sglang_args.envelope_argv).

    ``mem_fraction_static: 0.85`` -> ``--mem-fraction-static 0.85``; ``true`` -> bare flag;
    ``false`` / ``null`` -> omitted; a list repeats the flag once per item.
    """
    try:
        return envelope_argv(envelope)
    except ValueError as e:
        raise AnsibleFilterError(str(e))


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
