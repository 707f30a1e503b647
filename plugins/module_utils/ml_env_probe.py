# -*- coding: utf-8 -*-
# Copyright: (c) 2026, ddtree.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reading what the ml-env probe saw in a release's interpreter, and judging it.

Pure functions (no I/O but a look for the GPU device files), so that the wording an operator reads for an ABI mismatch, a missing
CUDA or a wrong GPU is tested with the error texts torch and the dynamic loader really print.
The probe itself (a program run by the release's Python) is probes/ml_env.py.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import glob
import json
import os
import re
import signal

# The probe writes its findings on their own file descriptor, one JSON object a line after this
# marker, so whatever an imported package prints cannot be mistaken for a result.
MARKER = 'DDTREE-PROBE '

CAUSES = ('abi_mismatch', 'import_error', 'cuda_unavailable', 'capability_mismatch', 'probe_failed')

# glibc's wording, also when Python's extension loader or ctypes re-raises it
_UNDEFINED_SYMBOL = re.compile(r'(?:(?P<library>/\S+?): )?undefined symbol: ?(?P<symbol>[^\s,;:\'"]+)')
# c10, at, torch and caffe2 are the C++ namespaces libtorch exports; a mangled name inside one
# of them can only be satisfied by torch's own libraries
_TORCH_SYMBOL = re.compile(r'^_Z(?:T[VIST])?N[rVK]*[RO]?(?:3c10|2at|5torch|6caffe2)')
_ARCH = re.compile(r'^(sm|compute)_(\d+)([a-z]?)$')


def undefined_symbol(text):
    """(symbol, library or None) when a loader error names a missing symbol, else None."""
    found = _UNDEFINED_SYMBOL.search(text or '')
    if not found:
        return None
    return found.group('symbol'), found.group('library')


def is_torch_symbol(symbol):
    return bool(_TORCH_SYMBOL.match(symbol or ''))


def parse_capability(text):
    """'9.0' -> (9, 0); None when it is not major.minor."""
    try:
        major, minor = str(text).strip().split('.')
        return int(major), int(minor)
    except (AttributeError, ValueError):
        return None


def arch_runs_on(arch, capability):
    """Whether code built for one torch arch entry (sm_90, sm_90a, compute_120) runs on a GPU.

    CUDA's rules: a cubin runs on its own major at an equal or higher minor; an arch-specific
    ('a') cubin only on exactly its capability; PTX (compute_XY) is compiled by the driver for
    any capability at or above it.
    """
    found = _ARCH.match(arch or '')
    cap = parse_capability(capability)
    if not found or cap is None:
        return False
    kind, digits, suffix = found.groups()
    built = (int(digits[:-1] or '0'), int(digits[-1]))
    if kind == 'compute':
        return cap >= built
    if suffix == 'a':
        return cap == built
    return cap[0] == built[0] and cap[1] >= built[1]


def parse_probe_output(text):
    """Collect the probe's events into one report.

    Returns (report, in_progress): in_progress names the step the probe had announced but not
    finished when its output ended (the import that crashed or hung), or None.
    """
    report = {'python': None, 'imports': [], 'torch': None, 'done': False}
    in_progress = None
    for line in (text or '').splitlines():
        if not line.startswith(MARKER):
            continue
        try:
            event = json.loads(line[len(MARKER) :])
        except ValueError:
            continue
        kind = event.pop('event', None)
        if kind == 'start':
            report['python'] = event
        elif kind == 'step':
            in_progress = event.get('name')
        elif kind == 'import':
            report['imports'].append(event)
            in_progress = None
        elif kind == 'torch':
            report['torch'] = event
            in_progress = None
        elif kind == 'done':
            report['done'] = True
            in_progress = None
    return report, in_progress


def _package(record):
    dists = record.get('distributions') or []
    if record.get('library_distribution'):
        dists = [record['library_distribution']] + [d for d in dists if d != record['library_distribution']]
    if not dists:
        return 'no installed package provides it'
    return ', '.join('package %s %s' % (d.get('name'), d.get('version') or '(version unknown)') for d in dists)


def _torch_text(torch):
    torch = torch or {}
    version = torch.get('version') or torch.get('distribution_version')
    return ('torch %s' % version) if version else 'torch (not installed)'


def import_failure(record, torch, where):
    """The failure for one import that did not succeed."""
    name = record.get('name')
    error = '%s: %s' % (record.get('error_type') or 'Error', record.get('error') or '')
    text = ' '.join([record.get('error') or '', record.get('traceback') or ''])
    missing = undefined_symbol(text)
    failure = {'import': name, 'distributions': record.get('distributions') or [], 'error': error.strip()}
    if missing:
        symbol, library = missing
        failure.update(cause='abi_mismatch', symbol=symbol, library=library or record.get('library'))
        torch_text = _torch_text(torch)
        if is_torch_symbol(symbol):
            why = (
                "that the installed %s does not export: the overlay's wheels were built against another torch; "
                "pin builds made for %s (or the torch they were built for) in the matrix entry" % (torch_text, torch_text)
            )
        else:
            why = (
                "that none of the libraries it loads exports: it was built against other versions of its dependencies "
                "than this release holds (%s); pin a build made for this set" % torch_text
            )
        lib = failure['library']
        failure['msg'] = 'ABI mismatch in %s: import %s (%s) needs symbol %s%s %s' % (
            where,
            name,
            _package(record),
            symbol,
            (' (from %s)' % lib) if lib else '',
            why,
        )
        return failure
    failure['cause'] = 'import_error'
    if record.get('error_type') == 'ModuleNotFoundError' and not record.get('distributions'):
        failure['msg'] = 'import %s failed in %s: %s; no installed package provides it: add its wheel to the overlay or the base pins' % (name, where, error)
    else:
        failure['msg'] = 'import %s failed in %s (%s): %s' % (name, where, _package(record), error)
    return failure


def cuda_failures(torch, expect_cuda, expect_compute_cap, where):
    """CUDA and GPU problems seen through torch; nothing when CUDA is not expected and absent."""
    torch = torch or {}
    failures = []
    label = _torch_text(torch)
    if expect_cuda:
        if torch.get('error'):
            failures.append(
                {'cause': 'cuda_unavailable', 'error': torch['error'], 'msg': 'CUDA expected in %s but torch cannot be imported: %s' % (where, torch['error'])}
            )
            return failures
        if not torch.get('version'):
            failures.append(
                {'cause': 'cuda_unavailable', 'msg': 'CUDA expected in %s but no torch is installed there: the overlay must bring a CUDA torch' % where}
            )
            return failures
        if not torch.get('cuda'):
            failures.append(
                {
                    'cause': 'cuda_unavailable',
                    'msg': 'CUDA expected in %s but %s is a CPU-only build (torch.version.cuda is None): '
                    'the matrix entry must pin a CUDA build of torch' % (where, label),
                }
            )
            return failures
        if not torch.get('cuda_available'):
            warning = torch.get('cuda_warning')
            failures.append(
                {
                    'cause': 'cuda_unavailable',
                    'error': warning,
                    'msg': 'CUDA expected in %s but %s (CUDA %s) reports torch.cuda.is_available() = False%s: '
                    'check the driver (nvidia-smi), that its CUDA version is at least %s, and '
                    'CUDA_VISIBLE_DEVICES' % (where, label, torch.get('cuda'), (' (%s)' % warning) if warning else '', torch.get('cuda')),
                }
            )
            return failures
        if not torch.get('device_count'):
            failures.append(
                {
                    'cause': 'cuda_unavailable',
                    'msg': 'CUDA expected in %s but %s sees no GPU (torch.cuda.device_count() = 0): check CUDA_VISIBLE_DEVICES' % (where, label),
                }
            )
            return failures
    devices = torch.get('devices') or []
    arch_list = torch.get('arch_list') or []
    for device in devices:
        cap = device.get('capability')
        if expect_compute_cap and parse_capability(cap) != parse_capability(expect_compute_cap):
            failures.append(
                {
                    'cause': 'capability_mismatch',
                    'device': device.get('index'),
                    'msg': 'GPU %s (%s) in %s has compute capability %s, the matrix entry expects %s: '
                    'the wheel set was chosen for other GPUs' % (device.get('index'), device.get('name'), where, cap, expect_compute_cap),
                }
            )
        elif arch_list and not any(arch_runs_on(arch, cap) for arch in arch_list):
            failures.append(
                {
                    'cause': 'capability_mismatch',
                    'device': device.get('index'),
                    'msg': '%s in %s was built for %s (torch.cuda.get_arch_list()); none of them runs on GPU %s '
                    '(%s) of compute capability %s: pin a torch build with kernels for %s'
                    % (label, where, ', '.join(arch_list), device.get('index'), device.get('name'), cap, cap),
                }
            )
    smoke = torch.get('smoke') or {}
    if devices and smoke and not smoke.get('ok'):
        error = smoke.get('error') or 'wrong result'
        cause = 'capability_mismatch' if 'no kernel image' in error else 'cuda_unavailable'
        failures.append({'cause': cause, 'error': error, 'msg': 'a CUDA operation on GPU 0 failed in %s with %s: %s' % (where, label, error)})
    return failures


def judge(report, imports, expect_cuda, expect_compute_cap=None, where='the release', in_progress=None, exit_text=None):
    """Every failure the report shows, in the order an operator should fix them (imports first)."""
    failures = []
    seen = set()
    for record in report.get('imports') or []:
        seen.add(record.get('name'))
        if not record.get('ok'):
            failures.append(import_failure(record, report.get('torch'), where))
    if not report.get('done'):
        step = in_progress or 'start-up'
        what = ('while importing %s' % step) if step in imports else ('during %s' % step)
        cause = 'import_error' if step in imports else 'probe_failed'
        failure = {
            'cause': cause,
            'import': step if step in imports else None,
            'msg': 'the probe in %s ended %s %s' % (where, exit_text or 'before reporting', what),
        }
        if step in imports:
            failure['msg'] += ': the package crashed the interpreter or hung on import'
        failures.append(failure)
        return failures
    missing = [name for name in imports if name not in seen]
    if missing:
        failures.append({'cause': 'probe_failed', 'msg': 'the probe in %s did not report the imports %s' % (where, ', '.join(missing))})
    failures.extend(cuda_failures(report.get('torch'), expect_cuda, expect_compute_cap, where))
    return failures


def summary(failures):
    if not failures:
        return None
    if len(failures) == 1:
        return failures[0]['msg']
    return '%d problems: %s' % (len(failures), ' | '.join('%d) %s' % (i + 1, f['msg']) for i, f in enumerate(failures)))


def auto_expect_cuda():
    """Whether this host has an NVIDIA GPU, and why it is thought so."""
    if os.path.exists('/dev/nvidiactl'):
        return True, '/dev/nvidiactl exists'
    if glob.glob('/proc/driver/nvidia/gpus/*'):
        return True, '/proc/driver/nvidia/gpus lists a GPU'
    return False, 'no /dev/nvidiactl and no GPU under /proc/driver/nvidia/gpus'


def where_of(python):
    root = os.path.dirname(os.path.dirname(python))
    if os.path.exists(os.path.join(root, 'pyvenv.cfg')):
        return 'the release at %s' % root
    return 'the environment of %s' % python


def exit_text(rc, timed_out, timeout):
    if timed_out:
        return 'after the %d s timeout' % timeout
    if rc is not None and rc < 0:
        try:
            name = signal.Signals(-rc).name
        except ValueError:
            name = 'signal %d' % -rc
        return 'when it was killed by %s (rc %d)' % (name, rc)
    return 'with exit code %s before reporting' % rc
