"""Early stopping replayed on a finished study (Playbook: decide between rounds whether to adopt
early stopping). Every trial's stored curve is fed, in the order the trials ran and as a given
concurrency would have interleaved them, to an early-stopping rule as if it had been on; the
replay records which trials the rule would have stopped, and at which step.

Pure: curves in, decisions out (no Ray, no store). The ASHA and Hyperband rules decide exactly
as Ray Tune's ``AsyncHyperBandScheduler`` does on the same sequence of results (its rungs, its
``np.nanpercentile`` cutoff, its "stop when below the cutoff" test; Hyperband's brackets are
assigned by trial number as searchsvc's own scheduler assigns them,
:meth:`HyperbandSchedule.bracket_for`).

Rules replayed (``Rule.kind``):

- ``asha``: one bracket, rungs at ``grace * rf**k`` steps; a trial whose value at a rung is
  below the top ``1/rf`` of the values recorded there so far stops.
- ``hyperband``: the same, in every bracket that fits.
- ``median``: from step ``grace`` on, a trial whose best value so far is worse than the median
  of the running means (up to that step) of the trials that reported it before stops (Ray
  Tune's median stopping rule; at least :data:`MIN_SAMPLES` of them).
- ``percentile``: from step ``grace`` on, a trial whose best value so far is outside the best
  ``keep`` share of the values the earlier trials reported at that step stops (Optuna's
  percentile pruner; at least :data:`MIN_SAMPLES` of them).
"""

from __future__ import annotations

import bisect
import heapq
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import numpy as np

from searchsvc.core import TrialRecord, TrialState
from searchsvc.core.curve import Curve, best_of
from searchsvc.core.direction import direction
from searchsvc.core.judging import ranked
from searchsvc.searchers.schedule import HyperbandSchedule
from searchsvc.spec import StudySpec

RuleKind = Literal["asha", "hyperband", "median", "percentile"]
RULE_KINDS: tuple[RuleKind, ...] = ("asha", "hyperband", "median", "percentile")
MIN_SAMPLES = 3  # median/percentile: earlier trials needed at a step before any stop
MIN_TRIALS = 4  # fewer full curves: nothing to replay
TOP_K = 3  # the study's best trials every recommended setting must keep
REDUCTION_FACTORS = (2.0, 3.0)
KEEP_SHARES = (0.5, 0.25)  # percentile rule: the share of each step's values a trial must be in


@dataclass(frozen=True)
class Rule:
    """One early-stopping setting."""

    kind: RuleKind
    grace_period: int
    reduction_factor: float = 3.0  # asha, hyperband
    keep: float = 0.5  # percentile

    @property
    def label(self) -> str:
        if self.kind in ("asha", "hyperband"):
            return f"{self.kind} grace={self.grace_period} rf={self.reduction_factor:g}"
        if self.kind == "percentile":
            return f"percentile keep={self.keep:.0%} grace={self.grace_period}"
        return f"median grace={self.grace_period}"

    def schedule(self, max_steps: int) -> HyperbandSchedule:
        """The searchers' schedule this rule is (asha, hyperband): rungs and brackets."""
        fitting = int(math.log(max_steps / self.grace_period)
                      / math.log(self.reduction_factor)) + 1
        return HyperbandSchedule(max_steps, self.grace_period, self.reduction_factor,
                                 1 if self.kind == "asha" else fitting)


@dataclass(frozen=True)
class Result:
    """One reported step, as a scheduler would see it."""

    number: int
    step: int
    value: float


class Decider(Protocol):
    def stop(self, result: Result) -> bool:
        """Whether the trial stops after this result (it is recorded either way)."""


@dataclass(frozen=True)
class ReplayCurve:
    """A trial's full curve and what each of its steps cost."""

    number: int
    points: Curve  # (step, value), finite values only
    step_hours: Mapping[int, float] = field(default_factory=dict)  # step -> working hours


