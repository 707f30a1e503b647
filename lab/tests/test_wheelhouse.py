"""The lab wheelhouse and the DDTree patch series against the real sglang 0.5.23 wheel.

Pins in step (lock, files, group vars), the series applies to the installed wheel's files
(patch -p2), the patched parser takes the lab envelopes' DDTree flags and upstream 0.5.23 refuses
them, and the prebuilt wheel and the negative fixtures are what they claim. Needs the output of
lab/build-wheelhouse.sh (lab/wheelhouse and the verified venv lab/.cache/closure-venv); skipped
without it.
"""

import hashlib
import json
import os
import re
import subprocess
import sys
import zipfile

import pytest
import yaml

LAB = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROOT = os.path.dirname(LAB)
WHEELHOUSE = os.path.join(LAB, "wheelhouse")
CLOSURE_PYTHON = os.path.join(LAB, ".cache", "closure-venv", "bin", "python")
SERIES = os.path.join(LAB, "patches", "sglang-0.5.23")
DOES_NOT_APPLY = os.path.join(LAB, "fixtures", "patches", "9999-does-not-apply.patch")
GROUP_VARS = os.path.join(ROOT, "inventory", "group_vars")
sys.path.insert(0, LAB)
sys.path.insert(0, os.path.join(ROOT, "plugins", "filter"))

import wheelhouse_build as wb  # noqa: E402  pylint: disable=wrong-import-position
from sglang_flags import sglang_argv  # noqa: E402  pylint: disable=wrong-import-position

PARSE = r"""
import json, sys
from sglang.srt.server_args import prepare_server_args
args = prepare_server_args(json.loads(sys.argv[1]))
from sglang.srt.speculative.spec_info import SpeculativeAlgorithm
try:
    algorithm = repr(SpeculativeAlgorithm.from_string(args.speculative_algorithm))
except ValueError as error:
    algorithm = "ValueError: %s" % error
print(json.dumps({"budget": getattr(args, "speculative_ddtree_budget", "absent"),
                  "shadow_linear": getattr(args, "speculative_ddtree_shadow_linear", "absent"),
                  "algorithm": algorithm, "api_key": args.api_key}))
"""


def sha256(path):
    with open(path, "rb") as handle:
        return hashlib.sha256(handle.read()).hexdigest()


def load(path):
    with open(path, encoding="utf-8") as handle:
        return yaml.safe_load(handle)


LOCK = wb.read_lock(os.path.join(LAB, "wheelhouse.lock"))
ROUTER_LOCK = wb.read_lock(os.path.join(LAB, "smg.lock"))
PATCHES = sorted(os.path.join(SERIES, name) for name in os.listdir(SERIES) if name.endswith(".patch"))


@pytest.fixture(scope="module")
def wheelhouse():
    """sha256 -> path of every wheel in lab/wheelhouse; skips without a built wheelhouse."""
    if not os.path.exists(CLOSURE_PYTHON):
        pytest.skip("lab/wheelhouse is not built (lab/build-wheelhouse.sh)")
    index = {}
    for name in os.listdir(WHEELHOUSE):
        if name.endswith(".whl"):
            index[sha256(os.path.join(WHEELHOUSE, name))] = os.path.join(WHEELHOUSE, name)
    return index


@pytest.fixture(scope="module")
def upstream(wheelhouse):
    pin = next(p for p in LOCK if p["name"] == "sglang")
    return wheelhouse[pin["sha256"]]


@pytest.fixture(scope="module")
def patched(upstream, tmp_path_factory):
    """The sglang package of the upstream wheel with the series applied, as on a host: patch -p2."""
    tree = tmp_path_factory.mktemp("patched")
    with zipfile.ZipFile(upstream) as wheel:
        wheel.extractall(tree, [n for n in wheel.namelist() if n.startswith("sglang/")])
    for patch in PATCHES:
        dry = subprocess.run(["patch", "--dry-run", "--batch", "--forward", "-p2", "-d", str(tree), "-i", patch], capture_output=True, text=True, check=False)
        assert dry.returncode == 0, "%s does not apply: %s" % (os.path.basename(patch), dry.stdout + dry.stderr)
        subprocess.run(["patch", "--batch", "--forward", "--silent", "-p2", "-d", str(tree), "-i", patch], check=True)
    return tree


