"""The lab wheelhouse's own artifacts, built from the locked downloads (stdlib only).

lab/build-wheelhouse.sh runs one step at a time:

  missing     lock lines without a file of that sha256 in the wheelhouse (empty: skip pip)
  prebuilt    sglang-0.5.23+ddtree.1: the upstream wheel with the DDTree series applied
  fork        sglang-ddtree.bundle: the stand-in for the DDTree fork, tag ddtree-0.5.23.1
  abi-fixture ddtree-abi-fixture: a cp311 kernel package that fails on import (undefined symbol)
  verify      the locked set installs alone and parses the lab envelopes (patched: accepted,
              unpatched: refused); the prebuilt wheel and the fork build do the same
  pins        inventory/group_vars/lab/wheelhouse_pins.yml
  fork-repo   (by hand) the fork's git repository in a new directory, to edit the series

Every output is skipped while its stamp (lab/wheelhouse/.stamps/) says it was built from the
same inputs and the file still has the recorded sha256. Outputs are written beside their final
name and renamed into place: the wheelhouse directory is bind-mounted into running lab hosts.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import zipfile
from pathlib import Path

LAB = Path(__file__).resolve().parent
ROOT = LAB.parent
WHEELHOUSE = LAB / "wheelhouse"
STAMPS = WHEELHOUSE / ".stamps"
CACHE = LAB / ".cache"
LOCK = LAB / "wheelhouse.lock"
WRONG_ABI_LOCK = LAB / "fixtures" / "wrong-abi.lock"
# the router: smg (Shepherd Model Gateway) and what `smg launch` imports (role sglang_router)
ROUTER_LOCK = LAB / "smg.lock"
SERIES = LAB / "patches" / "sglang-0.5.23"
PINS = ROOT / "inventory" / "group_vars" / "lab" / "wheelhouse_pins.yml"
HOST_WHEELHOUSE = "/var/cache/ddtree-lab/wheelhouse"

UPSTREAM_VERSION = "0.5.23"
LOCAL_VERSION = "ddtree.1"
PATCHED_VERSION = f"{UPSTREAM_VERSION}+{LOCAL_VERSION}"
FORK_TAG = "ddtree-0.5.23.1"
FORK_BUNDLE = "sglang-ddtree.bundle"
ABI_FIXTURE = ("ddtree-abi-fixture", "0.1.0")
# A c10/CUDA symbol that kernel packages built against another torch really miss.
ABI_FIXTURE_SYMBOL = "_ZN3c104cuda29c10_cuda_check_implementationEiPKcS2_ib"
# Fixed times keep rebuilt artifacts byte-identical: the upstream wheel's own entry time, and
# the dates of the lab's patch series.
ZIP_TIME = (2026, 10, 30, 1, 4, 0)
FORK_BASE_DATE = "2026-10-30T01:04:00+00:00"
FORK_RELEASE_DATE = "2026-11-29T09:30:00+00:00"
FORK_IDENTITY = ("ddtree lab", "lab@ddtree.invalid")

# A build-time smoke test: gpu_a6000_tp2's envelope as the sglang_argv filter rendered it. The
# pytest (lab/tests/test_wheelhouse.py) parses the envelopes as they are now.
ENVELOPE_ARGV = [
    "--model-path",
    "/srv/models/Qwen3.6-27B",
    "--served-model-name",
    "Qwen3.6-27B",
    "--tp-size",
    "2",
    "--mem-fraction-static",
    "0.85",
    "--context-length",
    "32768",
    "--max-running-requests",
    "4",
    "--disable-cuda-graph",
    "--mamba-full-memory-ratio",
    "0.5",
    "--speculative-algorithm",
    "DDTREE",
    "--speculative-draft-model-path",
    "/srv/models/Qwen3.6-27B-DFlash",
    "--speculative-ddtree-budget",
    "16",
    "--speculative-ddtree-shadow-linear",
    "--trust-remote-code",
]
PARSE_CHECK = r"""
import json, sys
from sglang.srt.server_args import prepare_server_args
args = prepare_server_args(json.loads(sys.argv[1]))
from sglang.srt.speculative.spec_info import SpeculativeAlgorithm
SpeculativeAlgorithm.from_string(args.speculative_algorithm)
print(json.dumps({"budget": getattr(args, "speculative_ddtree_budget", None),
                  "shadow_linear": getattr(args, "speculative_ddtree_shadow_linear", None),
                  "algorithm": args.speculative_algorithm}))
