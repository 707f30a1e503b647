# -*- coding: utf-8 -*-
# Copyright: (c) 2026, ddtree.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a deploy's checks and plan read from one host, gathered by one module call.

Every reader here takes its I/O as arguments (a command runner, a /proc root, file paths) so
that unit tests give it files in a temporary directory. The module sglang_host_facts is the
argument spec and these calls; the assertions run on the controller (filter sglang_validate).
"""

from __future__ import annotations

import errno
import grp
import hashlib
import json
import os
import pwd
import re
import stat

from ansible_collections.ddtree.sglang.plugins.module_utils import proc_net, systemd

# who holds the port: the same reading as module sglang_port_check
from ansible_collections.ddtree.sglang.plugins.module_utils.proc_net import port_check, process_unit  # noqa: F401 pylint: disable=unused-import

# --- nvidia-smi (the parsing of module gpu_facts, which may import it from here) -------------
QUERY_FIELDS = ('index', 'name', 'uuid', 'memory.total', 'driver_version', 'compute_cap')
_MISSING = ('', '[N/A]', 'N/A', '[Not Supported]', '[Unknown Error]', '[Insufficient Permissions]')
_CUDA_VERSION = re.compile(r'^\s*CUDA Version\s*:\s*(\S+)', re.MULTILINE)
# one per GPU in nvidia-smi -q, in index order: the N of the GPU's device node /dev/nvidiaN
_MINOR_NUMBER = re.compile(r'^\s*Minor Number\s*:\s*(\S+)', re.MULTILINE)
_SIMULATED = 'SIMULATED'
NVIDIA_SMI_DIRS = ['/usr/bin', '/usr/local/bin', '/usr/local/nvidia/bin']


def query_argv(binary, fields=QUERY_FIELDS):
    return [binary, '--query-gpu=%s' % ','.join(fields), '--format=csv,noheader,nounits']


def _value(text):
    text = (text or '').strip()
    return None if text in _MISSING else text


def _int(text):
    try:
        return int(float(text))
    except (TypeError, ValueError):
        return None


def parse_query_csv(text, fields=QUERY_FIELDS):
    """--query-gpu csv (noheader, nounits) as GPU dicts; a comma in a name does not shift columns."""
    gpus = []
    width = len(fields)
    name_at = fields.index('name')
    for line in text.splitlines():
        if not line.strip():
            continue
        cells = [c.strip() for c in line.split(',')]
        if len(cells) < width:
            raise ValueError('nvidia-smi csv line has %d fields, expected %d: %r' % (len(cells), width, line))
        if len(cells) > width:
            extra = len(cells) - width
            cells = cells[:name_at] + [', '.join(cells[name_at : name_at + extra + 1])] + cells[name_at + extra + 1 :]
        row = dict(zip(fields, cells))
        gpus.append(
            {
                'index': _int(row.get('index')),
                'name': _value(row.get('name', '')) or 'unknown',
                'uuid': _value(row.get('uuid', '')),
                'memory_total_mib': _int(_value(row.get('memory.total', ''))),
                'compute_cap': _value(row.get('compute_cap', '')),
                'driver_version': _value(row.get('driver_version', '')),
            }
        )
    gpus.sort(key=lambda g: (g['index'] is None, g['index']))
    return gpus


def parse_cuda_version(text):
    found = _CUDA_VERSION.search(text or '')
    return _value(found.group(1)) if found else None


def parse_minor_numbers(text):
    """The Minor Number of each GPU section of nvidia-smi -q, in order (None where it says N/A)."""
    return [_int(_value(m)) for m in _MINOR_NUMBER.findall(text or '')]


def build_gpu_facts(csv_text, q_text, fields=QUERY_FIELDS):
    """The gpu_facts fact (the same keys module gpu_facts returns)."""
    gpus = parse_query_csv(csv_text, fields)
    minors = parse_minor_numbers(q_text)
    for position, gpu in enumerate(gpus):
        # -q lists the GPUs in index order; a count that differs matches nothing
        gpu['minor_number'] = minors[position] if len(minors) == len(gpus) else None
        number = gpu['minor_number'] if gpu['minor_number'] is not None else gpu['index']
        gpu['device_node'] = None if number is None else '/dev/nvidia%d' % number
    drivers = [g.pop('driver_version') for g in gpus]
    return {
        'count': len(gpus),
        'driver_version': next((d for d in drivers if d), None),
        'cuda_version': parse_cuda_version(q_text),
        'gpus': gpus,
        'simulated': _SIMULATED in (q_text or ''),
        'gpu_classes': sorted(set(g['name'] for g in gpus)),
    }


def read_gpus(run, binary):
    """(gpu_facts, None) or (None, the message module gpu_facts fails with). ``binary`` is resolved."""
    if not binary:
        return None, (
            'nvidia-smi not found on this host (PATH, /usr/bin, /usr/local/bin, /usr/local/nvidia/bin): '
            'install the NVIDIA driver utilities, or set nvidia_smi_path'
        )
    fields = QUERY_FIELDS
    rc, out, err = run(query_argv(binary, fields))
    if rc != 0 and 'compute_cap' in (err + out):
        # drivers before 510 reject the compute_cap field; the rest is still worth having
        fields = tuple(f for f in QUERY_FIELDS if f != 'compute_cap')
        rc, out, err = run(query_argv(binary, fields))
    if rc != 0:
        return None, (
            '%s --query-gpu failed (rc=%d): %s. Check that the NVIDIA driver is loaded (lsmod | grep nvidia) '
            'and that the GPUs are visible to this host.' % (binary, rc, (err or out).strip() or 'no output')
        )
    q_rc, q_out, q_err = run([binary, '-q'])
    if q_rc != 0:
        return None, '%s -q failed (rc=%d): %s' % (binary, q_rc, (q_err or q_out).strip() or 'no output')
    try:
        return build_gpu_facts(out, q_out, fields), None
    except ValueError as e:
        return None, 'cannot parse nvidia-smi output: %s' % e


# --- files ----------------------------------------------------------------------------------
def path_facts(path):
    """exists / isdir / isreg / executable of a path (following links), without reading it."""
    try:
        st = os.stat(path)
    except OSError:
        return {'exists': False, 'isdir': False, 'isreg': False, 'executable': False}
    return {
        'exists': True,
        'isdir': os.path.isdir(path),
        'isreg': os.path.isfile(path),
        'executable': os.access(path, os.X_OK) and not os.path.isdir(path),
        'size': st.st_size,
        'mode': '%04o' % (st.st_mode & 0o7777),
        'uid': st.st_uid,
        'gid': st.st_gid,
    }


def sha256_of(path):
    digest = hashlib.sha256()
    try:
        with open(path, 'rb') as handle:
            for block in iter(lambda: handle.read(1 << 16), b''):
                digest.update(block)
    except (IOError, OSError):
        return None
    return digest.hexdigest()


# a config.json of any model is well below this; root reads it, so it reads no more
CONFIG_MAX_BYTES = 16 << 20


def read_regular_file(path, limit):
    """The text of ``path`` when it is a regular file (a link to one counts: the Hub cache links to its blobs) of at most
    ``limit`` bytes; OSError otherwise. Root reads it: opened without blocking and checked on the open descriptor, a FIFO
    or a device planted as config.json is neither waited on nor read."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, 'O_NOCTTY', 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, 'not a regular file')
        if st.st_size > limit:
            raise OSError(errno.EFBIG, 'larger than %d bytes' % limit)
        with os.fdopen(fd, 'rb') as handle:
            fd = None
            return handle.read(limit + 1).decode('utf-8')
    finally:
        if fd is not None:
            os.close(fd)


