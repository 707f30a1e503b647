# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Checks of values that reach a unit file, an EnvironmentFile or a delete (controller side, pure): shared by the
filters safe_values, sglang_validate and sglang_router.

A value with a line break adds a directive to a unit (ExecStartPre=+... runs as root) or an entry to
an EnvironmentFile; a space splits a word systemd hands over unquoted. A root directory that the
collection prunes must be its own: never a system directory, never shallow.
"""

from __future__ import annotations

import ipaddress
import json
import posixpath
import re

from ansible.module_utils.parsing.convert_bool import boolean

from ansible_collections.ddtree.sglang.plugins.module_utils.flag_check import scrub

# directories a collection must never own, prune or write its releases into
SYSTEM_ROOTS = frozenset(
    (
        '/',
        '/bin',
        '/boot',
        '/dev',
        '/etc',
        '/home',
        '/lib',
        '/lib32',
        '/lib64',
        '/libx32',
        '/media',
        '/mnt',
        '/opt',
        '/proc',
        '/root',
        '/run',
        '/sbin',
        '/srv',
        '/sys',
        '/tmp',
        '/usr',
        '/usr/bin',
        '/usr/lib',
        '/usr/lib64',
        '/usr/libexec',
        '/usr/local',
        '/usr/local/bin',
        '/usr/local/lib',
        '/usr/sbin',
        '/usr/share',
        '/usr/src',
        '/var',
        '/var/cache',
        '/var/lib',
        '/var/local',
        '/var/log',
        '/var/opt',
        '/var/spool',
        '/var/tmp',
        '/etc/systemd',
        '/etc/systemd/system',
        '/run/user',
    )
)
# world-writable scratch trees: anyone on the host can create a name there first, and tmpfiles cleaners delete what
# ages there, so no root-owned control file or release may live below them
SCRATCH_ROOTS = ('/tmp', '/var/tmp', '/dev/shm')
_UNSAFE_CHARS = re.compile(r'[\s\x00-\x1f\x7f]')
_DNS_LABEL = re.compile(r'^(?!-)[A-Za-z0-9-]{1,63}(?<!-)\Z')


def _json(value):
    return json.dumps(value, sort_keys=True, default=str)


def unsafe_chars(value):
    """Whether a string holds whitespace or a control character (a line break above all)."""
    return bool(_UNSAFE_CHARS.search(str(value)))


def root_dir_problem(name, path):
    """'' when ``path`` may be a root the collection owns and prunes below; else why not, naming ``name``."""
    if not isinstance(path, str) or not path.startswith('/') or unsafe_chars(path):
        return '%s must be an absolute path without spaces or control characters, such as /opt/ddtree/ml-env; got %s.' % (name, _json(path))
    parts = path.split('/')
    if '..' in parts or '.' in parts or '//' in path or (path != '/' and path.endswith('/')):
        return '%s must be a normalized path (no "..", ".", "//" or trailing "/"), such as %s; got %s.' % (
            name,
            posixpath.normpath(path) if path != '/' else '/opt/ddtree/<name>',
            _json(path),
        )
    if path in SYSTEM_ROOTS or path.count('/') < 2:
        return (
            '%s must be a directory of its own, at least two levels below / (such as /opt/ddtree/<name>): the '
            'collection creates, prunes and deletes entries below it; %s is a system or shared directory.' % (name, path)
        )
    scratch = [root for root in SCRATCH_ROOTS if path.startswith(root + '/')]
    if scratch:
        return (
            '%s must not be below %s, which every user of the host can write (and cleaners empty): root keeps files there '
            'that it runs or restores. Allowed: a directory below /var/lib, /opt or /srv, such as /var/lib/ddtree-sglang; '
            'got %s.' % (name, scratch[0], path)
        )
    return ''


def path_and_parents(paths):
    """Each absolute path of ``paths`` and its parents up to /, once each (what the host read looks at for root_owned_problems)."""
    found = []
    for path in paths if isinstance(paths, (list, tuple)) else [paths]:
        if not isinstance(path, str) or not path.startswith('/') or unsafe_chars(path):
            continue
        path = posixpath.normpath(path)
        while True:
            if path not in found:
                found.append(path)
            if path == '/':
                break
            path = posixpath.dirname(path)
    return found


def root_owned_problems(dirs, paths):
    """The problems of root's control directories on the host: ``dirs`` maps a name (a variable) to a directory, ``paths`` is
    sglang_host_facts' paths (uid and mode of each). The directory and every parent up to / that exists must be owned by
    root and not writable by group or others: root restores the units kept there into /etc/systemd/system and runs the
    script kept there, so whoever can write one of them could plant a unit or a script."""
    problems = []
    for name, directory in dirs.items():
        loose = []
        for path in path_and_parents([directory]):
            facts = (paths or {}).get(path) or {}
            if not facts.get('exists') or 'uid' not in facts:
                continue
            mode = int(str(facts.get('mode', '0')), 8)
            if facts['uid'] != 0 or mode & 0o022:
                loose.append('%s (uid %s, mode %s)' % (path, facts['uid'], facts.get('mode')))
        if loose:
            problems.append(
                '%s (%s) is not root\'s alone on the host: %s. Root restores the units kept there into '
                '/etc/systemd/system and runs the restore script, so whoever can write there could plant one. '
                'Allowed: a directory whose every existing parent up to / is owned by root and not writable by group '
                'or others (chown root and chmod go-w, or choose another directory such as /var/lib/ddtree-sglang).' % (name, directory, ', '.join(loose))
            )
    return problems


def root_dir_problems(roots):
    """The problems of a dict {variable name: root path}, in the dict's order."""
    return [p for p in (root_dir_problem(name, path) for name, path in roots.items()) if p]