"""


def log(message):
    print(f"wheelhouse: {message}", flush=True)


def sha256_file(path):
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def run(argv, check=True, **kwargs):
    return subprocess.run([str(a) for a in argv], check=check, **kwargs)


def read_lock(path):
    """[{name, version, sha256}] of a pip requirements file of `name==version --hash=sha256:x` lines."""
    pins = []
    for number, line in enumerate(Path(path).read_text().splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        match = re.fullmatch(r"([A-Za-z0-9._-]+)==(\S+)\s+--hash=sha256:([0-9a-f]{64})", line)
        if not match:
            raise SystemExit(f"{path}:{number}: not `name==version --hash=sha256:<hex>`: {line}")
        pins.append({"name": match[1], "version": match[2], "sha256": match[3]})
    return pins


def requirement_lines(pins):
    """`name===version`: `==0.5.23` also matches 0.5.23+ddtree.1 (PEP 440 local versions), and pip
    23 takes that higher twin from the wheelhouse before it checks the hash."""
    return "".join(f"{p['name']}==={p['version']} --hash=sha256:{p['sha256']}\n" for p in pins)


def wheelhouse_index(directory=WHEELHOUSE):
    """sha256 -> file name of every wheel in the directory."""
    if not directory.is_dir():
        return {}
    return {sha256_file(path): path.name for path in sorted(directory.glob("*.whl"))}


def locked_file(pins, name, index):
    pin = next(p for p in pins if p["name"] == name)
    if pin["sha256"] not in index:
        raise SystemExit(f"{name} {pin['version']} (sha256 {pin['sha256']}) is not in {WHEELHOUSE}")
    return WHEELHOUSE / index[pin["sha256"]]


def series():
    patches = sorted(SERIES.glob("*.patch"))
    if not patches:
        raise SystemExit(f"no patches in {SERIES}")
    return patches


# ---------------------------------------------------------------------------- stamps


def inputs_digest(*parts):
    digest = hashlib.sha256(Path(__file__).read_bytes())
    for part in parts:
        if isinstance(part, Path):
            digest.update(part.name.encode() + b"\0" + part.read_bytes())
        else:
            digest.update(str(part).encode())
        digest.update(b"\0")
    return digest.hexdigest()


def up_to_date(step, inputs, output):
    stamp = STAMPS / f"{step}.json"
    if not stamp.exists() or not output.exists():
        return False
    recorded = json.loads(stamp.read_text())
    return recorded.get("inputs") == inputs and recorded.get("sha256") == sha256_file(output)


def record(step, inputs, output, **extra):
    STAMPS.mkdir(parents=True, exist_ok=True)
    data = {"inputs": inputs, "file": output.name, "sha256": sha256_file(output), **extra}
    (STAMPS / f"{step}.json").write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    return data


def stamp_of(step):
    path = STAMPS / f"{step}.json"
    return json.loads(path.read_text()) if path.exists() else None


# ---------------------------------------------------------------------------- wheels


def record_hash(data):
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def extract(wheel, target, keep=lambda name: True):
    """Unpack a wheel's files (not its directory entries), keeping their modes."""
    with zipfile.ZipFile(wheel) as archive:
        for info in archive.infolist():
            if info.is_dir() or not keep(info.filename):
                continue
            path = Path(target, info.filename)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(archive.read(info))
            mode = (info.external_attr >> 16) & 0o777
            os.chmod(path, mode or 0o644)


def write_wheel(tree, dist_info, out):
    """Zip a wheel tree reproducibly: sorted entries, fixed times, a fresh RECORD last."""
    files = sorted(p.relative_to(tree).as_posix() for p in Path(tree).rglob("*") if p.is_file())
    record_name = f"{dist_info}/RECORD"
    files = [f for f in files if f != record_name]
    rows = io.StringIO()
    writer = csv.writer(rows, lineterminator="\n")
    partial = Path(str(out) + ".part")
    with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as archive:
        # dist-info last, as pip's and wheel's writers do
        for name in sorted(files, key=lambda f: (f.startswith(dist_info + "/"), f)):
            data = (Path(tree) / name).read_bytes()
            writer.writerow([name, record_hash(data), len(data)])
            mode = os.stat(Path(tree) / name).st_mode & 0o777
            info = zipfile.ZipInfo(name, ZIP_TIME)
            info.external_attr = (0o100000 | mode) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, data)
        writer.writerow([record_name, "", ""])
        info = zipfile.ZipInfo(record_name, ZIP_TIME)
        info.external_attr = 0o100644 << 16
        info.compress_type = zipfile.ZIP_DEFLATED
        archive.writestr(info, rows.getvalue())
    os.replace(partial, out)


