"""Searcher-specific views from the store's trial events: where Hyperband/ASHA stopped trials
(rungs) and which trial PBT copied into which (lineage)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from searchsvc.core import EventKind, TrialEvent, TrialRecord, TrialState


@dataclass(frozen=True)
class Rung:
    step: int
    reached: int  # trials that trained at least this many steps
    stopped: tuple[int, ...]  # trials stopped at this rung


@dataclass(frozen=True)
class Exploit:
    number: int  # the trial's study-local number (report.json: trial_id)
    step: int | None
    parent: int | None
    parent_step: int | None
    changes: Mapping[str, tuple[Any, Any]]  # parameter -> (old, new)


def rungs(trials: Sequence[TrialRecord], events: Sequence[TrialEvent]) -> list[Rung]:
    """One entry per step at which a scheduler stopped trials, in order; empty when none was
    stopped early."""
    stopped_at: dict[int, list[int]] = {}
    # Stopped for a collapsed layer (dimensionality.stop_collapsed): not at a rung.
    collapsed = {e.number for e in events
                 if e.kind == EventKind.STOPPED_EARLY and e.data.get("reason") == "collapsed"}
    for e in events:
        if e.kind == EventKind.STOPPED_EARLY and e.step is not None and e.number not in collapsed:
            stopped_at.setdefault(int(e.step), []).append(e.number)
    for t in trials:  # pruned trials recorded before events existed
        if t.state == TrialState.PRUNED and t.last_step is not None and t.number not in collapsed \
                and not any(t.number in v for v in stopped_at.values()):
            stopped_at.setdefault(int(t.last_step), []).append(t.number)
    return [Rung(step, sum(1 for t in trials if (t.last_step or 0) >= step),
                 tuple(sorted(set(stopped_at[step])))) for step in sorted(stopped_at)]


def lineage(events: Sequence[TrialEvent]) -> list[Exploit]:
    """PBT's exploit/explore steps in the order they happened."""
    out = []
    for e in events:
        if e.kind != EventKind.EXPLOIT:
            continue
        old = dict(e.data.get("old_config") or {})
        new = dict(e.data.get("new_config") or {})
        changes = {k: (old.get(k), new[k]) for k in new if old.get(k) != new[k]}
        parent = e.data.get("parent")
        out.append(Exploit(e.number, e.step, None if parent is None else int(parent),
                           e.data.get("parent_step"), changes))
    return out
