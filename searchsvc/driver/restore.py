"""Where a resumed study's interrupted trials start again: each from the last checkpoint its
interrupted attempt saved (the store's ``checkpoint`` events), when that checkpoint is still
there; a trial without one runs again from its start."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from searchsvc.core import EventKind, TrialRecord, TrialState
from searchsvc.store import Store


def restore_points(store: Store, study: str, trials: Sequence[TrialRecord]
                   ) -> dict[int, tuple[str, int]]:
    """Trial number -> (checkpoint folder, step) for each interrupted trial of ``trials``
    whose attempt saved a checkpoint that still exists: the latest such one."""
    interrupted = {t.number: t for t in trials if t.state == TrialState.INTERRUPTED}
    if not interrupted:
        return {}
    found: dict[int, tuple[str, int]] = {}
    for event in store.get_events(study, kind=EventKind.CHECKPOINT):
        trial = interrupted.get(event.number)
        path = str(event.data.get("path", ""))
        if (trial is None or event.step is None or event.data.get("attempt") != trial.attempts
                or not path or not Path(path).is_dir()):
            continue
        if event.number not in found or event.step >= found[event.number][1]:
            found[event.number] = (path, event.step)
    return found