def apply_series(tree, patches):
    for patch in patches:
        result = run(
            ["patch", "-p2", "--batch", "--forward", "--no-backup-if-mismatch", "--silent", "-d", tree, "-i", patch],
            check=False,
            capture_output=True,
            text=True,
        )
        if result.returncode:
            raise SystemExit(f"{patch.name} does not apply to {tree}:\n{result.stdout}{result.stderr}")


def step_prebuilt():
    pins = read_lock(LOCK)
    upstream = locked_file(pins, "sglang", wheelhouse_index())
    tag = upstream.name.split("-", 2)[2]  # cp311-cp311-manylinux_2_34_x86_64.whl
    out = WHEELHOUSE / f"sglang-{PATCHED_VERSION}-{tag}"
    patches = series()
    inputs = inputs_digest(upstream.name, sha256_file(upstream), *patches)
    if up_to_date("prebuilt", inputs, out):
        log(f"{out.name} is up to date")
        return
    with tempfile.TemporaryDirectory(dir=CACHE) as tmp:
        tree = Path(tmp, "wheel")
        extract(upstream, tree)
        apply_series(tree, patches)
        old, new = f"sglang-{UPSTREAM_VERSION}.dist-info", f"sglang-{PATCHED_VERSION}.dist-info"
        (tree / old).rename(tree / new)
        metadata = tree / new / "METADATA"
        text = metadata.read_text(encoding="utf-8")
        text, count = re.subn(r"(?m)^Version: .*$", f"Version: {PATCHED_VERSION}", text, count=1)
        if count != 1:
            raise SystemExit(f"no Version line in {upstream.name}'s METADATA")
        metadata.write_text(text, encoding="utf-8")
        # which series the wheel carries, readable from the installed distribution
        (tree / new / "DDTREE_PATCHES").write_text("".join(f"{sha256_file(p)}  {p.name}\n" for p in patches))
        write_wheel(tree, new, out)
    data = record("prebuilt", inputs, out, version=PATCHED_VERSION)
    log(f"built {out.name} ({out.stat().st_size // 1024} KiB, sha256 {data['sha256']})")


# ---------------------------------------------------------------------------- fork bundle


def git(repo, *argv, date=None, **kwargs):
    env = dict(
        os.environ,
        GIT_CONFIG_GLOBAL="/dev/null",
        GIT_CONFIG_NOSYSTEM="1",
        GIT_AUTHOR_NAME=FORK_IDENTITY[0],
        GIT_AUTHOR_EMAIL=FORK_IDENTITY[1],
        GIT_COMMITTER_NAME=FORK_IDENTITY[0],
        GIT_COMMITTER_EMAIL=FORK_IDENTITY[1],
    )
    if date:
        env.update(GIT_AUTHOR_DATE=date, GIT_COMMITTER_DATE=date)
    # no auto gc (it repacks in the background, racing the bundle) and one packing thread: the
    # same series gives a byte-identical bundle
    return run(
        ["git", "-C", repo, "-c", "core.autocrlf=false", "-c", "init.defaultBranch=main", "-c", "gc.auto=0", "-c", "pack.threads=1", *argv],
        env=env,
        capture_output=True,
        text=True,
        **kwargs,
    )


def build_fork_repo(repo, upstream, patches, version=PATCHED_VERSION, tag=FORK_TAG):
    """The stand-in fork: the upstream wheel's Python sources (no compiled parts, no dist-info) as
    python/sglang, committed, the series applied with git am, a release commit, an annotated tag."""
    repo.mkdir(parents=True)
    git(repo, "init", "-q")
    extract(upstream, repo / "python", keep=lambda name: name.startswith("sglang/") and not name.endswith(".so"))
    shutil.copyfile(LAB / "fork" / "pyproject.toml", repo / "python" / "pyproject.toml")
    git(repo, "add", "-A")
    git(
        repo,
        "commit",
        "-q",
        "-m",
        f"sglang {UPSTREAM_VERSION}\n\nThe Python sources of the upstream sglang {UPSTREAM_VERSION} wheel as a source tree (lab stand-in for the DDTree fork).",
        date=FORK_BASE_DATE,
    )
    git(repo, "am", "-q", "--committer-date-is-author-date", *[str(p) for p in patches])
    pyproject = repo / "python" / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace(f'version = "{UPSTREAM_VERSION}"', f'version = "{version}"', 1))
    git(repo, "commit", "-q", "-a", "-m", f"Release {version}", date=FORK_RELEASE_DATE)
    git(repo, "tag", "-a", tag, "-m", f"DDTree SGLang {version}", date=FORK_RELEASE_DATE)
    return git(repo, "rev-parse", f"{tag}^{{commit}}").stdout.strip()