def parse(argv, overlay=None, **env):
    environment = dict(os.environ, PYTHONWARNINGS="ignore", **env)
    environment.pop("PYTHONPATH", None)
    environment.pop("SGLANG_API_KEY", None)
    environment.update(env)
    if overlay:
        environment["PYTHONPATH"] = str(overlay)
    return subprocess.run([CLOSURE_PYTHON, "-c", PARSE, json.dumps(argv)], capture_output=True, text=True, env=environment, check=False, timeout=120)


def envelope_argv(group):
    return sglang_argv(load(os.path.join(GROUP_VARS, group + ".yml"))["sglang_service_envelope"])


# ------------------------------------------------------------------ pins in step (no wheelhouse needed)


def test_lock_pins_every_wheel_once_by_sha256():
    names = [p["name"] for p in LOCK]
    assert len(names) == len(set(names))
    assert {"sglang", "torch", "triton", "setuptools"} <= set(names)
    assert next(p for p in LOCK if p["name"] == "sglang")["version"] == "0.5.23"


def test_router_lock_is_smg_and_what_smg_launch_imports_sharing_the_wheelhouse_files():
    names = [p["name"] for p in ROUTER_LOCK]
    assert len(names) == len(set(names))
    # smg and what `smg launch` imports at start-up (lab/tests/test_smg.py starts it from these alone)
    assert [(p["name"], p["version"]) for p in ROUTER_LOCK] == [("setproctitle", "1.3.8"), ("smg", "1.13.0")]
    locked = {p["name"]: p for p in LOCK}
    for pin in ROUTER_LOCK:
        if pin["name"] in locked:
            assert pin == locked[pin["name"]], pin["name"]


def test_lab_group_vars_pin_the_locked_wheel_and_the_series_files():
    lab = load(os.path.join(GROUP_VARS, "lab", "sglang_install.yml"))
    assert lab["sglang_install_source"] == "upstream"
    locked = {p["name"]: p for p in LOCK}
    assert lab["sglang_install_wheel"] == locked["sglang"]
    assert [p["path"] for p in lab["sglang_install_patches"]] == [os.path.relpath(p, ROOT) for p in PATCHES]
    for pin in lab["sglang_install_patches"]:
        assert pin["sha256"] == sha256(os.path.join(ROOT, pin["path"])), pin["path"]
    assert lab["sglang_install_build_wheels"] == [locked["setuptools"]]
    fixture = lab["lab_fixture_patch_does_not_apply"]
    assert fixture["sha256"] == sha256(os.path.join(ROOT, fixture["path"]))


def test_cuda_overlay_stand_in_pins_the_locked_torch_and_triton():
    path = os.path.join(GROUP_VARS, "lab", "cuda_overlay.yml")
    if not os.path.exists(path):
        pytest.skip("no lab cuda_overlay matrix")
    locked = {p["name"]: p for p in LOCK}
    for entry in load(path)["cuda_overlay_matrix"]:
        for pin in entry["wheels"]:
            assert pin == locked[pin["name"]], entry["name"]


def test_series_is_git_format_patch_against_the_upstream_layout():
    for number, patch in enumerate(PATCHES, 1):
        with open(patch, encoding="utf-8") as handle:
            text = handle.read()
        assert os.path.basename(patch).startswith("%04d-" % number)
        assert re.match(r"From [0-9a-f]{40} Mon Sep 17 00:00:00 2001\n", text)
        assert "[PATCH %d/%d]" % (number, len(PATCHES)) in text
        paths = re.findall(r"(?m)^diff --git a/(\S+) b/(\S+)$", text)
        assert paths and all(a == b and a.startswith("python/sglang/") for a, b in paths)


# ------------------------------------------------------------------ against the real wheel


def test_wheelhouse_holds_every_locked_file(wheelhouse):
    missing = ["%s==%s" % (p["name"], p["version"]) for p in LOCK if p["sha256"] not in wheelhouse]
    assert not missing


