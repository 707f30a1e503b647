"""The SGLang simulator: the memory rule against the field notes, and the process end to end."""

import json
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

import pytest

LAB = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(LAB, "sglang_sim"))

from sglang_sim import memory  # noqa: E402  pylint: disable=wrong-import-position
from sglang_sim.args import build_parser  # noqa: E402  pylint: disable=wrong-import-position
from sglang_sim.launch_server import Knobs, api_key_from_environment  # noqa: E402  pylint: disable=wrong-import-position

TARGET = os.path.join(LAB, "models", "Qwen3.6-27B")
DRAFT = os.path.join(LAB, "models", "Qwen3.6-27B-DFlash")
A6000_MIB = 49140
PRO6000_MIB = 97887
TIME_SCALE = "0.05"


def shape(path):
    with open(os.path.join(path, "config.json"), encoding="utf-8") as handle:
        return memory.shape_from_config(json.load(handle))


def ct129(**flags):
    env = memory.Envelope(tp_size=2, speculative=True, **flags)
    return memory.plan_memory(A6000_MIB, shape(TARGET), shape(DRAFT), env)


# --- the memory rule, calibrated to the field notes ------------------------------------------


def test_attempt1_fails_pool_sizing():
    plan = ct129(mem_fraction_static=0.88, context_length=131072)
    assert plan.verdict == memory.VERDICT_POOL
    assert plan.max_running_requests == 48 and plan.mamba_slots < plan.required_mamba_slots


def test_attempt2_fails_decode_graph_capture():
    plan = ct129(mem_fraction_static=0.95, context_length=32768, max_running_requests=4)
    assert plan.verdict == memory.VERDICT_DECODE_GRAPH
    assert plan.max_total_num_tokens >= 32768 and plan.mamba_slots >= 5


def test_attempt3_fails_piecewise_graph_capture():
    plan = ct129(mem_fraction_static=0.95, context_length=32768, max_running_requests=4, disable_cuda_graph=True)
    assert plan.verdict == memory.VERDICT_PIECEWISE_GRAPH and plan.piecewise_graph and not plan.decode_graph


def test_attempt4_is_healthy():
    plan = ct129(mem_fraction_static=0.85, context_length=32768, max_running_requests=4, disable_cuda_graph=True, mamba_full_memory_ratio=0.5)
    assert plan.ok, plan.reason


def test_ct200_production_envelope_is_healthy():
    env = memory.Envelope(tp_size=8, speculative=True, mem_fraction_static=0.88, context_length=131072)
    plan = memory.plan_memory(PRO6000_MIB, shape(TARGET), shape(DRAFT), env)
    assert plan.ok, plan.reason


def test_piecewise_off_rescues_attempt3():
    plan = ct129(mem_fraction_static=0.95, context_length=32768, max_running_requests=4, disable_cuda_graph=True, disable_piecewise_cuda_graph=True)
    assert plan.ok, plan.reason


# --- the process ---------------------------------------------------------------------------


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(name="sim_env")
def fixture_sim_env(tmp_path):
    gpus = tmp_path / "gpus.json"
    card = {"name": "NVIDIA RTX A6000", "memory_total_mib": A6000_MIB, "compute_cap": "8.6"}
    gpus.write_text(json.dumps({"driver_version": "580.95.05", "cuda_version": "13.0", "gpus": [card, card]}))
    models = tmp_path / "models"
    shutil.copytree(TARGET, models / "target")
    shutil.copytree(DRAFT, models / "draft")
    env = dict(
        os.environ,
        DDTREE_LAB_GPUS_FILE=str(gpus),
        SGLANG_SIM_TIME_SCALE=TIME_SCALE,
        TRITON_CACHE_DIR=str(tmp_path / "triton"),
        PATH=os.path.join(LAB, "files") + os.pathsep + os.environ.get("PATH", ""),
        PYTHONPATH=os.path.join(LAB, "sglang_sim"),
    )
    env.pop("SGLANG_SIM_FAULT", None)
    return env, str(models)


def argv(models, port, *extra):
    return [
        sys.executable,
        "-m",
        "sglang_sim.launch_server",
        "--model-path",
        f"{models}/target",
        "--port",
        str(port),
        "--tp-size",
        "2",
        "--speculative-algorithm",
        "DDTREE",
        "--speculative-draft-model-path",
        f"{models}/draft",
        "--speculative-ddtree-shadow-linear",
        *extra,
    ]


HEALTHY = (
    "--mem-fraction-static",
    "0.85",
    "--context-length",
    "32768",
    "--max-running-requests",
    "4",
    "--disable-cuda-graph",
    "--mamba-full-memory-ratio",
    "0.5",
    "--mamba-scheduler-strategy",
    "extra_buffer",
)


def run_to_exit(env, args):
    return subprocess.run(args, env=env, capture_output=True, text=True, timeout=30, check=False)


def wait_ready(port, proc, deadline_s=15):
    end = time.time() + deadline_s
    while time.time() < end:
        assert proc.poll() is None, "simulator exited before binding"
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=2) as resp:
                return json.load(resp)
        except (urllib.error.URLError, ConnectionError):
            time.sleep(0.1)
    raise AssertionError("simulator never answered /v1/models")


def post(port, path, body):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        return resp.status, json.load(resp)


