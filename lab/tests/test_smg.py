"""The maintained router in the wheelhouse: smg 1.13.0 from lab/smg.lock, installed as a role installs a router
(a venv, --no-deps --require-hashes from the wheelhouse), starts as `smg launch` with what the lock holds and
nothing else, on loopback, and answers as a gateway: the proof that the lock names everything its command imports."""

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest


LAB = os.path.join(os.path.dirname(__file__), "..")
WHEELHOUSE = os.path.join(LAB, "wheelhouse")
SMG_LOCK = os.path.join(LAB, "smg.lock")


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def smg_venv(tmp_path_factory):
    if not any(name.startswith("smg-1.13.0-") for name in (os.listdir(WHEELHOUSE) if os.path.isdir(WHEELHOUSE) else [])):
        pytest.skip("lab/wheelhouse holds no smg wheel (lab/build-wheelhouse.sh)")
    venv = tmp_path_factory.mktemp("smg-venv")
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run(
        [str(venv / "bin" / "pip"), "install", "-q", "--no-index", "--no-deps", "--require-hashes", "--find-links", WHEELHOUSE, "-r", SMG_LOCK],
        check=True,
    )
    return venv


def test_smg_says_its_version(smg_venv):
    run = subprocess.run([str(smg_venv / "bin" / "smg"), "--version"], capture_output=True, text=True, check=True)
    assert run.stdout.splitlines()[0] == "smg 1.13.0"


def test_smg_launch_starts_a_gateway_on_loopback_with_the_locked_imports_only(smg_venv):
    port, metrics_port = free_port(), free_port()
    gateway = subprocess.Popen(
        [str(smg_venv / "bin" / "python"), "-m", "smg.launch_router", "--host", "127.0.0.1", "--port", str(port),
         "--prometheus-host", "127.0.0.1", "--prometheus-port", str(metrics_port), "--log-level", "warn"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        deadline, health, metrics = time.monotonic() + 30, None, ""
        while time.monotonic() < deadline and gateway.poll() is None:
            try:
                with urllib.request.urlopen("http://127.0.0.1:%d/health" % port, timeout=2) as answer:
                    health = answer.status
                with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % metrics_port, timeout=2) as answer:
                    metrics = answer.read().decode()
                break
            except OSError:
                time.sleep(0.2)
        assert gateway.poll() is None, gateway.stdout.read()
        assert health == 200
        # its own names, the smg_ prefix, on its own port (the router's metrics in docs/observability.md)
        assert "# TYPE smg_worker_retries_total counter" in metrics.splitlines(), metrics[:2000]
    finally:
        # the process this test started, by its PID
        gateway.terminate()
        gateway.wait(timeout=30)


# --- the role's launcher in front of a keyed simulator: smg's keys, worker API and draining, as the role uses them ----

LAUNCHER = os.path.join(LAB, "..", "roles", "sglang_router", "files", "ddtree-smg-launch.py")
MODELS = os.path.join(LAB, "models")
DATA_KEY, CONTROL_KEY = "lab-data-key-3141", "lab-control-key-2718"
SIM_FLAGS = ["--tp-size", "2", "--speculative-algorithm", "DDTREE", "--speculative-ddtree-shadow-linear",
             "--mem-fraction-static", "0.85", "--context-length", "32768", "--max-running-requests", "4",
             "--disable-cuda-graph", "--mamba-full-memory-ratio", "0.5"]  # fmt: skip


def call(method, url, body=None, key=None):
    """(status, parsed JSON or text) of one request, (None, why) without an answer; no proxy."""
    headers = {"Content-Type": "application/json"}
    if key:
        headers["Authorization"] = "Bearer " + key
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, headers=headers, method=method)
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(request, timeout=30) as answer:
            status, raw = answer.status, answer.read().decode()
    except urllib.error.HTTPError as error:
        status, raw = error.code, error.read().decode()
    except OSError as error:  # not listening yet
        return None, str(error)
    try:
        return status, json.loads(raw)
    except ValueError:
        return status, raw


def wait_until(check, seconds, what):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        result = check()
        if result:
            return result
        time.sleep(0.2)
    raise AssertionError("not within %s s: %s" % (seconds, what))


