"""Helpers shared by the analyses: valuing trials by one objective of several, naming arms.
What a search trial is and how trials rank are :mod:`searchsvc.core.judging`'s rules."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from searchsvc.core import TrialRecord
from searchsvc.core.judging import search_trials


def valued_by(trials: Sequence[TrialRecord], metric: str) -> list[TrialRecord]:
    """``trials`` each valued by its final value of ``metric`` (as its ``best_value``): how
    the analyses judge one objective of several on its own."""
    return [replace(t, best_value=t.final_metrics.get(metric)) for t in trials]


def arm_label(trial: TrialRecord) -> str:
    """The trial's scientific arm as ``name=value, ...`` ("" in a study without one)."""
    return ", ".join(f"{k}={v}" for k, v in trial.arm.items())


__all__ = ["arm_label", "search_trials", "valued_by"]
