"""Study summary: trial counts by state and the best trials, chosen retrospectively (each
trial's best step, not its last)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from searchsvc.core import Constraint, StudyRecord, TrialRecord, TrialState
from searchsvc.core.judging import ranked, study_counts

COUNTED_STATES = (TrialState.COMPLETED, TrialState.PRUNED, TrialState.FAILED, TrialState.INFEASIBLE,
                  TrialState.INTERRUPTED, TrialState.RUNNING)


@dataclass(frozen=True)
class TrialSummary:
    number: int
    state: str
    value: float | None
    best_step: int | None
    last_step: int | None
    config: Mapping[str, Any]
    arm: Mapping[str, Any]
    checkpoints: tuple[str, ...] = ()


@dataclass(frozen=True)
class StudySummary:
    study: str
    metric: str
    mode: str
    state: str
    total_trials: int | None
    counts: Mapping[str, int]  # search trials by state (every state a key)
    best_trials: tuple[TrialSummary, ...]
    repeat_counts: Mapping[str, int] = field(default_factory=dict)  # seed repeats by state


def _summary(t: TrialRecord) -> TrialSummary:
    return TrialSummary(t.number, t.state, t.best_value, t.best_step, t.last_step, t.config,
                        t.arm, t.checkpoints)


def best_trials(trials: Sequence[TrialRecord], mode: str, k: int = 5,
                constraints: Sequence[Constraint] = ()) -> list[TrialSummary]:
    """The study's ``k`` best trials, best first (:func:`searchsvc.core.judging.ranked`)."""
    return [_summary(t) for t in ranked(trials, mode, constraints)[:k]]


def summarize(study: StudyRecord, trials: Sequence[TrialRecord], k: int = 5) -> StudySummary:
    """Counts and best trials by :mod:`searchsvc.core.judging`'s rules: search trials by
    state (seed repeats apart: a repeat's value is one more draw of a config already ranked,
    and the best of several draws is the luckiest seed, not a better config)."""
    found = study_counts(trials)
    counts: dict[str, int] = {state: 0 for state in COUNTED_STATES}
    counts.update(found.search)
    return StudySummary(
        study=study.name, metric=study.metric, mode=study.mode, state=study.state,
        total_trials=study.total_trials, counts=counts,
        best_trials=tuple(best_trials(trials, study.mode, k, study.constraints)),
        repeat_counts=dict(found.repeats),
    )
