"""The flag check (plugins/modules/sglang_flag_check.py) against the real SGLang 0.5.23.

The interpreter asked is, in this order: $DDTREE_SGLANG_PYTHON; else a venv built in a tmp dir
from lab/wheelhouse with lab/wheelhouse.lock (lab/build-wheelhouse.sh: the real sglang wheel and
what its parser imports, torch CPU, triton; about 40 s). Skipped when neither exists. The
DDTree-patched cases use $DDTREE_SGLANG_PATCHED_PYTHON, else the prebuilt patched wheel of the
wheelhouse (sglang-0.5.23+<local>-*.whl), else lab/patches/sglang-0.5.23/*.patch applied to a copy
of the upstream package, laid over the same venv through PYTHONPATH; skipped without any.

The envelopes of inventory/group_vars are rendered with the collection's own sglang_argv filter,
so a flag the real parser does not know fails here before it fails on a host.
"""

import glob
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile

import pytest
import yaml

LAB = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROOT = os.path.dirname(LAB)
WHEELHOUSE = os.environ.get("DDTREE_LAB_WHEELHOUSE", os.path.join(LAB, "wheelhouse"))
MODULE = os.path.join(ROOT, "plugins", "modules", "sglang_flag_check.py")
TARGET = os.path.join(LAB, "models", "Qwen3.6-27B")
DRAFT = os.path.join(LAB, "models", "Qwen3.6-27B-DFlash")
SECRET = "sk-lab-0d5e3b7a91c2f4"
DDTREE_KEYS = ("speculative_ddtree_budget", "speculative_ddtree_shadow_linear")
ENVELOPES = ("gpu_a6000_tp2", "gpu_rtxpro6000_tp8")


# the module imports its module_utils as ansible_collections.ddtree.sglang...: scripts/setup.sh links
# the repository there
COLLECTIONS = os.path.join(ROOT, ".deps", "tree")
sys.path.insert(0, COLLECTIONS)


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


fc = _load("sglang_flag_check", MODULE)
flags = _load("sglang_flags", os.path.join(ROOT, "plugins", "filter", "sglang_flags.py"))


def envelope(group, drop=(), **changes):
    with open(os.path.join(ROOT, "inventory", "group_vars", group + ".yml"), encoding="utf-8") as handle:
        env = dict(yaml.safe_load(handle)["sglang_service_envelope"])
    env.update(model_path=TARGET, speculative_draft_model_path=DRAFT)
    for key in drop:
        env.pop(key, None)
    env.update(changes)
    # what roles/sglang_service/vars/main.yml appends after the envelope
    return flags.sglang_argv(env) + ["--host", "127.0.0.1", "--port", "30000"]


def _wheels(pattern):
    return sorted(glob.glob(os.path.join(WHEELHOUSE, pattern)))


@pytest.fixture(scope="module")
def sglang_python(tmp_path_factory):
    explicit = os.environ.get("DDTREE_SGLANG_PYTHON")
    if explicit:
        return explicit
    lock = os.path.join(LAB, "wheelhouse.lock")
    # the patched wheel carries a local version (sglang-0.5.23+...), the upstream one none
    if not (_wheels("sglang-0.5.23-*.whl") and os.path.exists(lock)):
        pytest.skip("no real sglang wheel in %s (lab/build-wheelhouse.sh builds it) and DDTREE_SGLANG_PYTHON unset" % WHEELHOUSE)
    venv = str(tmp_path_factory.mktemp("sglang-venv"))
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True)
    python = os.path.join(venv, "bin", "python")
    # `sglang==0.5.23` also matches a patched 0.5.23+<local> wheel beside it, which pip prefers
    # and then refuses for its hash; `===` matches the upstream version string only
    requirements = os.path.join(venv, "requirements.txt")
    with open(lock, encoding="utf-8") as source, open(requirements, "w", encoding="utf-8") as target:
        for line in source:
            target.write("sglang===" + line[len("sglang==") :] if line.startswith("sglang==") else line)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            python,
            "install",
            "-q",
            "--no-deps",
            "--no-index",
            "--no-compile",
            "--find-links",
            WHEELHOUSE,
            "--require-hashes",
            "-r",
            requirements,
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, "cannot build a venv from the wheelhouse: %s" % done.stderr[-2000:]
    # the probe writes no byte code into a release; compile what it imports once, as pip would
    # have for all of it (skipped above because that takes longer than this whole file)
    _compile_imports(python)
    return python