def step_fork():
    pins = read_lock(LOCK)
    upstream = locked_file(pins, "sglang", wheelhouse_index())
    patches = series()
    out = WHEELHOUSE / FORK_BUNDLE
    inputs = inputs_digest(sha256_file(upstream), LAB / "fork" / "pyproject.toml", *patches)
    if up_to_date("fork", inputs, out):
        log(f"{out.name} is up to date")
        return
    with tempfile.TemporaryDirectory(dir=CACHE) as tmp:
        repo = Path(tmp, "sglang")
        commit = build_fork_repo(repo, upstream, patches)
        headers = [re.match(r"From ([0-9a-f]{40}) ", p.read_text()).group(1) for p in patches]
        applied = git(repo, "rev-list", "--reverse", f"{FORK_TAG}~1", f"^{FORK_TAG}~{len(patches) + 1}").stdout.split()
        if headers != applied:
            raise SystemExit(f"the fork's commits {applied} are not the series' From lines {headers}: regenerate the series (lab/patches/README.md)")
        partial = Path(tmp, FORK_BUNDLE)
        git(repo, "bundle", "create", "-q", partial, "main", FORK_TAG)
        shutil.move(partial, Path(str(out) + ".part"))
        os.replace(Path(str(out) + ".part"), out)
    data = record("fork", inputs, out, ref=FORK_TAG, commit=commit, version=PATCHED_VERSION)
    log(f"built {out.name} ({out.stat().st_size // 1024} KiB, {FORK_TAG} = {commit}, sha256 {data['sha256']})")


# ---------------------------------------------------------------------------- ABI fixture

ABI_C = """\
/* Lab fixture: a kernel package linked against a torch ABI the release does not have. The
 * symbol resolves where it was built (a stub stands in for that torch), and dlopen fails with
 * "undefined symbol" everywhere else, as a CUDA kernel wheel built for another torch does. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

extern void %(symbol)s(int, const char *, const char *, int, int);

static PyObject *launch(PyObject *self, PyObject *args)
{
    %(symbol)s(0, "", "", 0, 0);
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {{"launch", launch, METH_NOARGS, NULL}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_kernels", NULL, -1, methods};

PyMODINIT_FUNC PyInit__kernels(void) { return PyModule_Create(&module); }
"""


