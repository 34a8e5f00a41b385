"""A study's allowance as its driver receives it: the number of trials it may run at once,
written by the service's allocator to a file the driver names in :data:`ALLOWANCE_ENV`, and
whether the study is to give back the slots above it now (``preempt``: pause trials at their
next checkpoint for a study of higher priority) rather than as its trials end.

The file is replaced whole (write beside, then rename), so a reader sees the old number or the
new one. A driver without the variable, or before the file exists, runs as many trials as its
study file allows."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import NamedTuple

ALLOWANCE_ENV = "SEARCHSVC_ALLOWANCE_FILE"


class Allowance(NamedTuple):
    """How many trials a study may run at once; ``why``: what its driver shows; ``preempt``:
    running trials above ``trials`` pause at their next checkpoint instead of finishing."""

    trials: int
    why: str = ""
    preempt: bool = False


def binding(allowed: int | None, concurrency: int | None) -> int | None:
    """``allowed`` where it limits a study whose own limit is ``concurrency`` trials at once
    (None: no limit of its own); None where it does not, so that the study's own limit (Ray
    Tune's ``max_concurrent_trials``) is the only one. Tune asks for a study's next trial, and
    counts the trial that ends as running, before it reports that trial complete: a driver
    counting against an allowance equal to its own limit would hold back a trial it may run,
    and Tune end the worker it kept for it."""
    if allowed is None or (concurrency is not None and allowed >= concurrency):
        return None
    return allowed


def write_allowance(path: Path, trials: int, *, why: str = "", preempt: bool = False) -> None:
    """Set the allowance in ``path`` to ``trials`` (``why``: what the driver shows;
    ``preempt``: see :class:`Allowance`)."""
    if trials < 0:
        raise ValueError(f"an allowance is at least 0 trials (got {trials})")
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    partial.write_text(json.dumps({"trials": trials, "why": why, "preempt": preempt}))
    os.replace(partial, path)


class AllowanceReader:
    """The allowance in one file, read again only when the file changed (a driver asks before
    every trial it starts).

    Calling it gives the :class:`Allowance`, or None while there is no file (no limit). A file
    that cannot be read keeps the last allowance read."""

    def __init__(self, path: Path):
        self.path = path
        self._stamp: tuple[int, int] | None = None
        self._last: Allowance | None = None

    def __call__(self) -> Allowance | None:
        try:
            stat = self.path.stat()
        except FileNotFoundError:
            return self._last
        stamp = (stat.st_mtime_ns, stat.st_ino)
        if stamp != self._stamp:
            try:
                data = json.loads(self.path.read_text())
                self._last = Allowance(int(data["trials"]), str(data.get("why", "")),
                                       bool(data.get("preempt", False)))
                self._stamp = stamp
            except (OSError, ValueError, KeyError, TypeError):
                pass  # replaced while read, or not ours: ask again next time
        return self._last


def reader_from_environment() -> AllowanceReader | None:
    """The reader of the file :data:`ALLOWANCE_ENV` names; None when it names none."""
    named = os.environ.get(ALLOWANCE_ENV)
    return AllowanceReader(Path(named)) if named else None