@dataclass(frozen=True)
class SettingReplay:
    """What one rule would have done to the study."""

    rule: Rule
    stopped: Mapping[int, int]  # trial number -> the step after which it would have stopped
    steps_total: int
    steps_run: int
    hours_total: float | None  # trial-hours of the study's steps (None: no telemetry)
    hours_run: float | None
    gpu_per_trial: float
    top_k: Mapping[int, bool]  # each of the study's top-k trials -> whether it survives
    best_value: float | None  # the best value the study would have ended with
    rank_correlation: float | None  # Spearman: value at the first rung vs the final best

    @property
    def step_saving(self) -> float:
        return 1.0 - self.steps_run / self.steps_total if self.steps_total else 0.0

    @property
    def gpu_hours_saved(self) -> float | None:
        if self.hours_total is None or self.hours_run is None or not self.gpu_per_trial:
            return None
        return (self.hours_total - self.hours_run) * self.gpu_per_trial

    @property
    def keeps_top_k(self) -> bool:
        return all(self.top_k.values())

    def as_dict(self) -> dict[str, Any]:
        return {"rule": self.rule.label, "kind": self.rule.kind,
                "grace_period": self.rule.grace_period,
                "reduction_factor": self.rule.reduction_factor, "keep": self.rule.keep,
                "stopped": {str(n): s for n, s in sorted(self.stopped.items())},
                "steps_total": self.steps_total, "steps_run": self.steps_run,
                "step_saving": self.step_saving, "gpu_hours_saved": self.gpu_hours_saved,
                "top_k": {str(n): kept for n, kept in self.top_k.items()},
                "keeps_top_k": self.keeps_top_k, "best_value": self.best_value,
                "rank_correlation": self.rank_correlation}


@dataclass(frozen=True)
class Replay:
    """Every replayed setting, and the most aggressive one that keeps the top-k trials (None:
    early stopping is unsafe for this objective, or would save nothing; ``reason`` says why)."""

    metric: str
    mode: str
    max_steps: int
    concurrency: int
    trials: int
    top_k: tuple[int, ...]
    best_value: float | None  # the study's own (every curve to its end)
    settings: tuple[SettingReplay, ...]
    recommended: SettingReplay | None
    reason: str

    def as_dict(self) -> dict[str, Any]:
        return {"metric": self.metric, "mode": self.mode, "max_steps": self.max_steps,
                "concurrency": self.concurrency, "trials": self.trials,
                "top_k": list(self.top_k), "best_value": self.best_value,
                "settings": [s.as_dict() for s in self.settings],
                "recommended": self.recommended.rule.label if self.recommended else None,
                "reason": self.reason}


# -- the rules ---------------------------------------------------------------------------------

class _Rungs:
    """Ray Tune's ASHA bracket: rungs (highest first) with the values recorded at each."""

    def __init__(self, milestones: Sequence[int], reduction_factor: float):
        self.rungs: list[tuple[int, dict[int, float]]] = [(m, {}) for m in sorted(
            milestones, reverse=True)]
        self.rf = reduction_factor

    def on_result(self, number: int, step: int, reward: float) -> bool:
        for milestone, recorded in self.rungs:
            if step < milestone or number in recorded:
                continue
            cutoff = (None if not recorded else
                      float(np.nanpercentile(list(recorded.values()), (1 - 1 / self.rf) * 100)))
            recorded[number] = reward
            return cutoff is not None and reward < cutoff
        return False


class HyperbandRule:
    """ASHA/Hyperband as Ray Tune decides (rewards: higher is better)."""

    def __init__(self, rule: Rule, max_steps: int, mode: str):
        schedule = rule.schedule(max_steps)
        self.schedule, self.sign = schedule, -direction(mode).sign
        self.brackets = [_Rungs(schedule.milestones(b), rule.reduction_factor)
                         for b in range(schedule.brackets)]
        self.assigned: dict[int, int] = {}  # trial number -> its bracket

    def stop(self, result: Result) -> bool:
        if result.step >= self.schedule.max_steps:
            return False  # the trial's normal end
        index = self.assigned.get(result.number)
        if index is None:  # drawn once per trial, as Ray assigns a trial's bracket when added
            index = self.assigned[result.number] = self.schedule.bracket_for(result.number)
        bracket = self.brackets[index]
        return bracket.on_result(result.number, result.step, self.sign * result.value)


class PercentileRule:
    """The median rule (running means, ``keep`` 0.5) or the percentile rule (values at the
    step), judged on the trial's best value so far. Losses throughout (lower is better);
    each step's earlier statistics are kept sorted, so a judgement costs one insertion."""

    def __init__(self, rule: Rule, mode: str):
        self.rule, self.dir = rule, direction(mode)
        self.keep = 0.5 if rule.kind == "median" else rule.keep
        self.best: dict[int, float] = {}  # trial -> best loss so far
        self.sums: dict[int, tuple[float, int]] = {}  # trial -> (sum of losses, count)
        self.at_step: dict[int, list[float]] = {}  # step -> earlier trials' losses, sorted

    def stop(self, result: Result) -> bool:
        loss = self.dir.loss(result.value)
        best = min(self.best.get(result.number, loss), loss)
        self.best[result.number] = best
        total, count = self.sums.get(result.number, (0.0, 0))
        self.sums[result.number] = total + loss, count + 1
        statistic = (total + loss) / (count + 1) if self.rule.kind == "median" else loss
        others = self.at_step.setdefault(result.step, [])
        judged = result.step >= self.rule.grace_period and len(others) >= MIN_SAMPLES
        stop = judged and best > percentile(others, self.keep)
        bisect.insort(others, statistic)
        return stop


def percentile(ordered: Sequence[float], share: float) -> float:
    """The ``share`` quantile of sorted ``ordered``, interpolated linearly between the two
    nearest values (numpy's default method)."""
    position = share * (len(ordered) - 1)
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def decider(rule: Rule, max_steps: int, mode: str) -> Decider:
    """A fresh, stateful decider for ``rule``."""
    if rule.kind in ("asha", "hyperband"):
        return HyperbandRule(rule, max_steps, mode)
    return PercentileRule(rule, mode)


