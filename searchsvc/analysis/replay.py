"""Early stopping replayed on a finished study (Playbook: decide between rounds whether to adopt
early stopping). Every trial's stored curve is fed, in the order the trials ran and as a given
concurrency would have interleaved them, to an early-stopping rule as if it had been on; the
replay records which trials the rule would have stopped, and at which step.

Pure: curves in, decisions out (no Ray, no store). The rules are the deciders the live
scheduler runs (``searchers/stopping.py``), each scientific arm judged on its own as a study
file's ``early_stopping:`` block runs them, so what the replay predicts for a setting is what a
live run of it stops on the same results; every setting replayed is one a study file can
express (``StoppingRule.as_block``). Rules replayed (``StoppingRule.kind``): ``asha``,
``hyperband``, ``median`` and ``percentile`` (see :class:`~searchsvc.core.stopping.
StoppingRule`).

A setting **keeps the best** when, in every arm, the best value found with the rule on is
within the measured seed noise (one standard deviation of the seed repeats) of the arm's best
with full curves; a study without repeats uses a labelled proxy, the spread of each arm's top
trials. The recommended setting is the one that keeps the best and saves the most steps.
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from searchsvc.core import TrialRecord, TrialState
from searchsvc.core.curve import best_of
from searchsvc.core.direction import direction
from searchsvc.core.judging import ranked
from searchsvc.core.stopping import RULE_KINDS, ArmKey, StoppingRule, arm_key

# The replay of the rules themselves, light to import (a second process runs part of it);
# re-exported here, where the replay's users find it.
from searchsvc.searchers.stopping_replay import ReplayCurve as ReplayCurve
from searchsvc.searchers.stopping_replay import interleave as interleave
from searchsvc.searchers.stopping_replay import one_grid as one_grid
from searchsvc.searchers.stopping_replay import replay_rule as replay_rule
from searchsvc.searchers.stopping_replay import replay_rules
from searchsvc.spec import StudySpec

Rule = StoppingRule  # the replay's name for a setting
NOISE_SEEDS = "seed_repeats"  # the noise is the seed repeats' pooled standard deviation
NOISE_PROXY = "proxy_top_trial_spread"  # no repeats: the spread of each arm's top trials
MIN_TRIALS = 4  # fewer full curves: nothing to replay
TOP_K = 3  # the study's best trials every recommended setting must keep
REDUCTION_FACTORS = (2.0, 3.0)
KEEP_SHARES = (0.5, 0.25)  # percentile rule: the share of each step's values a trial must be in


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
    # Per arm: how much worse (in loss units, >= 0) its best under the rule is than its best
    # with full curves; and whether every arm's shortfall is within the noise.
    shortfall: Mapping[str, float] = field(default_factory=dict)
    keeps_best: bool = True

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

    def best_kept_text(self) -> str:
        """"yes", or which arm's best fell beyond the noise, and by how much."""
        if self.keeps_best:
            return "yes"
        arm, lost = max(self.shortfall.items(), key=lambda item: item[1])
        return f"no: {arm} {lost:.3g} worse"

    def as_dict(self) -> dict[str, Any]:
        return {"rule": self.rule.label, "kind": self.rule.kind,
                "grace_period": self.rule.grace_period,
                "reduction_factor": self.rule.reduction_factor, "keep": self.rule.keep,
                "early_stopping": self.rule.as_block(),
                "stopped": {str(n): s for n, s in sorted(self.stopped.items())},
                "steps_total": self.steps_total, "steps_run": self.steps_run,
                "step_saving": self.step_saving, "gpu_hours_saved": self.gpu_hours_saved,
                "top_k": {str(n): kept for n, kept in self.top_k.items()},
                "keeps_top_k": self.keeps_top_k, "keeps_best": self.keeps_best,
                "shortfall": dict(self.shortfall), "best_value": self.best_value,
                "rank_correlation": self.rank_correlation}


@dataclass(frozen=True)
class Replay:
    """Every replayed setting, and the most aggressive one that keeps the best within noise
    (None: early stopping is unsafe for this objective, or would save nothing; ``reason`` says
    why)."""

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
    noise: float | None = None  # the noise "keeps the best" is judged against
    noise_method: str = NOISE_PROXY
    per_arm: bool = True  # rules judged within each arm (False: across arms, the old rungs)

    def as_dict(self) -> dict[str, Any]:
        return {"metric": self.metric, "mode": self.mode, "max_steps": self.max_steps,
                "concurrency": self.concurrency, "trials": self.trials,
                "top_k": list(self.top_k), "best_value": self.best_value,
                "noise": self.noise, "noise_method": self.noise_method,
                "per_arm": self.per_arm,
                "settings": [s.as_dict() for s in self.settings],
                "recommended": self.recommended.rule.label if self.recommended else None,
                "early_stopping": (self.recommended.rule.as_block() if self.recommended
                                   else None),
                "reason": self.reason}


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

