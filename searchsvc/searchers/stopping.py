"""The deciders that carry out an early-stopping rule (:class:`~searchsvc.core.stopping.
StoppingRule`): fed a study's results one at a time, in the order they arrive, each says whether
the trial stops after that result, and why.

Pure (no Ray, no store) and shared: the live scheduler (``driver/schedulers.py``) and the replay
of a finished study (``analysis/replay.py``) both run these, so the stops the replay predicts
are the stops a live run makes on the same sequence of results.

Each scientific arm has its own state (rungs, per-step statistics): a trial is only ever
compared with trials of its own arm, unless the rule says ``per_arm=False``.

The rung rules decide exactly as Ray Tune's ``AsyncHyperBandScheduler`` does within one arm
(its rungs, its ``np.nanpercentile`` cutoff, its "stop when below the cutoff" test), with each
trial's Hyperband bracket drawn from its number (:meth:`HyperbandSchedule.bracket_for`) so that a
resumed study assigns the same ones.
"""

from __future__ import annotations

import bisect
import heapq
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

from searchsvc.core.direction import direction
from searchsvc.core.stopping import ArmKey, StoppingRule
from searchsvc.searchers.schedule import HyperbandSchedule

MIN_SAMPLES = 3  # median/percentile: earlier trials of the arm needed at a step before any stop


class Result(NamedTuple):
    """One reported step, as a scheduler sees it (a named tuple: the replay makes millions)."""

    number: int
    step: int
    value: float
    arm: ArmKey = ()


@dataclass(frozen=True)
class Stop:
    """Why a trial stops after a result: the rule's ``reason``, the ``cutoff`` it missed (in
    the metric's own units), and for rung rules the ``rung`` and ``bracket``."""

    reason: str  # below_cutoff | rung_quota_full | below_median | below_percentile
    cutoff: float | None
    rung: int | None = None
    bracket: int | None = None

    def as_data(self) -> dict[str, Any]:
        return {"reason": self.reason, "cutoff": self.cutoff, "rung": self.rung,
                "bracket": self.bracket}


class Decider(Protocol):
    def judge(self, result: Result) -> Stop | None:
        """Record ``result`` and say whether its trial stops after it (None: it goes on)."""

    def restore(self, number: int, arm: ArmKey, points: Sequence[tuple[int, float]]) -> None:
        """Record a trial of an earlier run as it ran (its finite ``(step, value)`` points), so
        that a resumed study's trials meet the cutoffs its earlier trials set."""

    def relevant(self, number: int, points: Sequence[tuple[int, float]]) -> Sequence[int]:
        """The indices of a new trial's ``points`` whose results can change this decider's
        state or stop the trial, its last point included: judging only these, in the order
        they arrive, decides exactly as judging every point does (the replay skips the rest)."""


def rung_schedule(rule: StoppingRule, max_steps: int, seed: int = 0) -> HyperbandSchedule:
    """The rungs and brackets of a rung rule (``asha``: one bracket; ``hyperband``: its
    ``brackets``, or every bracket that fits)."""
    fitting = int(math.log(max_steps / rule.grace_period) / math.log(rule.reduction_factor)) + 1
    brackets = 1 if rule.kind == "asha" else min(rule.brackets or fitting, fitting)
    return HyperbandSchedule(max_steps, rule.grace_period, rule.reduction_factor, brackets,
                             seed=seed, promotion=rule.promotion)


# -- rung rules --------------------------------------------------------------------------------