def _compile_imports(python, **env):
    env = dict(os.environ, **env)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # scripts/test.sh sets it
    subprocess.run([python, "-c", "import sglang.srt.server_args, sglang.srt.speculative.spec_info"], capture_output=True, check=True, env=env)


def _site_packages(python):
    code = "import os, sglang; print(os.path.dirname(os.path.dirname(sglang.__file__)))"
    return subprocess.run([python, "-c", code], capture_output=True, text=True, check=True).stdout.strip()


def _apply_patches(patches, overlay):
    for patch in patches:
        # the series may be rooted at the package (a/sglang/...) or at the repository (a/python/sglang/...)
        for strip in ("-p1", "-p2"):
            dry = subprocess.run(["patch", "--dry-run", "-s", strip, "-d", overlay, "-i", patch], capture_output=True, text=True, check=False)
            if dry.returncode == 0:
                subprocess.run(["patch", "-s", strip, "-d", overlay, "-i", patch], check=True)
                break
        else:
            pytest.fail("%s does not apply to sglang 0.5.23: %s" % (patch, dry.stdout + dry.stderr))


@pytest.fixture(scope="module")
def patched(sglang_python, tmp_path_factory):
    """(python, env) of an interpreter whose sglang has the DDTree patch.

    The prebuilt patched wheel, else the patch series applied to a copy of the upstream package,
    is laid over the upstream venv: PYTHONPATH comes before site-packages, so it wins.
    """
    explicit = os.environ.get("DDTREE_SGLANG_PATCHED_PYTHON")
    if explicit:
        return explicit, {}
    wheels = _wheels("sglang-0.5.23+*.whl")
    patches = sorted(glob.glob(os.path.join(LAB, "patches", "sglang-0.5.23", "*.patch")))
    overlay = str(tmp_path_factory.mktemp("sglang-patched"))
    if wheels:
        with zipfile.ZipFile(wheels[-1]) as wheel:
            wheel.extractall(overlay)
    elif patches:
        shutil.copytree(os.path.join(_site_packages(sglang_python), "sglang"), os.path.join(overlay, "sglang"))
        _apply_patches(patches, overlay)
    else:
        pytest.skip(
            "no DDTree-patched sglang: no sglang-0.5.23+*.whl in %s, no lab/patches/sglang-0.5.23/*.patch, DDTREE_SGLANG_PATCHED_PYTHON unset" % WHEELHOUSE
        )
    _compile_imports(sglang_python, PYTHONPATH=overlay)
    return sglang_python, {"PYTHONPATH": overlay}


def _run(args, data, cwd, environ_update):
    """What AnsibleModule.run_command does for the probe, without a module."""
    done = subprocess.run(args, input=data, cwd=cwd, env=dict(os.environ, **environ_update), capture_output=True, text=True, check=False)
    return done.returncode, done.stdout, done.stderr


_ANSWERS = {}


def check(python, argv, env=None, compute_capability=None):
    # each probe imports torch (2-4 s); tests that ask the same question share the answer
    key = (python, tuple(argv), tuple(sorted((env or {}).items())), compute_capability)
    if key not in _ANSWERS:
        _ANSWERS[key] = fc.run_probe(_run, shutil.which("timeout"), python, argv, environment=env, timeout=120, compute_capability=compute_capability)
    return _ANSWERS[key]


# --- upstream sglang 0.5.23: what the real parser says about the lab's envelopes --------------