def model_dir_facts(directory):
    """A model directory: whether it is one, its config.json (or why it cannot be read) and, for a
    config.json without num_parameters, the size of its *.safetensors files (the planner's weights)."""
    found = {'isdir': os.path.isdir(directory)}
    path = os.path.join(directory, 'config.json')
    try:
        found['config'] = json.loads(read_regular_file(path, CONFIG_MAX_BYTES))
    except (IOError, OSError) as e:
        found['error'] = '%s: %s' % (path, e.strerror or e)
        return found
    except ValueError as e:
        found['error'] = '%s is not JSON: %s' % (path, e)
        return found
    if not isinstance(found['config'], dict) or 'num_parameters' not in found['config']:
        total = 0
        try:
            for name in os.listdir(directory):
                full = os.path.join(directory, name)
                if name.endswith('.safetensors') and os.path.isfile(full):
                    total += os.path.getsize(full)
        except OSError:
            pass
        found['safetensors_bytes'] = total
    return found


# --- ml_env releases --------------------------------------------------------------------------
RELEASE_MANIFEST = 'ddtree-release.json'
_RELEASE_ID = re.compile(r'^[0-9a-f]{8,64}$')


def release_facts(root):
    """{current: id or None, releases: {id: {complete, manifest}}} of an ml_env root."""
    link = os.path.join(root, 'current')
    current = os.path.basename(os.path.normpath(os.readlink(link))) if os.path.islink(link) else None
    releases = {}
    base = os.path.join(root, 'releases')
    try:
        names = os.listdir(base)
    except OSError:
        names = []
    for name in names:
        path = os.path.join(base, name)
        if not _RELEASE_ID.match(name) or not os.path.isdir(path) or os.path.islink(path):
            continue
        manifest = None
        try:
            with open(os.path.join(path, RELEASE_MANIFEST)) as handle:
                manifest = json.load(handle)
        except (IOError, OSError, ValueError):
            pass
        releases[name] = {'complete': os.path.exists(os.path.join(path, RELEASE_MANIFEST)), 'manifest': manifest}
    return {'current': current, 'releases': releases}


