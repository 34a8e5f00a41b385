"""Isolation (Playbook: "isolation plots"): for each scientific parameter, the best metric per
value after the nuisance parameters were optimised away (the best trial of that value), and
whether the differences exceed trial-to-trial noise.

With seed repeats (the study file's ``noise``), each value's best configuration is judged by its
mean over repeats, with intervals from the measured seed noise (:mod:`.noise`). Without them
(``noise: off``), a labelled proxy is used: the spread of the value's top trials, which mixes
seed noise with how well the nuisance parameters were tuned.

Values are compared only on the trials that reached the full budget
(:func:`searchsvc.core.judging.budget_split`): a trial an early-stopping rule stopped has a
value from fewer steps, and a slow-starting value is stopped more often, so its truncated
values would lose to the other's finished ones. A value with fewer than two such trials (seed
repeats count: they run the whole budget) that early stopping stopped gets no verdict
(:data:`VERDICT_STOPPED_EARLY`); where early stopping stopped more than half of a value's
trials, the detail says so."""

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
from searchsvc.core.judging import BudgetSplit, budget_split
from searchsvc.core.judging import by_value as best_first
from searchsvc.spec import StudySpec

VERDICT_DIFFERS = "differs"
VERDICT_WITHIN_NOISE = "within_noise"
VERDICT_INSUFFICIENT = "insufficient_data"
# A value has fewer than MIN_FULL_BUDGET trials that reached the full budget because early
# stopping stopped the others: its values are from fewer steps and are not compared.
VERDICT_STOPPED_EARLY = "stopped_early"
STOPPED_EARLY_TEXT = "cannot compare: its trials were stopped early"
MIN_FULL_BUDGET = 2
MAX_BUCKETS = 8  # a scientific parameter with more distinct numeric values is bucketed
TOP_K = 3  # the top trials of a value whose spread measures how settled its best is
METHOD_PROXY = "proxy_top_trial_spread"  # no seed repeats: not a measurement of seed noise


@dataclass(frozen=True)
class IsolationPoint:
    value: Any  # the scientific value, or a bucket's label for a bucketed axis
    # The best of the value's trials that reached the full budget (None: none did) and its
    # study-local number (report.json: trial_id).
    best: float | None
    number: int | None
    trials: int  # the value's trials that reached the full budget: those it is compared on
    top_values: tuple[float, ...]  # the best TOP_K results of those, best first
    # With seed repeats: the value's best configuration (by mean over its repeats).
    mean: float | None = None
    ci_low: float | None = None  # 95% interval of that mean
    ci_high: float | None = None
    repeats: int = 0
    repeat_of: int | None = None  # the search trial whose config was repeated
    stopped: int = 0  # the value's trials early stopping stopped before the full budget


@dataclass(frozen=True)
class Isolation:
    parameter: str
    points: tuple[IsolationPoint, ...]
    verdict: str  # differs | within_noise | insufficient_data | stopped_early
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
    max_steps = spec.budget.max_steps
    splits = {key: budget_split(members, max_steps) for key, members in groups.items()}
    points = []
    for key in _ordered(groups):
        full = splits[key].full  # stays best-first
        point = IsolationPoint(key, float(full[0].best_value) if full else None,  # type: ignore[arg-type]
                               full[0].number if full else None, len(full),
                               tuple(float(t.best_value) for t in full[:TOP_K]),  # type: ignore[arg-type]
                               stopped=len(splits[key].stopped))
        if noise is not None and by_value.get(key):
            estimate = estimate_of(best_group(by_value[key], spec.mode), noise)
            point = replace(point, mean=estimate.mean,
                            ci_low=estimate.mean - estimate.half_width,
                            ci_high=estimate.mean + estimate.half_width,
                            repeats=estimate.group.n, repeat_of=estimate.group.original)
        points.append(point)
    judged_on = noise if noise is not None and repeated else None  # the seed repeats' noise
    # Seed repeats run the whole budget: they count among a value's full-budget trials.
    full_counts = {p.value: p.trials + (sum(g.n for g in by_value.get(p.value, ()))
                                        if judged_on is not None else 0) for p in points}
    blocked = [p for p in points if p.stopped and full_counts[p.value] < MIN_FULL_BUDGET]
    if blocked:
        rest = [p for p in points if p not in blocked]
        return Isolation(name, tuple(points), VERDICT_STOPPED_EARLY, None, None,
                         None if judged_on is None else judged_on.sigma,
                         _stopped_early(name, blocked, splits, full_counts, max_steps)
                         + _stopped_note(name, rest, splits, max_steps),
                         METHOD_PROXY if judged_on is None else method_name(judged_on))
    note = _stopped_note(name, points, splits, max_steps)
    if judged_on is not None:
        return _repeat_verdict(spec, name, points, judged_on, by_value, note)
    return _verdict(spec, name, points, note)


def stopped_text(name: str, value: Any, split: BudgetSplit[TrialRecord]) -> str:
    """``early stopping stopped 9 of 12 trials of depth=2``."""
    return (f"early stopping stopped {len(split.stopped)} of {split.total} trials of "
            f"{name}={value}")