@pytest.mark.parametrize("group", ENVELOPES)
def test_upstream_refuses_exactly_the_ddtree_flags(sglang_python, group):
    answer = check(sglang_python, envelope(group))
    assert answer["sglang_version"] == "0.5.23" and answer["valid"] is False
    ddtree_flags = ["--" + key.replace("_", "-") for key in DDTREE_KEYS]
    assert answer["unknown_flags"] == [flag for flag in ddtree_flags if flag in envelope(group)]
    assert answer["error"].startswith("sglang serve: error: unrecognized arguments: --speculative-ddtree-budget 16")


@pytest.mark.parametrize("group", ENVELOPES)
def test_upstream_takes_every_other_envelope_flag(sglang_python, group):
    # DFLASH stands in for DDTREE, which only the patch registers
    answer = check(sglang_python, envelope(group, drop=DDTREE_KEYS, speculative_algorithm="DFLASH"))
    assert answer["valid"] is True, answer
    assert answer["checks"] == ["argparse", "server_args", "speculative_algorithm"]
    assert answer["server_args"]["model_path"] == TARGET and answer["server_args"]["speculative_algorithm"] == "DFLASH"


def test_upstream_refuses_the_ddtree_algorithm(sglang_python):
    answer = check(sglang_python, envelope("gpu_rtxpro6000_tp8", drop=DDTREE_KEYS))
    assert answer["valid"] is False and answer["unknown_flags"] == []
    assert answer["error"] == "Unknown speculative algorithm name: DDTREE"
    msg = fc.build_message(answer, answer["prefix"])
    assert msg.startswith("The installed sglang 0.5.23 in %s refuses --speculative-algorithm DDTREE: " % answer["prefix"])


def test_upstream_warns_about_the_deprecated_cuda_graph_flag(sglang_python):
    answer = check(sglang_python, envelope("gpu_a6000_tp2", drop=DDTREE_KEYS, speculative_algorithm="DFLASH"))
    assert any("'--disable-cuda-graph' is deprecated" in text for text in answer["warnings"]), answer["warnings"]


def test_upstream_refuses_a_bad_choice(sglang_python):
    answer = check(sglang_python, ["--model-path", TARGET, "--load-format", "nope", "--tp-size", "two"])
    assert answer["error"].startswith("sglang serve: error: argument --load-format: invalid choice: 'nope' (choose from 'auto', ")


def test_module_end_to_end_masks_the_api_key(sglang_python, tmp_path):
    args = tmp_path / "args.json"
    argv = envelope("gpu_a6000_tp2") + ["--api-key", SECRET]
    args.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": {"python": sglang_python, "argv": argv}}))
    done = subprocess.run(
        [sys.executable, MODULE, str(args)], capture_output=True, text=True, timeout=120, check=False, env=dict(os.environ, PYTHONPATH=COLLECTIONS)
    )
    assert SECRET not in done.stdout and SECRET not in done.stderr
    result = json.loads(done.stdout)
    assert result["failed"] is True and result["argv"][-2:] == ["--api-key", "********"]
    assert result["msg"].startswith("The installed sglang 0.5.23 in ")
    assert "does not know --speculative-ddtree-budget, --speculative-ddtree-shadow-linear: " in result["msg"]
    assert result["msg"].endswith("(refused before the service was touched)")


# --- the DDTree-patched build ------------------------------------------------------------------


@pytest.mark.parametrize("group", ENVELOPES)
def test_patched_takes_the_envelopes(patched, group):
    python, env = patched
    answer = check(python, envelope(group), env)
    assert answer["valid"] is True, answer
    assert answer["server_args"]["speculative_algorithm"] == "DDTREE"
    assert answer["server_args"]["speculative_ddtree_budget"] == 16


def test_patched_still_refuses_a_bad_budget(patched):
    python, env = patched
    answer = check(python, envelope("gpu_a6000_tp2", speculative_ddtree_budget="many"), env)
    assert answer["valid"] is False and "--speculative-ddtree-budget" in answer["error"]


