"""Isolation (Playbook: "isolation plots"): for each scientific parameter, the best metric per
value after the nuisance parameters were optimised away (the best trial of that value), the
spread of that value's top trials, and whether the differences exceed trial-to-trial noise."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from searchsvc.analysis.trials import ranked
from searchsvc.core import TrialRecord
from searchsvc.spec import StudySpec

VERDICT_DIFFERS = "differs"
VERDICT_WITHIN_NOISE = "within_noise"
VERDICT_INSUFFICIENT = "insufficient_data"
MAX_BUCKETS = 8  # a scientific parameter with more distinct numeric values is bucketed
TOP_K = 3  # the top trials of a value whose spread measures how settled its best is


@dataclass(frozen=True)
class IsolationPoint:
    value: Any  # the scientific value, or a bucket's label for a bucketed axis
    best: float
    number: int  # the trial's study-local number (report.json: trial_id)
    trials: int
    top_values: tuple[float, ...]  # the value's best TOP_K results, best first


@dataclass(frozen=True)
class Isolation:
    parameter: str
    points: tuple[IsolationPoint, ...]
    verdict: str  # differs | within_noise | insufficient_data
    best_value: Any
    gap: float | None  # best value's margin over the runner-up
    noise: float | None
    detail: str


def isolate(spec: StudySpec, trials: Sequence[TrialRecord]) -> list[Isolation]:
    return [_isolate(spec, p.name, trials) for p in spec.scientific]


def _isolate(spec: StudySpec, name: str, trials: Sequence[TrialRecord]) -> Isolation:
    usable = [t for t in ranked(trials, spec.mode) if name in t.config]
    groups: dict[Any, list[TrialRecord]] = {}
    for t, key in zip(usable, _keys([t.config[name] for t in usable]), strict=True):
        groups.setdefault(key, []).append(t)  # stays best-first
    points = []
    for key in _ordered(groups):
        members = groups[key]
        points.append(IsolationPoint(key, float(members[0].best_value),  # type: ignore[arg-type]
                                     members[0].number, len(members),
                                     tuple(float(t.best_value) for t in members[:TOP_K])))  # type: ignore[arg-type]
    return _verdict(spec, name, points)


def _verdict(spec: StudySpec, name: str, points: list[IsolationPoint]) -> Isolation:
    if len(points) < 2 or any(p.trials < 2 for p in points):
        return Isolation(name, tuple(points), VERDICT_INSUFFICIENT, None, None, None,
                         f"{name}: too few trials per value to compare (need 2 or more each)")
    sign = 1 if spec.mode == "min" else -1
    order = sorted(points, key=lambda p: sign * p.best)
    winner, runner_up = order[0], order[1]
    gap = abs(runner_up.best - winner.best)
    # Noise: how far a value's best sits from its third-best trial, typically (for normal
    # noise and ~20 trials, about 0.7 sigma: the sd of the gap between two such bests). A
    # difference within twice that could flip with another seed or more nuisance tuning.
    noise = statistics.median(abs(p.top_values[-1] - p.top_values[0]) for p in points)
    noise = max(noise, 1e-12)
    if gap > 2 * noise:
        verdict = VERDICT_DIFFERS
        detail = (f"{name}={winner.value} is best ({spec.metric} {winner.best:.4g} vs "
                  f"{runner_up.best:.4g} for {name}={runner_up.value}); the gap "
                  f"{gap:.3g} is {gap / noise:.1f}x the trial-to-trial noise ({noise:.3g})")
    else:
        verdict = VERDICT_WITHIN_NOISE
        detail = (f"{name}: the best values differ by {gap:.3g}, within the trial-to-trial "
                  f"noise ({noise:.3g}): no value of {name} is clearly better; more trials or "
                  "seeds are needed to separate them")
    return Isolation(name, tuple(points), verdict, winner.value, gap, noise, detail)


def _keys(values: list[Any]) -> list[Any]:
    """The group key of each value: itself, or an equal-width bucket label when a numeric axis
    has too many distinct values to compare one by one."""
    distinct = set(values)
    numeric = all(isinstance(v, int | float) and not isinstance(v, bool) for v in distinct)
    if len(distinct) <= MAX_BUCKETS or not numeric:
        return values
    lo, hi = min(values), max(values)
    width = (hi - lo) / MAX_BUCKETS
    keys = []
    for v in values:
        i = min(int((v - lo) / width), MAX_BUCKETS - 1) if width else 0
        keys.append(f"[{lo + i * width:.3g}, {lo + (i + 1) * width:.3g}]")
    return keys


def _ordered(groups: dict[Any, list[TrialRecord]]) -> list[Any]:
    def key(k: Any) -> tuple[int, Any]:
        if isinstance(k, int | float) and not isinstance(k, bool) and math.isfinite(k):
            return (0, k)
        if isinstance(k, str) and k.startswith("["):
            return (1, float(k[1:].split(",")[0]))
        return (2, str(k))

    return sorted(groups, key=key)
