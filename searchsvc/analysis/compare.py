"""Did one study's best beat another's beyond seed noise? (``searchsvc compare A B``, and the
"Compared with the parent study" section of a study made from another's next_study.yaml.)

Each study's best configuration is its repeat group with the best mean (both studies pick the
same way, so the small optimism of picking is shared). The difference of the two means gets a
Welch interval, each side's standard error from its own study's seed noise (pooled sigma and
its degrees of freedom, :mod:`.noise`), so two studies with different noise compare fairly.
Without seed repeats in either study no interval exists: the verdict says so, with the best
single-run values for reference.

With several objectives the studies are compared as Pareto fronts: each objective on its own
as above (each front's best reach on it, judged on the trials' final values of it), and
together: B improved when it is better beyond noise on some objective and worse beyond noise
on none, worse the other way round, a trade-off when both happen. Each front's hypervolume
against one shared reference point is given beside it, from single runs (seed luck included).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from scipy import stats

from searchsvc.analysis.noise import CONFIDENCE, best_group, estimate_noise, estimate_of
from searchsvc.analysis.pareto import hypervolume, objective_points, reference_point
from searchsvc.analysis.trials import valued_by
from searchsvc.core import Constraint, Objective, StudyRecord, TrialRecord
from searchsvc.core.direction import direction
from searchsvc.core.judging import best_trial, search_trials
from searchsvc.spec import spec_of

COMPARE_IMPROVED = "improved"
COMPARE_WORSE = "worse"
COMPARE_TRADE_OFF = "trade_off"
COMPARE_WITHIN_NOISE = "within_noise"
COMPARE_INSUFFICIENT = "insufficient_data"
METHOD_COMPARE = "welch_per_study_seed_noise"
METHOD_PARETO = "pareto_per_objective_welch"


@dataclass(frozen=True)
class StudyBest:
    study: str
    number: int | None  # the search trial whose configuration is the study's best
    value: float | None  # its single-run value (biased by seed luck when it was picked)
    mean: float | None = None  # over its seed repeats
    ci_low: float | None = None
    ci_high: float | None = None
    repeats: int = 0
    sigma: float | None = None
    dof: int = 0


@dataclass(frozen=True)
class Comparison:
    baseline: StudyBest  # A: the parent, or the first study named
    candidate: StudyBest  # B
    metric: str  # several objectives: their names, joined
    mode: str
    # improved | worse | within_noise | insufficient_data (B relative to A); several
    # objectives may also give trade_off
    verdict: str
    difference: float | None  # how much better B's mean is than A's (positive: better)
    ci_low: float | None
    ci_high: float | None
    method: str
    detail: str
    # Several objectives: one comparison per objective (``baseline``/``candidate`` above are
    # then the first objective's), and the two fronts' hypervolumes against a shared reference.
    objectives: tuple[Comparison, ...] = ()
    hypervolumes: tuple[float, float] | None = None
    reference_point: tuple[float, ...] | None = field(default=None)


def study_best(study: StudyRecord, trials: Sequence[TrialRecord], mode: str | None = None,
               constraints: Sequence[Constraint] | None = None) -> StudyBest:
    """``study``'s best configuration: its best repeat group by mean, else its best trial
    (the study's best rule: a search trial, completed or pruned, meeting every bound)."""
    mode = mode or study.mode
    noise = estimate_noise(trials)
    top = best_trial(trials, mode, study.constraints if constraints is None else constraints)
    if noise is None or not noise.groups:
        return StudyBest(study.name, top.number if top else None,
                         top.best_value if top else None)
    estimate = estimate_of(best_group(noise.groups, mode), noise)
    group = estimate.group
    return StudyBest(study.name, group.original, group.original_value, estimate.mean,
                     estimate.mean - estimate.half_width, estimate.mean + estimate.half_width,
                     group.n, estimate.sigma, estimate.dof)


def compare(baseline: StudyRecord, baseline_trials: Sequence[TrialRecord],
            candidate: StudyRecord, candidate_trials: Sequence[TrialRecord]) -> Comparison:
    """``candidate`` against ``baseline`` on the baseline's objectives (one metric, or a
    Pareto comparison of several)."""
    ours, theirs = spec_of(baseline).objectives, spec_of(candidate).objectives
    if [(o.name, str(o.mode)) for o in ours] != [(o.name, str(o.mode)) for o in theirs]:
        a, b = study_best(baseline, baseline_trials), study_best(candidate, candidate_trials)
        return Comparison(a, b, _names(ours), baseline.mode, COMPARE_INSUFFICIENT, None, None,
                          None, METHOD_COMPARE, f"{candidate.name} optimises {_said(theirs)}, "
                          f"{baseline.name} {_said(ours)}: not comparable")
    if len(ours) == 1:
        return compare_metric(baseline, baseline_trials, candidate, candidate_trials)
    return compare_fronts(ours, baseline, baseline_trials, candidate, candidate_trials)


def compare_metric(baseline: StudyRecord, baseline_trials: Sequence[TrialRecord],
                   candidate: StudyRecord, candidate_trials: Sequence[TrialRecord],
                   objective: Objective | None = None) -> Comparison:
    """One metric (``objective``; default the studies' own), each trial valued by its
    ``best_value``: best repeat group against best repeat group, Welch's interval."""
    metric, mode = (objective.name, str(objective.mode)) if objective else (baseline.metric,
                                                                           baseline.mode)
    a = study_best(baseline, baseline_trials, mode)
    b = study_best(candidate, candidate_trials, mode)
    if a.mean is None or b.mean is None or not a.dof or not b.dof:
        missing = ", ".join(s.study for s in (a, b) if s.mean is None or not s.dof)
        single = (f" (best single runs: {a.study} {_fmt(a.value)}, {b.study} {_fmt(b.value)};"
                  " a single run's value includes its seed's luck)")
        return Comparison(a, b, metric, mode, COMPARE_INSUFFICIENT, None, None, None,
                          METHOD_COMPARE, f"no seed repeats in {missing}: the studies cannot be "
                          f"compared against noise{single}")
    assert a.sigma is not None and b.sigma is not None
    better = direction(mode).sign * (a.mean - b.mean)  # positive: B is better
    va, vb = a.sigma**2 / a.repeats, b.sigma**2 / b.repeats
    se = math.sqrt(va + vb)
    dof = se**4 / (va**2 / a.dof + vb**2 / b.dof) if se > 0 else float(a.dof + b.dof)
    half = float(stats.t.ppf(1 - (1 - CONFIDENCE) / 2, dof)) * se
    low, high = better - half, better + half
    verdict = (COMPARE_IMPROVED if low > 0 else COMPARE_WORSE if high < 0
               else COMPARE_WITHIN_NOISE)
    said = {COMPARE_IMPROVED: "beats", COMPARE_WORSE: "is worse than",
            COMPARE_WITHIN_NOISE: "is within seed noise of"}[verdict]
    detail = (f"{b.study}'s best ({metric} {b.mean:.4g}, mean of {b.repeats} seeds) {said} "
              f"{a.study}'s ({a.mean:.4g}, {a.repeats} seeds): it is better by {better:.3g}, "
              f"95% interval [{low:.3g}, {high:.3g}] (Welch, each study's own seed noise: "
              f"sigma {a.sigma:.3g} and {b.sigma:.3g})")
    return Comparison(a, b, metric, mode, verdict, better, low, high, METHOD_COMPARE, detail)


def compare_fronts(objectives: Sequence[Objective], baseline: StudyRecord,
                   baseline_trials: Sequence[TrialRecord], candidate: StudyRecord,
                   candidate_trials: Sequence[TrialRecord]) -> Comparison:
    """Several objectives: each compared on its own (trials valued by their final value of
    it), then the verdict over all of them, and the fronts' hypervolumes."""
    each = tuple(compare_metric(baseline, valued_by(baseline_trials, o.name), candidate,
                                valued_by(candidate_trials, o.name), o) for o in objectives)
    verdicts = {c.verdict for c in each}
    if COMPARE_INSUFFICIENT in verdicts:
        verdict = COMPARE_INSUFFICIENT
    elif {COMPARE_IMPROVED, COMPARE_WORSE} <= verdicts:
        verdict = COMPARE_TRADE_OFF
    elif verdicts & {COMPARE_IMPROVED, COMPARE_WORSE}:
        verdict = (verdicts & {COMPARE_IMPROVED, COMPARE_WORSE}).pop()
    else:
        verdict = COMPARE_WITHIN_NOISE
    reference, volumes = front_hypervolumes(objectives, baseline, baseline_trials, candidate,
                                            candidate_trials)
    volume = ("" if volumes is None else f"; hypervolume of the fronts against one reference "
              f"point: {baseline.name} {volumes[0]:.4g}, {candidate.name} {volumes[1]:.4g} "
              "(single runs, seed luck included)")
    detail = (f"{_VERDICT_TEXT[verdict]} over {_names(objectives)} — "
              + "; ".join(f"{o.name}: {c.verdict} ({c.detail})"
                          for o, c in zip(objectives, each, strict=True)) + volume)
    first = each[0]
    return Comparison(first.baseline, first.candidate, _names(objectives), first.mode, verdict,
                      None, None, None, METHOD_PARETO, detail, each, volumes, reference)


_VERDICT_TEXT = {
    COMPARE_IMPROVED: "B's front improved on A's beyond seed noise",
    COMPARE_WORSE: "B's front is worse than A's beyond seed noise",
    COMPARE_TRADE_OFF: "B's front trades one objective for another, each beyond seed noise",
    COMPARE_WITHIN_NOISE: "the fronts are within seed noise of each other",
    COMPARE_INSUFFICIENT: "the fronts cannot all be compared against seed noise",
}


def front_hypervolumes(objectives: Sequence[Objective], baseline: StudyRecord,
                       baseline_trials: Sequence[TrialRecord], candidate: StudyRecord,
                       candidate_trials: Sequence[TrialRecord]
                       ) -> tuple[tuple[float, ...] | None, tuple[float, float] | None]:
    """The reference point of both studies' feasible points together, and each study's
    hypervolume against it (None, None: either study has no feasible point)."""
    a = [p for p in objective_points(spec_of(baseline), search_trials(baseline_trials))
         if p.feasible]
    b = [p for p in objective_points(spec_of(candidate), search_trials(candidate_trials))
         if p.feasible]
    reference = reference_point(objectives, [*a, *b])
    if reference is None or not a or not b:
        return None, None
    return reference, (hypervolume(objectives, a, reference),
                       hypervolume(objectives, b, reference))


def _names(objectives: Sequence[Objective]) -> str:
    return ", ".join(o.name for o in objectives)


def _said(objectives: Sequence[Objective]) -> str:
    return ", ".join(f"{o.name} ({o.mode})" for o in objectives)


def _fmt(value: float | None) -> str:
    return "none" if value is None else f"{value:.4g}"
