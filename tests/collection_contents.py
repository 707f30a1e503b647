# Checks a built ddtree.sglang collection tarball, as users get it:
#   - every path in it is allowed by tests/collection_contents.txt, and every required file is there;
#   - every module, filter and role in it has docs that ansible-doc reads (its --metadata-dump);
#   - version numbers agree: no version_added above the collection's version, the changelog's
#     releases all in CHANGELOG.rst and none above the collection's version, unreleased fragments
#     only while the version is not released yet, and a plugin whose version_added names a
#     release is listed as new in that release;
#   - every role's meta/main.yml min_ansible_version is the lower bound of meta/runtime.yml's requires_ansible.
# Usage: python tests/collection_contents.py TARBALL DOC_DUMP_JSON   (scripts/test.sh build runs it)
# Prints one line per problem and exits 1 when there is any.
import ast
import fnmatch
import json
import os
import sys
import tarfile

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ALLOWLIST = os.path.join(ROOT, "tests", "collection_contents.txt")
NAMESPACE = "ddtree.sglang"


def read_allowlist(path):
    with open(path, encoding="utf-8") as handle:
        return [line.strip() for line in handle if line.strip() and not line.lstrip().startswith("#")]


def contents_problems(files, dirs, allowed):
    """Paths of the tarball that no line allows, and required files that are missing."""
    patterns = [line for line in allowed if "*" in line]
    required = [line for line in allowed if "*" not in line]
    problems = []
    for name in sorted(files):
        if name not in required and not any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns):
            problems.append(
                "unexpected path in the tarball: %s (not allowed by tests/collection_contents.txt;"
                " keep it out with galaxy.yml build_ignore, or allow it)" % name
            )
    unexpected = [problem.split(": ", 1)[1].split(" ", 1)[0] for problem in problems]
    for name in sorted(dirs):
        if any(path.startswith(name + "/") for path in unexpected):
            continue  # named through the files below it
        if not any(line.startswith(name + "/") or fnmatch.fnmatchcase(name, line) for line in allowed):
            problems.append("unexpected directory in the tarball: %s/" % name)
    for name in required:
        if name not in files:
            problems.append("missing from the tarball: %s (required by tests/collection_contents.txt)" % name)
    return problems


def shipped_plugins(files):
    """{(type, short name): path} of the modules, filters and roles the tarball holds."""
    found = {}
    for name in files:
        parts = name.split("/")
        if len(parts) == 3 and parts[:2] == ["plugins", "modules"] and parts[2].endswith(".py") and parts[2] != "__init__.py":
            found[("module", parts[2][:-3])] = name
        elif len(parts) == 3 and parts[:2] == ["plugins", "filter"] and parts[2].endswith((".yml", ".yaml")):
            found[("filter", parts[2].rsplit(".", 1)[0])] = name
        elif len(parts) == 4 and parts[0] == "roles" and parts[2:] == ["meta", "argument_specs.yml"]:
            found[("role", parts[1])] = name
    return found


def docs_problems(plugins, dump):
    """A plugin needs its docs in ansible-doc's metadata dump; a role (listed there by entry points) a main entry point."""
    problems = []
    everything = dump.get("all", {})
    for kind, name in sorted(plugins):
        entry = everything.get(kind, {}).get("%s.%s" % (NAMESPACE, name))
        if not isinstance(entry, dict):
            problems.append("ansible-doc does not list %s %s.%s" % (kind, NAMESPACE, name))
        elif entry.get("error"):
            problems.append("ansible-doc cannot read %s %s.%s: %s" % (kind, NAMESPACE, name, entry["error"]))
        elif kind == "role" and "main" not in (entry.get("entry_points") or []):
            problems.append("ansible-doc finds no main entry point in role %s.%s's meta/argument_specs.yml" % (NAMESPACE, name))
        elif kind != "role" and not entry.get("doc"):
            problems.append("ansible-doc has no docs for %s %s.%s" % (kind, NAMESPACE, name))
    return problems


def parse_version(text):
    try:
        return tuple(int(part) for part in str(text).split("."))
    except ValueError:
        return None


def documentation(path, text):
    """The DOCUMENTATION dict of a module (.py), a filter (.yml) or a role's argument_specs.yml."""
    if path.endswith(".py"):
        for node in ast.parse(text).body:
            if (
                isinstance(node, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id == "DOCUMENTATION" for t in node.targets)
                and isinstance(node.value, ast.Constant)
                and isinstance(node.value.value, str)
            ):
                return yaml.safe_load(node.value.value) or {}
        return {}
    data = yaml.safe_load(text) or {}
    if path.endswith("argument_specs.yml"):
        return data.get("argument_specs") or {}
    return data.get("DOCUMENTATION") or {}


def version_added_values(doc, where):
    """(where, value) of every version_added in a docs tree (the plugin's own and its options')."""
    if isinstance(doc, dict):
        for key, value in doc.items():
            if key == "version_added":
                yield where, value
            else:
                yield from version_added_values(value, "%s.%s" % (where, key))
    elif isinstance(doc, list):
        for index, value in enumerate(doc):
            yield from version_added_values(value, "%s[%d]" % (where, index))


