"""Testinfra checks after `molecule converge` + idempotence on the lab hosts.

Commands go straight through `podman exec` (podman:// backend): through molecule's
ansible connection testinfra would spawn one ansible process per command.
"""

import json
import os
import pathlib

import testinfra.utils.ansible_runner
import yaml

REPO = pathlib.Path(__file__).resolve().parents[3]
INVENTORY = testinfra.utils.ansible_runner.AnsibleRunner(os.environ["MOLECULE_INVENTORY_FILE"])
testinfra_hosts = ["podman://" + name for name in INVENTORY.get_hosts("sglang_servers")]

UNIT = "sglang-qwen.service"
GROUP_OF = {"ct129": "gpu_a6000_tp2", "ct200": "gpu_rtxpro6000_tp8"}


def envelope_of(host):
    name = host.backend.get_hostname()
    data = yaml.safe_load((REPO / "inventory" / "group_vars" / f"{GROUP_OF[name]}.yml").read_text())
    return data["sglang_service_envelope"]


def main_pid(host):
    return int(host.check_output(f"systemctl show -P MainPID {UNIT}"))


def test_unit_is_active_enabled_and_never_restarted(host):
    assert host.service(UNIT).is_running
    assert host.service(UNIT).is_enabled
    assert host.check_output(f"systemctl show -P NRestarts {UNIT}") == "0"


def test_idempotence_did_not_restart(host):
    # one start of the service in this boot: converge started it, the idempotence run did not
    starts = host.check_output(f"journalctl -u {UNIT} --no-pager -o cat | grep -c '^Started {UNIT}' || true")
    assert starts == "1"


def test_process_argv_is_the_envelope(host):
    argv = host.file(f"/proc/{main_pid(host)}/cmdline").content.split(b"\0")[:-1]
    argv = [word.decode() for word in argv]
    envelope = envelope_of(host)
    assert argv[1:3] == ["-m", "sglang_sim.launch_server"]
    assert argv[argv.index("--model-path") + 1] == envelope["model_path"]
    assert argv[argv.index("--mem-fraction-static") + 1] == str(envelope["mem_fraction_static"])
    assert argv[argv.index("--tp-size") + 1] == str(envelope["tp_size"])
    assert ("--disable-cuda-graph" in argv) == bool(envelope.get("disable_cuda_graph"))
    assert argv[-4:] == ["--host", "127.0.0.1", "--port", "30000"]


def test_port_listens_on_loopback_only(host):
    assert host.socket("tcp://127.0.0.1:30000").is_listening
    assert not host.socket("tcp://0.0.0.0:30000").is_listening


def test_real_generation_returns_text(host):
    out = host.check_output(
        "python3 -c \"import json,urllib.request as u;"
        "r=u.urlopen(u.Request('http://127.0.0.1:30000/generate',"
        "data=json.dumps({'text':'Hello','sampling_params':{'max_new_tokens':5}}).encode(),"
        "headers={'Content-Type':'application/json'}),timeout=10);print(r.read().decode())\""
    )
    assert json.loads(out)["text"].strip()


def test_models_endpoint_names_the_model(host):
    out = host.check_output("python3 -c \"import urllib.request as u;print(u.urlopen('http://127.0.0.1:30000/v1/models',timeout=5).read().decode())\"")
    assert json.loads(out)["data"][0]["id"] == envelope_of(host)["served_model_name"]


def test_first_deploy_kept_no_last_known_good(host):
    # nothing was installed before the first deploy, so there was nothing to keep
    assert not host.file(f"/var/lib/ddtree-sglang/last-known-good/{UNIT}").exists


def test_the_healthy_unit_is_recorded_as_confirmed(host):
    # only a unit whose verdict was healthy becomes last known good at the next deploy: this record says which
    record = host.file(f"/var/lib/ddtree-sglang/confirmed/{UNIT}.json")
    assert record.exists and record.user == "root" and record.mode == 0o600
    unit_sha256 = host.check_output(f"sha256sum /etc/systemd/system/{UNIT}").split()[0]
    assert json.loads(record.content_string)["sha256"] == unit_sha256


# What the role wrote, as "type mode user group path" lines: the unit and the boot check's unit, the
# secrets and restore script, the state, the ml-env root and the whole current release (its own
# name replaced, since the release id may differ per host group).
FILES_AND_MODES = r"""
set -eu
release=$(readlink -f /opt/ddtree/ml-env/current)
{
  find /etc/systemd/system -maxdepth 1 \( -name 'sglang-qwen.service' -o -name 'ddtree-*' \) -printf '%y %m %u %g %p\n'
  find /etc/ddtree-sglang /var/lib/ddtree-sglang /opt/ddtree/ml-env -maxdepth 2 -printf '%y %m %u %g %p\n'
  find "$release" -printf '%y %m %u %g %p\n'
} | sed "s|$release|<release>|; s|releases/[0-9a-f]\{16\}|releases/<release>|" | sort -u
"""


def test_ssh_and_podman_left_the_same_files_and_modes():
    """ct129 was deployed over SSH as the user deploy with become, ct200 through podman exec as root:
    the same files with the same modes and owners on both (pyc files left out: bytecode
    written at import time, when a module first ran)."""
    assert INVENTORY.get_variables("ct129")["ansible_connection"] == "ansible.builtin.ssh"
    assert INVENTORY.get_variables("ct200")["ansible_connection"] == "podman"
    listings = {}
    for name in ("ct129", "ct200"):
        out = testinfra.get_host("podman://" + name).check_output(FILES_AND_MODES)
        listings[name] = {line for line in out.splitlines() if "__pycache__" not in line and not line.endswith(".pyc")}
    assert len(listings["ct129"]) > 1000
    only_ssh = sorted(listings["ct129"] - listings["ct200"])
    only_podman = sorted(listings["ct200"] - listings["ct129"])
    assert (only_ssh[:20], only_podman[:20]) == ([], [])