# --- start-up checks: real SGLang 0.5.23, the simulator and preflight refuse the same envelopes ---
# Each row: an envelope of the a6000 group (DFLASH, which upstream has, for DDTREE), whether SGLang
# refuses it at start-up, where (file and line of the raise in the real 0.5.23 package) and its
# message. `probe`: the flag check runs that check before the restart; otherwise it cannot here
# (the check needs the model's config or modules of a GPU build) and the row is held to the real
# source instead, while preflight (plugins/filter/sglang_validate.py::startup_problems) refuses it.

sys.path.insert(0, os.path.join(LAB, "sglang_sim"))
from sglang_sim import startup as sim_startup  # noqa: E402  pylint: disable=wrong-import-position
from sglang_sim.args import build_parser as sim_parser  # noqa: E402  pylint: disable=wrong-import-position

validate = _load("sglang_validate", os.path.join(ROOT, "plugins", "filter", "sglang_validate.py"))
CONTEXT_MESSAGE = (
    "Warning: User-specified context_length (524288) is greater than the derived context_length (262144). This may lead to "
    "incorrect model outputs or CUDA errors. Note that the derived context_length may differ from max_position_embeddings in "
    "the model's config. To allow overriding this maximum, set the env var SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1"
)
PARITY = [
    # (case, envelope changes, unit environment, refusal: None or (where, exception line, probe runs it))
    ("the lab envelope", {}, {}, None),
    (
        "DFLASH without a drafter",
        {"speculative_draft_model_path": None},
        {},
        ("srt/arg_groups/speculative_hook.py:325", "ValueError: DFLASH speculative decoding requires setting --speculative-draft-model-path.", True),
    ),
    (
        "an SSL key without its certificate",
        {"ssl_keyfile": "/etc/ssl/private/sglang.key"},
        {},
        ("srt/arg_groups/serving_hook.py:51", "ValueError: --ssl-keyfile requires --ssl-certfile to be specified as well.", True),
    ),
    (
        "DFLASH over two pipeline stages",
        {"tp_size": 1, "pp_size": 2},
        {},
        ("srt/arg_groups/speculative_hook.py:320", "ValueError: Currently DFLASH speculative decoding only supports pp_size == 1.", False),
    ),
    (
        "flex attention with speculative decoding",
        {"attention_backend": "flex_attention"},
        {},
        ("srt/arg_groups/attention_hook.py:161", "AssertionError: Speculative decoding is currently not supported with Flex Attention backend", False),
    ),
    ("a context longer than the model's", {"context_length": 524288}, {}, ("srt/configs/model_config.py:1314", "ValueError: " + CONTEXT_MESSAGE, False)),
    ("a longer context SGLang is told to allow", {"context_length": 524288}, {"SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN": "1"}, None),
]


def parity_envelope(changes):
    with open(os.path.join(ROOT, "inventory", "group_vars", "gpu_a6000_tp2.yml"), encoding="utf-8") as handle:
        env = dict(yaml.safe_load(handle)["sglang_service_envelope"])
    env.update(model_path=TARGET, speculative_draft_model_path=DRAFT, speculative_algorithm="DFLASH")
    for key in DDTREE_KEYS:
        env.pop(key)
    env.update(changes)
    return {key: value for key, value in env.items() if value is not None}


def _source_lines(sglang_python, where, before=8):
    path, line = where.rsplit(":", 1)
    with open(os.path.join(_site_packages(sglang_python), "sglang", path), encoding="utf-8") as handle:
        lines = handle.read().splitlines()
    return "\n".join(lines[int(line) - 1 - before : int(line) + 3])


def _quoted_parts(text):
    """The string literals of a stretch of source, joined as Python joins adjacent ones."""
    return "".join(re.findall(r'f?"((?:[^"\\\\]|\\\\.)*)"', text))