def stop(proc):
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGTERM)
    return proc.wait(timeout=10)


def test_unknown_flag_exits_2(sim_env):
    env, models = sim_env
    out = run_to_exit(env, argv(models, free_port(), "--no-such-flag"))
    assert out.returncode == 2
    assert "launch_server.py: error: unrecognized arguments: --no-such-flag" in out.stderr


def test_load_jitter_is_seconds_at_least_zero_and_a_bad_value_is_refused(sim_env):
    assert [Knobs({"SGLANG_SIM_LOAD_JITTER_S": text}).load_jitter_s() for text in ("", "2.5", "0", "-1", "inf", "soon")] == [0.0, 2.5, 0.0, None, None, None]
    env, models = sim_env
    done = run_to_exit(dict(env, SGLANG_SIM_LOAD_JITTER_S="-1"), argv(models, free_port(), *HEALTHY))
    assert done.returncode == 2
    assert done.stderr == "sglang_sim: SGLANG_SIM_LOAD_JITTER_S='-1' is not a number of seconds >= 0\n"


def test_missing_model_config(sim_env, tmp_path):
    env, models = sim_env
    out = run_to_exit(env, argv(models, free_port(), "--model-path", str(tmp_path / "nothing")))
    assert out.returncode != 0
    assert f"make sure '{tmp_path / 'nothing'}' is the correct path to a directory containing a config.json file" in out.stderr


def test_attempt1_envelope_dies_with_pool_error(sim_env):
    env, models = sim_env
    out = run_to_exit(env, argv(models, free_port(), "--mem-fraction-static", "0.88", "--context-length", "131072"))
    assert out.returncode != 0
    assert "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. Current value: mem_fraction_static=0.88" in out.stderr
    assert "Received sigquit from a child process. It usually means the child failed." in out.stderr


def test_healthy_envelope_serves_and_stops_on_sigterm(sim_env):
    env, models = sim_env
    port = free_port()
    with subprocess.Popen(argv(models, port, *HEALTHY), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as proc:
        try:
            listing = wait_ready(port, proc)
            assert listing["data"][0]["id"] == f"{models}/target" and listing["data"][0]["max_model_len"] == 32768
            status, body = post(port, "/generate", {"text": "tell me about trees", "sampling_params": {"max_new_tokens": 7}})
            assert status == 200 and len(body["text"].split()) == 7
            assert body["meta_info"]["finish_reason"] == {"type": "length", "length": 7}
        finally:
            code = stop(proc)
        log = proc.stdout.read()
    assert code == 0
    assert "disable_cuda_graph is ignored for piecewise cuda graph" in log
    assert "The server is fired up and ready to roll!" in log
    assert '"POST /generate HTTP/1.1" 200 OK' in log


def test_generate_fails_fault(sim_env):
    env, models = sim_env
    env = dict(env, SGLANG_SIM_FAULT="generate_fails")
    port = free_port()
    with subprocess.Popen(argv(models, port, *HEALTHY), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) as proc:
        try:
            wait_ready(port, proc)
            with pytest.raises(urllib.error.HTTPError) as err:
                post(port, "/generate", {"text": "hi", "sampling_params": {"max_new_tokens": 4}})
            assert err.value.code == 500
        finally:
            stop(proc)


def test_port_in_use(sim_env):
    env, models = sim_env
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        out = run_to_exit(env, argv(models, port, *HEALTHY))
    assert out.returncode == 1
    assert f"[Errno 98] error while attempting to bind on address ('127.0.0.1', {port}): address already in use" in out.stderr


def _status(port, path, key=None, body=None):
    headers = {"Content-Type": "application/json"}
    if key is not None:
        headers["Authorization"] = f"Bearer {key}"
    data = json.dumps(body).encode() if body is not None else None
    try:
        with urllib.request.urlopen(urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data, headers=headers), timeout=10) as resp:
            return resp.status
    except urllib.error.HTTPError as err:
        return err.code


