"""A failed stage in a few lines: scripts/test.sh prints one digest per failed stage at the very end of
its output, since CI shows only that end. Usage: failure_digest.py STAGE LOG"""

import re
import sys

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
# lines that say why: Ansible's failed task, pytest's failed test, a shell's or Python's error. The last ones are shown:
# a scenario's expected refusals (ignored errors) come before the task that failed it, pytest's summary comes last
CAUSES = re.compile(r"fatal: \[|FAILED! =>|^FAILED |^ERROR|^E   |Error:|error:|No space left|Traceback|Permission denied|command not found")
WIDTH = 300
MOST = 4


def digest(stage, lines):
    """The lines to print for STAGE from its log's lines: the last MOST causes, then the log's last line."""
    clean = [ANSI.sub("", line).rstrip() for line in lines]
    clean = [line for line in clean if line.strip()]
    causes = [line for line in clean if CAUSES.search(line)][-MOST:]
    last = clean[-1] if clean else "(the stage printed nothing)"
    shown = [*causes, last] if last not in causes else causes
    return [f"-- {stage}: failed; the last lines of its log that say why, and its last line:"] + [f"   {line[:WIDTH]}" for line in shown]


def main(argv):
    stage, path = argv[1], argv[2]
    try:
        with open(path, encoding="utf-8", errors="replace") as log:
            lines = log.readlines()
    except OSError as error:
        lines = [f"(no log: {error})"]
    print("\n".join(digest(stage, lines)))


if __name__ == "__main__":
    main(sys.argv)
