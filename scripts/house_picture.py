"""The house's picture: how the collection's Python files import one another and its task files include one another.

    python scripts/house_picture.py [ROOT]        (ROOT: a checkout, default this one)
    python scripts/house_picture.py --write|--check   (docs/dev/house.md's generated part, between its markers)

Prints, as markdown: every import between the collection's own Python files (plugins/), grouped by kind; the
imports that run back (a filter importing a filter; module_utils importing a plugin); files over 400 lines and
whether they say why at their top; every include of a task file and role entry point (include_tasks,
import_tasks, include_role, import_role with tasks_from); the roles that call back into a role that called
them; and the places that take the host lock. docs/dev/house.md is its output for this tree.
"""

import ast
import os
import re
import sys

import yaml

PREFIX = 'ansible_collections.ddtree.sglang.plugins.'
LOCK_FILE = 'host_lock'


def python_files(root):
    for base, _dirs, files in os.walk(os.path.join(root, 'plugins')):
        for name in sorted(files):
            if name.endswith('.py') and name != '__init__.py':
                yield os.path.relpath(os.path.join(base, name), root)


def imports_of(root, path):
    """The collection's own modules a file imports, as 'kind/name'."""
    with open(os.path.join(root, path), encoding='utf-8') as handle:
        tree = ast.parse(handle.read())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(PREFIX):
            rest = node.module[len(PREFIX) :].split('.')
            if len(rest) >= 2:
                found.add('%s/%s' % (rest[0], rest[1]))
            else:
                found.update('%s/%s' % (rest[0], alias.name) for alias in node.names)
    return sorted(found)


def node_of(path):
    parts = path.split('/')
    return '%s/%s' % (parts[-2], parts[-1][:-3])


def says_why(root, path):
    with open(os.path.join(root, path), encoding='utf-8') as handle:
        head = handle.read(3000)
    return bool(re.search(r'[Oo]ver 400 lines', head))


def task_includes(root):
    """(from file, kind, target) of every include in roles/*/tasks, playbooks/ and the top-level playbooks."""
    found = []
    candidates = []
    for base in ('roles', 'playbooks'):
        for dirpath, _dirs, files in os.walk(os.path.join(root, base)):
            candidates += [
                os.path.join(dirpath, f) for f in files if f.endswith('.yml') and '/tasks' in dirpath + '/' or (base == 'playbooks' and f.endswith('.yml'))
            ]
    for path in sorted(set(candidates)):
        try:
            with open(path, encoding='utf-8') as handle:
                data = yaml.safe_load(handle)
        except yaml.YAMLError:
            continue
        rel = os.path.relpath(path, root)
        for task in _tasks(data):
            for key in ('ansible.builtin.include_tasks', 'ansible.builtin.import_tasks', 'include_tasks', 'import_tasks'):
                if key in task:
                    target = task[key] if isinstance(task[key], str) else (task[key] or {}).get('file', '')
                    found.append((rel, 'tasks', str(target)))
            for key in ('ansible.builtin.include_role', 'ansible.builtin.import_role', 'include_role', 'import_role'):
                if key in task:
                    args = task[key] or {}
                    found.append((rel, 'role', '%s:%s' % (args.get('name', '?'), args.get('tasks_from', 'main'))))
    return found


def _tasks(data):
    """Every task dict in a task file or playbook, blocks and plays opened."""
    if isinstance(data, list):
        for item in data:
            yield from _tasks(item)
    elif isinstance(data, dict):
        yield data
        for key in ('tasks', 'pre_tasks', 'post_tasks', 'handlers', 'block', 'rescue', 'always'):
            if isinstance(data.get(key), list):
                yield from _tasks(data[key])


def role_of(path):
    parts = path.split('/')
    return parts[1] if parts[0] == 'roles' else None


def picture(root):
    lines = []
    files = list(python_files(root))
    edges = [(node_of(p), target) for p in files for target in imports_of(root, p)]
    back = [
        (a, b)
        for a, b in edges
        if (a.startswith('filter/') and b.startswith('filter/')) or (a.startswith('module_utils/') and not b.startswith('module_utils/'))
    ]
    big = []
    for path in files:
        with open(os.path.join(root, path), encoding='utf-8') as handle:
            count = sum(1 for dummy in handle)
        if count > 400:
            big.append((path, count, says_why(root, path)))
    includes = task_includes(root)
    role_calls = set()
    for source, kind, target in includes:
        caller = role_of(source)
        if kind == 'role':
            callee = target.split(':')[0].split('.')[-1]
            if caller and callee != caller:
                role_calls.add((caller, callee))
    cycles = sorted((a, b) for a, b in role_calls if (b, a) in role_calls and a < b)
    lock_sites = [(s, t) for s, k, t in includes if t.rstrip('.yml').endswith(LOCK_FILE) or t.endswith(':' + LOCK_FILE)]

    lines += [
        '| measure | count |',
        '|---|---|',
        '| Python files under plugins/ | %d |' % len(files),
        '| imports between them | %d |' % len(edges),
        '| imports that run back (a filter importing a filter, module_utils importing a plugin) | %d |' % len(back),
        '| Python files over 400 lines | %d (%d say why at their top) |' % (len(big), sum(1 for b in big if b[2])),
        '| includes of task files and role entry points | %d |' % len(includes),
        '| a role calling into another role (include_role / import_role from its tasks) | %d |' % len(role_calls),
        '| roles that call back into a role that called them | %d |' % len(cycles),
        '| places that take the host lock | %d |' % len(lock_sites),
        '',
    ]
    lines += ['### Imports', '']
    for source in sorted(set(a for a, _b in edges)):
        lines.append('- `%s` imports %s' % (source, ', '.join('`%s`' % b for a, b in edges if a == source)))
    lines += ['', 'Running back: ' + (', '.join('`%s` -> `%s`' % e for e in back) or 'none') + '.', '']
    lines += ['Over 400 lines: ' + (', '.join('`%s` (%d%s)' % (p, n, ', says why' if why else '') for p, n, why in big) or 'none') + '.', '']
    lines += ['### Includes', '']
    by_source = {}
    for source, kind, target in includes:
        by_source.setdefault(source, []).append(target)
    for source in sorted(by_source):
        lines.append('- `%s`: %s' % (source, ', '.join('`%s`' % t for t in by_source[source])))
    lines += [
        '',
        'A role calling into another: ' + (', '.join('`%s` -> `%s`' % c for c in sorted(role_calls)) or 'none') + '.',
        'Role calls back: ' + (', '.join('`%s` <-> `%s`' % c for c in cycles) or 'none') + '.',
        'The host lock is taken at: ' + (', '.join('`%s`' % s for s, _t in lock_sites) or 'none') + '.',
    ]
    return '\n'.join(lines) + '\n'


BEGIN = '<!-- BEGIN picture: generated by scripts/house_picture.py -->'
END = '<!-- END picture -->'


def main(argv):
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if len(argv) > 1 and argv[1] in ('--write', '--check'):
        page = os.path.join(here, 'docs', 'dev', 'house.md')
        with open(page, encoding='utf-8') as handle:
            text = handle.read()
        start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
        new = text[:start] + '\n' + picture(here) + text[end:]
        if argv[1] == '--check':
            if new != text:
                print('docs/dev/house.md is stale: run python scripts/house_picture.py --write')
                return 1
            return 0
        with open(page, 'w', encoding='utf-8') as handle:
            handle.write(new)
        return 0
    root = argv[1] if len(argv) > 1 else here
    sys.stdout.write(picture(root))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
