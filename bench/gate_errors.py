"""How often the throughput gate refuses an equal unit, and how often it catches one 10 % and 20 %
slower, at the role's default settings (not a test; CI never runs it). bench/gate_errors.sh runs it.

Each trial starts a SIMULATED SGLang server (lab/sglang_sim: ct200 class, tp 8, linear DFLASH, its
default run-to-run noise) for the baseline unit and runs the gate module on it through
ansible-playbook (bench/gate_errors.yml), so that its rounds become the baseline; then, for each
arm, a new server process for the candidate (equal: the same; slow10 and slow20: the simulator's
slow fault with a share of 0.1 and 0.2 of its tokens/s) and the gate against that baseline. A new
process per unit, as a deploy restarts the service, so that each side has its own process noise.
The arms share each trial's baseline and run in a rotating order. Every module result is kept
(bench/results/gate_errors/, ignored), every gate's numbers in bench/results/gate_errors.json, the
table in bench/results/gate_errors.md.
Usage (bench/gate_errors.sh runs it with the venv): python bench/gate_errors.py [--trials 20] [--noise-process 0.005 --noise-request 0.02] [--name gate_errors]
"""

import argparse
import json
import os
import shutil
import signal
import statistics
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LAB = os.path.join(ROOT, "lab")
ARMS = {"equal": None, "slow10": "0.1", "slow20": "0.2"}
# ct200's class: eight RTX PRO 6000 Blackwell cards (the lab's gpu_rtxpro6000_tp8 group), linear DFlash
CARD = {"name": "NVIDIA RTX PRO 6000 Blackwell Server Edition", "memory_total_mib": 97887, "compute_cap": "12.0"}
SERVER_ARGS = ["--tp-size", "8", "--mem-fraction-static", "0.88", "--context-length", "131072", "--speculative-algorithm", "DFLASH"]


def role_defaults():
    """The gate's settings as the role's defaults give them: one fact, in roles/sglang_service/defaults/main.yml."""
    with open(os.path.join(ROOT, "roles", "sglang_service", "defaults", "main.yml"), encoding="utf-8") as handle:
        defaults = yaml.safe_load(handle)
    return {
        "gate_workload": defaults["sglang_service_gate_workload"],
        "gate_min_ratio": defaults["sglang_service_gate_min_ratio"],
        "gate_confidence": defaults["sglang_service_gate_confidence"],
        "gate_noise_cv": defaults["sglang_service_gate_noise_cv"],
        "gate_prompts_file": defaults["sglang_service_gate_prompts_file"] or os.path.join(ROOT, "roles", "sglang_service", "files", "gate_prompts.jsonl"),
    }


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Server:
    """One simulated server process on loopback, started by this script and ended by its PID."""

    def __init__(self, work, env, slow_share):
        self.port = free_port()
        env = dict(env)
        if slow_share:
            env.update(SGLANG_SIM_FAULT="slow", SGLANG_SIM_SLOW_SHARE=slow_share)
        argv = [
            sys.executable,
            "-m",
            "sglang_sim.launch_server",
            "--model-path",
            os.path.join(work, "models", "target"),
            "--speculative-draft-model-path",
            os.path.join(work, "models", "draft"),
            "--port",
            str(self.port),
            *SERVER_ARGS,
        ]
        self.log = open(os.path.join(work, "server-%d.log" % self.port), "w", encoding="utf-8")  # pylint: disable=consider-using-with
        self.proc = subprocess.Popen(argv, env=env, stdout=self.log, stderr=subprocess.STDOUT)  # pylint: disable=consider-using-with
        end = time.time() + 60
        while time.time() < end:
            if self.proc.poll() is not None:
                raise RuntimeError("the simulator exited %s: %s" % (self.proc.returncode, self.log.name))
            try:
                with urllib.request.urlopen("http://127.0.0.1:%d/v1/models" % self.port, timeout=2):
                    return
            except (urllib.error.URLError, ConnectionError):
                time.sleep(0.1)
        self.stop()
        raise RuntimeError("the simulator never answered: %s" % self.log.name)

    def stop(self):
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.log.close()


