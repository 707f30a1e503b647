"""The SIMULATED server's `replay` fault: a real failure, as a real server printed it.

SGLANG_SIM_FAULT=replay with SGLANG_SIM_REPLAY naming a JSON file that holds one record of the
collection's corpus of real failure logs (tests/unit/plugins/module_utils/fixtures/real_failures:
``lines`` verbatim from a public issue, ``url`` where they were pasted), or a corpus file and
SGLANG_SIM_REPLAY_ID naming the record. The simulator prints the
lines in their order, on stderr as SGLang logs, with the gaps their own timestamps show (scaled by
SGLANG_SIM_TIME_SCALE, each gap capped), then exits 1 as the real server did, or hangs when the
record says ``"end": "hang"``, or, for a real healthy log (fixtures/real_healthy), goes on to start and
serve as the simulator does when the record says ``"end": "serve"`` or SGLANG_SIM_REPLAY_END=serve.
Nothing is added to or changed in the lines: the journal holds the real text, so the verdict is judged
on it.
"""

import datetime
import json
import re
import sys
import time

# SGLang's prefix "[2025-03-07 21:49:33 TP13] ", vLLM's "INFO 06-06 14:09:57 ", torch's "[W623 15:37:01.82 ..."
_STAMPS = (
    (re.compile(r"\[(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2})"), "%Y-%m-%d %H:%M:%S"),
    (re.compile(r"\b(\d{2}-\d{2} \d{2}:\d{2}:\d{2})\b"), "%m-%d %H:%M:%S"),
)
# a line with no time of its own follows the one before it this soon
LINE_GAP_S = 0.02
# a long silence in the original (a model download, a 30-minute NCCL timeout) is shortened to this
MAX_GAP_S = 2.0


def stamp_of(line):
    """The time a log line carries, or None."""
    for regex, fmt in _STAMPS:
        found = regex.search(line)
        if found:
            try:
                return datetime.datetime.strptime(found.group(1), fmt)
            except ValueError:
                return None
    return None


def schedule(lines, time_scale=1.0, max_gap_s=MAX_GAP_S):
    """(seconds to wait before the line, line) for each line, from the lines' own timestamps."""
    out, last = [], None
    for line in lines:
        now = stamp_of(line)
        gap = LINE_GAP_S
        if now is not None and last is not None and now >= last:
            gap = max(LINE_GAP_S, min(max_gap_s, (now - last).total_seconds() * time_scale))
        if now is not None:
            last = now
        out.append((gap, line))
    return out


ENDS = ("exit", "hang", "serve")


def load(path, record_id=None, end=None):
    """The record in a replay file (one record, or a corpus file's list and the id of one of
    its records); a clear error when it is not one."""
    with open(path, encoding="utf-8") as handle:
        record = json.load(handle)
    if isinstance(record, list):
        found = [r for r in record if isinstance(r, dict) and r.get("id") == record_id]
        if len(found) != 1:
            raise ValueError(f"{path}: no record with id {record_id!r} (SGLANG_SIM_REPLAY_ID)")
        record = found[0]
    if not isinstance(record, dict) or not isinstance(record.get("lines"), list) or not record["lines"]:
        raise ValueError(f"{path}: not a corpus record (a JSON object with a non-empty list 'lines')")
    if end:
        record = dict(record, end=end)
    if record.get("end", "exit") not in ENDS:
        raise ValueError(f"{path}: 'end' must be one of {', '.join(ENDS)}, got {record['end']!r}")
    return record


def replay(record, time_scale=1.0, stream=None, sleep=time.sleep):
    """Print the record's lines with their timing; returns the exit code (None: hang, 0: go on serving)."""
    stream = stream or sys.stderr
    for gap, line in schedule(record["lines"], time_scale):
        sleep(gap)
        stream.write(line + "\n")
        stream.flush()
    if record.get("end", "exit") == "hang":
        return None
    if record.get("end") == "serve":
        return 0
    return 1