@pytest.mark.parametrize("case, changes, unit_env, refusal", PARITY, ids=[row[0] for row in PARITY])
def test_sglang_the_simulator_and_preflight_refuse_the_same_envelopes(sglang_python, case, changes, unit_env, refusal):
    env = parity_envelope(changes)
    argv = flags.sglang_argv(env) + ["--host", "127.0.0.1", "--port", "30000"]

    # real SGLang 0.5.23: the flag check's probe, for the H200's platform
    answer = check(sglang_python, argv, unit_env, compute_capability="9.0")
    if refusal is not None and refusal[2]:
        where, line, dummy = refusal
        assert answer["valid"] is False and answer["error"] == line.split(": ", 1)[1], answer
        assert answer["error_check"].endswith("(sglang/%s)" % where), answer["error_check"]
    else:
        assert answer["valid"] is True, answer
    if refusal is not None and not refusal[2]:
        # the probe cannot run this check here; the refusal is SGLang's own, at the line named
        source = _source_lines(sglang_python, refusal[0], before=20)
        exception, text = refusal[1].split(": ", 1)
        assert ("raise %s(" % exception if exception != "AssertionError" else "assert ") in source
        literal = _quoted_parts(source).replace("{context_length}", "524288").replace("{derived_context_len}", "262144")
        literal = literal.replace("{reason}", "User-specified").replace("{msg}", "")
        # the context message is built in two steps (msg, then the raise adds the last sentence)
        for piece in text.split(" To allow ") if text == CONTEXT_MESSAGE else [text]:
            assert piece.replace("overriding this maximum", " To allow overriding this maximum") in literal, (piece, source)

    # the simulator
    with open(os.path.join(TARGET, "config.json"), encoding="utf-8") as handle:
        target_cfg = json.load(handle)
    refused = sim_startup.refusal(sim_parser().parse_args(argv), target_cfg, unit_env)
    assert (refused and refused[1]) == (refusal and refusal[1])

    # preflight: the mirror of what the probe cannot run here
    problems = validate.startup_problems(
        {"sglang_service_envelope": env, "sglang_service_environment": unit_env}, {"models": {TARGET: {"isdir": True, "config": target_cfg}}}
    )
    assert len(problems) == (1 if refusal is not None else 0), problems


def test_sglang_ddtree_without_its_drafter_starts_in_sglang_but_preflight_and_the_simulator_refuse_it(patched):
    """The patched 0.5.23's hook checks only DFLASH, so the real parser accepts DDTREE without a drafter (the DFlash
    worker it runs would fail later, loading no drafter); preflight refuses it before the host changes, and the
    simulator refuses to start it with a line of its own."""
    env = parity_envelope({"speculative_algorithm": "DDTREE", "speculative_draft_model_path": None})
    argv = flags.sglang_argv(env) + ["--host", "127.0.0.1", "--port", "30000"]
    python, patch_env = patched
    answer = check(python, argv, patch_env, compute_capability="9.0")
    assert answer["valid"] is True, answer
    args = sim_parser().parse_args(argv)
    assert sim_startup.simulated_refusal(args) == (
        "SIMULATED sglang_sim: --speculative-algorithm DDTREE needs --speculative-draft-model-path (DDTree drafts with the DFlash drafter); not starting"
    )
    with open(os.path.join(TARGET, "config.json"), encoding="utf-8") as handle:
        target_cfg = json.load(handle)
    problems = validate.startup_problems(
        {"sglang_service_envelope": env, "sglang_service_environment": {}}, {"models": {TARGET: {"isdir": True, "config": target_cfg}}}
    )
    assert len(problems) == 1 and "speculative_algorithm DDTREE without speculative_draft_model_path" in problems[0]
    # with its drafter the simulator starts it
    assert sim_startup.simulated_refusal(sim_parser().parse_args(flags.sglang_argv(parity_envelope({"speculative_algorithm": "DDTREE"})))) is None
