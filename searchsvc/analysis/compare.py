"""Did one study's best beat another's beyond seed noise? (``searchsvc compare A B``, and the
"Compared with the parent study" section of a study made from another's next_study.yaml.)

Each study's best configuration is its repeat group with the best mean (both studies pick the
same way, so the small optimism of picking is shared). The difference of the two means gets a
Welch interval, each side's standard error from its own study's seed noise (pooled sigma and
its degrees of freedom, :mod:`.noise`), so two studies with different noise compare fairly.
Without seed repeats in either study no interval exists: the verdict says so, with the best
single-run values for reference.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from scipy import stats

from searchsvc.analysis.noise import CONFIDENCE, best_group, estimate_noise, estimate_of
from searchsvc.analysis.trials import ranked, search_trials
from searchsvc.core import StudyRecord, TrialRecord
from searchsvc.core.direction import direction

COMPARE_IMPROVED = "improved"
COMPARE_WORSE = "worse"
COMPARE_WITHIN_NOISE = "within_noise"
COMPARE_INSUFFICIENT = "insufficient_data"
METHOD_COMPARE = "welch_per_study_seed_noise"


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
    metric: str
    mode: str
    verdict: str  # improved | worse | within_noise | insufficient_data (B relative to A)
    difference: float | None  # how much better B's mean is than A's (positive: better)
    ci_low: float | None
    ci_high: float | None
    method: str
    detail: str


def study_best(study: StudyRecord, trials: Sequence[TrialRecord]) -> StudyBest:
    noise = estimate_noise(trials)
    search = ranked(search_trials(trials), study.mode)
    top = search[0] if search else None
    if noise is None or not noise.groups:
        return StudyBest(study.name, top.number if top else None,
                         top.best_value if top else None)
    estimate = estimate_of(best_group(noise.groups, study.mode), noise)
    group = estimate.group
    return StudyBest(study.name, group.original, group.original_value, estimate.mean,
                     estimate.mean - estimate.half_width, estimate.mean + estimate.half_width,
                     group.n, estimate.sigma, estimate.dof)


def compare(baseline: StudyRecord, baseline_trials: Sequence[TrialRecord],
            candidate: StudyRecord, candidate_trials: Sequence[TrialRecord]) -> Comparison:
    """``candidate`` against ``baseline`` on the baseline's metric and mode."""
    a, b = study_best(baseline, baseline_trials), study_best(candidate, candidate_trials)
    metric, mode = baseline.metric, baseline.mode
    if (candidate.metric, candidate.mode) != (metric, mode):
        return Comparison(a, b, metric, mode, COMPARE_INSUFFICIENT, None, None, None,
                          METHOD_COMPARE, f"{candidate.name} optimises {candidate.metric} "
                          f"({candidate.mode}), {baseline.name} {metric} ({mode}): not "
                          "comparable")
    if a.mean is None or b.mean is None or not a.dof or not b.dof:
        missing = ", ".join(s.study for s in (a, b) if s.mean is None or not s.dof)
        single = (f" (best single runs: {a.study} {_fmt(a.value)}, {b.study} {_fmt(b.value)};"
                  " a single run's value includes its seed's luck)")
        return Comparison(a, b, metric, mode, COMPARE_INSUFFICIENT, None, None, None,
                          METHOD_COMPARE, f"no seed repeats in {missing}: the studies cannot be "
                          f"compared against noise{single}")
    assert a.sigma is not None and b.sigma is not None
    sign = direction(mode).sign
    better = sign * (a.mean - b.mean)  # positive: B is better
    va, vb = a.sigma**2 / a.repeats, b.sigma**2 / b.repeats
    se = math.sqrt(va + vb)
    dof = se**4 / (va**2 / a.dof + vb**2 / b.dof) if se > 0 else float(a.dof + b.dof)
    half = float(stats.t.ppf(1 - (1 - CONFIDENCE) / 2, dof)) * se
    low, high = better - half, better + half
    if low > 0:
        verdict = COMPARE_IMPROVED
    elif high < 0:
        verdict = COMPARE_WORSE
    else:
        verdict = COMPARE_WITHIN_NOISE
    said = {COMPARE_IMPROVED: "beats", COMPARE_WORSE: "is worse than",
            COMPARE_WITHIN_NOISE: "is within seed noise of"}[verdict]
    detail = (f"{b.study}'s best ({metric} {b.mean:.4g}, mean of {b.repeats} seeds) {said} "
              f"{a.study}'s ({a.mean:.4g}, {a.repeats} seeds): it is better by {better:.3g}, "
              f"95% interval [{low:.3g}, {high:.3g}] (Welch, each study's own seed noise: "
              f"sigma {a.sigma:.3g} and {b.sigma:.3g})")
    return Comparison(a, b, metric, mode, verdict, better, low, high, METHOD_COMPARE, detail)


def _fmt(value: float | None) -> str:
    return "none" if value is None else f"{value:.4g}"
