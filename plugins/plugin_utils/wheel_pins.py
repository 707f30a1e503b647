# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pins of wheels (controller side, pure functions): checked and written as a requirements file, for the filters
ml_env, sglang_install and cuda_overlay alike.

A pin is ``{name, version, sha256}`` for a wheel. Every wheel goes to pip as
``name===version --hash=sha256:<hex>`` with ``--require-hashes --no-deps``, so a changed file in a
wheelhouse is refused by pip itself and nothing is resolved behind the pins' back. ``===`` and not
``==``: under PEP 440 ``==0.5.23`` also matches a local build ``0.5.23+ddtree.1`` in the same
wheelhouse, which pip would prefer and then refuse for its hash.
"""

from __future__ import annotations

import json
import re

from ansible.module_utils.parsing.convert_bool import boolean

from ansible_collections.ddtree.sglang.plugins.plugin_utils.safe_values import unsafe_chars

SHA256_RE = re.compile(r'^[0-9a-f]{64}\Z')
# PEP 508 distribution names and PEP 440 versions, loosely: enough to keep shell and pip
# option syntax out of a requirements line.
NAME_RE = re.compile(r'^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?\Z')
VERSION_RE = re.compile(r'^[A-Za-z0-9][A-Za-z0-9.+!_-]*\Z')


def wheel_pin_problems(where, pin, seen):
    """The problems of one wheel pin's name and version; ``seen`` collects normalised names."""
    problems = []
    name = pin.get('name')
    if not isinstance(name, str) or not NAME_RE.match(name):
        problems.append('%s.name must be a distribution name such as "sglang", got %r' % (where, name))
    elif name.lower().replace('_', '-') in seen:
        problems.append('%s pins %s a second time' % (where, name))
    else:
        seen.add(name.lower().replace('_', '-'))
    version = pin.get('version')
    if not isinstance(version, str) or not VERSION_RE.match(version):
        problems.append('%s.version must be an exact version string such as "0.5.23", got %r' % (where, version))
    return problems


def digest_problems(where, label, digest, allow_unpinned, override):
    """The problems of one pin's sha256; ``override`` names the variable that accepts no digest."""
    if digest is None or digest == '':
        # "no" or "0" from INI :vars or -e are false (Python would read them as true); the argument spec refused the rest
        if boolean(allow_unpinned, strict=False):
            return []
        return ['%s (%s) has no sha256: every artifact must be pinned (%s: true accepts unpinned ones)' % (where, label, override)]
    if not isinstance(digest, str) or not SHA256_RE.match(digest):
        return ['%s.sha256 must be 64 lowercase hex digits, got %r' % (where, digest)]
    return []


def requirement_lines(pins):
    """``name===version --hash=sha256:<hex>`` per checked wheel pin, as a requirements file."""
    lines = []
    for pin in pins:
        line = '%s===%s' % (pin['name'], pin['version'])
        if pin.get('sha256'):
            line += ' --hash=sha256:%s' % pin['sha256']
        lines.append(line)
    return '\n'.join(lines) + ('\n' if lines else '')


def pin_problems(pins, variable='pins', allow_unpinned=False, allow_unpinned_variable='ml_env_allow_unpinned'):
    """Every problem of a pin list, as sentences naming the variable, the entry and the switch that accepts no digest."""
    if not isinstance(pins, list):
        return ['%s must be a list of {name, version, sha256}, got %s' % (variable, type(pins).__name__)]
    problems = []
    seen = set()
    for index, pin in enumerate(pins):
        where = '%s[%d]' % (variable, index)
        if not isinstance(pin, dict):
            problems.append('%s must be a dict {name, version, sha256}, got %r' % (where, pin))
            continue
        unknown = sorted(set(pin) - {'name', 'version', 'sha256'})
        if unknown:
            problems.append('%s has unknown keys %s (allowed: name, version, sha256)' % (where, ', '.join(unknown)))
        problems += wheel_pin_problems(where, pin, seen)
        problems += digest_problems(where, pin.get('name'), pin.get('sha256'), allow_unpinned, allow_unpinned_variable)
    return problems


def _json(value):
    return json.dumps(value, default=str)


def wheel_source_problems(find_links_variable, index_url_variable, find_links, index_url, for_what='', defaults=''):
    """[] when exactly one wheel source is given and fits; else the messages, each naming its variable and what it allows.
    One rule for every role that runs pip (ml_env, cuda_overlay, sglang_install, sglang_router).

    pip's extra_args are one string that ansible.builtin.pip splits at whitespace: a space, tab or line break (a trailing
    one too) in a source would hand pip options of the variable's choosing (--trusted-host, --extra-index-url, ...)."""
    if not isinstance(find_links, str) or not isinstance(index_url, str):
        return ['%s and %s must be strings, got %s and %s.' % (find_links_variable, index_url_variable, _json(find_links), _json(index_url))]
    problems = []
    if bool(find_links) == bool(index_url):
        problems.append(
            'Give exactly one wheel source%s: %s (a directory of wheels on the host) or %s (a local package index, http:// or '
            'https://)%s. Got %s=%s, %s=%s.'
            % (for_what, find_links_variable, index_url_variable, defaults, find_links_variable, _json(find_links), index_url_variable, _json(index_url))
        )
    if find_links and (unsafe_chars(find_links) or not re.match(r'(/|https?://)', find_links)):
        problems.append(
            '%s must be an absolute directory on the host (or an http:// or https:// URL) without spaces, tabs, line breaks or '
            'control characters: pip takes the wheel sources as words of one command line; got %s.' % (find_links_variable, _json(find_links))
        )
    if index_url and (unsafe_chars(index_url) or not re.match(r'https?://', index_url)):
        problems.append(
            '%s must be an http(s) URL of a local package index (http:// or https://) without spaces, tabs, line breaks or '
            'control characters: pip takes the wheel sources as words of one command line; got %s.' % (index_url_variable, _json(index_url))
        )
    return problems


def pip_wheel_args(find_links, index_url, allow_unpinned=False):
    """pip's options for pinned wheels from one source: ``--no-deps`` (the pins are the whole set), ``--require-hashes``
    unless unpinned wheels are allowed, and the index or the directory (``--no-index --find-links``). The source is
    refused first by wheel_source_problems: whitespace in it would add options."""
    args = ['--no-deps']
    if not boolean(allow_unpinned, strict=False):
        args.append('--require-hashes')
    if index_url:
        args += ['--index-url', index_url]
    else:
        args += ['--no-index', '--find-links', find_links]
    return ' '.join(args)