def test_wheelhouse_holds_every_router_locked_file(wheelhouse):
    missing = ["%s==%s" % (p["name"], p["version"]) for p in ROUTER_LOCK if p["sha256"] not in wheelhouse]
    assert not missing


def test_fixture_patch_applies_neither_way(upstream, tmp_path):
    with zipfile.ZipFile(upstream) as wheel:
        wheel.extract("sglang/srt/server_args.py", tmp_path)
    for direction in ([], ["--reverse"]):
        run = subprocess.run(
            ["patch", "--dry-run", "--batch", "-p2", "-d", str(tmp_path), "-i", DOES_NOT_APPLY, *direction], capture_output=True, text=True, check=False
        )
        assert run.returncode == 1 and "1 out of 1 hunk FAILED" in run.stdout


@pytest.mark.parametrize("group", ["gpu_a6000_tp2", "gpu_rtxpro6000_tp8"])
def test_upstream_refuses_the_ddtree_flags(wheelhouse, group):
    run = parse(envelope_argv(group))
    assert run.returncode == 2
    assert "error: unrecognized arguments: --speculative-ddtree-budget 16" in run.stderr


def test_upstream_does_not_know_ddtree(wheelhouse):
    run = parse(["--model-path", "/x", "--speculative-algorithm", "DDTREE"])
    assert run.returncode == 0, run.stderr[-2000:]
    assert json.loads(run.stdout)["algorithm"] == "ValueError: Unknown speculative algorithm name: DDTREE"


@pytest.mark.parametrize("group", ["gpu_a6000_tp2", "gpu_rtxpro6000_tp8"])
def test_patched_parser_takes_the_lab_envelope(patched, group):
    env = load(os.path.join(GROUP_VARS, group + ".yml"))["sglang_service_envelope"]
    run = parse(envelope_argv(group), overlay=patched)
    assert run.returncode == 0, run.stderr[-2000:]
    parsed = json.loads(run.stdout)
    assert parsed["budget"] == env["speculative_ddtree_budget"]
    assert parsed["shadow_linear"] is bool(env.get("speculative_ddtree_shadow_linear"))
    assert parsed["algorithm"] == "CustomSpecAlgo('DDTREE')"


def test_patched_parser_still_refuses_unknown_flags(patched):
    run = parse(["--model-path", "/x", "--speculative-ddtree-budget", "many"], overlay=patched)
    assert run.returncode == 2 and "argument --speculative-ddtree-budget: invalid int value: 'many'" in run.stderr


def test_patched_server_reads_its_api_key_from_the_environment(patched):
    from_env = json.loads(parse(["--model-path", "/x"], overlay=patched, SGLANG_API_KEY="sk-lab").stdout)
    assert from_env["api_key"] == "sk-lab"
    given = json.loads(parse(["--model-path", "/x", "--api-key", "sk-cli"], overlay=patched, SGLANG_API_KEY="sk-lab").stdout)
    assert given["api_key"] == "sk-cli"


LOGGED = r"""
import ast, json, sys
from sglang.srt.sampling.watermarking.core import redact_watermark_secrets
from sglang.srt.server_args import prepare_server_args, redact_api_keys
args = prepare_server_args(json.loads(sys.argv[1]))
# engine.py imports more than the lab's parser closure holds: read what its log helper calls
engine = sys.modules["sglang.srt.server_args"].__file__.replace("server_args.py", "entrypoints/engine.py")
tree = ast.parse(open(engine, encoding="utf-8").read())
helper = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "_server_args_for_logging")
calls = sorted({n.func.id for n in ast.walk(helper) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)})
print(json.dumps({"logged": str(redact_api_keys(redact_watermark_secrets(args.resolved_dict()))), "calls": calls}))
"""


