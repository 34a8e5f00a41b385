"""What a failed trial raised, read from its stored error text, and the fail-fast rule: a run
whose first trials all fail alike, with no trial producing a result, stops before it spends
the rest of its budget on the same error. Pure Python."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

# The error a trial the driver classified as out of memory is recorded with starts so.
OOM_PREFIX = "out of memory"
# torch's (CUDA) out-of-memory errors, as a trial's error text holds them.
_OOM = re.compile(r"OutOfMemoryError|CUDA out of memory|CUDA error: out of memory")

# A traceback frame: ``  File "/path/train.py", line 8, in train``.
_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+)')
# The exception line a traceback ends with: ``FileNotFoundError: data/x.csv not found``
# (a dotted name for a module's own exception class; Ray's wrapper names the cause).
_RAISED = re.compile(r"^(?:[A-Za-z_][\w.]*\.)?(?P<type>[A-Za-z_]\w*(?:Error|Exception|Exit|"
                     r"Interrupt|Warning|Failure|Timeout))(?::\s?(?P<message>.*))?$")
# What a frame's file must not be for it to be the user's line.
_NOT_USERS = ("site-packages", "dist-packages", "/searchsvc/", "<", "/lib/python3")


@dataclass(frozen=True)
class Failure:
    """One failed trial's exception: its type, the deepest line of the user's code in the
    traceback (``file.py:8``; empty when none was found) and its message."""

    type: str
    where: str
    message: str

    def describe(self) -> str:
        """``FileNotFoundError at my_train.py:8: data/points.csv not found``."""
        at = f" at {self.where}" if self.where else ""
        return f"{self.type}{at}: {self.message}" if self.message else f"{self.type}{at}"


def failure_of(error: str | None) -> Failure | None:
    """The exception a trial's error text (a Python traceback, as Ray records it) ends with;
    None for a text that names no exception (e.g. a timed-out trial's)."""
    if not error:
        return None
    lines = [line.rstrip() for line in error.splitlines()]
    raised = None
    for index in range(len(lines) - 1, -1, -1):
        found = _RAISED.match(lines[index].strip())
        if found and not lines[index].startswith(" "):
            raised = (index, found)
            break
    if raised is None:
        return None
    index, found = raised
    where = ""
    for line in reversed(lines[:index]):
        frame = _FRAME.match(line)
        if frame and not any(part in frame["file"] for part in _NOT_USERS):
            where = f"{frame['file'].rsplit('/', 1)[-1]}:{frame['line']}"
            break
    return Failure(found["type"], where, (found["message"] or "").strip())


TAIL_LINES = 6  # of a failed trial's error, where a surface shows its end
_ANSI = re.compile(r"\x1b\[[0-9;]*m")  # the colours Ray puts in a worker's traceback


def error_tail(error: str | None, lines: int = TAIL_LINES) -> list[str]:
    """The last ``lines`` non-blank lines of a trial's error text, colours removed: the
    exception, or a command objective's last lines of stderr. Every surface that shows the end
    of an error (``show``, the report, trials.csv, the UI) shows these."""
    kept = [line.rstrip() for line in _ANSI.sub("", error or "").splitlines() if line.strip()]
    return kept[-lines:] if lines > 0 else []


def is_out_of_memory(error: str) -> bool:
    """Whether a trial's error text is torch's (CUDA) out-of-memory error."""
    return bool(_OOM.search(error))


def oom_line(error: str) -> str:
    """The line of ``error`` that says it ran out of memory (else its last line)."""
    return next((ln.strip() for ln in reversed(error.splitlines()) if _OOM.search(ln)),
                error.strip().splitlines()[-1] if error.strip() else "")


def recorded_out_of_memory(error: str | None) -> bool:
    """Whether a stored trial error is one the driver classified as out of memory."""
    return (error or "").startswith(OOM_PREFIX)


def fail_fast(ended: Sequence[Failure | None], first: int, produced: bool) -> str | None:
    """Why a run must stop now, or None. ``ended``: the run's trials in the order they ended,
    each its :class:`Failure` when it failed (None when it produced a result or ended for
    another reason); ``first``: the study's ``budget.fail_fast`` (0: never); ``produced``:
    whether any trial of the study has produced a result. The run stops when its first
    ``first`` trials all failed with the same exception type and none produced a result."""
    if first <= 0 or produced or len(ended) < first:
        return None
    window = ended[:first]
    if any(f is None for f in window):
        return None
    failures = [f for f in window if f is not None]
    if len({f.type for f in failures}) != 1:
        return None
    return (f"the first {first} trials all failed with {failures[0].describe()} "
            f"(budget.fail_fast: {first})")