def replay_curves(trials: Sequence[TrialRecord], metric: str,
                  scientific: Sequence[str] = ()) -> list[ReplayCurve]:
    """Each trial's curve of ``metric`` (latest attempt) with its steps' working hours from
    telemetry and its arm (by the ``scientific`` parameters), in the order the trials started
    (then by number)."""
    from searchsvc.core.telemetry import working_time

    out = []
    for t in sorted(trials, key=lambda t: (t.started_at or 0.0, t.number)):
        hours = {m.step: w / 3600.0 for m in t.measurements
                 if m.attempt == t.attempts and (w := working_time(m.telemetry)) is not None}
        out.append(ReplayCurve(t.number, t.curve(metric), hours, arm_key(t.config, scientific)))
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
                 rules: Sequence[Rule] | None = None, kinds: Sequence[str] = RULE_KINDS,
                 scientific: Sequence[str] = (), noise: float | None = None,
                 noise_method: str = NOISE_PROXY, seed: int = 0,
                 per_arm: bool = True) -> Replay:
    """Replay every rule of ``kinds`` (default settings: :func:`default_rules`) on the full
    curves of ``trials`` (see :func:`full_curve_trials`), each scientific arm (by the
    ``scientific`` parameters) judged on its own unless ``per_arm`` is off, and recommend the
    one that saves the most steps while keeping every arm's best within ``noise`` of its best
    with full curves (None: the proxy, :func:`proxy_noise`, measured here)."""
    ranking = ranked(trials, mode)
    top = tuple(t.number for t in ranking[:top_k])
    curves = [c for c in replay_curves(trials, metric, scientific) if c.points]
    finals = {t.number: t.best_value for t in trials if t.best_value is not None}
    if noise is None:
        noise, noise_method = proxy_noise(curves, finals, mode), NOISE_PROXY
    chosen = [replace(r, per_arm=per_arm) for r in
              (rules if rules is not None else default_rules(max_steps)) if r.kind in kinds]
    totals = _Totals.of(curves, mode)
    rhos = {g: rank_correlation(curves, finals, g) for g in {r.grace_period for r in chosen}}
    stops = replay_rules(chosen, curves, max_steps, mode, concurrency, seed)
    settings = tuple(
        _setting(rule, stopped, curves, totals, top, mode, gpu_per_trial, noise,
                 rhos[rule.grace_period])
        for rule, stopped in zip(chosen, stops, strict=True))
    recommended, reason = recommend(settings, top, curves, finals, mode,
                                    noise=noise, noise_method=noise_method)
    return Replay(metric, mode, max_steps, concurrency, len(curves), top,
                  best_of(finals.values(), mode), settings, recommended, reason, noise,
                  noise_method, per_arm)


def proxy_noise(curves: Sequence[ReplayCurve], finals: Mapping[int, float], mode: str,
                top: int = TOP_K) -> float | None:
    """Without seed repeats: the pooled standard deviation of each arm's ``top`` best final
    values (it mixes seed noise with how well the nuisance parameters were tuned, so it is
    labelled a proxy wherever it is shown); None with fewer than two trials in every arm."""
    loss = direction(mode).loss
    squares, dof = 0.0, 0
    for arm in {c.arm for c in curves}:
        values = sorted((finals[c.number] for c in curves if c.arm == arm and c.number in finals),
                        key=loss)[:top]
        if len(values) >= 2:
            mean = sum(values) / len(values)
            squares += sum((v - mean) ** 2 for v in values)
            dof += len(values) - 1
    return math.sqrt(squares / dof) if dof else None


def _arm_text(arm: ArmKey) -> str:
    return ", ".join(f"{name}={value}" for name, value in arm) or "study"


@dataclass(frozen=True)
class _Totals:
    """What every setting's outcome is read from, computed once per replay: each curve's steps,
    and up to each of its points the best value so far (the earliest on ties) and the working
    hours so far (None: some step has no telemetry)."""

    steps: dict[int, list[int]]
    best: dict[int, list[float]]
    hours: dict[int, list[float]] | None

    @classmethod
    def of(cls, curves: Sequence[ReplayCurve], mode: str) -> _Totals:
        loss = direction(mode).loss
        timed = all(c.step_hours and all(s in c.step_hours for s, _ in c.points)
                    for c in curves)
        best: dict[int, list[float]] = {}
        for c in curves:
            running, found = [], c.points[0][1]
            for _, v in c.points:
                found = v if loss(v) < loss(found) else found
                running.append(found)
            best[c.number] = running
        return cls({c.number: [s for s, _ in c.points] for c in curves}, best,
                   {c.number: list(itertools.accumulate(c.step_hours[s] for s, _ in c.points))
                    for c in curves} if timed else None)

    def ran(self, number: int, stopped: Mapping[int, int]) -> int:
        """How many of the curve's points a trial stopped after ``stopped[number]`` ran."""
        steps = self.steps[number]
        stop = stopped.get(number)
        return len(steps) if stop is None else bisect.bisect_right(steps, stop)


