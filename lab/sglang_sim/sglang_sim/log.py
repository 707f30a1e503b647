"""SGLang-style log lines (SIMULATED server): one flushed line at a time, as journald reads them."""

import datetime
import sys
import threading

# reentrant: the SIGTERM handler logs, and it runs in the main thread, possibly in the middle of
# a line the main thread is writing (a plain Lock deadlocked the simulator there)
_LOCK = threading.RLock()


def _stamp(rank=None):
    now = datetime.datetime.now().strftime("%Y-%m-%d %H:%M:%S")
    return f"[{now} TP{rank}] " if rank is not None else f"[{now}] "


def _write(stream, text):
    # several threads log (HTTP handlers, the crash timer): keep lines whole
    with _LOCK:
        for line in text.splitlines() or [""]:
            stream.write(line + "\n")
            stream.flush()


def info(msg, rank=None):
    _write(sys.stderr, _stamp(rank) + msg)


def warning(msg, rank=None):
    _write(sys.stderr, _stamp(rank) + msg)


def error(msg, rank=None):
    _write(sys.stderr, _stamp(rank) + msg)


def uvicorn(level, msg):
    """uvicorn's own lines: SGLang formats them with a timestamp and the padded level prefix."""
    _write(sys.stderr, _stamp() + f"{level + ':':<10}{msg}")


def access(client, request_line, status, phrase):
    _write(sys.stdout, _stamp() + f"{'INFO:':<10}{client[0]}:{client[1]} - \"{request_line}\" {status} {phrase}")


def traceback_text(frames, exception_lines):
    """A Python traceback: frames are (file, line, function, source) tuples."""
    out = ["Traceback (most recent call last):"]
    for path, lineno, func, source in frames:
        out.append(f'  File "{path}", line {lineno}, in {func}')
        out.append(f"    {source}")
    return "\n".join(out + list(exception_lines))
