#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, ddtree.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: ml_env_release
short_description: Query, activate and prune side-by-side ml-env releases
version_added: "0.3.0"
description:
  - An ml-env root holds releases side by side in C(<root>/releases/<id>), each a venv whose
    provenance manifest C(ddtree-release.json) is written last, so a release without it is an
    unfinished build. C(<root>/current) links to the release the service last ran healthy.
  - C(state=query) reports the releases, the current one, and the manifest of I(release).
  - C(state=current) points C(current) at I(release) (atomically, by renaming a new link over the old).
  - C(state=pruned) removes releases beyond the newest I(keep), never the current one, never
    I(release), and never one whose path appears in a file under I(referenced_in) (the systemd
    units and the last known good copies), so a rollback always finds its release. An unfinished
    release goes only once it is older than I(unfinished_grace_s), since until then another run may be building it.
  - C(state=absent) removes the unfinished or failed release I(release); it refuses the current one
    and referenced ones.
  - A directory under C(<root>/releases) is a release only when it carries the collection's marks, the manifest or
    the C(ddtree-requirements) directory the build creates with the release directory. An operator's directory with a
    hex name is never listed, pruned or removed.
author:
  - ddtree.sglang maintainers (@ddtree)
options:
  root:
    description: The ml-env root.
    type: path
    required: true
  release:
    description: A release id (hex digits).
    type: str
  state:
    description: What to do.
    type: str
    choices: [query, current, pruned, absent]
    default: query
  keep:
    description: With C(state=pruned), how many releases to keep besides the protected ones (newest first).
    type: int
    default: 3
  unfinished_grace_s:
    description:
      - With C(state=pruned), seconds an unfinished release (no manifest) is left alone after it was last modified,
        since another run may still be building it; older ones are left-overs of failed builds and go.
    type: int
    default: 21600
  referenced_in:
    description:
      - Files or directories whose files are searched for C(<root>/releases/<id>); a release found
        there is never pruned or removed.
    type: list
    elements: path
    default: [/etc/systemd/system]
attributes:
  check_mode:
    description: Reports what it would change and changes nothing.
    support: full
  diff_mode:
    description: No diff.
    support: none
notes:
  - The module only touches C(<root>/releases) and C(<root>/current).
'''

EXAMPLES = r'''
- name: Is release 0123456789abcdef complete?
  ddtree.sglang.ml_env_release:
    root: /opt/ddtree/ml-env
    release: 0123456789abcdef
  register: ml_env_found

- name: Make it current and keep three older ones plus what units still use
  ddtree.sglang.ml_env_release:
    root: /opt/ddtree/ml-env
    release: 0123456789abcdef
    state: current

- name: Prune
  ddtree.sglang.ml_env_release:
    root: /opt/ddtree/ml-env
    release: 0123456789abcdef
    state: pruned
    keep: 3
    referenced_in: [/etc/systemd/system, /var/lib/ddtree-sglang]
'''

RETURN = r'''
current:
  description: Id of the release C(current) points at (after the change), or null.
  returned: always
  type: str
  sample: 0123456789abcdef
release:
  description: The release named by I(release).
  returned: when I(release) is given
  type: dict
  contains:
    id:
      description: Its id.
      type: str
    path:
      description: Its directory.
      type: str
    exists:
      description: Whether the directory exists.
      type: bool
    complete:
      description: Whether its manifest exists (the build finished).
      type: bool
    manifest:
      description: The provenance manifest (versions, sha256 of every artifact, patches), or null.
      type: dict
releases:
  description: Every release directory, newest first.
  returned: always
  type: list
  elements: dict
  contains:
    id:
      description: Release id.
      type: str
    complete:
      description: Manifest present.
      type: bool
    current:
      description: C(current) points here.
      type: bool
    referenced:
      description: A unit or last known good copy names it.
      type: bool
    mtime:
      description: Modification time of the directory (epoch seconds).
      type: float
removed:
  description: Ids of the releases removed (or that would be, in check mode).
  returned: always
  type: list
  elements: str