def unit_value_problems(values):
    """The problems of a dict {variable name: a string or a list of strings} whose entries reach a unit or an
    EnvironmentFile verbatim: no whitespace, no control characters, no line breaks, and no trailing backslash (systemd
    joins the next line of the unit to a line that ends in one, so the directive after it would be lost)."""
    problems = []
    for name, value in values.items():
        items = value if isinstance(value, (list, tuple)) else [value]
        bad = [item for item in items if not isinstance(item, str) or unsafe_chars(item) or item.endswith('\\')]
        if bad:
            problems.append(
                '%s must hold values without spaces, tabs, line breaks or other control characters and not ending '
                'in a backslash (each reaches the unit file as one word); got %s.' % (name, ', '.join(_json(b) for b in bad))
            )
    return problems


# what an EnvironmentFile value can hold between single quotes: printable characters but a quote and a backslash
_SECRET_VALUE = re.compile(r"[^'\\\x00-\x1f\x7f]*")


def secret_values_valid(values):
    """Whether every secret of ``values`` fits an EnvironmentFile verbatim between single quotes: printable, without a
    single quote or a backslash (the one check of it; it returns only a boolean, so no secret leaves it)."""
    return all(isinstance(v, str) and _SECRET_VALUE.fullmatch(v) is not None for v in values)


def parse_booleans(values, names):
    """(``values`` with each of ``names`` it holds parsed as a boolean, problems): the one boolean parser of the collection's
    Python checks. INI ``:vars`` and ``-e name=value`` give strings, and Python reads "false" and "no" as true: a value is
    taken as Ansible's argument specs take it (true/false, yes/no, on/off, 1/0, any case), and anything else is refused."""
    parsed, problems = dict(values), []
    for name in names:
        if name not in values:
            continue
        try:
            parsed[name] = boolean(values[name], strict=True)
        except TypeError:
            problems.append(
                '%s must be a boolean (allowed values: true, false; yes/no, on/off and 1/0 are read the same); got %s.' % (name, _json(values[name]))
            )
            parsed[name] = False
    return parsed, problems


def is_loopback(host):
    """Whether ``host`` names the loopback interface: localhost, or an address in 127.0.0.0/8 or ::1."""
    text = str(host).strip()
    if text.lower() == 'localhost':
        return True
    try:
        return ipaddress.ip_address(text.strip('[]')).is_loopback
    except ValueError:
        return False


def is_host_name_or_address(host):
    """An IP address (IPv6 in brackets in a URL, bare here) or a DNS name of letters, digits and '-' labels."""
    text = str(host)
    try:
        ipaddress.ip_address(text)
        return True
    except ValueError:
        pass
    labels = text.rstrip('.').split('.')
    return 0 < len(text) <= 253 and all(_DNS_LABEL.match(label) for label in labels) and not text.replace('.', '').isdigit()


def scrub_secrets(value, secrets=None):
    """``value`` (any nesting of strings, lists and dicts) with each of ``secrets`` and the value of every
    secret flag written out in its strings masked."""
    return scrub(value, [str(s) for s in (secrets or []) if s])
