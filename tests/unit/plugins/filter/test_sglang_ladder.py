# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The envelope ladder's report rows and closing lines.

fixtures/jinja_reports.json holds the reports and summaries that the role's former Jinja
(set_fact blocks in tasks/ladder_rung.yml, __sglang_service_ladder_summary in vars/main.yml)
produced for four ladders run on localhost with stubbed planner, preflight and service tasks;
the filters must give the same values for the same inputs (rung seconds set to 0.0 there, as
the task measures them with now()).
"""

from __future__ import annotations

import json
import pathlib

import pytest

from ansible.errors import AnsibleFilterError
from ansible_collections.ddtree.sglang.plugins.filter.sglang_ladder import (
    sglang_ladder_problems,
    FilterModule,
    sglang_ladder_record,
    sglang_ladder_summary,
)

FIXTURES = json.loads((pathlib.Path(__file__).parent / "fixtures" / "jinja_reports.json").read_text())
EMPTY = {"winner": None, "rungs": []}
FITS = {"fits": True, "reasons": []}


@pytest.mark.parametrize("ladder", FIXTURES["ladder"], ids=[f"ladder{i}" for i in range(len(FIXTURES["ladder"]))])
def test_same_report_as_the_former_jinja(ladder):
    report = dict(EMPTY)
    for call in ladder["calls"]:
        report = sglang_ladder_record(report, call["rung"], call["index"], call["outcome"], **call["kwargs"])
    assert report == ladder["report"]
    assert sglang_ladder_summary(report, ladder["host"], ladder["unit"]) == ladder["summary"]


def test_flags_in_the_label():
    rung = {"name": "r", "envelope": {"mem_fraction_static": 0.8, "disable_cuda_graph": True, "enable_mixed_chunk": False, "max_running_requests": None}}
    report = sglang_ladder_record(EMPTY, rung, 0, "failed", plan=FITS, seconds=1.25, stage="preflight", failed_verdict={}, failed_result={"msg": "port held"})
    assert report["rungs"] == [
        {
            "rung": 1,
            "name": "r",
            "envelope": rung["envelope"],
            "outcome": "failed",
            "stage": "preflight",
            "cause": "refused",
            "reason": "refused before the unit was touched: port held",
            "rolled_back": "",
            "plan": FITS,
            "seconds": 1.25,
            "message": "port held",
            "line": "1. r (--mem-fraction-static 0.8 --disable-cuda-graph --enable-mixed-chunk (off) "
            "--max-running-requests (unset)): refused before the unit was touched: port held",
        }
    ]
    assert EMPTY == {"winner": None, "rungs": []}  # the input report is not changed


def test_healthy_rung_wins_and_later_rungs_are_not_tried():
    first = {"name": "small", "envelope": {"context_length": 8192}}
    report = sglang_ladder_record(
        EMPTY,
        first,
        0,
        "healthy",
        plan=FITS,
        seconds="3.5",
        envelope={"model_path": "/m", "context_length": 8192},
        verdict={"healthy": True, "time_to_healthy_s": 12.3},
    )
    report = sglang_ladder_record(report, {"envelope": {}}, 1, "not_tried")
    assert report["winner"] == {"rung": 1, "name": "small", "envelope": {"model_path": "/m", "context_length": 8192}}
    assert [row["line"] for row in report["rungs"]] == [
        "1. small (--context-length 8192): healthy (a generation answered 12.3 s after the start), kept",
        "2. rung 2: not tried (rung 1 won)",
    ]
    assert report["rungs"][0]["seconds"] == 3.5
    assert sglang_ladder_summary(report, "ct129", "sglang.service") == [
        "envelope ladder on ct129 (sglang.service): rung 1 (small) is healthy and kept",
        "1. small (--context-length 8192): healthy (a generation answered 12.3 s after the start), kept",
        "2. rung 2: not tried (rung 1 won)",
    ]


def test_failed_verdict_names_cause_phase_and_rollback():
    verdict = {"cause": "oom", "phase": "cuda_graph", "diagnosis": "out of memory"}
    rung = {"name": "g", "envelope": {}}
    lines = [
        sglang_ladder_record(
            EMPTY,
            rung,
            0,
            "failed",
            plan=FITS,
            seconds=0,
            stage="deploy",
            failed_verdict=verdict,
            failed_result={"msg": "m"},
            unit_existed=existed,
            rollback_verdict={"healthy": healthy},
        )["rungs"][0]["line"]
        for existed, healthy in ((False, False), (True, True), (True, False))
    ]
    assert lines == [
        "1. g: failed its verdict [oom] in phase cuda_graph: out of memory; rolled back: there was no unit before, the new one is removed",
        "1. g: failed its verdict [oom] in phase cuda_graph: out of memory; rolled back: the last known good unit is restored and healthy",
        "1. g: failed its verdict [oom] in phase cuda_graph: out of memory; rolled back: the last known good unit is restored but NOT healthy",
    ]


@pytest.mark.parametrize(
    "args, message",
    [
        (({"rungs": "x"}, {}, 0, "healthy"), "list 'rungs'"),
        ((EMPTY, [], 0, "healthy"), "a rung must be a dict"),
        ((EMPTY, {}, 0, "won"), "outcome must be one of"),
    ],
)
def test_bad_input(args, message):
    with pytest.raises(AnsibleFilterError, match=message):
        sglang_ladder_record(*args)


def test_filter_names():
    assert set(FilterModule().filters()) == {"sglang_ladder_record", "sglang_ladder_summary", "sglang_ladder_problems"}


# --- the ladder's own checks, before a rung runs ---------------------------------------------------
SHAPE = (
    "sglang_service_envelope_ladder must be a list of {name: <label>, envelope: <dict of SGLang flags over sglang_service_envelope; null drops a flag>}; got "
)
ROLLBACK = (
    "sglang_service_envelope_ladder needs sglang_service_rollback: true: a failed rung left running would be kept as the next rung's last known good unit."
)


def test_a_ladder_of_named_envelopes_with_rollback_passes():
    assert sglang_ladder_problems([{"name": "a", "envelope": {"context_length": 8192}}, {"envelope": {}}], True) == []
    assert sglang_ladder_problems([], "yes") == []


@pytest.mark.parametrize(
    "ladder",
    [
        {"name": "a", "envelope": {}},
        [{"name": "a"}],
        [{"name": "a", "envelope": [1]}],
        [{"name": "a", "envelope": {}, "rung": 2}],
        ["a"],
    ],
)
def test_a_ladder_of_another_shape_is_refused(ladder):
    assert sglang_ladder_problems(ladder, True) == [SHAPE + json.dumps(ladder) + "."]


@pytest.mark.parametrize("rollback", [False, "no", "false"])
def test_a_ladder_needs_rollback_between_rungs(rollback):
    assert sglang_ladder_problems([{"envelope": {}}], rollback) == [ROLLBACK]