def step_abi_fixture():
    name, version = ABI_FIXTURE
    package = name.replace("-", "_")
    out = WHEELHOUSE / f"{package}-{version}-cp311-cp311-linux_x86_64.whl"
    inputs = inputs_digest(ABI_FIXTURE_SYMBOL, run(["gcc", "--version"], capture_output=True, text=True).stdout)
    if up_to_date("abi-fixture", inputs, out):
        log(f"{out.name} is up to date")
        return
    include = sysconfig.get_paths()["include"]
    with tempfile.TemporaryDirectory(dir=CACHE) as tmp:
        tmp = Path(tmp)
        (tmp / "kernels.c").write_text(ABI_C % {"symbol": ABI_FIXTURE_SYMBOL})
        (tmp / "stub.c").write_text(f"void {ABI_FIXTURE_SYMBOL}(int a, const char *b, const char *c, int d, int e) {{}}\n")
        tree = tmp / "wheel"
        (tree / package).mkdir(parents=True)
        extension = tree / package / "_kernels.cpython-311-x86_64-linux-gnu.so"
        # gcc -shared leaves the symbol undefined: a shared object may take it from its loader
        run(["gcc", "-shared", "-fPIC", "-O2", "-I", include, "-o", extension, tmp / "kernels.c"])
        run(["gcc", "-shared", "-fPIC", "-o", tmp / "libstub.so", tmp / "stub.c"])
        (tree / package / "__init__.py").write_text(
            '"""Lab fixture (ddtree.sglang): a kernel package whose extension needs a torch symbol the\n'
            'release lacks; importing it fails with "undefined symbol", as an ABI mismatch does."""\n\n'
            "from ddtree_abi_fixture._kernels import launch  # noqa: F401\n"
        )
        dist_info = f"{package}-{version}.dist-info"
        (tree / dist_info).mkdir()
        (tree / dist_info / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
            "Summary: Lab fixture: a kernel package that fails on import with an undefined symbol\n"
            "Requires-Python: ==3.11.*\n"
        )
        (tree / dist_info / "WHEEL").write_text("Wheel-Version: 1.0\nGenerator: ddtree.sglang lab\nRoot-Is-Purelib: false\nTag: cp311-cp311-linux_x86_64\n")
        (tree / dist_info / "top_level.txt").write_text(package + "\n")
        # where it was built it imports (the stub plays the torch it was linked against) ...
        env = dict(os.environ, PYTHONPATH=str(tree), LD_PRELOAD=str(tmp / "libstub.so"))
        run([sys.executable, "-c", f"import {package}"], env=env)
        # ... and without that torch it must fail the way the probe reports
        env.pop("LD_PRELOAD")
        failed = run([sys.executable, "-c", f"import {package}"], env=env, check=False, capture_output=True, text=True)
        if failed.returncode == 0 or f"undefined symbol: {ABI_FIXTURE_SYMBOL}" not in failed.stderr:
            raise SystemExit(f"the ABI fixture did not fail as intended:\n{failed.stderr}")
        write_wheel(tree, dist_info, out)
    data = record("abi-fixture", inputs, out, version=version, symbol=ABI_FIXTURE_SYMBOL)
    log(f"built {out.name} (sha256 {data['sha256']})")


# ---------------------------------------------------------------------------- verification


def host_python():
    """The lab hosts' interpreter where this machine has it (Debian 12: /usr/bin/python3 3.11)."""
    for candidate in (os.environ.get("LAB_HOST_PYTHON"), "/usr/bin/python3", shutil.which("python3.11")):
        if candidate and os.path.exists(candidate):
            probe = run([candidate, "-c", "import sys, venv; print(sys.version_info[:2] == (3, 11))"], check=False, capture_output=True, text=True)
            if probe.stdout.strip() == "True":
                return candidate
    raise SystemExit("no Python 3.11 with venv found (set LAB_HOST_PYTHON)")


def make_venv(path, requirements=None):
    if path.exists():
        shutil.rmtree(path)
    run([host_python(), "-m", "venv", path])
    if requirements:
        run([path / "bin" / "pip", "install", "-q", "--no-deps", "--require-hashes", "--no-index", "--find-links", WHEELHOUSE, "-r", requirements])


def site_packages(venv):
    return Path(
        run([venv / "bin" / "python", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], capture_output=True, text=True).stdout.strip()
    )


def parse(venv, argv, extra_path=None):
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    env.pop("PYTHONPATH", None)
    if extra_path:
        env["PYTHONPATH"] = str(extra_path)
    return run([venv / "bin" / "python", "-c", PARSE_CHECK, json.dumps(argv)], env=env, check=False, capture_output=True, text=True)


def expect_accepted(result, what):
    if result.returncode:
        raise SystemExit(f"{what}: the lab envelope was refused:\n{result.stderr[-3000:]}")
    parsed = json.loads(result.stdout.strip().splitlines()[-1])
    if parsed != {"budget": 16, "shadow_linear": True, "algorithm": "DDTREE"}:
        raise SystemExit(f"{what}: parsed {parsed}")


