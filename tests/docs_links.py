# Checks that every relative link of the docs points at a file that exists: README.md, docs/**/*.md and the
# role READMEs, links of the form [text](path) or [text](path#anchor); web addresses are not followed.
# Usage: python tests/docs_links.py   (scripts/test.sh docs runs it)
# Prints one line per broken link and exits 1 when there is any.
import glob
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LINK = re.compile(r"\]\(([^)\s]+)\)")


def broken_links(path, text):
    """(path, target) of every relative link in text whose file is missing, relative to path's directory."""
    found = []
    for target in LINK.findall(text):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            continue
        file_part = target.split("#", 1)[0]
        if not os.path.exists(os.path.normpath(os.path.join(os.path.dirname(path), file_part))):
            found.append((os.path.relpath(path, ROOT), target))
    return found


def main():
    pages = [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT, "docs", "**", "*.md"), recursive=True))
    pages += sorted(glob.glob(os.path.join(ROOT, "roles", "*", "README.md")))
    found = []
    for page in pages:
        with open(page, encoding="utf-8") as handle:
            found += broken_links(page, handle.read())
    for page, target in found:
        print("%s: broken link %s" % (page, target))
    print("docs links: %d page(s), %d broken" % (len(pages), len(found)))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
