# -*- coding: utf-8 -*-
# Copyright: (c) 2026, ddtree.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The flag check's controller side: which flags carry secrets, masking and scrubbing them,
running the probe (probes/flag_check.py) with the release's interpreter, reading its answer
and wording the refusal.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import re
import shutil
import tempfile

from ansible_collections.ddtree.sglang.plugins.module_utils.probes import flag_check as flag_probe
from ansible_collections.ddtree.sglang.plugins.module_utils.probes import probe_argv

# which flags carry a secret is SGLang's argument knowledge (sglang_args); masking and scrubbing texts is here
from ansible_collections.ddtree.sglang.plugins.module_utils.sglang_args import is_secret_flag

MASK = '********'
# `--flag value` or `--flag=value` inside free text (a journal line, a failure message), with the words after the
# value that do not start with '-' (the further values of a flag that takes several)
_WORD = r'(?:\'[^\']*\'|"[^"]*"|[^\s\'"]+)'
_FLAG_IN_TEXT = re.compile(r'(--[A-Za-z0-9][A-Za-z0-9_-]*)(=|\s+)(' + _WORD + r')((?:\s+(?!-)' + _WORD + r')*)')
# flags that take several values, each a secret (the router's --api-keys, --control-plane-api-keys)
_MULTI_VALUE = re.compile(r'-keys$')
RESULT_MARK = flag_probe.MARK
_ARGUMENT = re.compile(r'argument (-[^\s:/]+)')
_NOT_RUN = ' (refused before the service was touched)'


class ProbeError(Exception):
    """The probe did not answer: no interpreter, a crash, a timeout, output that is no answer."""


# environment names that carry a secret: *_KEY, *_TOKEN, *_SECRET and anything with PASSWORD (SGLANG_API_KEY, HF_TOKEN,
# HUGGING_FACE_HUB_TOKEN, AWS_SECRET_ACCESS_KEY, WANDB_API_KEY, ...)
_SECRET_ENV = re.compile(r'(?:^|_)(?:KEY|TOKEN|SECRET)(?:$|_)|PASSW(?:OR)?D', re.IGNORECASE)


def is_secret_env_name(name):
    """Whether an environment variable's name says it carries a secret (the one rule, with is_secret_flag's)."""
    return bool(_SECRET_ENV.search(str(name)))


def is_multi_value(flag):
    """Whether a secret flag takes several values (every one of them a secret)."""
    return bool(_MULTI_VALUE.search(flag.split('=', 1)[0]))


def scrub_text(text):
    """Mask the value of every secret flag written out in free text (every value of one that takes several)."""

    def mask(match):
        flag, sep, first, more = match.groups()
        if not is_secret_flag(flag):
            # the words after a flag's value may hold the next flag: look at them again
            return flag + sep + first + scrub_text(more) if more else match.group(0)
        if is_multi_value(flag):
            more = re.sub(_WORD, MASK, more)
        else:
            more = scrub_text(more) if more else ''
        return flag + sep + MASK + more

    return _FLAG_IN_TEXT.sub(mask, text)


def secret_values(argv):
    """Values of secret flags in argv (both `--flag value` and `--flag=value`)."""
    secrets = []
    tokens = list(argv)
    for i, token in enumerate(tokens):
        if not is_secret_flag(token):
            continue
        if '=' in token:
            values = [token.split('=', 1)[1]]
        else:
            values = tokens[i + 1 : i + 2]
        if is_multi_value(token):
            for later in tokens[i + 1 :]:
                if later.startswith('-'):
                    break
                if later not in values:
                    values.append(later)
        for value in values:
            if value and value not in secrets:
                secrets.append(value)
    return secrets


def mask_argv(argv):
    masked = []
    mask_next = False
    multi = False
    for token in argv:
        if multi and not token.startswith('-'):
            masked.append(MASK)
            mask_next = False
            continue
        multi = False
        if mask_next:
            masked.append(MASK)
            mask_next = False
        elif is_secret_flag(token) and '=' in token:
            masked.append(token.split('=', 1)[0] + '=' + MASK)
            multi = is_multi_value(token)
        elif is_secret_flag(token):
            masked.append(token)
            mask_next = True
            multi = is_multi_value(token)
        else:
            masked.append(token)
    return masked


def scrub(value, secrets):
    """Replace every secret in every string of a nested value with the mask, and every value of a
    secret flag written out in it."""
    if isinstance(value, str):
        for secret in secrets:
            if secret:
                value = value.replace(secret, MASK)
        return scrub_text(value)
    if isinstance(value, list):
        return [scrub(item, secrets) for item in value]
    if isinstance(value, dict):
        return dict((key, scrub(item, secrets)) for key, item in value.items())
    return value