def default_rules(max_steps: int) -> list[Rule]:
    """Several settings of each rule: grace periods from one step to half the budget,
    reduction factors 2 and 3, percentile rules keeping half or a quarter."""
    graces = sorted({g for g in (1, max_steps // 8, max_steps // 4, max_steps // 2)
                     if 1 <= g < max_steps})
    rules: list[Rule] = []
    for kind in ("asha", "hyperband"):
        rules += [Rule(kind, g, rf) for g in graces for rf in REDUCTION_FACTORS
                  if g * rf <= max_steps]
    rules += [Rule("median", g) for g in graces]
    rules += [Rule("percentile", g, keep=k) for g in graces for k in KEEP_SHARES]
    return rules


# -- the replay --------------------------------------------------------------------------------

def interleave(curves: Sequence[ReplayCurve], concurrency: int,
               stopped: Mapping[int, int] | None = None) -> Iterator[Result]:
    """The results in the order a study running ``concurrency`` trials at once would report
    them: ``curves`` start in their order, each step takes one unit of time, and a trial that
    ends (its curve, or ``stopped[number]``: the step it stops after) frees its slot for the
    next one. Results reported at the same time come in the order their trials started."""
    stopped = stopped if stopped is not None else {}
    queue = list(reversed(curves))
    running: list[tuple[int, int, int, ReplayCurve]] = []  # (time, start order, index, curve)
    started = 0

    def start(now: int) -> None:
        nonlocal started
        while queue and len(running) < max(1, concurrency):
            heapq.heappush(running, (now + 1, started, 0, queue.pop()))
            started += 1

    start(0)
    while running:
        now, order, index, curve = heapq.heappop(running)
        step, value = curve.points[index]
        yield Result(curve.number, step, value)
        if index + 1 < len(curve.points) and stopped.get(curve.number) != step:
            heapq.heappush(running, (now + 1, order, index + 1, curve))
        else:
            start(now)


def replay_rule(rule: Rule, curves: Sequence[ReplayCurve], max_steps: int, mode: str,
                concurrency: int = 1) -> dict[int, int]:
    """Trial number -> the step after which ``rule`` stops it, over ``curves`` run with
    ``concurrency`` trials at once (stopped trials free their slot earlier)."""
    decide = decider(rule, max_steps, mode)
    stopped: dict[int, int] = {}
    for result in interleave(curves, concurrency, stopped):
        if decide.stop(result):
            stopped[result.number] = result.step
    return stopped


def replay_curves(trials: Sequence[TrialRecord], metric: str) -> list[ReplayCurve]:
    """Each trial's curve of ``metric`` (latest attempt) with its steps' working hours from
    telemetry, in the order the trials started (then by number)."""
    from searchsvc.core.telemetry import working_time

    out = []
    for t in sorted(trials, key=lambda t: (t.started_at or 0.0, t.number)):
        hours = {m.step: w / 3600.0 for m in t.measurements
                 if m.attempt == t.attempts and (w := working_time(m.telemetry)) is not None}
        out.append(ReplayCurve(t.number, t.curve(metric), hours))
    return out


def full_curve_trials(trials: Sequence[TrialRecord], max_steps: int | None) -> list[TrialRecord]:
    """The search trials a replay can use: finished ones whose curve reaches ``max_steps``.
    Empty when the study has no step budget, stopped any trial early (its curves are not
    full), has fewer than :data:`MIN_TRIALS` full curves, or some of them came without their
    measurements."""
    search = [t for t in trials if t.repeat_of is None]
    if not max_steps or any(t.state == TrialState.PRUNED for t in search):
        return []
    full = [t for t in search
            if t.state == TrialState.COMPLETED and (t.last_step or 0) >= max_steps]
    if any(not t.measurements for t in full):
        return []  # some curves were not read (a report of a very large study): no replay
    return full if len(full) >= MIN_TRIALS else []


def not_replayable(spec: StudySpec, trials: Sequence[TrialRecord]) -> str | None:
    """Why a study's curves cannot be replayed (None: they can)."""
    if spec.multi_objective:
        return "it judges several objectives; early stopping ranks trials on one"
    if not spec.budget.max_steps:
        return "it has no budget.max_steps, so no curve can be full"
    search = [t for t in trials if t.repeat_of is None]
    if any(t.state == TrialState.PRUNED for t in search):
        return "a scheduler already stopped some of its trials early: their curves are not full"
    if not full_curve_trials(trials, spec.budget.max_steps):
        return (f"fewer than {MIN_TRIALS} of its trials finished all "
                f"{spec.budget.max_steps} steps, or their measurements were not read")
    return None


def replay_study(trials: Sequence[TrialRecord], metric: str, mode: str, max_steps: int, *,
                 concurrency: int = 1, gpu_per_trial: float = 0.0, top_k: int = TOP_K,
                 rules: Sequence[Rule] | None = None,
                 kinds: Sequence[str] = RULE_KINDS) -> Replay:
    """Replay every rule of ``kinds`` (default settings: :func:`default_rules`) on the full
    curves of ``trials`` (see :func:`full_curve_trials`) and recommend the one that saves the
    most steps while keeping each of the study's ``top_k`` best trials."""
    ranking = ranked(trials, mode)
    top = tuple(t.number for t in ranking[:top_k])
    curves = [c for c in replay_curves(trials, metric) if c.points]
    finals = {t.number: t.best_value for t in trials if t.best_value is not None}
    settings = tuple(
        _setting(rule, replay_rule(rule, curves, max_steps, mode, concurrency), curves, top,
                 finals, mode, gpu_per_trial)
        for rule in (rules if rules is not None else default_rules(max_steps))
        if rule.kind in kinds)
    recommended, reason = recommend(settings, top, curves, finals, mode)
    return Replay(metric, mode, max_steps, concurrency, len(curves), top,
                  best_of(finals.values(), mode), settings, recommended, reason)


def _setting(rule: Rule, stopped: Mapping[int, int], curves: Sequence[ReplayCurve],
             top: Sequence[int], finals: Mapping[int, float], mode: str,
             gpu_per_trial: float) -> SettingReplay:
    ran = {c.number: [p for p in c.points if p[0] <= stopped.get(c.number, p[0])]
           for c in curves}
    timed = all(c.step_hours and all(s in c.step_hours for s, _ in c.points) for c in curves)
    hours_total = sum(sum(c.step_hours.values()) for c in curves) if timed else None
    hours_run = (sum(c.step_hours[s] for c in curves for s, _ in ran[c.number]) if timed
                 else None)
    loss = direction(mode).loss
    best = min((v for points in ran.values() for _, v in points), key=loss, default=None)
    return SettingReplay(
        rule, dict(stopped), sum(len(c.points) for c in curves),
        sum(len(p) for p in ran.values()), hours_total, hours_run, gpu_per_trial,
        {n: n not in stopped for n in top}, best,
        rank_correlation(curves, finals, rule.grace_period))


def rank_correlation(curves: Sequence[ReplayCurve], finals: Mapping[int, float],
                     step: int) -> float | None:
    """Spearman's correlation, over the trials, between the value at ``step`` (the first rung)
    and the final best value (None: fewer than 3 trials, or no spread)."""
    from scipy.stats import spearmanr

    pairs = [(v, finals[c.number]) for c in curves if c.number in finals
             and (v := c.points.value_at(step)) is not None]
    if len(pairs) < 3 or len({a for a, _ in pairs}) < 2 or len({b for _, b in pairs}) < 2:
        return None
    rho = float(spearmanr([a for a, _ in pairs], [b for _, b in pairs]).statistic)
    return rho if math.isfinite(rho) else None


def recommend(settings: Sequence[SettingReplay], top: Sequence[int],
              curves: Sequence[ReplayCurve], finals: Mapping[int, float], mode: str
              ) -> tuple[SettingReplay | None, str]:
    """The setting that saves the largest share of steps while keeping every top-k trial
    (ties: the first listed), with a sentence why; None and why not when none keeps them or
    none saves anything."""
    safe = [s for s in settings if s.keeps_top_k]
    if not settings:
        return None, "no early-stopping setting to replay"
    if not safe:
        return None, _unsafe_reason(settings, top, curves, finals, mode)
    best = max(safe, key=lambda s: s.step_saving)  # max keeps the first of equals
    if best.step_saving <= 0:
        return None, "no setting would have stopped any trial: early stopping saves nothing here"
    return best, (f"{best.rule.label} keeps the top {len(top)} trials and saves "
                  f"{best.step_saving:.0%} of the steps"
                  + (f" ({best.gpu_hours_saved:.3g} GPU-hours)"
                     if best.gpu_hours_saved is not None else ""))


def _unsafe_reason(settings: Sequence[SettingReplay], top: Sequence[int],
                   curves: Sequence[ReplayCurve], finals: Mapping[int, float], mode: str) -> str:
    """Why every setting loses a top trial: the one lost by the gentlest setting, where it
    ranked early on, and how well early values predict final ones."""
    gentlest = min(settings, key=lambda s: s.step_saving)
    lost = next(n for n in top if not gentlest.top_k[n])
    step = gentlest.stopped[lost]
    early = sorted((c for c in curves if c.points.value_at(step) is not None),
                   key=lambda c: direction(mode).loss(c.points.value_at(step)))  # type: ignore[arg-type]
    place = next(i for i, c in enumerate(early) if c.number == lost) + 1
    rho = gentlest.rank_correlation
    return (f"early stopping is unsafe for this objective: every setting stops one of the top "
            f"{len(top)} trials; even {gentlest.rule.label} stops trial {lost} (final rank "
            f"{list(top).index(lost) + 1}) at step {step}, where it ranked {place} of "
            f"{len(early)}" + (f"; early values predict final ones poorly (rank correlation "
                              f"{rho:.2f} at step {gentlest.rule.grace_period})"
                              if rho is not None else ""))


def study_replay(spec: StudySpec, trials: Sequence[TrialRecord], *,
                 kinds: Sequence[str] = RULE_KINDS, concurrency: int | None = None,
                 top_k: int = TOP_K) -> Replay | None:
    """The replay of a study's full curves (None: the study has none to replay, see
    :func:`full_curve_trials`, or judges several objectives), run at the study's
    ``budget.max_concurrent`` unless ``concurrency`` says otherwise; GPU-hours count the
    study's ``resources.gpu`` on each of its workers."""
    full = full_curve_trials(trials, spec.budget.max_steps)
    if not full or spec.multi_objective or spec.budget.max_steps is None:
        return None
    return replay_study(full, spec.metric, spec.mode, spec.budget.max_steps,
                        concurrency=concurrency or spec.budget.max_concurrent or 1,
                        gpu_per_trial=spec.resources.gpu * spec.resources.worker_count,
                        top_k=top_k, kinds=kinds)
