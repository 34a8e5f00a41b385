"""Study summary: trial counts by state and the best trials, chosen retrospectively (each
trial's best step, not its last)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from searchsvc.analysis.trials import ranked, search_trials
from searchsvc.core import (
    TRIAL_COMPLETED,
    TRIAL_FAILED,
    TRIAL_INFEASIBLE,
    TRIAL_INTERRUPTED,
    TRIAL_PRUNED,
    TRIAL_RUNNING,
    StudyRecord,
    TrialRecord,
)

COUNTED_STATES = (TRIAL_COMPLETED, TRIAL_PRUNED, TRIAL_FAILED, TRIAL_INFEASIBLE,
                  TRIAL_INTERRUPTED, TRIAL_RUNNING)


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
    counts: Mapping[str, int]
    best_trials: tuple[TrialSummary, ...]


def _summary(t: TrialRecord) -> TrialSummary:
    return TrialSummary(t.number, t.state, t.best_value, t.best_step, t.last_step, t.config,
                        t.arm, t.checkpoints)


def best_trials(trials: Sequence[TrialRecord], mode: str, k: int = 5) -> list[TrialSummary]:
    """The ``k`` best trials with a finite best value (completed or pruned), best first."""
    return [_summary(t) for t in ranked(trials, mode)[:k]]


def summarize(study: StudyRecord, trials: Sequence[TrialRecord], k: int = 5) -> StudySummary:
    counts: dict[str, int] = {state: 0 for state in COUNTED_STATES}
    for t in trials:
        counts[t.state] = counts.get(t.state, 0) + 1
    return StudySummary(
        study=study.name, metric=study.metric, mode=study.mode, state=study.state,
        total_trials=study.total_trials, counts=counts,
        # The search's trials only: a seed repeat's value is one more draw of a config
        # already ranked, and the best of several draws is the luckiest seed, not a better
        # config (the seed-noise section judges repeats).
        best_trials=tuple(best_trials(search_trials(trials), study.mode, k)),
    )