def run_gate(extra_vars, out_path):
    """One gate through ansible-playbook; returns the module's result."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
        # the module runs with this Python, the venv's, as the controller does
        json.dump(dict(extra_vars, gate_out=out_path, ansible_python_interpreter=sys.executable), handle)
    try:
        done = subprocess.run(
            ["ansible-playbook", "-i", "localhost,", os.path.join(ROOT, "bench", "gate_errors.yml"), "-e", "@" + handle.name],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=False,
        )
    finally:
        os.unlink(handle.name)
    if done.returncode != 0:
        raise RuntimeError("ansible-playbook failed:\n" + done.stdout[-3000:] + done.stderr[-2000:])
    with open(out_path, encoding="utf-8") as handle:
        return json.load(handle)


def summary_row(arm, gates):
    refused = sum(1 for g in gates if g["outcome"] == "refused")
    ratios = [g["ratio"] for g in gates]
    return {
        "arm": arm,
        "gates": len(gates),
        "refused": refused,
        "refused_share": round(refused / len(gates), 3),
        "ratio_median": statistics.median(ratios),
        "ratio_min": min(ratios),
        "ratio_max": max(ratios),
        "gate_s_median": statistics.median(g["gate_s"] for g in gates),
    }


def markdown(rows):
    """The summary table docs/gate.md quotes."""
    lines = ["| candidate | gates | refused | share refused | ratio median (min-max) | gate s median |", "|---|---|---|---|---|---|"]
    for row in rows:
        lines.append(
            "| %s | %d | %d | %.0f %% | %.3f (%.3f-%.3f) | %.1f |"
            % (
                row["arm"],
                row["gates"],
                row["refused"],
                100 * row["refused_share"],
                row["ratio_median"],
                row["ratio_min"],
                row["ratio_max"],
                row["gate_s_median"],
            )
        )
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--noise-process", default="")
    parser.add_argument("--noise-request", default="")
    parser.add_argument("--name", default="gate_errors")
    opts = parser.parse_args()
    settings = role_defaults()
    raw = os.path.join(ROOT, "bench", "results", opts.name)
    shutil.rmtree(raw, ignore_errors=True)
    os.makedirs(raw)
    work = tempfile.mkdtemp(prefix="gate-errors-")
    shutil.copytree(os.path.join(LAB, "models", "Qwen3.6-27B"), os.path.join(work, "models", "target"))
    shutil.copytree(os.path.join(LAB, "models", "Qwen3.6-27B-DFlash"), os.path.join(work, "models", "draft"))
    gpus = os.path.join(work, "gpus.json")
    with open(gpus, "w", encoding="utf-8") as handle:
        json.dump({"driver_version": "580.95.05", "cuda_version": "13.0", "gpus": [CARD] * 8}, handle)
    env = dict(
        os.environ,
        DDTREE_LAB_GPUS_FILE=gpus,
        TRITON_CACHE_DIR=os.path.join(work, "triton"),
        PATH=os.path.join(LAB, "files") + os.pathsep + os.environ.get("PATH", ""),
        PYTHONPATH=os.path.join(LAB, "sglang_sim"),
    )
    for key in ("SGLANG_SIM_FAULT", "SGLANG_SIM_TIME_SCALE"):
        env.pop(key, None)
    if opts.noise_process:
        env["SGLANG_SIM_NOISE_PROCESS"] = opts.noise_process
    if opts.noise_request:
        env["SGLANG_SIM_NOISE_REQUEST"] = opts.noise_request
    records = []
    started = time.monotonic()
    arms = list(ARMS)
    for trial in range(1, opts.trials + 1):
        results = os.path.join(work, "results-%d.json" % trial)
        base_unit = os.path.join(work, "baseline-%d.service" % trial)
        with open(base_unit, "w", encoding="utf-8") as handle:
            handle.write("[Service]\nExecStart=/baseline %d\n" % trial)
        server = Server(work, env, None)
        try:
            baseline = run_gate(
                dict(settings, gate_url="http://127.0.0.1:%d" % server.port, gate_unit=base_unit, gate_results=results),
                os.path.join(raw, "%02d-baseline.json" % trial),
            )
        finally:
            server.stop()
        assert baseline["outcome"] == "baseline", baseline.get("msg")
        order = arms[trial % len(arms) :] + arms[: trial % len(arms)]
        for arm in order:
            unit = os.path.join(work, "candidate-%d-%s.service" % (trial, arm))
            with open(unit, "w", encoding="utf-8") as handle:
                handle.write("[Service]\nExecStart=/candidate %d %s\n" % (trial, arm))
            server = Server(work, env, ARMS[arm])
            try:
                result = run_gate(
                    dict(settings, gate_url="http://127.0.0.1:%d" % server.port, gate_unit=unit, gate_baseline_unit=base_unit, gate_results=results),
                    os.path.join(raw, "%02d-%s.json" % (trial, arm)),
                )
            finally:
                server.stop()
            record = {
                "trial": trial,
                "arm": arm,
                "outcome": result["outcome"],
                "ratio": result["ratio"],
                "interval": result["interval"],
                "rounds": result["measured"]["rounds"],
                "baseline_rounds": baseline["measured"]["rounds"],
                "gate_s": result["gate_s"],
            }
            records.append(record)
            print(
                "trial %2d %-6s %-8s ratio %.3f interval %s rounds %s" % (trial, arm, record["outcome"], record["ratio"], record["interval"], record["rounds"]),
                flush=True,
            )
    shutil.rmtree(work, ignore_errors=True)
    rows = [summary_row(arm, [r for r in records if r["arm"] == arm]) for arm in arms]
    doc = {
        "settings": {k: v for k, v in settings.items() if k != "gate_prompts_file"},
        "prompts": os.path.relpath(settings["gate_prompts_file"], ROOT),
        "simulator": {
            "class": "ct200 (RTX PRO 6000 Blackwell, tp 8, DFLASH)",
            "noise_process": opts.noise_process or "default",
            "noise_request": opts.noise_request or "default",
        },
        "trials": opts.trials,
        "bench_s": round(time.monotonic() - started, 1),
        "summary": rows,
        "gates": records,
    }
    with open(os.path.join(ROOT, "bench", "results", opts.name + ".json"), "w", encoding="utf-8") as handle:
        json.dump(doc, handle, indent=1)
        handle.write("\n")
    table = markdown(rows)
    with open(os.path.join(ROOT, "bench", "results", opts.name + ".md"), "w", encoding="utf-8") as handle:
        handle.write(table)
    print(table)
    print("bench run: %.0f s" % doc["bench_s"])


if __name__ == "__main__":
    main()