class _Rungs:
    """One bracket: rungs (highest first) with each trial's reward recorded at each (higher is
    better), and, for a quota, the trials that went on from each. Each rung also keeps its
    cutoff up to date (:class:`RunningQuantile`): O(log n) per reward, not a pass over the rung."""

    def __init__(self, milestones: Sequence[int], reduction_factor: float, max_steps: int,
                 quota: bool):
        self.rungs: list[tuple[int, dict[int, float]]] = [
            (m, {}) for m in sorted(milestones, reverse=True)]
        # each rung's cutoff, over its rewards but NaN
        self.ordered = {m: RunningQuantile(1 - 1 / reduction_factor) for m in milestones}
        self.rf, self.max_steps, self.quota = reduction_factor, max_steps, quota
        self.promoted: dict[int, set[int]] = {m: set() for m in milestones}
        self.milestones = sorted(milestones)

    def cutoff(self, milestone: int, recorded: dict[int, float]) -> float | None:
        """Ray's ``np.nanpercentile`` of the rung's rewards at ``1 - 1/rf`` (NaN: every
        reward recorded was NaN)."""
        if not recorded:
            return None
        ordered = self.ordered[milestone]
        return ordered.value() if len(ordered) else math.nan

    def record(self, milestone: int, recorded: dict[int, float], number: int,
               reward: float) -> None:
        recorded[number] = reward
        if not math.isnan(reward):
            self.ordered[milestone].add(reward)

    def on_result(self, number: int, step: int, reward: float) -> tuple[int, float | None, str
                                                                         ] | None:
        """(rung, cutoff, reason) when the trial stops at this result; None when it goes on."""
        for milestone, recorded in self.rungs:
            if step < milestone or number in recorded:
                continue
            cutoff = self.cutoff(milestone, recorded)
            below = cutoff is not None and reward < cutoff
            full = (self.quota and milestone < self.max_steps
                    and len(self.promoted[milestone]) >= math.ceil((len(recorded) + 1) / self.rf))
            self.record(milestone, recorded, number, reward)
            if below or full:
                return milestone, cutoff, "below_cutoff" if below else "rung_quota_full"
            self.promoted[milestone].add(number)
            return None
        return None

    def restore(self, number: int, points: Sequence[tuple[int, float]]) -> None:
        last = max((step for step, _ in points), default=0)
        for milestone, recorded in self.rungs:
            reached = next((v for step, v in points if step >= milestone), None)
            if reached is None or number in recorded:
                continue
            self.record(milestone, recorded, number, reached)
            if last > milestone:
                self.promoted[milestone].add(number)


class RungRule:
    """ASHA or asynchronous Hyperband within one arm."""

    def __init__(self, rule: StoppingRule, max_steps: int, mode: str, seed: int = 0):
        self.schedule = rung_schedule(rule, max_steps, seed)
        self.sign = -direction(mode).sign  # reward = sign * value: higher is better
        quota = rule.promotion == "quota"
        self.brackets = [_Rungs(self.schedule.milestones(b), rule.reduction_factor, max_steps,
                                quota) for b in range(self.schedule.brackets)]
        self.assigned: dict[int, int] = {}  # trial number -> its bracket, drawn once
        self.indices: dict[tuple[int, tuple[int, ...]], tuple[int, ...]] = {}  # see relevant

    def bracket_of(self, number: int) -> int:
        found = self.assigned.get(number)
        if found is None:
            found = self.assigned[number] = self.schedule.bracket_for(number)
        return found

    def judge(self, result: Result) -> Stop | None:
        if result.step >= self.schedule.max_steps:
            return None  # the trial's normal end
        index = self.bracket_of(result.number)
        found = self.brackets[index].on_result(result.number, result.step,
                                               self.sign * result.value)
        if found is None:
            return None
        rung, cutoff, reason = found
        return Stop(reason, None if cutoff is None else self.sign * cutoff, rung, index)

    def restore(self, number: int, arm: ArmKey, points: Sequence[tuple[int, float]]) -> None:
        bracket = self.brackets[self.bracket_of(number)]
        bracket.restore(number, [(s, self.sign * v) for s, v in points])

    def relevant(self, number: int, points: Sequence[tuple[int, float]]) -> Sequence[int]:
        """A result only counts where it records the trial at a rung: at the highest rung at or
        below its step that the trial has not reached before (as ``_Rungs.on_result`` records
        it), below the full budget. The same steps in the same bracket give the same indices:
        worked out once (the replay asks for thousands of curves on one grid)."""
        bracket = self.bracket_of(number)
        key = (bracket, tuple(step for step, _ in points))
        found = self.indices.get(key)
        if found is None:
            found = self.indices[key] = _rung_indices(
                self.brackets[bracket].milestones, key[1], self.schedule.max_steps)
        return found


def _rung_indices(milestones: Sequence[int], steps: Sequence[int], max_steps: int
                  ) -> tuple[int, ...]:
    """:meth:`RungRule.relevant` of a curve with ``steps`` in a bracket with ``milestones``."""
    pending = list(milestones)  # ascending
    found = []
    for index, step in enumerate(steps):
        if step >= max_steps or not pending:
            break
        reached = bisect.bisect_right(pending, step)
        if reached:
            del pending[reached - 1]
            found.append(index)
    if steps and (not found or found[-1] != len(steps) - 1):
        found.append(len(steps) - 1)
    return tuple(found)


# -- median and percentile rules ---------------------------------------------------------------

