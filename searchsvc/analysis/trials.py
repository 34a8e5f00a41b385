"""Helpers shared by the analyses: ranking trials by their best value, naming arms."""

from __future__ import annotations

import math
from collections.abc import Sequence

from searchsvc.core import TRIAL_COMPLETED, TRIAL_PRUNED, TrialRecord


def search_trials(trials: Sequence[TrialRecord]) -> list[TrialRecord]:
    """The search's own trials: every trial but the seed repeats (``repeat_of``), which rerun
    a ranked config with a new seed and are judged apart (:mod:`searchsvc.analysis.noise`)."""
    return [t for t in trials if t.repeat_of is None]


def rank_key(trial: TrialRecord, mode: str) -> tuple[float, int]:
    value = trial.best_value if trial.best_value is not None else math.inf
    return (value if mode == "min" else -value, trial.number)


def ranked(trials: Sequence[TrialRecord], mode: str) -> list[TrialRecord]:
    """Completed and pruned trials with a finite best value, best first (ties: lower number)."""
    usable = [t for t in trials if t.state in (TRIAL_COMPLETED, TRIAL_PRUNED)
              and t.best_value is not None and math.isfinite(t.best_value)]
    return sorted(usable, key=lambda t: rank_key(t, mode))


def arm_label(trial: TrialRecord) -> str:
    """The trial's scientific arm as ``name=value, ...`` ("" in a study without one)."""
    return ", ".join(f"{k}={v}" for k, v in trial.arm.items())

