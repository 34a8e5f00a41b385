"""Isolation (Playbook: "isolation plots"): for each scientific parameter, the best metric per
value after the nuisance parameters were optimised away (the best trial of that value), and
whether the differences exceed trial-to-trial noise.

With seed repeats (the study file's ``noise``), each value's best configuration is judged by its
mean over repeats, with intervals from the measured seed noise (:mod:`.noise`). Without them
(``noise: off``), a labelled proxy is used: the spread of the value's top trials, which mixes
seed noise with how well the nuisance parameters were tuned."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from searchsvc.analysis.noise import (
    METHOD_WELCH,
    NoiseEstimate,
    RepeatGroup,
    best_group,
    estimate_of,
    method_name,
    pair_interval,
    seeds_to_resolve,
)
from searchsvc.core import TrialRecord
from searchsvc.core.direction import direction
from searchsvc.core.judging import by_value as best_first
from searchsvc.spec import StudySpec

VERDICT_DIFFERS = "differs"
VERDICT_WITHIN_NOISE = "within_noise"
VERDICT_INSUFFICIENT = "insufficient_data"
MAX_BUCKETS = 8  # a scientific parameter with more distinct numeric values is bucketed
TOP_K = 3  # the top trials of a value whose spread measures how settled its best is
METHOD_PROXY = "proxy_top_trial_spread"  # no seed repeats: not a measurement of seed noise


@dataclass(frozen=True)
class IsolationPoint:
    value: Any  # the scientific value, or a bucket's label for a bucketed axis
    best: float
    number: int  # the trial's study-local number (report.json: trial_id)
    trials: int
    top_values: tuple[float, ...]  # the value's best TOP_K results, best first
    # With seed repeats: the value's best configuration (by mean over its repeats).
    mean: float | None = None
    ci_low: float | None = None  # 95% interval of that mean
    ci_high: float | None = None
    repeats: int = 0
    repeat_of: int | None = None  # the search trial whose config was repeated


@dataclass(frozen=True)
class Isolation:
    parameter: str
    points: tuple[IsolationPoint, ...]
    verdict: str  # differs | within_noise | insufficient_data
    best_value: Any
    gap: float | None  # best value's margin over the runner-up
    noise: float | None
    detail: str
    method: str = METHOD_PROXY  # how the verdict was reached (noise.METHOD_*, or the proxy)
    difference_low: float | None = None  # simultaneous 95% interval of the runner-up's gap
    difference_high: float | None = None
    seeds_needed: int | None = None  # repeats per config that would resolve the gap seen


def isolate(spec: StudySpec, trials: Sequence[TrialRecord],
            noise: NoiseEstimate | None = None) -> list[Isolation]:
    """Per scientific parameter, over the search ``trials`` (no repeats); judged against
    ``noise`` when the study measured it."""
    return [_isolate(spec, p.name, trials, noise) for p in spec.scientific]


def _isolate(spec: StudySpec, name: str, trials: Sequence[TrialRecord],
             noise: NoiseEstimate | None) -> Isolation:
    usable = [t for t in best_first(trials, spec.mode) if name in t.config]
    repeated = [g for g in (noise.groups if noise else ()) if name in g.config]
    keys = _keys([t.config[name] for t in usable] + [g.config[name] for g in repeated])
    groups: dict[Any, list[TrialRecord]] = {}
    for t, key in zip(usable, keys, strict=False):
        groups.setdefault(key, []).append(t)  # stays best-first
    by_value: dict[Any, list[RepeatGroup]] = {}
    for g, key in zip(repeated, keys[len(usable):], strict=True):
        by_value.setdefault(key, []).append(g)
    points = []
    for key in _ordered(groups):
        members = groups[key]
        point = IsolationPoint(key, float(members[0].best_value),  # type: ignore[arg-type]
                               members[0].number, len(members),
                               tuple(float(t.best_value) for t in members[:TOP_K]))  # type: ignore[arg-type]
        if noise is not None and by_value.get(key):
            estimate = estimate_of(best_group(by_value[key], spec.mode), noise)
            point = replace(point, mean=estimate.mean,
                            ci_low=estimate.mean - estimate.half_width,
                            ci_high=estimate.mean + estimate.half_width,
                            repeats=estimate.group.n, repeat_of=estimate.group.original)
        points.append(point)
    if noise is not None and repeated:
        return _repeat_verdict(spec, name, points, noise, by_value)
    return _verdict(spec, name, points)


def _repeat_verdict(spec: StudySpec, name: str, points: list[IsolationPoint],
                    noise: NoiseEstimate, by_value: dict[Any, list[RepeatGroup]]) -> Isolation:
    method = method_name(noise)
    judged = [p for p in points if p.mean is not None]
    if len(judged) < 2 or len(judged) < len(points):
        missing = [str(p.value) for p in points if p.mean is None]
        why = (f"no finished seed repeats for {name}={', '.join(missing)}" if missing
               else "fewer than two values")
        return Isolation(name, tuple(points), VERDICT_INSUFFICIENT, None, None, noise.sigma,
                         f"{name}: cannot compare the values ({why})", method)
    estimates = {p.value: estimate_of(best_group(by_value[p.value], spec.mode), noise)
                 for p in judged}
    sign = direction(spec.mode).sign
    order = sorted(judged, key=lambda p: sign * p.mean)  # type: ignore[operator]
    winner = order[0]
    pairs = {p.value: pair_interval(estimates[winner.value], estimates[p.value], len(judged),
                                    noise, spec.mode) for p in order[1:]}
    runner_up = order[1]
    # The pair that decides: the value the winner is least resolved from (the lowest
    # interval among those not excluding 0), else the runner-up.
    unresolved = [p for p in order[1:]
                  if not (pairs[p.value].resolved and pairs[p.value].difference > 0)]
    against = min(unresolved, key=lambda p: pairs[p.value].low, default=runner_up)
    closest = pairs[against.value]
    gap = closest.difference
    how = ("Welch intervals on each arm's own seed noise, Bonferroni-corrected"
           if method == METHOD_WELCH else "Tukey-Kramer intervals on the pooled seed noise")
    if not unresolved:
        verdict, needed = VERDICT_DIFFERS, None
        detail = (f"{name}={winner.value} is best: mean {spec.metric} {winner.mean:.4g} over "
                  f"{winner.repeats} seeds vs {runner_up.mean:.4g} for {name}={runner_up.value}"
                  f"; the gap {gap:.3g} has a 95% interval [{closest.low:.3g}, "
                  f"{closest.high:.3g}] that excludes 0 ({how}; seed noise sigma "
                  f"{noise.sigma:.3g}, {noise.dof} dof)")
    else:
        verdict = VERDICT_WITHIN_NOISE
        needed = seeds_to_resolve(gap, closest, winner.repeats)
        more = (f"; about {needed} seeds per configuration would resolve a gap this size"
                if needed else "")
        detail = (f"{name}: {name}={winner.value} has the best mean ({winner.mean:.4g}) but "
                  f"differs from {name}={against.value} ({against.mean:.4g}) by {gap:.3g}, "
                  f"within seed noise: the 95% interval of that gap [{closest.low:.3g}, "
                  f"{closest.high:.3g}] "
                  f"includes 0 ({how}; sigma {noise.sigma:.3g}, {noise.dof} dof){more}")
    return Isolation(name, tuple(points), verdict, winner.value, gap, noise.sigma, detail,
                     method, closest.low, closest.high, needed)


def _verdict(spec: StudySpec, name: str, points: list[IsolationPoint]) -> Isolation:
    if len(points) < 2 or any(p.trials < 2 for p in points):
        return Isolation(name, tuple(points), VERDICT_INSUFFICIENT, None, None, None,
                         f"{name}: too few trials per value to compare (need 2 or more each)")
    sign = direction(spec.mode).sign
    order = sorted(points, key=lambda p: sign * p.best)
    winner, runner_up = order[0], order[1]
    gap = abs(runner_up.best - winner.best)
    # Noise: how far a value's best sits from its third-best trial, typically (for normal
    # noise and ~20 trials, about 0.7 sigma: the sd of the gap between two such bests). A
    # difference within twice that could flip with another seed or more nuisance tuning.
    noise = statistics.median(abs(p.top_values[-1] - p.top_values[0]) for p in points)
    noise = max(noise, 1e-12)
    # Labelled as the proxy it is: it measures seed noise and tuning quality together.
    proxy = " [proxy: no seed repeats, so noise is the spread of each value's top trials]"
    if gap > 2 * noise:
        verdict = VERDICT_DIFFERS
        detail = (f"{name}={winner.value} is best ({spec.metric} {winner.best:.4g} vs "
                  f"{runner_up.best:.4g} for {name}={runner_up.value}); the gap "
                  f"{gap:.3g} is {gap / noise:.1f}x the trial-to-trial noise ({noise:.3g})"
                  + proxy)
    else:
        verdict = VERDICT_WITHIN_NOISE
        detail = (f"{name}: the best values differ by {gap:.3g}, within the trial-to-trial "
                  f"noise ({noise:.3g}): no value of {name} is clearly better; more trials or "
                  "seeds are needed to separate them" + proxy)
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