def _stopped_early(name: str, blocked: Sequence[IsolationPoint],
                   splits: dict[Any, BudgetSplit[TrialRecord]], full_counts: dict[Any, int],
                   max_steps: int | None) -> str:
    """Why ``blocked`` values get no verdict, each with its stopped count."""
    def one(p: IsolationPoint) -> str:
        reached, stops = full_counts[p.value], stopped_text(name, p.value, splits[p.value])
        return (f"{name}={p.value}: {STOPPED_EARLY_TEXT} ({stops}; {reached or 'none'} "
                f"reached the full {max_steps} steps, "
                f"{MIN_FULL_BUDGET} are needed)")
    return "; ".join(one(p) for p in blocked)


def _stopped_note(name: str, points: Sequence[IsolationPoint],
                  splits: dict[Any, BudgetSplit[TrialRecord]], max_steps: int | None) -> str:
    """What to say next to a verdict when early stopping stopped more than half of a value's
    trials ("" when it stopped none so)."""
    mostly = [p for p in points if splits[p.value].mostly_stopped]
    if not mostly:
        return ""
    return ("; " + "; ".join(stopped_text(name, p.value, splits[p.value]) for p in mostly)
            + f", so the verdict uses only trials that ran all {max_steps} steps")


def _repeat_verdict(spec: StudySpec, name: str, points: list[IsolationPoint],
                    noise: NoiseEstimate, by_value: dict[Any, list[RepeatGroup]],
                    note: str = "") -> Isolation:
    method = method_name(noise)
    judged = [p for p in points if p.mean is not None]
    if len(judged) < 2 or len(judged) < len(points):
        missing = [str(p.value) for p in points if p.mean is None]
        why = (f"no finished seed repeats for {name}={', '.join(missing)}" if missing
               else "fewer than two values")
        return Isolation(name, tuple(points), VERDICT_INSUFFICIENT, None, None, noise.sigma,
                         f"{name}: cannot compare the values ({why}){note}", method)
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
                  f"{noise.sigma:.3g}, {noise.dof} dof){note}")
    else:
        verdict = VERDICT_WITHIN_NOISE
        needed = seeds_to_resolve(gap, closest, winner.repeats)
        more = (f"; about {needed} seeds per configuration would resolve a gap this size"
                if needed else "")
        detail = (f"{name}: {name}={winner.value} has the best mean ({winner.mean:.4g}) but "
                  f"differs from {name}={against.value} ({against.mean:.4g}) by {gap:.3g}, "
                  f"within seed noise: the 95% interval of that gap [{closest.low:.3g}, "
                  f"{closest.high:.3g}] "
                  f"includes 0 ({how}; sigma {noise.sigma:.3g}, {noise.dof} dof){more}{note}")
    return Isolation(name, tuple(points), verdict, winner.value, gap, noise.sigma, detail,
                     method, closest.low, closest.high, needed)


def _verdict(spec: StudySpec, name: str, points: list[IsolationPoint],
             note: str = "") -> Isolation:
    if len(points) < 2 or any(p.trials < 2 for p in points):
        return Isolation(name, tuple(points), VERDICT_INSUFFICIENT, None, None, None,
                         f"{name}: too few trials per value to compare (need 2 or more each)"
                         + note)
    sign = direction(spec.mode).sign
    order = sorted(points, key=lambda p: sign * _best(p))
    winner, runner_up = order[0], order[1]
    gap = abs(_best(runner_up) - _best(winner))
    # Noise: how far a value's best sits from its third-best trial, typically (for normal
    # noise and ~20 trials, about 0.7 sigma: the sd of the gap between two such bests). A
    # difference within twice that could flip with another seed or more nuisance tuning.
    noise = statistics.median(abs(p.top_values[-1] - p.top_values[0]) for p in points)
    noise = max(noise, 1e-12)
    # Labelled as the proxy it is: it measures seed noise and tuning quality together.
    proxy = " [proxy: no seed repeats, so noise is the spread of each value's top trials]"
    if gap > 2 * noise:
        verdict = VERDICT_DIFFERS
        detail = (f"{name}={winner.value} is best ({spec.metric} {_best(winner):.4g} vs "
                  f"{_best(runner_up):.4g} for {name}={runner_up.value}); the gap "
                  f"{gap:.3g} is {gap / noise:.1f}x the trial-to-trial noise ({noise:.3g})"
                  + note + proxy)
    else:
        verdict = VERDICT_WITHIN_NOISE
        detail = (f"{name}: the best values differ by {gap:.3g}, within the trial-to-trial "
                  f"noise ({noise:.3g}): no value of {name} is clearly better; more trials or "
                  "seeds are needed to separate them" + note + proxy)
    return Isolation(name, tuple(points), verdict, winner.value, gap, noise, detail)


def _best(point: IsolationPoint) -> float:
    """A compared value's best (it has trials that reached the full budget)."""
    assert point.best is not None
    return point.best


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