'''

import binascii
import json
import os
import re
import shutil
import time

from ansible.module_utils.basic import AnsibleModule

MANIFEST = 'ddtree-release.json'
# made with the release directory, before its venv (roles/ml_env/tasks/build.yml): an unfinished build carries it too
MARKER = 'ddtree-requirements'
ID_RE = re.compile(r'^[0-9a-f]{8,64}$')


def read_manifest(path):
    try:
        with open(os.path.join(path, MANIFEST)) as f:
            return json.load(f)
    except (IOError, OSError, ValueError):
        return None


def current_id(root):
    link = os.path.join(root, 'current')
    if not os.path.islink(link):
        return None
    return os.path.basename(os.path.normpath(os.readlink(link)))


def referenced_ids(root, places):
    """Release ids named as <root>/releases/<id> in any file under places."""
    pattern = re.compile(re.escape(os.path.join(root, 'releases')) + r'/([0-9a-f]{8,64})')
    found = set()
    for place in places:
        files = []
        if os.path.isfile(place):
            files.append(place)
        elif os.path.isdir(place):
            for dirpath, dirnames, filenames in os.walk(place):
                files.extend(os.path.join(dirpath, name) for name in filenames)
        for path in files:
            try:
                if os.path.getsize(path) > 1 << 20:
                    continue
                with open(path, 'rb') as f:
                    text = f.read().decode('utf-8', 'replace')
            except (IOError, OSError):
                continue
            found.update(pattern.findall(text))
    return found


def is_ours(path):
    """Whether a directory under releases/ is one of this collection's releases (its manifest, or the build's marker)."""
    return os.path.exists(os.path.join(path, MANIFEST)) or os.path.isdir(os.path.join(path, MARKER))


def list_releases(root, places):
    base = os.path.join(root, 'releases')
    current = current_id(root)
    referenced = referenced_ids(root, places)
    releases = []
    if os.path.isdir(base):
        for name in os.listdir(base):
            path = os.path.join(base, name)
            if not ID_RE.match(name) or not os.path.isdir(path) or os.path.islink(path) or not is_ours(path):
                continue
            releases.append(
                {
                    'id': name,
                    'complete': os.path.exists(os.path.join(path, MANIFEST)),
                    'current': name == current,
                    'referenced': name in referenced,
                    'mtime': os.stat(path).st_mtime,
                }
            )
    releases.sort(key=lambda r: (r['mtime'], r['id']), reverse=True)
    return releases


def prune_plan(releases, keep, release=None, now=None, unfinished_grace_s=0):
    """Ids to remove: beyond the newest `keep`, never current, named or referenced ones, never an
    unfinished one modified in the last `unfinished_grace_s` seconds (another run may be building it)."""
    protected = set(r['id'] for r in releases if r['current'] or r['referenced'])
    if release:
        protected.add(release)
    kept = 0
    remove = []
    for r in releases:
        if r['id'] in protected:
            continue
        if r['complete'] and kept < keep:
            kept += 1
            continue
        if not r['complete'] and now is not None and now - r['mtime'] < unfinished_grace_s:
            continue
        remove.append(r['id'])
    return remove


def set_current(root, release):
    link = os.path.join(root, 'current')
    # a name of this call's own: two switches at once never share (or delete) one temp link
    tmp = '%s.new.%d.%s' % (link, os.getpid(), binascii.hexlify(os.urandom(4)).decode('ascii'))
    os.symlink(os.path.join('releases', release), tmp)
    # rename over the old link: a reader sees the old or the new release, never none
    os.rename(tmp, link)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            root=dict(type='path', required=True),
            release=dict(type='str'),
            state=dict(type='str', default='query', choices=['query', 'current', 'pruned', 'absent']),
            keep=dict(type='int', default=3),
            unfinished_grace_s=dict(type='int', default=21600),
            referenced_in=dict(type='list', elements='path', default=['/etc/systemd/system']),
        ),
        required_if=[('state', 'current', ['release']), ('state', 'absent', ['release'])],
        supports_check_mode=True,
    )
    root = module.params['root'].rstrip('/') or '/'
    release = module.params['release']
    state = module.params['state']
    if release is not None and not ID_RE.match(release):
        module.fail_json(msg='release must be a release id (8-64 lowercase hex digits), got %r' % release)
    if module.params['keep'] < 0:
        module.fail_json(msg='keep must be 0 or more, got %d' % module.params['keep'])

    places = module.params['referenced_in']
    releases = list_releases(root, places)
    changed = False
    removed = []
    release_path = os.path.join(root, 'releases', release) if release else None

    if state == 'current':
        if not os.path.exists(os.path.join(release_path, MANIFEST)):
            module.fail_json(msg='release %s is not complete (no %s in %s): refusing to make it current' % (release, MANIFEST, release_path))
        if current_id(root) != release:
            changed = True
            if not module.check_mode:
                set_current(root, release)
    elif state == 'pruned':
        removed = prune_plan(releases, module.params['keep'], release, time.time(), module.params['unfinished_grace_s'])
    elif state == 'absent' and os.path.isdir(release_path):
        if not is_ours(release_path):
            module.fail_json(
                msg='%s is not a release of this collection (neither %s nor %s/ in it): refusing to remove it; '
                'move it out of %s/releases' % (release_path, MANIFEST, MARKER, root)
            )
        info = [r for r in releases if r['id'] == release]
        if info and (info[0]['current'] or info[0]['referenced']):
            module.fail_json(
                msg='release %s is %s: refusing to remove it' % (release, 'current' if info[0]['current'] else 'named by a unit or a last known good copy')
            )
        removed = [release]

    for name in removed:
        changed = True
        if not module.check_mode:
            shutil.rmtree(os.path.join(root, 'releases', name))

    if changed and not module.check_mode:
        releases = list_releases(root, places)
    result = dict(changed=changed, current=current_id(root), releases=releases, removed=removed)
    if release:
        result['release'] = dict(
            id=release,
            path=release_path,
            exists=os.path.isdir(release_path),
            complete=os.path.exists(os.path.join(release_path, MANIFEST)),
            manifest=read_manifest(release_path),
        )
    module.exit_json(**result)


if __name__ == '__main__':
    main()