@pytest.fixture(name="keyed_pair")
def fixture_keyed_pair(smg_venv, tmp_path):
    """A simulated SGLang server with the fleet's key, and smg started by the role's launcher with both keys in its
    environment only; yields (gateway URL, worker URL, gateway process)."""
    card = {"name": "NVIDIA RTX A6000", "memory_total_mib": 49140, "compute_cap": "8.6"}
    gpus = tmp_path / "gpus.json"
    gpus.write_text(json.dumps({"driver_version": "580.95.05", "cuda_version": "13.0", "gpus": [card, card]}))
    shutil.copytree(os.path.join(MODELS, "Qwen3.6-27B"), tmp_path / "target")
    shutil.copytree(os.path.join(MODELS, "Qwen3.6-27B-DFlash"), tmp_path / "draft")
    sim_env = dict(os.environ, DDTREE_LAB_GPUS_FILE=str(gpus), SGLANG_SIM_TIME_SCALE="0.05", TRITON_CACHE_DIR=str(tmp_path / "triton"),
                   PATH=os.path.join(LAB, "files") + os.pathsep + os.environ.get("PATH", ""),
                   PYTHONPATH=os.path.join(LAB, "sglang_sim"), SGLANG_API_KEY=DATA_KEY)  # fmt: skip
    worker_port, port, metrics_port = free_port(), free_port(), free_port()
    worker = subprocess.Popen(
        [sys.executable, "-m", "sglang_sim.launch_server", "--model-path", str(tmp_path / "target"), "--port", str(worker_port),
         "--speculative-draft-model-path", str(tmp_path / "draft"), *SIM_FLAGS],
        env=sim_env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    gateway_env = dict(os.environ, DDTREE_SMG_API_KEY=DATA_KEY, DDTREE_SMG_CONTROL_PLANE_API_KEY=CONTROL_KEY)
    gateway = subprocess.Popen(
        [str(smg_venv / "bin" / "python"), "-I", LAUNCHER, "--host", "127.0.0.1", "--port", str(port), "--policy", "round_robin",
         "--prometheus-host", "127.0.0.1", "--prometheus-port", str(metrics_port), "--log-level", "info"],
        env=gateway_env, stdout=(tmp_path / "smg.log").open("w"), stderr=subprocess.STDOUT,
    )  # fmt: skip
    base, worker_url = "http://127.0.0.1:%d" % port, "http://127.0.0.1:%d" % worker_port
    try:
        wait_until(lambda: call("GET", worker_url + "/health")[0] == 200 and call("GET", base + "/health")[0] == 200, 60, "both answer /health")
        yield base, worker_url, gateway, tmp_path / "smg.log"
    finally:
        # the processes this fixture started, by their PIDs
        for process in (gateway, worker):
            process.terminate()
            process.wait(timeout=30)


def test_keys_guard_both_planes_and_stay_off_the_command_line(keyed_pair):
    base, worker_url, gateway, log = keyed_pair
    # the control plane takes its own key only; the worker joins with the fleet's key in the request body
    assert call("GET", base + "/workers")[0] == 401
    assert call("GET", base + "/workers", key=DATA_KEY)[0] == 401
    status, answer = call("POST", base + "/workers", {"url": worker_url, "api_key": DATA_KEY}, key=CONTROL_KEY)
    assert status == 202 and answer["status"] == "accepted"
    listed = wait_until(lambda: [w for w in call("GET", base + "/workers", key=CONTROL_KEY)[1]["workers"] if w["status"] == "ready"], 60, "the worker is ready")
    assert [w["url"] for w in listed] == [worker_url]
    # a second POST of a listed URL: 409 (the role's module takes it as "already there")
    assert call("POST", base + "/workers", {"url": worker_url, "api_key": DATA_KEY}, key=CONTROL_KEY)[0] == 409
    generate = {"text": "key check", "sampling_params": {"max_new_tokens": 4}}
    assert call("POST", base + "/generate", generate)[0] == 401
    status, answer = call("POST", base + "/generate", generate, key=DATA_KEY)
    assert status == 200 and answer["meta_info"]["completion_tokens"] == 4
    # neither key on the gateway's command line (the launcher added them inside the process), nor in its log
    with open("/proc/%d/cmdline" % gateway.pid, "rb") as cmdline:
        argv = cmdline.read().decode()
    assert DATA_KEY not in argv and CONTROL_KEY not in argv and argv  # setproctitle left smg::router
    text = log.read_text()
    assert "Starting router on 127.0.0.1" in text and DATA_KEY not in text and CONTROL_KEY not in text


def test_a_removed_worker_drains_then_goes_and_joins_again_under_a_new_id(keyed_pair):
    base, worker_url = keyed_pair[:2]
    call("POST", base + "/workers", {"url": worker_url, "api_key": DATA_KEY}, key=CONTROL_KEY)
    (first,) = wait_until(
        lambda: [w for w in call("GET", base + "/workers", key=CONTROL_KEY)[1]["workers"] if w["status"] == "ready"], 60, "the worker is ready"
    )
    assert call("DELETE", base + "/workers/" + first["id"], key=CONTROL_KEY)[0] == 202
    # the removal is queued: the worker turns draining (not routed to, not healthy) within moments
    (draining,) = wait_until(
        lambda: [w for w in call("GET", base + "/workers", key=CONTROL_KEY)[1]["workers"] if w["status"] != "ready"], 10, "the worker drains"
    )
    assert (draining["url"], draining["status"], draining["is_healthy"]) == (worker_url, "draining", False)
    # while it is listed draining, smg refuses to add it again
    assert call("POST", base + "/workers", {"url": worker_url, "api_key": DATA_KEY}, key=CONTROL_KEY)[0] == 409
    wait_until(lambda: call("GET", base + "/workers", key=CONTROL_KEY)[1]["workers"] == [], 30, "the drained worker is gone")
    call("POST", base + "/workers", {"url": worker_url, "api_key": DATA_KEY}, key=CONTROL_KEY)
    (again,) = wait_until(
        lambda: [w for w in call("GET", base + "/workers", key=CONTROL_KEY)[1]["workers"] if w["status"] == "ready"], 60, "the worker is back"
    )
    assert again["url"] == worker_url and again["id"] != first["id"]