def step_verify():
    """The locked set alone runs the parser: unpatched it refuses the DDTree flags, with the series
    (or as the prebuilt wheel, or built from the fork) it takes the lab envelope."""
    lock_digest = inputs_digest(LOCK)
    closure = CACHE / "closure-venv"
    prebuilt_stamp, fork_stamp = stamp_of("prebuilt"), stamp_of("fork")
    inputs = inputs_digest(lock_digest, json.dumps([prebuilt_stamp, fork_stamp], sort_keys=True), *series())
    stamp = STAMPS / "verify.json"
    if stamp.exists() and json.loads(stamp.read_text()).get("inputs") == inputs and closure.exists():
        log("verification is up to date")
        return
    pins = read_lock(LOCK)
    CACHE.mkdir(exist_ok=True)
    requirements = CACHE / "closure.txt"
    # setuptools only builds the fork; the parser must not need it
    requirements.write_text(requirement_lines(p for p in pins if p["name"] != "setuptools"))
    # kept while the lock is unchanged: tests use it, and it is the slow part
    marker = closure / "wheelhouse.lock.sha256"
    if not (marker.exists() and marker.read_text() == sha256_file(LOCK)):
        log(f"closure venv: {len(pins) - 1} locked wheels, --no-deps --require-hashes --no-index")
        make_venv(closure, requirements)
        marker.write_text(sha256_file(LOCK))

    refused = parse(closure, ENVELOPE_ARGV)
    if refused.returncode != 2 or "unrecognized arguments: --speculative-ddtree-budget 16 --speculative-ddtree-shadow-linear" not in refused.stderr:
        raise SystemExit(f"unpatched sglang {UPSTREAM_VERSION} did not refuse the DDTree flags:\n{refused.stderr[-2000:]}")
    unknown = parse(closure, [a for a in ENVELOPE_ARGV if "ddtree" not in a and a != "16"])
    if "Unknown speculative algorithm name: DDTREE" not in unknown.stderr:
        raise SystemExit(f"unpatched sglang {UPSTREAM_VERSION} knew DDTREE:\n{unknown.stderr[-2000:]}")
    log("unpatched 0.5.23: DDTree flags refused (exit 2), DDTREE unknown to SpeculativeAlgorithm")

    with tempfile.TemporaryDirectory(dir=CACHE) as tmp:
        patched = Path(tmp, "patched")
        extract(locked_file(pins, "sglang", wheelhouse_index()), patched, keep=lambda name: name.startswith("sglang/"))
        apply_series(patched, series())
        expect_accepted(parse(closure, ENVELOPE_ARGV, extra_path=patched), "upstream + series")
    log("upstream wheel + series: lab envelope accepted (budget 16, shadow-linear, DDTREE)")

    # The prebuilt wheel and the fork build get a venv of their own that sees the closure's
    # packages through a .pth line, so each is tested as the sglang pip installed.
    pth = f"{site_packages(closure)}\n"
    checked = CACHE / "checked-venv"
    prebuilt = WHEELHOUSE / prebuilt_stamp["file"]
    make_venv(checked)
    run([checked / "bin" / "pip", "install", "-q", "--no-deps", "--no-index", prebuilt])
    (site_packages(checked) / "lab-closure.pth").write_text(pth)
    expect_accepted(parse(checked, ENVELOPE_ARGV), prebuilt.name)
    log(f"{prebuilt.name}: installs, lab envelope accepted")

    setuptools = next(p for p in pins if p["name"] == "setuptools")
    with tempfile.TemporaryDirectory(dir=CACHE) as tmp:
        clone = Path(tmp, "sglang")
        run(["git", "clone", "-q", "--no-checkout", WHEELHOUSE / FORK_BUNDLE, clone])
        run(["git", "-C", clone, "-c", "advice.detachedHead=false", "checkout", "-q", FORK_TAG])
        make_venv(checked)
        bare = run(
            [checked / "bin" / "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--no-index", clone / "python"],
            check=False,
            capture_output=True,
            text=True,
        )
        why = re.findall(r"(invalid command '\w+'|configuration error: [^\n]*)", bare.stderr + bare.stdout)
        log("fork with the venv's own setuptools: " + ("builds" if bare.returncode == 0 else f"fails ({why[0] if why else 'see pip'})"))
        (CACHE / "pin.txt").write_text(requirement_lines([setuptools]))
        run([checked / "bin" / "pip", "install", "-q", "--no-deps", "--require-hashes", "--no-index", "--find-links", WHEELHOUSE, "-r", CACHE / "pin.txt"])
        run([checked / "bin" / "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--no-index", clone / "python"])
    (site_packages(checked) / "lab-closure.pth").write_text(pth)
    version = run(
        [checked / "bin" / "python", "-c", "import importlib.metadata as m; print(m.version('sglang'))"], capture_output=True, text=True
    ).stdout.strip()
    if version != PATCHED_VERSION:
        raise SystemExit(f"the fork installed sglang {version}, expected {PATCHED_VERSION}")
    expect_accepted(parse(checked, ENVELOPE_ARGV), f"fork {FORK_TAG}")
    log(f"fork {FORK_TAG}: builds offline with setuptools {setuptools['version']}, sglang {version}, lab envelope accepted")
    shutil.rmtree(checked)
    STAMPS.mkdir(parents=True, exist_ok=True)
    stamp.write_text(json.dumps({"inputs": inputs}) + "\n")


