# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The envelope ladder's report (role sglang_service, tasks/ladder.yml and ladder_rung.yml).

Controller side, pure: the task files decide what happened to a rung (skipped by the planner,
refused, failed its verdict, healthy, not tried) and these filters write it down, one row per rung
with a one-line summary, and the report's closing lines.
"""

from __future__ import annotations

import copy
import json

from ansible.errors import AnsibleFilterError
from ansible.module_utils.parsing.convert_bool import boolean

MIB = 1 << 20
OUTCOMES = ("not_tried", "skipped", "failed", "healthy")


def _fail(msg):
    raise AnsibleFilterError(f"sglang_ladder: {msg}")


def _rung_name(rung, index):
    return rung["name"] if "name" in rung else f"rung {index + 1}"


def _flags(patch):
    """The patch as SGLang flags, "(unset)" for a flag it drops and "(off)" for one it turns off."""
    words = []
    for key, value in patch.items():
        flag = "--" + str(key).replace("_", "-")
        if value is None:
            flag += " (unset)"
        elif value is False:
            flag += " (off)"
        elif value is not True:
            flag += f" {value}"
        words.append(flag)
    return " ".join(words)


def _label(rung, index):
    flags = _flags(rung.get("envelope") or {})
    return f"{index + 1}. {_rung_name(rung, index)}" + (f" ({flags})" if flags else "")


def _numbers(plan, recommendation):
    """The planner's key numbers for a skipped rung's line; empty without a plan."""
    p, r = plan or {}, recommendation or {}
    if "error" in p or "gib" not in p:
        return ""
    g = p["gib"]
    text = (
        f"per GPU: weights {g['target_weights']} GiB, KV {p['kv_bytes_per_token']} bytes/token, state "
        f"{round(p['state_bytes_per_request'] / MIB, 1)} MiB/request, pool after weights "
        f"{g['rest_after_weights']} GiB, KV pool {p['max_total_num_tokens']} tokens = {p['full_context_requests']} x "
        f"{p['context_length']}, headroom {g['headroom']} GiB"
    )
    if r.get("fits"):
        text += f"; largest that fits: {r['context_length']} x {r['max_running_requests']} at {r['mem_fraction_static']}"
    return text


def _rolled_back(unit_existed, rollback_verdict):
    if not unit_existed:
        return "rolled back: there was no unit before, the new one is removed"
    if (rollback_verdict or {}).get("healthy"):
        return "rolled back: the last known good unit is restored and healthy"
    return "rolled back: the last known good unit is restored but NOT healthy"


def sglang_ladder_record(
    report,
    rung,
    index,
    outcome,
    plan=None,
    recommendation=None,
    seconds=None,
    envelope=None,
    verdict=None,
    stage=None,
    failed_verdict=None,
    failed_result=None,
    unit_existed=True,
    rollback_verdict=None,
):
    """The report with one more rung; see sglang_ladder_record.yml."""
    if not isinstance(report, dict) or not isinstance(report.get("rungs"), list):
        _fail(f"the report must be a dict with a list 'rungs', got {report!r}")
    if not isinstance(rung, dict):
        _fail(f"a rung must be a dict {{name, envelope}}, got {rung!r}")
    if outcome not in OUTCOMES:
        _fail(f"outcome must be one of {', '.join(OUTCOMES)}, got {outcome!r}")
    index = int(index)
    name = _rung_name(rung, index)
    row = {"rung": index + 1, "name": name, "envelope": rung.get("envelope", {}), "outcome": outcome}
    result = copy.copy(report)

    if outcome == "not_tried":
        won = (report.get("winner") or {}).get("rung")
        row.update(reason=f"rung {won} won", line=f"{index + 1}. {name}: not tried (rung {won} won)")
        result["rungs"] = report["rungs"] + [row]
        return result

    plan = plan or {}
    label = _label(rung, index)
    reasons = "; ".join(plan.get("reasons", []))
    if outcome == "skipped":
        row.update(
            stage="planner",
            cause="memory_plan",
            reason=reasons,
            plan=plan,
            recommendation=recommendation,
            seconds=float(seconds),
            line=f"{label}: skipped by the planner, host untouched: {reasons} [{_numbers(plan, recommendation)}]",
        )
    elif outcome == "healthy":
        verdict = verdict or {}
        row.update(
            stage="verdict",
            cause="",
            reason="healthy",
            plan=plan,
            seconds=float(seconds),
            time_to_healthy_s=verdict.get("time_to_healthy_s"),
            line=f"{label}: healthy (a generation answered {verdict.get('time_to_healthy_s', '?')} s after "
            f"the start), kept" + ("" if plan.get("fits") else f" although the planner rejected it ({reasons})"),
        )
        result["winner"] = {"rung": index + 1, "name": name, "envelope": envelope}
    else:
        failed_verdict = failed_verdict or {}
        failed_result = failed_result or {}
        verdict_failed = "cause" in failed_verdict
        if verdict_failed:
            reason = f"failed its verdict [{failed_verdict['cause']}] in phase {failed_verdict.get('phase', '?')}: {failed_verdict.get('diagnosis', '')}"
            rolled_back = _rolled_back(unit_existed, rollback_verdict)
        else:
            reason = ("refused before the unit was touched: " if stage in ("planner", "preflight") else "failed: ") + str(
                failed_result.get("msg", "(no message)")
            )
            rolled_back = ""
        row.update(
            stage="verdict" if verdict_failed else stage,
            cause=failed_verdict.get("cause") or "refused",
            reason=reason,
            rolled_back=rolled_back,
            plan=plan,
            seconds=float(seconds),
            message=failed_result.get("msg", ""),
            line=f"{label}: {reason}" + (f"; {rolled_back}" if rolled_back else ""),
        )
    result["rungs"] = report["rungs"] + [row]
    return result


def sglang_ladder_summary(report, host, unit):
    """The report's lines, a headline first; see sglang_ladder_summary.yml."""
    winner = report.get("winner")
    if winner:
        head = f"rung {winner['rung']} ({winner['name']}) is healthy and kept"
    else:
        head = "no rung came up healthy; the host is as it was before"
    return [f"envelope ladder on {host} ({unit}): {head}"] + [row["line"] for row in report["rungs"]]


def sglang_ladder_problems(ladder, rollback=True):
    """The problems of sglang_service_envelope_ladder before a rung runs: its shape ({name, envelope} per rung, the
    envelope a dict) and that sglang_service_rollback is on, since a failed rung left running would be kept as the
    next rung's last known good unit. [] when the ladder can run."""
    problems = []
    if not boolean(rollback, strict=False):
        problems.append(
            'sglang_service_envelope_ladder needs sglang_service_rollback: true: a failed rung left running would be kept as '
            "the next rung's last known good unit."
        )
    shape_ok = isinstance(ladder, list) and all(
        isinstance(rung, dict) and isinstance(rung.get('envelope'), dict) and not set(rung) - {'name', 'envelope'} for rung in ladder
    )
    if not shape_ok:
        problems.append(
            'sglang_service_envelope_ladder must be a list of {name: <label>, envelope: <dict of SGLang flags over '
            'sglang_service_envelope; null drops a flag>}; got %s.' % json.dumps(ladder, default=str)
        )
    return problems


class FilterModule:
    """Ansible filters: sglang_ladder_record, sglang_ladder_summary."""

    def filters(self):
        return {
            "sglang_ladder_record": sglang_ladder_record,
            "sglang_ladder_summary": sglang_ladder_summary,
            "sglang_ladder_problems": sglang_ladder_problems,
        }
