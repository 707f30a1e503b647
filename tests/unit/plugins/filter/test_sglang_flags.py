# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Flag rendering and ExecStart quoting: what systemd hands SGLang must be what the envelope said."""

from __future__ import annotations

import shlex

import pytest

from ansible.errors import AnsibleFilterError
from ansible_collections.ddtree.sglang.plugins.filter.sglang_flags import sglang_argv, systemd_quote


def test_field_notes_envelope_renders_in_order():
    envelope = {
        "model_path": "/root/models/Qwen3.6-27B",
        "tp_size": 2,
        "mem_fraction_static": 0.85,
        "context_length": 32768,
        "disable_cuda_graph": True,
        "speculative_ddtree_shadow_linear": False,
        "speculative_algorithm": "DDTREE",
    }
    assert sglang_argv(envelope) == [
        "--model-path",
        "/root/models/Qwen3.6-27B",
        "--tp-size",
        "2",
        "--mem-fraction-static",
        "0.85",
        "--context-length",
        "32768",
        "--disable-cuda-graph",
        "--speculative-algorithm",
        "DDTREE",
    ]


def test_none_is_omitted_and_lists_repeat():
    assert sglang_argv({"api_key": None, "lora_paths": ["a=/x", "b=/y"]}) == ["--lora-paths", "a=/x", "--lora-paths", "b=/y"]


@pytest.mark.parametrize("key", ["Mem", "mem-fraction", "--tp", "", "1tp", "a b"])
def test_bad_keys_are_refused_naming_the_key(key):
    with pytest.raises(AnsibleFilterError, match="not a flag name"):
        sglang_argv({key: 1})


@pytest.mark.parametrize("value", [{"a": 1}, [True], "two\nlines", b"bytes"])
def test_bad_values_are_refused(value):
    with pytest.raises(AnsibleFilterError, match="sglang_service_envelope.context_length"):
        sglang_argv({"context_length": value})


def test_envelope_must_be_a_dict():
    with pytest.raises(AnsibleFilterError, match="must be a dict"):
        sglang_argv(["--tp-size", "2"])


def _systemd_split(line):
    """systemd's ExecStart splitting for the subset systemd_quote emits (double quotes, \\ escapes)."""
    return shlex.split(line.replace("$$", "$").replace("%%", "%"), posix=True)


@pytest.mark.parametrize("word", ["plain", "with space", 'quote"d', "back\\slash", "semi;colon", "$HOME", "100%", "it's", ""])
def test_quoting_round_trips(word):
    line = systemd_quote(["/venv/bin/python", "-m", "sglang.launch_server", "--served-model-name", word])
    assert _systemd_split(line)[-1] == word


def test_specifiers_and_variables_are_escaped():
    line = systemd_quote(["%h", "$HOME"])
    assert "%%h" in line and "$$HOME" in line
    assert _systemd_split(line) == ["%h", "$HOME"]


def test_line_breaks_are_refused():
    with pytest.raises(AnsibleFilterError, match="line break"):
        systemd_quote(["a\nExecStartPre=/bin/sh"])


def test_a_string_is_not_argv():
    with pytest.raises(AnsibleFilterError, match="list of words"):
        systemd_quote("--tp-size 2")


# the filter lives on the controller, the reader in module_utils on the host: this test is the bridge
def test_exec_start_round_trips_systemd_quote():
    from ansible_collections.ddtree.sglang.plugins.module_utils.systemd import exec_start_argv

    argv = ['/venv/bin/python', '-m', 'sglang.launch_server', '--served-model-name', 'a "b" $HOME 100%', '--port', '1']
    assert exec_start_argv('[Service]\nExecStart=\nExecStart=%s\n' % systemd_quote(argv)) == argv


def test_environment_assignments_keep_dollar_signs():
    # Environment= expands specifiers but no variables: "$" must reach the process as one "$"
    assert systemd_quote(["TOKEN_HINT=a$b"], environment=True) == "\"TOKEN_HINT=a$b\""
    assert systemd_quote(["NOTE=100% of $HOME"], environment=True) == '"NOTE=100%% of $HOME"'
    assert systemd_quote(["NOTE=100% of $HOME"]) == '"NOTE=100%% of $$HOME"'


def test_a_trailing_line_break_is_no_safe_word():
    with pytest.raises(AnsibleFilterError, match="line break"):
        systemd_quote(["%\n"])