def test_patched_server_leaves_its_api_keys_out_of_the_startup_log(patched):
    environment = dict(os.environ, PYTHONWARNINGS="ignore", PYTHONPATH=str(patched), SGLANG_API_KEY="sk-lab-env")
    argv = ["--model-path", "/x", "--admin-api-key", "sk-lab-admin"]
    run = subprocess.run([CLOSURE_PYTHON, "-c", LOGGED, json.dumps(argv)], capture_output=True, text=True, env=environment, check=False, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    answer = json.loads(run.stdout)
    assert "redact_api_keys" in answer["calls"] and "redact_watermark_secrets" in answer["calls"]
    assert "sk-lab-env" not in answer["logged"] and "sk-lab-admin" not in answer["logged"]
    assert "'api_key': '<redacted>'" in answer["logged"] and "'model_path': '/x'" in answer["logged"]


def test_prebuilt_wheel_is_the_patched_tree_with_a_true_record(wheelhouse, patched):
    stamp = json.loads(open(os.path.join(WHEELHOUSE, ".stamps", "prebuilt.json"), encoding="utf-8").read())
    path = os.path.join(WHEELHOUSE, stamp["file"])
    assert stamp["sha256"] == sha256(path) and stamp["version"] == "0.5.23+ddtree.1"
    with zipfile.ZipFile(path) as wheel:
        names = wheel.namelist()
        dist_info = "sglang-0.5.23+ddtree.1.dist-info"
        assert "Version: 0.5.23+ddtree.1" in wheel.read(dist_info + "/METADATA").decode()
        record = list(csv_rows(wheel.read(dist_info + "/RECORD").decode()))
        assert sorted(row[0] for row in record) == sorted(names)
        for name, digest, size in record:
            if name.endswith("/RECORD"):
                continue
            data = wheel.read(name)
            assert digest == wb.record_hash(data) and int(size) == len(data), name
        for patched_file in (
            "sglang/srt/arg_groups/fields/spec.py",
            "sglang/srt/speculative/ddtree_info.py",
            "sglang/srt/server_args.py",
            "sglang/srt/entrypoints/engine.py",
        ):
            assert wheel.read(patched_file) == (patched / patched_file).read_bytes()


def csv_rows(text):
    import csv  # pylint: disable=import-outside-toplevel

    return csv.reader(text.splitlines())


def test_abi_fixture_fails_on_import_with_an_undefined_symbol(wheelhouse, tmp_path):
    stamp = json.loads(open(os.path.join(WHEELHOUSE, ".stamps", "abi-fixture.json"), encoding="utf-8").read())
    with zipfile.ZipFile(os.path.join(WHEELHOUSE, stamp["file"])) as wheel:
        assert "Tag: cp311-cp311-linux_x86_64" in wheel.read("ddtree_abi_fixture-0.1.0.dist-info/WHEEL").decode()
        wheel.extractall(tmp_path)
    run = subprocess.run(
        [CLOSURE_PYTHON, "-c", "import ddtree_abi_fixture"], capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(tmp_path)), check=False
    )
    assert run.returncode == 1
    assert "undefined symbol: %s" % wb.ABI_FIXTURE_SYMBOL in run.stderr


def test_wrong_abi_fixture_has_no_cp311_file(wheelhouse):
    pin = wb.read_lock(os.path.join(LAB, "fixtures", "wrong-abi.lock"))[0]
    name = os.path.basename(wheelhouse[pin["sha256"]])
    assert "-cp312-cp312-" in name
    assert not [n for n in os.listdir(WHEELHOUSE) if n.lower().startswith(pin["name"] + "-") and "-cp311-" in n]


def test_pins_file_names_what_was_built(wheelhouse):
    pins = load(os.path.join(GROUP_VARS, "lab", "wheelhouse_pins.yml"))["lab_wheelhouse_pins"]
    for key in ("sglang_sim", "sglang_prebuilt", "abi_fixture", "wrong_abi"):
        assert pins[key]["sha256"] in wheelhouse, key
    assert load(os.path.join(GROUP_VARS, "lab", "wheelhouse_pins.yml"))["lab_router_lock"] == ROUTER_LOCK
    fork = pins["sglang_fork"]
    assert fork["sha256"] == sha256(os.path.join(WHEELHOUSE, "sglang-ddtree.bundle"))
    assert fork["ref"] == "ddtree-0.5.23.1" and re.fullmatch(r"[0-9a-f]{40}", fork["commit"])
