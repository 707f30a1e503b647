# -*- coding: utf-8 -*-
# Copyright: (c) 2026, ddtree.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A file replaced whole: written beside its final name, then renamed over it, so that a reader (a scrape, the next
run) sees the old file or the new one, never half of one."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import tempfile


def write_atomically(path, text, mode, prefix):
    """Write ``text`` to ``path`` with permission bits ``mode``; the temporary file is ``<prefix>*.tmp`` in the same
    directory (a name no reader of ``path``'s kind picks up) and is removed when the write fails."""
    handle, temporary = tempfile.mkstemp(prefix=prefix, suffix='.tmp', dir=os.path.dirname(path))
    try:
        with os.fdopen(handle, 'w') as stream:
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise
