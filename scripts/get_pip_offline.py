"""Offline stand-in for the get-pip script that ``ansible-test`` downloads.

ansible-test fetches ``get_pip_<version>.py`` from a host outside the package index and
runs it in fresh venvs created without pip. Here only the index is reachable, so
scripts/setup.sh places this file in ansible-test's cache next to the pip wheel it
downloaded from the index; it installs pip from that wheel, like the real script does.
"""

import argparse
import glob
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, sorted(glob.glob(os.path.join(HERE, "pip-*.whl")))[-1])

from pip._internal.cli.main import main as pip_main  # noqa: E402  pylint: disable=wrong-import-position

PARSER = argparse.ArgumentParser(add_help=False)
PARSER.add_argument("--no-setuptools", action="store_true")
PARSER.add_argument("--no-wheel", action="store_true")
_KNOWN, PIP_ARGS = PARSER.parse_known_args()
sys.exit(pip_main(["install", "--upgrade", "--force-reinstall", "--find-links", HERE] + PIP_ARGS + ["pip"]))
