# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The throughput gate's prompts, read on the controller from a JSON-lines file (docs/gate.md)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.ddtree.sglang.plugins.module_utils.sglang_bench import parse_prompts


def gate_prompts(path):
    """The prompts of the file at ``path`` as the gate module takes them: [{prompt, output_tokens}, ...]."""
    try:
        with open(path, 'r') as handle:
            prompts = parse_prompts(handle.read(), source=path)
    except (IOError, OSError) as exc:
        raise AnsibleFilterError('gate_prompts: sglang_service_gate_prompts_file %s cannot be read: %s' % (path, exc.strerror or exc))
    except ValueError as exc:
        raise AnsibleFilterError('gate_prompts: sglang_service_gate_prompts_file: %s' % exc)
    return [{'prompt': prompt, 'output_tokens': tokens} for prompt, tokens in prompts]


class FilterModule(object):
    def filters(self):
        return {'gate_prompts': gate_prompts}
