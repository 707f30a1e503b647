"""The maintained router in the wheelhouse: smg 1.13.0 from lab/smg.lock, installed as a role installs a router
(a venv, --no-deps --require-hashes from the wheelhouse), starts as `smg launch` with what the lock holds and
nothing else, on loopback, and answers as a gateway: the proof that the lock names everything its command imports."""

import os
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import wheelhouse_build as wb  # noqa: E402

LAB = os.path.join(os.path.dirname(__file__), "..")
WHEELHOUSE = os.path.join(LAB, "wheelhouse")
SMG_LOCK = os.path.join(LAB, "smg.lock")
ROUTER_LOCK = os.path.join(LAB, "router.lock")


def test_the_lock_is_smg_and_what_smg_launch_imports():
    pins = wb.read_lock(SMG_LOCK)
    assert [(p["name"], p["version"]) for p in pins] == [("setproctitle", "1.3.8"), ("smg", "1.13.0")]
    # a distribution both routers need is the same file
    router = {p["name"]: p for p in wb.read_lock(ROUTER_LOCK)}
    assert next(p for p in pins if p["name"] == "setproctitle") == router["setproctitle"]


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