def _setting(rule: Rule, stopped: Mapping[int, int], curves: Sequence[ReplayCurve],
             totals: _Totals, top: Sequence[int], mode: str, gpu_per_trial: float,
             noise: float | None, rho: float | None) -> SettingReplay:
    loss = direction(mode).loss
    ran = {c.number: totals.ran(c.number, stopped) for c in curves}
    hours = totals.hours
    shortfall, best = {}, None
    for arm in sorted({c.arm for c in curves}):
        mine = [c for c in curves if c.arm == arm]
        full = min(loss(totals.best[c.number][-1]) for c in mine)
        kept = [totals.best[c.number][ran[c.number] - 1] for c in mine if ran[c.number]]
        arm_best = min(kept, key=loss)
        best = arm_best if best is None or loss(arm_best) < loss(best) else best
        shortfall[_arm_text(arm)] = max(0.0, loss(arm_best) - full)
    keeps = (all(v == 0 for v in shortfall.values()) if noise is None
             else all(v <= noise for v in shortfall.values()))
    return SettingReplay(
        rule, dict(stopped), sum(len(c.points) for c in curves), sum(ran.values()),
        sum(h[-1] for h in hours.values()) if hours is not None else None,
        (sum(hours[n][k - 1] for n, k in ran.items() if k) if hours is not None else None),
        gpu_per_trial, {n: n not in stopped for n in top}, best, rho, shortfall, keeps)


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


def noise_text(noise: float | None, method: str) -> str:
    """How "within noise" was measured, for a sentence."""
    if noise is None:
        return "with no noise measured (the best itself must be kept)"
    if method == NOISE_SEEDS:
        return f"within seed noise (sd {noise:.3g}, from the seed repeats)"
    return (f"within noise (sd {noise:.3g}) [proxy: no seed repeats, so noise is the spread "
            "of each arm's top trials]")


def recommend(settings: Sequence[SettingReplay], top: Sequence[int],
              curves: Sequence[ReplayCurve], finals: Mapping[int, float], mode: str, *,
              noise: float | None = None, noise_method: str = NOISE_PROXY
              ) -> tuple[SettingReplay | None, str]:
    """The setting that saves the largest share of steps while keeping every arm's best
    within the noise (ties: the first listed), with a sentence why; None and why not when none
    keeps it or none saves anything."""
    safe = [s for s in settings if s.keeps_best]
    if not settings:
        return None, "no early-stopping setting to replay"
    if not safe:
        return None, _unsafe_reason(settings, curves, mode, noise, noise_method)
    best = max(safe, key=lambda s: s.step_saving)  # max keeps the first of equals
    if best.step_saving <= 0:
        return None, "no setting would have stopped any trial: early stopping saves nothing here"
    arms = len({c.arm for c in curves})
    return best, (f"{best.rule.label} keeps {'each arm' if arms > 1 else 'the study'}'s best "
                  f"{noise_text(noise, noise_method)} and saves {best.step_saving:.0%} of the "
                  "steps" + (f" ({best.gpu_hours_saved:.3g} GPU-hours)"
                             if best.gpu_hours_saved is not None else ""))


def _unsafe_reason(settings: Sequence[SettingReplay], curves: Sequence[ReplayCurve], mode: str,
                   noise: float | None, noise_method: str) -> str:
    """Why every setting loses the best: what the gentlest setting loses, in which arm, and
    how well early values predict final ones."""
    gentlest = min(settings, key=lambda s: s.step_saving)
    arm, lost = max(gentlest.shortfall.items(), key=lambda item: item[1])
    rho = gentlest.rank_correlation
    whose = "the best" if arm == "study" else f"the best of {arm}"
    return (f"early stopping is unsafe for this objective: every setting loses the best "
            f"{noise_text(noise, noise_method)}; even {gentlest.rule.label} leaves "
            f"{whose} {lost:.3g} worse"
            + (f"; early values predict final ones poorly (rank correlation "
               f"{rho:.2f} at step {gentlest.rule.grace_period})" if rho is not None else ""))


def study_replay(spec: StudySpec, trials: Sequence[TrialRecord], *,
                 kinds: Sequence[str] = RULE_KINDS, concurrency: int | None = None,
                 top_k: int = TOP_K, per_arm: bool = True) -> Replay | None:
    """The replay of a study's full curves (None: the study has none to replay, see
    :func:`full_curve_trials`, or judges several objectives), run at the study's
    ``budget.max_concurrent`` unless ``concurrency`` says otherwise, each arm on its own; the
    noise is the seed repeats' among ``trials`` where they exist. GPU-hours count the study's
    ``resources.gpu`` on each of its workers."""
    from searchsvc.analysis.noise import estimate_noise

    full = full_curve_trials(trials, spec.budget.max_steps)
    if not full or spec.multi_objective or spec.budget.max_steps is None:
        return None
    measured = estimate_noise(trials)
    return replay_study(full, spec.metric, spec.mode, spec.budget.max_steps,
                        concurrency=concurrency or spec.budget.max_concurrent or 1,
                        gpu_per_trial=spec.resources.gpu * spec.resources.worker_count,
                        top_k=top_k, kinds=kinds,
                        scientific=tuple(p.name for p in spec.scientific),
                        noise=measured.sigma if measured else None,
                        noise_method=NOISE_SEEDS if measured else NOISE_PROXY,
                        seed=spec.seed, per_arm=per_arm)