def versions_problems(version, docs, changelog, changelog_rst, fragments):
    """docs: {(kind, name): DOCUMENTATION}; changelog: changelogs/changelog.yaml; fragments: unreleased fragment files."""
    current = parse_version(version)
    if current is None:
        return ["galaxy.yml version %r is not N.N.N" % version]
    problems = []
    releases = (changelog or {}).get("releases") or {}
    for release in sorted(releases, key=lambda r: parse_version(r) or ()):
        if parse_version(release) is None or parse_version(release) > current:
            problems.append("changelogs/changelog.yaml: release %s is above the collection's version %s (galaxy.yml)" % (release, version))
        if "v%s" % release not in changelog_rst.splitlines():
            problems.append("CHANGELOG.rst has no section v%s for release %s of changelogs/changelog.yaml (antsibull-changelog generate)" % (release, release))
    if version in releases and fragments:
        problems.append(
            "version %s is released already (changelogs/changelog.yaml) but fragments wait for a release: %s;"
            " raise galaxy.yml's version" % (version, ", ".join(sorted(fragments)))
        )
    # a version_added names a release the changelog records, or the coming one (galaxy.yml's version):
    # antsibull-changelog lists a plugin as new in the first release at or above its version_added
    for (kind, name), doc in sorted(docs.items()):
        for where, value in version_added_values(doc, "%s %s" % (kind, name)):
            value = str(value)
            if parse_version(value) is None:
                problems.append("%s: version_added %r is not N.N.N" % (where, value))
            elif parse_version(value) > current:
                problems.append("%s: version_added %s is above the collection's version %s (galaxy.yml)" % (where, value, version))
            elif value not in releases and value != version:
                problems.append(
                    "%s: version_added %s is neither a release in changelogs/changelog.yaml (%s) nor the coming"
                    " version %s (galaxy.yml)" % (where, value, ", ".join(sorted(releases)) or "none", version)
                )
        added = str(doc.get("version_added")) if kind != "role" and isinstance(doc, dict) else None
        if added in releases:
            release = releases[added] or {}
            listed = release.get("modules") if kind == "module" else (release.get("plugins") or {}).get(kind)
            if name not in [entry.get("name") for entry in listed or []]:
                problems.append(
                    "%s %s: version_added %s, but changelogs/changelog.yaml does not list it as new in %s;"
                    " a plugin new since then takes the coming version %s" % (kind, name, added, added, version)
                )
    return problems


def ansible_version_problems(texts):
    """Roles whose meta/main.yml names another minimum Ansible than meta/runtime.yml's requires_ansible (">=X.Y[.Z]")."""
    required = str((yaml.safe_load(texts.get("meta/runtime.yml", "")) or {}).get("requires_ansible", ""))
    if not required.startswith(">="):
        return ["meta/runtime.yml: requires_ansible %r is not a lower bound (>=X.Y.Z)" % required]
    floor = (parse_version(required[2:].split(",", maxsplit=1)[0].strip()) or ())[:2]
    problems = []
    for name, text in sorted(texts.items()):
        if name.startswith("roles/") and name.endswith("/meta/main.yml"):
            found = str(((yaml.safe_load(text) or {}).get("galaxy_info") or {}).get("min_ansible_version", ""))
            if not floor or (parse_version(found) or ())[:2] != floor:
                problems.append("%s: min_ansible_version %r, but meta/runtime.yml requires_ansible %r" % (name, found, required))
    return problems


def main(argv):
    if len(argv) != 3:
        print("usage: python tests/collection_contents.py TARBALL DOC_DUMP_JSON", file=sys.stderr)
        return 2
    with tarfile.open(argv[1]) as tar:
        members = tar.getmembers()
        files = {m.name[2:] if m.name.startswith("./") else m.name: m for m in members if not m.isdir()}
        dirs = {(m.name[2:] if m.name.startswith("./") else m.name).rstrip("/") for m in members if m.isdir()}
        texts = {
            name: tar.extractfile(member).read().decode("utf-8")
            for name, member in files.items()
            if name.endswith((".py", ".yml", ".yaml", ".json", ".rst")) and member.isfile()
        }
    with open(argv[2], encoding="utf-8") as handle:
        dump = json.load(handle)

    problems = contents_problems(set(files), dirs, read_allowlist(ALLOWLIST))
    plugins = shipped_plugins(files)
    problems += docs_problems(plugins, dump)
    problems += ansible_version_problems(texts)

    version = json.loads(texts.get("MANIFEST.json", "{}")).get("collection_info", {}).get("version")
    docs = {key: documentation(path, texts[path]) for key, path in plugins.items()}
    fragments_dir = os.path.join(ROOT, "changelogs", "fragments")
    fragments = [f for f in os.listdir(fragments_dir) if f.endswith((".yml", ".yaml"))] if os.path.isdir(fragments_dir) else []
    problems += versions_problems(version, docs, yaml.safe_load(texts.get("changelogs/changelog.yaml", "")) or {}, texts.get("CHANGELOG.rst", ""), fragments)

    for problem in problems:
        print(problem)
    counts = {}
    for key in plugins:
        counts[key[0]] = counts.get(key[0], 0) + 1
    print(
        "%s %s: %d files; docs read for %s; %d problem(s)"
        % (NAMESPACE, version, len(files), ", ".join("%d %ss" % (counts[kind], kind) for kind in sorted(counts)), len(problems))
    )
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