# ---------------------------------------------------------------------------- pins


def block(mapping, indent="    "):
    return "".join(f"\n{indent}{key}: {json.dumps(value)}" for key, value in mapping.items())


def step_pins():
    stamps = {step: stamp_of(step) for step in ("prebuilt", "fork", "abi-fixture")}
    missing = [step for step, data in stamps.items() if data is None]
    if missing:
        raise SystemExit(f"not built yet: {', '.join(missing)}")
    sim = sorted(WHEELHOUSE.glob("sglang_sim-*.whl"))
    if len(sim) != 1:
        raise SystemExit(f"expected one simulator wheel in {WHEELHOUSE}, found {[p.name for p in sim]}")
    sim_version = sim[0].name.split("-")[1]
    wrong_abi = read_lock(WRONG_ABI_LOCK)[0]
    fork = stamps["fork"]
    lines = (
        [
            "---",
            "# Written by lab/build-wheelhouse.sh (not committed): the sha256 of every artifact that",
            "# script built itself, as pins (docs/INTERFACES.md). Rebuilt artifacts get new pins here.",
            f"lab_wheelhouse_dir: {HOST_WHEELHOUSE}",
            "lab_wheelhouse_pins:",
            "  # the SGLang simulator (lab/sglang_sim), the process the lab's units start",
            "  sglang_sim:" + block({"name": "sglang-sim", "version": sim_version, "sha256": sha256_file(sim[0])}),
            "  # upstream sglang 0.5.23 wheel with lab/patches/sglang-0.5.23 applied, repacked",
            "  sglang_prebuilt:" + block({"name": "sglang", "version": PATCHED_VERSION, "sha256": stamps["prebuilt"]["sha256"]}),
            "  # git bundle standing in for the DDTree fork (sglang_install_fork)",
            "  sglang_fork:" + block({"bundle": f"{HOST_WHEELHOUSE}/{FORK_BUNDLE}", "ref": fork["ref"], "commit": fork["commit"], "sha256": fork["sha256"]}),
            "  # negative fixture: a cp311 kernel package whose import fails with an undefined symbol",
            "  abi_fixture:" + block({"name": ABI_FIXTURE[0], "version": ABI_FIXTURE[1], "sha256": stamps["abi-fixture"]["sha256"]}),
            "  # negative fixture: a cp312-only wheel (lab/fixtures/wrong-abi.lock), no cp311 file beside it",
            "  wrong_abi:" + block(wrong_abi),
            f"lab_wheelhouse_abi_fixture_symbol: {ABI_FIXTURE_SYMBOL}",
            "# every pin of lab/wheelhouse.lock, so group vars take them from the lock, not a copy",
            "lab_wheelhouse_lock:",
        ]
        + [f"  - {json.dumps(pin)}" for pin in read_lock(LOCK)]
        + [
            "# every pin of lab/smg.lock: smg, the router, and what it imports (role sglang_router)",
            "lab_router_lock:",
        ]
        + [f"  - {json.dumps(pin)}" for pin in read_lock(ROUTER_LOCK)]
        + [""]
    )
    PINS.parent.mkdir(parents=True, exist_ok=True)
    partial = Path(str(PINS) + ".part")
    partial.write_text("\n".join(lines))
    os.replace(partial, PINS)
    log(f"wrote {PINS.relative_to(ROOT)}")


def step_missing(lock):
    index = wheelhouse_index()
    for pin in read_lock(lock):
        if pin["sha256"] not in index:
            print(f"{pin['name']}=={pin['version']}")


def main(argv):
    CACHE.mkdir(exist_ok=True)
    steps = {"prebuilt": step_prebuilt, "fork": step_fork, "abi-fixture": step_abi_fixture, "verify": step_verify, "pins": step_pins}
    if len(argv) == 3 and argv[1] == "missing":
        step_missing(argv[2])
    elif len(argv) == 3 and argv[1] == "fork-repo":
        upstream = locked_file(read_lock(LOCK), "sglang", wheelhouse_index())
        print(build_fork_repo(Path(argv[2]).resolve(), upstream, series()))
    elif len(argv) == 2 and argv[1] in steps:
        steps[argv[1]]()
    else:
        raise SystemExit(f"usage: {argv[0]} missing LOCK | fork-repo DIR | {' | '.join(steps)}")


if __name__ == "__main__":
    main(sys.argv)
