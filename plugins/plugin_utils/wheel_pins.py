# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pins of wheels (controller side, pure functions): checked and written as a requirements file, for the filters
ml_env, sglang_install and cuda_overlay alike.

A pin is ``{name, version, sha256}`` for a wheel (``sha256`` a list where a lock file gives several files of one
version). A pin list may also be given as the text of a hashed requirements file, as ``uv pip compile
--generate-hashes`` and ``pip-compile --generate-hashes`` write it; hashed_requirement_pins reads it into pins,
as strictly as the YAML form is checked. Every wheel goes to pip as
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
    """The problems of one pin's sha256 (or list of them); ``override`` names the variable that accepts no digest."""
    if isinstance(digest, list) and digest:
        bad = [one for one in digest if not isinstance(one, str) or not SHA256_RE.match(one)]
        return ['%s.sha256 must be 64 lowercase hex digits (or a list of them), got %r' % (where, bad[0])] if bad else []
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
    pins = as_pins(pins)[0]
    lines = []
    for pin in pins:
        line = '%s===%s' % (pin['name'], pin['version'])
        digests = pin.get('sha256') or []
        for digest in [digests] if isinstance(digests, str) else digests:
            line += ' --hash=sha256:%s' % digest
        lines.append(line)
    return '\n'.join(lines) + ('\n' if lines else '')


# A requirement of a hashed requirements file: ``name==version`` (``===`` too), extras allowed (the lock lists what they
# bring), then its hashes. Markers, URLs, ranges and options other than --hash are refused: a pin set is for one
# platform and one Python, compiled with uv's --python-platform and --python-version.
REQUIREMENT_RE = re.compile(r'^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)(\[[A-Za-z0-9._,-]+\])?===?(?P<version>\S+?)(?P<rest>(\s.*)?)\Z')
HASH_RE = re.compile(r'^--hash=sha256:(?P<digest>[0-9a-f]{64})\Z')


def hashed_requirement_pins(text, variable='pins'):
    """(pins, problems) of the text of a hashed requirements file. Lines continued with a backslash are joined, comments
    and blank lines skipped; every requirement must be ``name==version`` with at least one ``--hash=sha256:<hex>`` and
    nothing else. Each problem names the variable, the line number and what is allowed."""
    pins, problems, logical = [], [], []
    current, start = '', 0
    for number, raw in enumerate(text.splitlines(), 1):
        line = re.sub(r'(^|\s)#.*', '', raw).strip()
        if not current:
            start = number
        if line.endswith('\\'):
            current += line[:-1] + ' '
            continue
        current += line
        if current.strip():
            logical.append((start, ' '.join(current.split())))
        current = ''
    if current.strip():
        logical.append((start, ' '.join(current.split())))
    for number, line in logical:
        where = '%s line %d' % (variable, number)
        match = REQUIREMENT_RE.match(line)
        if not match or ';' in line or '@' in line.split(' ')[0]:
            problems.append(
                '%s must be one requirement "name==version --hash=sha256:<64 hex>" (options, URLs, markers and ranges are not '
                'pins: compile the file for one platform and Python with --generate-hashes), got %r' % (where, line)
            )
            continue
        digests, rest = [], match.group('rest').split()
        for word in rest:
            found = HASH_RE.match(word)
            if not found:
                problems.append(
                    '%s: only --hash=sha256:<64 lowercase hex> may follow %s==%s, got %r' % (where, match.group('name'), match.group('version'), word)
                )
                break
            digests.append(found.group('digest'))
        else:
            if not digests:
                problems.append('%s (%s) has no --hash=sha256: every wheel must be pinned by hash (--generate-hashes)' % (where, match.group('name')))
                continue
            pins.append({'name': match.group('name'), 'version': match.group('version'), 'sha256': digests[0] if len(digests) == 1 else digests})
    return pins, problems


def as_pins(pins, variable='pins'):
    """(pins, problems): a pin list as given, or the pins of a hashed requirements file's text."""
    if isinstance(pins, str):
        return hashed_requirement_pins(pins, variable)
    return pins, []


def pin_problems(pins, variable='pins', allow_unpinned=False, allow_unpinned_variable='ml_env_allow_unpinned'):
    """Every problem of a pin list (or of a hashed requirements file's text), as sentences naming the variable, the entry
    and the switch that accepts no digest."""
    pins, problems = as_pins(pins, variable)
    if problems:
        return problems
    if not isinstance(pins, list):
        return ['%s must be a list of {name, version, sha256} or the text of a hashed requirements file, got %s' % (variable, type(pins).__name__)]
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
