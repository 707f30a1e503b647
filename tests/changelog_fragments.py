# Checks that every entry of changelogs/fragments/*.yml starts with the component it changes, in the form
# "component - what changed" (Ansible's changelog convention): a module, filter, role or playbook name, a few
# of them joined by commas or "and", optionally followed by its kind ("sglang_service role - ...").
# Usage: python tests/changelog_fragments.py   (scripts/test.sh changelog runs it after antsibull-changelog lint)
# Prints one line per entry that is not in that form and exits 1 when there is any.
import glob
import os
import re
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NAME = r"[a-z][\w./-]*"
KINDS = "role|roles|module|modules|filter|filters|plugin|playbook|scenario|series|matrix|simulator"
FORM = re.compile(r"^%s(?:(?:,? and |, | )%s)*(?: (?:%s))? - \S" % (NAME, NAME, KINDS))


def problems(fragments):
    """(file, section, entry start) of every entry of {file: parsed fragment} not in the form."""
    found = []
    for name, fragment in sorted(fragments.items()):
        for section, entries in (fragment or {}).items():
            if section == "release_summary":
                continue
            for entry in entries or []:
                if not FORM.match(entry):
                    found.append((name, section, entry[:80]))
    return found


def main():
    fragments = {}
    for path in sorted(glob.glob(os.path.join(ROOT, "changelogs", "fragments", "*.yml"))):
        with open(path, encoding="utf-8") as handle:
            fragments[os.path.relpath(path, ROOT)] = yaml.safe_load(handle)
    found = problems(fragments)
    for name, section, start in found:
        print('%s: %s: an entry starts "%s", not "component - ..."' % (name, section, start))
    print("changelog fragments: %d file(s), %d entr(ies) not in the component form" % (len(fragments), len(found)))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
