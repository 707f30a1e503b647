# -*- coding: utf-8 -*-
# Copyright: (c) 2026, ddtree.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ml-env probe: imports each module a release must provide and reports torch's CUDA view.

Not imported by the module for its functions: the module sends this file's source to the
release's interpreter (``python -I -c SOURCE MARKER IMPORTS_JSON SMOKE``), which runs main().
So it may use only the standard library, in Python 3.8 syntax. Findings go to a duplicate of
the original stdout, one JSON event a line after the marker; stdout itself is pointed at stderr
so that output of the imported packages (C extensions included) never lands between the marker
lines. module_utils/ml_env_probe.py reads and judges the events.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import importlib
import json
import os
import sys
import time
import traceback
import warnings

try:
    from importlib import metadata as _md
except ImportError:
    _md = None
# import name -> distributions, read once (packages_distributions walks every installed one)
_OWNERS = {}


class Emitter:
    def __init__(self, out, marker):
        self.out = out
        self.marker = marker

    def __call__(self, event, **kw):
        kw['event'] = event
        self.out.write(self.marker + json.dumps(kw, default=str) + '\n')
        self.out.flush()


def dist_version(name):
    try:
        return _md.version(name) if _md else None
    except Exception:  # pylint: disable=broad-except
        return None


def owners(module_name):
    if not _OWNERS:
        try:
            _OWNERS.update(_md.packages_distributions())
        except Exception:  # pylint: disable=broad-except
            pass
    names = sorted(set(_OWNERS.get(module_name.split('.')[0], [])))
    return [{'name': n, 'version': dist_version(n)} for n in names]


def library_owner(path):
    try:
        real = os.path.realpath(path)
        for dist in _md.distributions():
            for f in dist.files or []:
                if str(f).endswith(os.path.basename(real)) and os.path.realpath(str(dist.locate_file(f))) == real:
                    name = dist.metadata['Name']
                    return {'name': name, 'version': dist.version}
    except Exception:  # pylint: disable=broad-except
        pass
    return None


def import_record(name):
    """Import ``name``; what happened, with the library and its owner for an undefined symbol."""
    began = time.time()
    rec = {'name': name}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter('ignore')
            mod = importlib.import_module(name)
        version = getattr(mod, '__version__', None)
        rec.update(ok=True, version=None if version is None else str(version), file=getattr(mod, '__file__', None))
    except BaseException as e:  # pylint: disable=broad-except
        if isinstance(e, KeyboardInterrupt):
            raise
        rec.update(ok=False, error_type=type(e).__name__, error=str(e)[:4000], traceback=traceback.format_exc()[-4000:])
        text = rec['error'] + rec['traceback']
        at = text.find(': undefined symbol')
        if at > 0:
            lib = text[:at].split()[-1].strip('\'"')
            if lib.startswith('/'):
                rec['library'] = lib
                rec['library_distribution'] = library_owner(lib)
    rec['distributions'] = owners(name)
    rec['seconds'] = round(time.time() - began, 3)
    return rec


def torch_report(want_smoke):
    """torch's version, CUDA build and devices; a tiny GPU operation when want_smoke."""
    t = {
        'distribution_version': dist_version('torch'),
        'version': None,
        'cuda': None,
        'cuda_available': False,
        'cuda_warning': None,
        'device_count': 0,
        'arch_list': [],
        'devices': [],
        'error': None,
    }
    try:
        with warnings.catch_warnings():
            warnings.simplefilter('ignore')
            import torch  # pylint: disable=import-error
        t['version'] = str(torch.__version__)
        t['cuda'] = torch.version.cuda
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter('always')
            t['cuda_available'] = bool(torch.cuda.is_available())
        t['cuda_warning'] = '; '.join(str(w.message) for w in seen)[:2000] or None
        t['device_count'] = torch.cuda.device_count() if t['cuda_available'] else 0
        t['arch_list'] = list(torch.cuda.get_arch_list()) if t['cuda_available'] else []
        devices = []
        for i in range(t['device_count']):
            p = torch.cuda.get_device_properties(i)
            devices.append(
                {
                    'index': i,
                    'name': p.name,
                    'capability': '%d.%d' % (p.major, p.minor),
                    'total_memory_mib': int(p.total_memory // (1024 * 1024)),
                    'multi_processor_count': p.multi_processor_count,
                }
            )
        t['devices'] = devices
        if devices and want_smoke:
            try:
                x = torch.ones(8, device='cuda:0')
                value = float((x * 2).sum().item())
                torch.cuda.synchronize()
                t['smoke'] = {'ok': value == 16.0, 'error': None if value == 16.0 else 'got %r, expected 16.0' % value}
            except Exception as e:  # pylint: disable=broad-except
                t['smoke'] = {'ok': False, 'error': '%s: %s' % (type(e).__name__, str(e)[:2000])}
    except BaseException as e:  # pylint: disable=broad-except
        if isinstance(e, KeyboardInterrupt):
            raise
        if t['distribution_version'] is not None or not isinstance(e, ImportError):
            t['error'] = '%s: %s' % (type(e).__name__, str(e)[:2000])
    return t


def probe(emit, imports, want_smoke):
    """The events of one probe: start, a step and a result per import, the torch report, done."""
    emit('start', executable=sys.executable, version=sys.version.split()[0], prefix=sys.prefix)
    for name in imports:
        # announced first: an import that kills the interpreter is then named by the last step
        emit('step', name=name)
        emit('import', **import_record(name))
    emit('step', name='torch report')
    emit('torch', **torch_report(want_smoke))
    emit('done')


def main(argv):
    marker, imports, want_smoke = argv[0], json.loads(argv[1]), argv[2] == '1'
    out = os.fdopen(os.dup(1), 'w')
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    probe(Emitter(out, marker), imports, want_smoke)


if __name__ == '__main__':
    main(sys.argv[1:])