def test_api_key_from_the_environment_is_required_and_never_logged(sim_env):
    env, models = sim_env
    env = dict(env, SGLANG_API_KEY="sim-env-key-4711")
    port = free_port()
    with subprocess.Popen(argv(models, port, *HEALTHY), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as proc:
        try:
            _wait_health(port, proc)
            assert _status(port, "/v1/models") == 401
            assert _status(port, "/v1/models", key="wrong") == 401
            assert _status(port, "/v1/models", key="sim-env-key-4711") == 200
            generate = {"text": "hi", "sampling_params": {"max_new_tokens": 2}}
            assert _status(port, "/generate", body=generate) == 401
            assert _status(port, "/generate", key="sim-env-key-4711", body=generate) == 200
        finally:
            stop(proc)
        log = proc.stdout.read()
    assert "api_key='***'" in log
    assert "sim-env-key-4711" not in log


def test_api_key_flag_wins_over_the_environment():
    parser = build_parser()
    assert api_key_from_environment(parser.parse_args(["--model-path", "m", "--api-key", "flag"]), {"SGLANG_API_KEY": "env"}).api_key == "flag"
    assert api_key_from_environment(parser.parse_args(["--model-path", "m"]), {"SGLANG_API_KEY": "env"}).api_key == "env"
    assert api_key_from_environment(parser.parse_args(["--model-path", "m"]), {"SGLANG_API_KEY": ""}).api_key is None
    stock = {"SGLANG_API_KEY": "env", "SGLANG_SIM_STOCK_AUTH": "1"}
    assert api_key_from_environment(parser.parse_args(["--model-path", "m"]), stock).api_key is None
    assert api_key_from_environment(parser.parse_args(["--model-path", "m", "--api-key", "flag"]), stock).api_key == "flag"


def _wait_health(port, proc, deadline_s=15):
    """/health answers without a key, so it tells when a keyed server is up."""
    end = time.time() + deadline_s
    while True:
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0 and _status(port, "/health") == 200:
                return
        assert proc.poll() is None and time.time() < end, "simulator never answered /health"
        time.sleep(0.1)


def test_unwritable_triton_cache_kills_the_schedulers(sim_env, tmp_path):
    env, models = sim_env
    blocked = tmp_path / "not-a-dir"
    blocked.write_text("")
    out = run_to_exit(dict(env, TRITON_CACHE_DIR=str(blocked / "triton")), argv(models, free_port(), *HEALTHY))
    assert out.returncode != 0
    assert f"NotADirectoryError: [Errno 20] Not a directory: '{blocked / 'triton'}'" in out.stderr
    assert "Received sigquit from a child process." in out.stderr


def test_kernels_are_cached_in_triton_cache_dir(sim_env):
    env, models = sim_env
    port = free_port()
    with subprocess.Popen(argv(models, port, *HEALTHY), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) as proc:
        try:
            wait_ready(port, proc)
        finally:
            stop(proc)
    assert os.path.exists(os.path.join(env["TRITON_CACHE_DIR"], "sglang_sim-kernels.txt"))


# --- load, generation time and the graceful stop (zero-downtime upgrades) --------------------


def _loads(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/loads?include=core", timeout=5) as resp:
        return json.load(resp)


def _generate_in_background(port, results, tokens=4):
    def one():
        started = time.monotonic()
        try:
            status = post(port, "/generate", {"text": "drain me", "sampling_params": {"max_new_tokens": tokens}})[0]
        except (urllib.error.URLError, ConnectionError) as exc:
            status = repr(exc)
        results.append((status, time.monotonic() - started))

    thread = threading.Thread(target=one)
    thread.start()
    return thread


def test_generation_time_and_loads_count_running_and_waiting(sim_env):
    env, models = sim_env
    port = free_port()
    # HEALTHY has --max-running-requests 4: the fifth and sixth generation wait
    with subprocess.Popen(
        argv(models, port, *HEALTHY), env=dict(env, SGLANG_SIM_GENERATE_S="1.5"), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    ) as proc:
        try:
            wait_ready(port, proc)
            idle = _loads(port)
            assert idle["loads"][0]["num_running_reqs"] == 0 and idle["loads"][0]["max_running_requests"] == 4
            assert idle["num_accelerators"] == 2 and idle["version"]
            results = []
            threads = [_generate_in_background(port, results) for dummy in range(6)]
            time.sleep(0.6)
            busy = _loads(port)["loads"][0]
            assert (busy["num_running_reqs"], busy["num_waiting_reqs"]) == (4, 2)
            for thread in threads:
                thread.join(10)
            latencies = sorted(latency for status, latency in results if status == 200)
            assert len(latencies) == 6
            assert 1.4 < latencies[0] < 2.5 and latencies[-1] > 2.9
            assert _loads(port)["loads"][0]["num_running_reqs"] == 0
        finally:
            stop(proc)


def test_sigterm_finishes_requests_in_flight_and_refuses_new_ones(sim_env):
    env, models = sim_env
    port = free_port()
    with subprocess.Popen(
        argv(models, port, *HEALTHY), env=dict(env, SGLANG_SIM_GENERATE_S="2"), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    ) as proc:
        try:
            wait_ready(port, proc)
            results = []
            threads = [_generate_in_background(port, results) for dummy in range(3)]
            time.sleep(0.5)
            os.kill(proc.pid, signal.SIGTERM)
            time.sleep(0.5)
            assert proc.poll() is None, "exited with generations in flight"
            with socket.socket() as probe:
                assert probe.connect_ex(("127.0.0.1", port)) != 0, "still accepting connections while draining"
            for thread in threads:
                thread.join(10)
            code = proc.wait(timeout=10)
        finally:
            stop(proc)
        log = proc.stdout.read()
    assert code == 0
    assert [result[0] for result in results] == [200, 200, 200]
    assert "SIGTERM received. signum=15. Draining requests and shutting down..." in log
    assert "Gracefully exiting... Remaining number of requests 3." in log
    assert "Finished server process" in log


def test_sigterm_before_ready_exits_at_once(sim_env):
    env, models = sim_env
    with subprocess.Popen(
        argv(models, free_port(), *HEALTHY), env=dict(env, SGLANG_SIM_FAULT="hang_before_bind"), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    ) as proc:
        end = time.time() + 10
        while "Memory pool end" not in proc.stdout.readline() and time.time() < end:
            pass
        os.kill(proc.pid, signal.SIGTERM)
        try:
            code = proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            # Popen's __exit__ would wait for ever: end the simulator this test started, then fail
            proc.kill()
            proc.wait()
            code = "still running 5 s after SIGTERM"
        assert code == 0


def test_node_rank_above_zero_serves_health_only(sim_env):
    """Multi-node: a node_rank > 0 runs no API, only SGLang's dummy health server on its port."""
    env, models = sim_env
    port = free_port()
    multinode = ("--nnodes", "2", "--node-rank", "1", "--dist-init-addr", "10.0.0.1:25000")
    with subprocess.Popen(argv(models, port, *HEALTHY, *multinode), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as proc:
        try:
            _wait_health(port, proc)
            assert _status(port, "/health_generate") == 200
            assert _status(port, "/v1/models") == 404
            assert _status(port, "/generate", body={"text": "hi"}) == 404
        finally:
            code = stop(proc)
        log = proc.stdout.read()
    assert code == 0
    assert "Load weight end." in log
    assert "fired up and ready" not in log and "Uvicorn running" not in log


# --- the replay fault: a real failure log, as its server printed it ----------------------------

from sglang_sim import replay  # noqa: E402  pylint: disable=wrong-import-position,wrong-import-order

REAL = [
    "[2025-03-07 21:49:30 TP0] Load weight begin. avail mem=70.10 GB",
    "Loading safetensors checkpoint shards: 100% Completed | 8/8 [00:03<00:00,  2.50it/s]",
    "[2025-03-07 21:49:33 TP0] Load weight end.",
    "[2025-03-07 21:49:43 TP0] Scheduler hit an exception: Traceback (most recent call last):",
]


def test_replay_keeps_order_and_scales_the_gaps_between_timestamps():
    plan = replay.schedule(REAL, time_scale=0.1)
    assert [line for _gap, line in plan] == REAL
    # 3 s between the first two stamps at 0.1x; the unstamped line follows its predecessor at once
    assert [round(gap, 2) for gap, _line in plan] == [0.02, 0.02, 0.3, 1.0]
    # a long silence is capped
    assert replay.schedule(REAL, time_scale=1.0)[3][0] == replay.MAX_GAP_S


def test_replay_prints_the_lines_verbatim_and_exits_or_hangs():
    class Out:  # pylint: disable=too-few-public-methods
        text = ""

        def write(self, chunk):
            Out.text += chunk

        def flush(self):
            pass

    waits = []
    assert replay.replay({"lines": REAL}, 1.0, Out(), waits.append) == 1
    assert Out.text == "\n".join(REAL) + "\n"
    assert len(waits) == len(REAL)
    assert replay.replay({"lines": REAL, "end": "hang"}, 1.0, Out(), waits.append) is None
    assert replay.replay({"lines": REAL, "end": "serve"}, 1.0, Out(), waits.append) == 0


def test_replay_refuses_a_file_that_is_no_record(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"lines": []}))
    with pytest.raises(ValueError, match="non-empty list 'lines'"):
        replay.load(str(bad))
    bad.write_text(json.dumps({"lines": ["x"], "end": "later"}))
    with pytest.raises(ValueError, match="'end' must be one of exit, hang, serve"):
        replay.load(str(bad))
    corpus = tmp_path / "corpus.json"
    corpus.write_text(json.dumps([{"id": "a", "lines": ["one"]}, {"id": "b", "lines": ["two"]}]))
    assert replay.load(str(corpus), "b")["lines"] == ["two"]
    assert replay.load(str(corpus), "b", "serve")["end"] == "serve"
    with pytest.raises(ValueError, match="'end' must be one of exit, hang, serve"):
        replay.load(str(corpus), "b", "later")
    with pytest.raises(ValueError, match="no record with id 'c'"):
        replay.load(str(corpus), "c")


def test_replay_fault_end_to_end(sim_env, tmp_path):
    env, models = sim_env
    record = tmp_path / "record.json"
    record.write_text(json.dumps({"id": "x-1", "url": "https://example.invalid/1", "lines": REAL}))
    out = run_to_exit(dict(env, SGLANG_SIM_FAULT="replay", SGLANG_SIM_REPLAY=str(record)), argv(models, free_port(), *HEALTHY))
    assert out.returncode == 1
    assert out.stderr.endswith("\n".join(REAL) + "\n")
    assert "SIMULATED replay of a real failure log: x-1 (https://example.invalid/1)" in out.stderr
    missing = run_to_exit(dict(env, SGLANG_SIM_FAULT="replay", SGLANG_SIM_REPLAY=str(tmp_path / "none.json")), argv(models, free_port(), *HEALTHY))
    assert missing.returncode == 2 and "sglang_sim: SGLANG_SIM_REPLAY: " in missing.stderr


def test_replay_of_a_healthy_log_goes_on_to_serve(sim_env, tmp_path):
    env, models = sim_env
    record = tmp_path / "record.json"
    record.write_text(json.dumps({"id": "h-1", "url": "https://example.invalid/h", "lines": REAL}))
    port = free_port()
    run_env = dict(env, SGLANG_SIM_FAULT="replay", SGLANG_SIM_REPLAY=str(record), SGLANG_SIM_REPLAY_END="serve", SGLANG_SIM_TIME_SCALE="0.01")
    with subprocess.Popen(argv(models, port, *HEALTHY), env=run_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as proc:
        try:
            wait_ready(port, proc)
            status, _body = post(port, "/generate", {"text": "x", "sampling_params": {"max_new_tokens": 2}})
        finally:
            code = stop(proc)
        log = proc.stdout.read()
    assert status == 200 and code == 0
    assert "SIMULATED replay of a real healthy log: h-1 (https://example.invalid/h)" in log
    assert "\n".join(REAL) + "\n" in log


# --- the simulator's failure wording against real logs ---------------------------------------

from sglang_sim import failures  # noqa: E402  pylint: disable=wrong-import-position,wrong-import-order

CORPUS = os.path.join(os.path.dirname(LAB), "tests", "unit", "plugins", "module_utils", "fixtures", "real_failures")


def _wording(line):
    """A line without its numbers (and their units: torch picks MiB or GiB by size): what the
    simulator must share with the real line."""
    return re.sub(r"\d+(?:\.\d+)?(?: [KMG]iB\b)?", "N", line)


def _corpus_lines():
    lines = []
    for name in sorted(os.listdir(CORPUS)):
        with open(os.path.join(CORPUS, name), encoding="utf-8") as handle:
            for record in json.load(handle):
                lines.extend((record["id"], _wording(line)) for line in record["lines"])
    return lines


# The simulator's exception lines whose failure the corpus of real logs holds, each with a record
# where a real server printed the same words (numbers aside)
SIMULATED_AS_REAL = [
    (failures.triton_out_of_resources(106496, 101376)[1][0], "freetoken-246-rtx2080ti-triton-smem"),
    (failures.scheduler_crash()[1][0], "slang-6738-capture-illegal-access"),
    (failures.graph_capture_oom_cause(2.0, 47.99, 0.12, 1.1)[1][0], "mineru-3418-siglip-oom-then-killed"),
    ("Received sigquit from a child process. It usually means the child failed.", "verl-1611-sglang-rollout-illegal-access"),
    ("Scheduler hit an exception: Traceback (most recent call last):", "sglang-5491-eagle-flashinfer-illegal-access"),
    (failures.pool_not_enough_memory(0.88)[1][0].split(" Current value", maxsplit=1)[0], "sglang-4330-eagle-not-enough-memory-084"),
]


@pytest.mark.skipif(not os.path.isdir(CORPUS), reason="the corpus of real failure logs is not in this copy")
@pytest.mark.parametrize("simulated, record_id", SIMULATED_AS_REAL, ids=[record_id for _line, record_id in SIMULATED_AS_REAL])
def test_simulated_failure_lines_are_worded_as_real_logs(simulated, record_id):
    wording = _wording(simulated)
    assert any(rid == record_id and wording in line for rid, line in _corpus_lines()), f"{simulated!r} is not worded as in {record_id}"


def test_a_start_up_check_sglang_makes_stops_the_simulator_too(sim_env):
    # SGLang's resolve_once raises in the launcher before any scheduler: a traceback, exit 1
    env, models = sim_env
    done = run_to_exit(env, argv(models, free_port(), *HEALTHY, "--context-length", "524288"))
    assert done.returncode == 1, done.stderr[-2000:]
    assert done.stderr.strip().splitlines()[-1] == (
        "ValueError: Warning: User-specified context_length (524288) is greater than the derived context_length (262144). This may "
        "lead to incorrect model outputs or CUDA errors. Note that the derived context_length may differ from "
        "max_position_embeddings in the model's config. To allow overriding this maximum, set the env var "
        "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1"
    )
    assert "Load weight begin" not in done.stderr


# --- the SIMULATED throughput model, the slow fault, streaming ------------------------------------
from sglang_sim import throughput  # noqa: E402  pylint: disable=wrong-import-position


def test_gpu_classes_from_the_compute_capability():
    assert [throughput.gpu_class(cap) for cap in ("8.6", "8.0", "12.0", "10.0", "9.0", "x")] == ["ampere", "ampere", "blackwell", "blackwell", "other", "other"]


def test_ddtree_against_linear_is_the_field_notes_story_per_class():
    def ratio(cap, tp):
        return throughput.rate(tp, "DDTREE", 16, cap).tokens_per_s / throughput.rate(tp, "DFLASH", None, cap).tokens_per_s

    assert ratio("12.0", 8) == pytest.approx(1.24, abs=1e-9)
    assert ratio("8.6", 2) == pytest.approx(0.96, abs=1e-9)
    # the calibration: the lab's ct129 envelope keeps the former 0.01 s a token
    assert throughput.rate(2, "DDTREE", None, "8.6").tokens_per_s == pytest.approx(100.0, abs=1e-9)
    assert throughput.rate(2, None, None, "8.6").accept_length == 1.0


def test_load_and_the_slow_share_lower_the_rate():
    one = throughput.rate(8, "DDTREE", 16, "12.0")
    assert throughput.rate(8, "DDTREE", 16, "12.0", running=5).tokens_per_s == pytest.approx(one.tokens_per_s / 1.2)
    assert throughput.rate(8, "DDTREE", 16, "12.0", slow_share=0.3).tokens_per_s == pytest.approx(one.tokens_per_s * 0.7)
    assert one.step_s == pytest.approx(one.accept_length / one.tokens_per_s)


def _stream(conn, tokens):
    conn.request(
        "POST",
        "/generate",
        body=json.dumps({"text": "stream me", "stream": True, "sampling_params": {"max_new_tokens": tokens}}),
        headers={"Content-Type": "application/json"},
    )
    resp = conn.getresponse()
    assert resp.status == 200 and resp.getheader("transfer-encoding") == "chunked"
    events = [line[6:] for line in resp.read().decode().split("\n\n") if line.startswith("data: ")]
    return events


def test_stream_sends_cumulative_steps_then_done_and_keeps_the_connection(sim_env):
    import http.client  # pylint: disable=import-outside-toplevel

    env, models = sim_env
    port = free_port()
    with subprocess.Popen(argv(models, port, *HEALTHY), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) as proc:
        try:
            wait_ready(port, proc)
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            events = _stream(conn, 10)
            assert events[-1] == "[DONE]"
            steps = [json.loads(event) for event in events[:-1]]
            # accept length 4.2 (DDTREE budget 16): 4, 8, then the last 2
            assert [step["meta_info"]["completion_tokens"] for step in steps] == [4, 8, 10]
            assert [len(step["text"].split()) for step in steps] == [4, 8, 10]
            assert [step["meta_info"]["finish_reason"] for step in steps] == [None, None, {"type": "length", "length": 10}]
            # the same connection serves the next request
            assert [json.loads(e)["meta_info"]["completion_tokens"] for e in _stream(conn, 3)[:-1]] == [3]
            conn.close()
        finally:
            stop(proc)


def test_slow_fault_serves_fewer_tokens_per_second_and_a_bad_share_is_refused(sim_env):
    env, models = sim_env
    port = free_port()
    with subprocess.Popen(
        argv(models, port, *HEALTHY), env=dict(env, SGLANG_SIM_FAULT="slow", SGLANG_SIM_SLOW_SHARE="0.5"), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    ) as proc:
        try:
            wait_ready(port, proc)
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/get_server_info", timeout=5) as resp:
                state = json.load(resp)["internal_states"][0]
            assert state["last_gen_throughput"] == 50.0 and state["avg_spec_accept_length"] == 4.2
        finally:
            stop(proc)
    done = run_to_exit(dict(env, SGLANG_SIM_FAULT="slow", SGLANG_SIM_SLOW_SHARE="1.5"), argv(models, free_port(), *HEALTHY))
    assert done.returncode == 2
    assert done.stderr == "sglang_sim: SGLANG_SIM_SLOW_SHARE='1.5' is not a share of tokens/s in [0, 1)\n"


def test_verify_costs_and_the_step_schedule():
    assert throughput.VERIFY_COST["blackwell"] == pytest.approx(0.4112903225806, abs=1e-9)
    assert throughput.VERIFY_COST["ampere"] == pytest.approx(0.8229166666667, abs=1e-9)
    assert throughput.VERIFY_COST["other"] == 0.6
    assert throughput.STEP_RATE_1 == pytest.approx(100 / (2**0.5 * 2.304), abs=1e-12)
    # linear at budget-free accept 3.0; ampere tp 2 DFLASH: 100 / 0.96
    assert throughput.rate(2, "DFLASH", None, "8.6").tokens_per_s == pytest.approx(100 / 0.96, abs=1e-9)
    assert throughput.decode_steps(10, 4.2) == [4, 8, 10]
    ddtree = throughput.rate(2, "DDTREE", 16, "8.6").accept_length
    assert throughput.decode_steps(63, ddtree) == [4, 8, 12, 16, 21, 25, 29, 33, 37, 42, 46, 50, 54, 58, 63]
    assert throughput.decode_steps(7, 3.0) == [3, 6, 7]
    assert throughput.decode_steps(3, 0.5) == [1, 2, 3]
    assert throughput.decode_steps(0, 3.0) == []
    assert throughput.prefill_s(4000, 4) == pytest.approx(0.5)
    with pytest.raises(ValueError):
        throughput.rate(2, "DDTREE", 16, "8.6", slow_share=1.0)


@pytest.fixture(name="in_process")
def fixture_in_process():
    """A simulated server in this process (ct129 class: two A6000s, DDTREE budget 16, tp 2): start(**SimState kwargs) -> port."""
    from sglang_sim.http_api import SimState, make_server  # pylint: disable=import-outside-toplevel

    servers = []

    def start(**kwargs):
        args = build_parser().parse_args(["--model-path", "/models/target", "--tp-size", "2", "--speculative-algorithm", "DDTREE"])
        fault, time_scale = kwargs.pop("fault", "none"), kwargs.pop("time_scale", 1.0)
        kwargs.setdefault("compute_cap", "8.6")
        sim = SimState(args, {"architectures": ["Qwen3_5ForCausalLM"]}, 32768, fault, time_scale, max_running_requests=4, **kwargs)
        server = make_server(sim, "127.0.0.1", 0)
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        servers.append(server)
        return server.server_address[1]

    yield start
    for server in servers:
        # the last handler may still be logging its access line after its client has read everything
        server.sim.wait_idle(5)
        server.shutdown()
        server.server_close()


def _timed_stream(port, tokens, text="stream me"):
    """(seconds to each event, the events) of one streamed /generate."""
    import http.client  # pylint: disable=import-outside-toplevel

    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    started = time.monotonic()
    conn.request("POST", "/generate", body=json.dumps({"text": text, "stream": True, "sampling_params": {"max_new_tokens": tokens}}))
    resp = conn.getresponse()
    assert resp.status == 200 and resp.getheader("content-type").startswith("text/event-stream")
    times, events = [], []
    for line in resp:
        if line.startswith(b"data: "):
            times.append(time.monotonic() - started)
            events.append(line[6:].strip().decode())
    conn.close()
    return times, events


def test_stream_follows_the_models_step_schedule(in_process):
    port = in_process()
    rate = throughput.rate(2, "DDTREE", None, "8.6")
    first = throughput.prefill_s(2, 2) + rate.step_s
    times, events = _timed_stream(port, 10)
    assert events[-1] == "[DONE]" and len(events) == 4
    assert [json.loads(event)["meta_info"]["completion_tokens"] for event in events[:-1]] == [4, 8, 10]
    # the first event after the prefill and one step (0.042 s), then one a step; the last after three steps
    assert first <= times[0] < first + 0.1
    assert times[2] >= first + 2 * rate.step_s and times[2] < first + 2 * rate.step_s + 0.1
    # the same text as without streaming
    status, body = post(port, "/generate", {"text": "stream me", "sampling_params": {"max_new_tokens": 10}})
    assert status == 200 and json.loads(events[-2])["text"] == body["text"]
    # a long prompt: 800 tokens of prefill at 4000 * 2 ** 0.5 tokens/s come first
    times, events = _timed_stream(port, 1, "word " * 800)
    first = throughput.prefill_s(800, 2) + rate.step_s
    assert len(events) == 2 and first <= times[0] < first + 0.1
    # no token at all: an empty stream that still ends
    assert _timed_stream(port, 0)[1] == ["[DONE]"]


def test_generation_time_is_the_models_unless_generate_s_overrides(in_process):
    rate = throughput.rate(2, "DDTREE", None, "8.6")
    model = in_process(time_scale=0.5)
    started = time.monotonic()
    post(model, "/generate", {"text": "one two", "sampling_params": {"max_new_tokens": 43}})
    # 43 tokens at accept 4.2: 11 whole steps of 0.042 s (the last brings 1), halved by the time scale
    expected = (throughput.prefill_s(2, 2) + 11 * rate.step_s) * 0.5
    assert expected <= time.monotonic() - started < expected + 0.1
    fixed = in_process(generate_s=0.2, time_scale=50.0)
    started = time.monotonic()
    post(fixed, "/generate", {"text": "one two", "sampling_params": {"max_new_tokens": 4000}})
    assert 0.2 <= time.monotonic() - started < 0.5
    times, events = _timed_stream(fixed, 50)
    assert len(events) == 2 and json.loads(events[0])["meta_info"]["completion_tokens"] == 50 and times[0] >= 0.2


def test_server_info_and_the_slow_share_in_process(in_process):
    for kwargs, tokens_per_s in (({}, 100.0), ({"slow_share": 0.3}, 70.0), ({"compute_cap": "12.0"}, 100 / 0.96 * 1.24)):
        port = in_process(**kwargs)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/get_server_info", timeout=5) as resp:
            state = json.load(resp)["internal_states"][0]
        assert state == {"last_gen_throughput": round(tokens_per_s, 2), "avg_spec_accept_length": 4.2}


def test_generate_fails_before_the_stream(in_process):
    import http.client  # pylint: disable=import-outside-toplevel

    port = in_process(fault="generate_fails")
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("POST", "/generate", body=json.dumps({"text": "hi", "stream": True}))
    resp = conn.getresponse()
    assert (resp.status, resp.read()) == (500, b"Internal Server Error")
    conn.request("GET", "/health")
    assert conn.getresponse().status == 200
    conn.close()


@pytest.mark.parametrize("share", ["1", "-0.1", "abc", "nan"])
def test_a_slow_share_out_of_range_is_refused(sim_env, share):
    env, models = sim_env
    done = run_to_exit(dict(env, SGLANG_SIM_SLOW_SHARE=share), argv(models, free_port(), *HEALTHY))
    assert done.returncode == 2
    assert done.stderr == f"sglang_sim: SGLANG_SIM_SLOW_SHARE={share!r} is not a share of tokens/s in [0, 1)\n"


def test_a_client_that_hangs_up_after_done_is_no_error(in_process, capsys):
    port = in_process()
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        body = json.dumps({"text": "hi", "stream": True, "sampling_params": {"max_new_tokens": 3}}).encode()
        sock.sendall(b"POST /generate HTTP/1.1\r\nHost: x\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body))
        received = b""
        while b"data: [DONE]" not in received:
            received += sock.recv(65536)
        # a reset, as from a client that stops reading at [DONE]
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    time.sleep(0.3)
    assert received.endswith(b"data: [DONE]\n\n\r\n0\r\n\r\n") and b"transfer-encoding: chunked" in received.lower()
    assert "Traceback" not in capsys.readouterr().err


def test_text_and_noise_are_simulated_as_documented():
    prose = (
        "Alice was beginning to get very tired of sitting by her sister on the bank, and of having nothing to do: "
        "once or twice she had peeped into the book her sister was reading"
    )
    words = " ".join(["alpha", "river", "stone", "cloud", "green"] * 6)
    assert throughput.text_factor(prose) == pytest.approx(1.15)
    assert throughput.text_factor(words) == pytest.approx(0.85)
    assert throughput.text_factor("The capital of France is") == 1.0  # too short to tell
    # the text moves a speculative algorithm's tokens a step, not plain decoding's
    assert throughput.rate(2, "DFLASH", None, "8.6", text=1.15).accept_length == pytest.approx(3.45)
    assert throughput.rate(2, None, None, "8.6", text=1.15).accept_length == 1.0
    assert throughput.rate(2, "DFLASH", None, "8.6", speed=0.9).tokens_per_s == pytest.approx(100 / 0.96 * 0.9)


def test_the_noise_knobs_are_checked(sim_env):
    env, models = sim_env
    done = run_to_exit(dict(env, SGLANG_SIM_NOISE_PROCESS="0.7"), argv(models, free_port(), *HEALTHY))
    assert done.returncode == 2
    assert done.stderr == "sglang_sim: SGLANG_SIM_NOISE_PROCESS, SGLANG_SIM_NOISE_REQUEST=('0.7', '0.02') are not spreads in [0, 0.5]\n"


def test_each_process_draws_its_own_speed_and_each_request_its_own():
    from sglang_sim.http_api import SimState  # pylint: disable=import-outside-toplevel

    args = build_parser().parse_args(["--model-path", "/models/target", "--tp-size", "2", "--speculative-algorithm", "DDTREE"])
    sims = [SimState(args, {}, 32768, "none", 1.0, compute_cap="8.6", noise=(0.05, 0.0)) for _index in range(20)]
    speeds = [sim.process_speed for sim in sims]
    assert len(set(speeds)) == 20 and 0.7 < min(speeds) and max(speeds) < 1.3
    quiet = SimState(args, {}, 32768, "none", 1.0, compute_cap="8.6")
    assert quiet.process_speed == 1.0 and quiet.rate().tokens_per_s == pytest.approx(100.0)
    noisy = SimState(args, {}, 32768, "none", 1.0, compute_cap="8.6", noise=(0.0, 0.05))
    rates = [noisy.rate().tokens_per_s for _index in range(20)]
    assert len(set(rates)) == 20 and noisy.rate(noisy=False).tokens_per_s == pytest.approx(100.0)


def _metrics(port):
    """GET /metrics: (status, {sample name with its labels: value})."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as resp:
            text = resp.read().decode()
            status = resp.status
    except urllib.error.HTTPError as exc:
        return exc.code, {}
    samples = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            key, value = line.rsplit(" ", 1)
            samples[key] = float(value)
    return status, samples


def test_metrics_are_served_with_enable_metrics_only_and_count_generations(sim_env):
    env, models = sim_env
    port, other = free_port(), free_port()
    with (
        subprocess.Popen(argv(models, port, *HEALTHY, "--enable-metrics", "--served-model-name", "qwen"), env=env) as proc,
        subprocess.Popen(argv(models, other, *HEALTHY), env=env) as without,
    ):
        try:
            wait_ready(port, proc)
            wait_ready(other, without)
            assert _metrics(other)[0] == 404
            post(port, "/generate", {"text": "count me", "sampling_params": {"max_new_tokens": 5}})
            status, samples = _metrics(port)
        finally:
            stop(proc)
            stop(without)
    scheduler = 'model_name="qwen",engine_type="unified",tp_rank="0",pp_rank="0",moe_ep_rank="0"'
    tokenizer = 'model_name="qwen",engine_type="unified",is_streaming="false"'
    assert status == 200
    assert samples["sglang:num_running_reqs{%s}" % scheduler] == 0.0
    assert samples["sglang:generation_tokens_total{%s}" % tokenizer] == 5.0
    assert samples["sglang:prompt_tokens_total{%s}" % tokenizer] == 2.0
    assert samples["sglang:e2e_request_latency_seconds_count{%s}" % tokenizer] == 1.0
    # the simulated DDTree's accept length, as /get_server_info reports it
    assert samples["sglang:spec_accept_length{%s}" % scheduler] > 1.0


def test_a_chunked_request_body_of_token_ids_is_read_as_sglang_reads_it(in_process):
    """smg forwards /generate with Transfer-Encoding: chunked (no length) and may send input_ids with "text": null."""
    import http.client  # pylint: disable=import-outside-toplevel

    port = in_process(time_scale=0.01)
    body = json.dumps({"text": None, "input_ids": [11, 12, 13], "sampling_params": {"max_new_tokens": 3}}).encode()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("POST", "/generate", body=iter([body[:10], body[10:]]), headers={"Content-Type": "application/json"}, encode_chunked=True)
    resp = conn.getresponse()
    answer = json.loads(resp.read())
    assert resp.status == 200 and answer["meta_info"]["completion_tokens"] == 3 and answer["meta_info"]["prompt_tokens"] == 3
    # the connection is still in step: the next request on it is answered
    conn.request("POST", "/generate", body=json.dumps({"sampling_params": {"max_new_tokens": 2}}))
    resp = conn.getresponse()
    assert (resp.status, json.loads(resp.read())) == (400, {"error": {"message": "Either text, input_ids or input_embeds should be provided."}})
    conn.close()