def parse_probe_output(stdout):
    """The probe's answer: the JSON after the last result mark on stdout."""
    for line in reversed((stdout or '').splitlines()):
        if line.startswith(RESULT_MARK):
            try:
                answer = json.loads(line[len(RESULT_MARK) :])
            except ValueError as exc:
                raise ProbeError('the probe answered something that is not JSON: %s' % exc)
            if not isinstance(answer, dict) or 'valid' not in answer:
                raise ProbeError('the probe answered without a verdict: %r' % (answer,))
            return answer
    raise ProbeError('the probe gave no answer')


def release_of(python, prefix=None):
    """Where the interpreter's environment lives: the probe's sys.prefix, else <dir>/bin/python's <dir>."""
    if prefix:
        return prefix
    bindir = os.path.dirname(python)
    if os.path.basename(bindir) == 'bin':
        return os.path.dirname(bindir)
    return bindir or python


def error_flag_of(error):
    found = _ARGUMENT.search(error or '')
    return found.group(1) if found else None


def build_message(result, release):
    """One sentence that names the refused flags, the SGLang version and the release."""
    who = 'The installed sglang %s in %s' % (result.get('sglang_version') or '(version unknown)', release)
    unknown = result.get('unknown_flags') or []
    error = result.get('error') or ''
    flag = result.get('error_flag') or error_flag_of(error)
    value = result.get('error_value')
    refused = '%s %s' % (flag, value) if flag and value else flag
    unknown_is_error = 'unrecognized arguments' in error
    if unknown and (unknown_is_error or not error):
        what = 'does not know %s' % ', '.join(unknown)
    elif unknown:
        what = 'does not know %s and refuses %s' % (', '.join(unknown), refused or 'the flags')
    elif refused:
        what = 'refuses %s' % refused
    elif result.get('error_check'):
        what = 'refuses the flags at start-up, in %s' % result['error_check']
    else:
        what = 'refuses the flags'
    msg = '%s %s: %s' % (who, what, error or 'unrecognized arguments')
    named = ' '.join(unknown + [refused or '']).lower()
    if 'ddtree' in named:
        msg += '; this build lacks the DDTree patch (install the DDTree-patched sglang into the release)'
    return msg + _NOT_RUN


def probe_command(timeout_bin, python, timeout):
    return probe_argv(python, flag_probe, timeout_bin=timeout_bin, timeout=timeout)


# what the unit's environment may not hand to the probe, which root runs: the dynamic loader's and the interpreter's own
# variables (LD_PRELOAD, LD_LIBRARY_PATH, PYTHONPATH, PYTHONSTARTUP, ...) and the shells' start-up files would run
# code the operator's variables name as root; SGLang's own settings (SGLANG_*, CUDA_*, HF_*) pass
_PROBE_ENV_REFUSED = re.compile(r'^(?:LD_\w*|PYTHON\w*|BASH_ENV|ENV|BASH_FUNC_\S*)$')


def probe_environment(environment):
    """(the unit's environment without what would run code in root's probe, the names left out, sorted)."""
    kept, dropped = {}, []
    for key, value in (environment or {}).items():
        if _PROBE_ENV_REFUSED.match(str(key)):
            dropped.append(str(key))
        else:
            kept[str(key)] = str(value)
    return kept, sorted(dropped)


def run_probe(run, timeout_bin, python, argv, module='sglang.srt.server_args', environment=None, timeout=180, compute_capability=None):
    """Run the probe with `python`; return its answer (dict) with secret values scrubbed.

    `run(args, data, cwd, environ_update)` runs a command and returns (rc, stdout, stderr), as
    AnsibleModule.run_command does. The flags travel on the probe's stdin, so no secret
    appears in the process list.
    """
    secrets = secret_values(argv)
    # the module scrubs the answer; the probe never sees which values are secret
    request = json.dumps({'argv': list(argv), 'module': module, 'compute_capability': compute_capability})
    env = dict((str(k), str(v)) for k, v in (environment or {}).items())
    # a check must not write into the release it checks, nor fetch a model's config from a hub
    env['PYTHONDONTWRITEBYTECODE'] = '1'
    env['HF_HUB_OFFLINE'] = '1'
    env['TRANSFORMERS_OFFLINE'] = '1'
    workdir = tempfile.mkdtemp(prefix='sglang-flag-check-')
    try:
        rc, stdout, stderr = run(probe_command(timeout_bin, python, timeout), request, workdir, env)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    if rc == 124:
        raise ProbeError('no answer within %d s (raise timeout if importing torch is that slow here)' % timeout)
    try:
        answer = parse_probe_output(stdout)
    except ProbeError as exc:
        tail = scrub('\n'.join((stderr or '').strip().splitlines()[-15:]), secrets)
        raise ProbeError('%s (exit status %s)%s' % (exc, rc, (': ' + tail) if tail else ''))
    return scrub(answer, secrets)