class PercentileRule:
    """The median rule (running means, ``keep`` 0.5) or the percentile rule (values at the
    step), judged on the trial's best value so far. Losses throughout (lower is better); each
    step's quantile of earlier statistics is kept up to date (:class:`RunningQuantile`), so a
    judgement costs O(log n)."""

    def __init__(self, rule: StoppingRule, mode: str):
        self.rule, self.dir = rule, direction(mode)
        self.sign, self.median = self.dir.sign, rule.kind == "median"
        self.grace = rule.grace_period
        self.keep = rule.kept_share
        self.best: dict[int, float] = {}  # trial -> best loss so far
        self.sums: dict[int, tuple[float, int]] = {}  # trial -> (sum of losses, count)
        self.at_step: dict[int, RunningQuantile] = {}  # step -> earlier trials' statistics

    def judge(self, result: Result) -> Stop | None:
        number, step = result.number, result.step
        loss = self.sign * result.value
        best = self.best.get(number, loss)
        best = loss if loss < best else best
        self.best[number] = best
        total, count = self.sums.get(number, (0.0, 0))
        total, count = total + loss, count + 1
        self.sums[number] = total, count
        if step < self.grace:
            return None  # no trial is judged at this step, so none needs its statistics
        others = self.at_step.get(step)
        if others is None:
            others = self.at_step[step] = RunningQuantile(self.keep)
        cutoff = others.value() if len(others) >= MIN_SAMPLES else None
        others.add(total / count if self.median else loss)
        if cutoff is None or best <= cutoff:
            return None
        return Stop(f"below_{self.rule.kind}", self.sign * cutoff, rung=step)

    def restore(self, number: int, arm: ArmKey, points: Sequence[tuple[int, float]]) -> None:
        for step, value in points:
            self.judge(Result(number, step, value, arm))

    def relevant(self, number: int, points: Sequence[tuple[int, float]]) -> Sequence[int]:
        """Every result: each step's statistics take every trial's value at it."""
        return range(len(points))


def _lerp(a: float, b: float, t: float) -> float:
    # numpy's own lerp, rounding included: a value equal to the cutoff is judged as Ray judges it
    return b - (b - a) * (1 - t) if t >= 0.5 else a + (b - a) * t


class RunningQuantile:
    """The ``share`` quantile (numpy's ``percentile``, its linear method) of the values added
    so far, kept up to date in O(log n) per value: the lowest ``floor(share * (n - 1)) + 1``
    values in a max-heap, the rest in a min-heap, so the two values the quantile lies between
    are the heaps' tops. Every rule asks for the same share of a growing set, which no sorted
    list answers as cheaply."""

    def __init__(self, share: float):
        self.share = share
        self.lower: list[float] = []  # negated: heapq keeps a min-heap
        self.upper: list[float] = []

    def __len__(self) -> int:
        return len(self.lower) + len(self.upper)

    def add(self, value: float) -> None:
        if self.lower and value > -self.lower[0]:
            heapq.heappush(self.upper, value)
        else:
            heapq.heappush(self.lower, -value)
        wanted = math.floor(self.share * (len(self) - 1)) + 1
        while len(self.lower) > wanted:
            heapq.heappush(self.upper, -heapq.heappop(self.lower))
        while len(self.lower) < wanted:
            heapq.heappush(self.lower, -heapq.heappop(self.upper))

    def value(self) -> float:
        """The quantile of the values added (at least one)."""
        position = self.share * (len(self) - 1)
        low = math.floor(position)
        a = -self.lower[0]
        b = self.upper[0] if self.upper and low + 1 < len(self) else a
        return _lerp(a, b, position - low)


# -- per arm -----------------------------------------------------------------------------------

class ByArm:
    """One decider per scientific arm, made on the arm's first result (one for the whole study
    when ``per_arm`` is off)."""

    def __init__(self, make: Callable[[], Decider], per_arm: bool = True):
        self.make, self.per_arm = make, per_arm
        self.arms: dict[ArmKey, Decider] = {}

    def of(self, arm: ArmKey) -> Decider:
        key = arm if self.per_arm else ()
        found = self.arms.get(key)
        if found is None:
            found = self.arms[key] = self.make()
        return found

    def judge(self, result: Result) -> Stop | None:
        return self.of(result.arm).judge(result)

    def restore(self, number: int, arm: ArmKey, points: Sequence[tuple[int, float]]) -> None:
        self.of(arm).restore(number, arm, points)

    def relevant(self, number: int, arm: ArmKey, points: Sequence[tuple[int, float]]
                 ) -> Sequence[int]:
        """:meth:`Decider.relevant` of the arm's decider."""
        return self.of(arm).relevant(number, points)


def decider(rule: StoppingRule, max_steps: int, mode: str, seed: int = 0) -> ByArm:
    """A fresh, stateful decider for ``rule``, one state per arm (unless ``rule.per_arm`` is
    off); ``seed`` draws Hyperband brackets."""
    def make() -> Decider:
        if rule.uses_rungs:
            return RungRule(rule, max_steps, mode, seed)
        return PercentileRule(rule, mode)
    return ByArm(make, rule.per_arm)