# --- users ------------------------------------------------------------------------------------
def user_facts(user, groups):
    """Whether the user exists (with its group, home, shell and supplementary groups, which the role's
    user task would set) and which of ``groups`` exist on the host."""
    found = {'name': user, 'exists': False}
    try:
        entry = pwd.getpwnam(user)
    except KeyError:
        entry = None
    if entry is not None:
        try:
            group = grp.getgrgid(entry.pw_gid).gr_name
        except KeyError:
            group = None
        found.update(
            exists=True,
            group=group,
            home=entry.pw_dir,
            shell=entry.pw_shell,
            uid=entry.pw_uid,
            comment=entry.pw_gecos,
            groups=sorted(g.gr_name for g in grp.getgrall() if user in g.gr_mem),
        )
    existing = []
    for name in groups:
        try:
            grp.getgrnam(name)
            existing.append(name)
        except KeyError:
            pass
    found['groups_existing'] = existing
    return found


def user_access_argv(user, argv):
    """argv run as ``user`` with its groups (setpriv, util-linux), as the service would run."""
    return ['setpriv', '--reuid', user, '--regid', user, '--init-groups', '--'] + list(argv)


def user_access(run, user, dirs, python):
    """What the service user cannot use, as the role words it: each directory it cannot read and
    search, and the interpreter it cannot start with why ('/x/bin/python (Permission denied)')."""
    problems = []
    for directory in dirs:
        rc, out, err = run(user_access_argv(user, ['test', '-r', directory, '-a', '-x', directory]))
        if rc != 0:
            problems.append(directory)
    if python:
        rc, out, err = run(user_access_argv(user, [python, '-I', '-c', '']))
        if rc != 0:
            problems.append('%s (%s)' % (python, (err or '').strip() or 'exit %d' % rc))
    return problems


# --- the port ---------------------------------------------------------------------------------
def read_record(path):
    """A small JSON record the role keeps (the confirmation of a unit), or None when absent or unreadable."""
    try:
        with open(path, 'r') as handle:
            record = json.load(handle)
    except (IOError, OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def unit_facts(run, unit, unit_path, record_path=None):
    """The unit's systemd state (ActiveState, MainPID, ...), its file's sha256, the PIDs of its cgroup and,
    with ``record_path``, the record of the last unit a healthy verdict confirmed (``confirmed``)."""
    found = {
        'name': unit,
        'path': unit_path,
        'exists': os.path.isfile(unit_path) if unit_path else False,
        'sha256': sha256_of(unit_path) if unit_path else None,
        'state': {},
        'pids': [],
    }
    if record_path:
        found['confirmed'] = read_record(record_path)
    if unit:
        rc, out, err = run(systemd.systemctl_show_argv(unit))
        if rc == 0:
            state = systemd.parse_systemctl_show(out)
            found['state'] = state
            if state.get('MainPID') or state.get('ActiveState') in ('active', 'activating', 'deactivating', 'reloading'):
                found['pids'] = sorted(proc_net.unit_pids(state.get('ControlGroup'), state.get('MainPID')))
    return found


# the version line (ml_env's release id input, unchanged), then whether `python -m venv` can work: Debian ships
# ensurepip, which venv needs for pip, in python3-venv, not in python3
_INTERPRETER_PROBE = (
    'import importlib.util, platform, sys; print(sys.version.split()[0], platform.machine()); '
    "print('venv' if importlib.util.find_spec('venv') and importlib.util.find_spec('ensurepip') else 'no-venv')"
)


def interpreter_facts(run, python):
    """(version, error, venv) of an interpreter: '3.11.2 x86_64' (ml_env's release id input), or None and why it does
    not run; venv is whether it can create a venv with pip (venv and ensurepip importable), None when it does not run."""
    try:
        rc, out, err = run([python, '-c', _INTERPRETER_PROBE])
    except OSError as e:
        return None, str(e), None
    if rc != 0:
        return None, (err or out or 'exit %d' % rc).strip(), None
    lines = out.strip().splitlines()
    return lines[0].strip(), None, len(lines) > 1 and lines[1].strip() == 'venv'


def interpreter_version(run, python):
    """'3.11.2 x86_64' of an interpreter, or None and why it does not run (ml_env's release id input)."""
    version, error, _venv = interpreter_facts(run, python)
    return version, error
