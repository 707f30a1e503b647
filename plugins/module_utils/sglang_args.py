# -*- coding: utf-8 -*-
# Copyright: (c) 2026, ddtree.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""SGLang's arguments, known in one place: which flags carry a secret, which envelope keys are counts, and an
envelope (a dict of flags) to argv and a command line's argv back to a dict. The filters (sglang_argv,
sglang_service_problems, secret_args) and the modules (the verdict's advice, the flag check's masking) all ask
this module; it is pure and imports nothing of Ansible's, so it runs on the controller and on the host alike.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

# The one list of secret-bearing flags, for SGLang and the router alike: the envelope, the router's
# args, the flag check's failure messages and the fleet report all ask is_secret_flag.
# SGLang's own (the watermark config holds keys; SGLang redacts it too)
SECRET_FLAGS = ('--api-key', '--admin-api-key', '--ssl-keyfile-password', '--watermark-config')
# words, not substrings: --max-total-tokens and --tokenizer-path carry no secret; api-key(s) as a
# pair also catches the router's --control-plane-api-keys
_SECRET_WORD = re.compile(r'(?:^|-)(?:password|passwd|secret|token|api-keys?)(?:$|-)')
# argparse accepts a unique prefix of a flag, so `--api-k` still carries the API key
_MIN_ABBREV = 5
# complete SGLang flags that happen to be prefixes of a secret one (a path, not a secret)
_NOT_SECRET = ('--ssl-keyfile',)

# envelope keys whose value is a count: a positive integer
COUNT_KEYS = (
    'context_length',
    'max_running_requests',
    'max_total_tokens',
    'tp_size',
    'dp_size',
    'pp_size',
    'speculative_num_steps',
    'speculative_num_draft_tokens',
    'speculative_eagle_topk',
    'speculative_ddtree_budget',
)

ENVELOPE_KEY = re.compile(r"^[a-z][a-z0-9_]*$")


def is_secret_flag(flag):
    """Whether ``--flag`` (or ``--flag=value``, or a prefix argparse would take for it) carries a secret."""
    name = flag.split('=', 1)[0]
    if not name.startswith('--') or len(name) < 3 or name in _NOT_SECRET:
        return False
    if name in SECRET_FLAGS or _SECRET_WORD.search(name[2:]):
        return True
    return len(name) >= _MIN_ABBREV and any(secret.startswith(name) for secret in SECRET_FLAGS)


def secret_arg_names(args):
    """The names of a dict of flags (``api_key`` for ``--api-key``) whose flag carries a secret, sorted."""
    if not isinstance(args, dict):
        return []
    return sorted(str(name) for name in args if is_secret_flag('--' + str(name).replace('_', '-')))


def kind_of(value):
    """The YAML kind of a value, as a message names it."""
    # Ansible hands filters its own subclasses (_AnsibleLazyTemplateDict, ...); name the YAML kind
    for kind, name in ((dict, 'dict'), (list, 'list'), (tuple, 'list'), (bool, 'boolean'), (str, 'string'), (int, 'integer'), (float, 'float')):
        if isinstance(value, kind):
            return name
    return 'null' if value is None else type(value).__name__


def _scalar_text(key, value):
    if isinstance(value, bool):
        raise ValueError('sglang_service_envelope.%s: a list may not hold booleans' % key)
    if isinstance(value, (int, float, str)):
        text = str(value)
        if '\n' in text or '\r' in text or '\x00' in text:
            raise ValueError('sglang_service_envelope.%s: value must be a single line without NUL bytes' % key)
        return text
    raise ValueError(
        'sglang_service_envelope.%s: value %r has type %s; allowed: string, integer, float, boolean, or a '
        'list of those (not booleans)' % (key, value, kind_of(value))
    )


def envelope_argv(envelope):
    """An envelope dict as SGLang argv words; ValueError names the key and what it allows.

    ``mem_fraction_static: 0.85`` -> ``--mem-fraction-static 0.85``; ``true`` -> bare flag;
    ``false`` / ``null`` -> omitted; a list repeats the flag once per item.
    """
    if not isinstance(envelope, dict):
        raise ValueError('sglang_service_envelope must be a dict of SGLang flags, got %s' % kind_of(envelope))
    argv = []
    for key, value in envelope.items():
        if not isinstance(key, str) or not ENVELOPE_KEY.match(key):
            raise ValueError(
                "sglang_service_envelope key %r is not a flag name: use lowercase words joined by '_' (mem_fraction_static for --mem-fraction-static)" % (key,)
            )
        flag = '--' + key.replace('_', '-')
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


def server_args_from_argv(argv):
    """``--flag value`` / bare ``--flag`` words of a launch_server command line -> {flag_name: value}.

    Names use underscores like the envelope (``--mem-fraction-static`` -> ``mem_fraction_static``);
    a bare flag maps to ``True``. Words before the first flag (python, -m, module) are skipped.
    """
    args = {}
    name = None
    for word in argv:
        if word.startswith('--'):
            flag, eq, value = word[2:].partition('=')
            name = flag.replace('-', '_')
            args[name] = value if eq else True
            if eq:
                name = None
        elif name is not None:
            args[name] = word
            name = None
    return args
