"""Trial-to-trial (seed) noise, measured from seed repeats, and the statistics that judge a
difference against it (docs/DESIGN.md, "Noise"; the method is in docs/noise.md, "Noise
estimate" and "Verdicts").

- A **repeat group** is one configuration the search ranked among its arm's best, rerun with new
  seeds. Its value per run is the run's best value over its curve, chosen the same way as for
  the original trial. The original run itself is left out: it was *picked* for being good, so
  its value is biased by seed luck (the winner's curse); the repeats are not.
- **Noise** is the pooled within-group standard deviation, ``sqrt(sum((n_i - 1) s_i^2) /
  sum(n_i - 1))``, with ``sum(n_i - 1)`` degrees of freedom and a chi-square 95% interval;
  per arm as well, with Bartlett's test for whether arms differ in noise.
- **Verdicts** compare the best configuration of each value by its mean over repeats, with
  simultaneous 95% intervals for every pair of values, so picking the best of several values is
  accounted for: Tukey-Kramer on the pooled sigma when arms share one noise level, Welch with a
  Bonferroni correction over the pairs when Bartlett's test says they do not (p < 0.01).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from scipy import stats

from searchsvc.core import TrialRecord, TrialState, is_finite_number
from searchsvc.core.direction import direction
from searchsvc.core.judging import is_search_trial

CONFIDENCE = 0.95
UNEQUAL_NOISE_P = 0.01  # Bartlett's p below which arms are treated as differing in noise
METHOD_TUKEY = "tukey_kramer_pooled_seed_noise"
METHOD_WELCH = "welch_bonferroni_per_arm_noise"


@dataclass(frozen=True)
class RepeatGroup:
    """One configuration and the values of its seed repeats."""

    original: int  # the number of the search trial it repeats
    original_value: float | None
    arm: Mapping[str, Any]
    config: Mapping[str, Any]
    numbers: tuple[int, ...]  # the repeats' trial numbers
    seeds: tuple[int, ...]
    values: tuple[float, ...]

    @property
    def n(self) -> int:
        return len(self.values)

    @property
    def mean(self) -> float:
        return sum(self.values) / len(self.values)

    @property
    def sum_of_squares(self) -> float:
        mean = self.mean
        return sum((v - mean) ** 2 for v in self.values)


@dataclass(frozen=True)
class ArmNoise:
    arm: str  # "name=value, ..." ("" without scientific parameters)
    sigma: float | None
    dof: int


@dataclass(frozen=True)
class NoiseEstimate:
    sigma: float
    dof: int
    sigma_low: float  # 95% interval of sigma (chi-square)
    sigma_high: float
    per_arm: tuple[ArmNoise, ...]
    equal_noise_p: float | None  # Bartlett's test across arms (None: fewer than 2 arms)
    min_resolvable: float  # the smallest difference two configs of `seeds` repeats resolve
    seeds: int  # repeats per configuration (the most common count)
    groups: tuple[RepeatGroup, ...]
    failed_repeats: int  # repeats that produced no finite value (not in the estimate)

    @property
    def unequal(self) -> bool:
        return self.equal_noise_p is not None and self.equal_noise_p < UNEQUAL_NOISE_P

    def arm_sigma(self, arm: str) -> tuple[float, int]:
        """(sigma, dof) for configurations of ``arm``: its own when arms differ in noise and
        it has one, else the pooled estimate."""
        if self.unequal:
            for a in self.per_arm:
                if a.arm == arm and a.sigma is not None and a.dof > 0:
                    return a.sigma, a.dof
        return self.sigma, self.dof


def arm_text(arm: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in arm.items())


def repeat_groups(trials: Sequence[TrialRecord]) -> list[RepeatGroup]:
    """The repeat groups of ``trials``, by original trial number. A repeat counts once it
    completed with a finite value."""
    by_number = {t.number: t for t in trials}
    members: dict[int, list[TrialRecord]] = {}
    for t in trials:
        if (t.repeat_of is not None and t.state == TrialState.COMPLETED
                and is_finite_number(t.best_value)):
            members.setdefault(t.repeat_of, []).append(t)
    groups = []
    for original, runs in sorted(members.items()):
        runs.sort(key=lambda t: t.number)
        source = by_number.get(original)
        groups.append(RepeatGroup(
            original=original, original_value=source.best_value if source else None,
            arm=dict(runs[0].arm), config=dict(runs[0].config),
            numbers=tuple(t.number for t in runs), seeds=tuple(t.seed for t in runs),
            values=tuple(float(t.best_value) for t in runs)))  # type: ignore[arg-type]
    return groups


def estimate_noise(trials: Sequence[TrialRecord]) -> NoiseEstimate | None:
    """The pooled seed noise of ``trials``' repeats; None until some configuration has two or
    more finished repeats."""
    groups = repeat_groups(trials)
    dof = sum(g.n - 1 for g in groups)
    if dof < 1:
        return None
    sigma = math.sqrt(sum(g.sum_of_squares for g in groups) / dof)
    alpha = 1 - CONFIDENCE
    low = math.sqrt(dof * sigma**2 / stats.chi2.ppf(1 - alpha / 2, dof))
    high = math.sqrt(dof * sigma**2 / stats.chi2.ppf(alpha / 2, dof))
    per_arm: dict[str, list[RepeatGroup]] = {}
    for g in groups:
        per_arm.setdefault(arm_text(g.arm), []).append(g)
    arms = []
    for label, mine in per_arm.items():
        arm_dof = sum(g.n - 1 for g in mine)
        arm_sigma = (math.sqrt(sum(g.sum_of_squares for g in mine) / arm_dof)
                     if arm_dof else None)
        arms.append(ArmNoise(label, arm_sigma, arm_dof))
    equal_p = _bartlett(arms)
    counts = [g.n for g in groups]
    seeds = max(set(counts), key=counts.count)
    resolvable = _t(dof) * sigma * math.sqrt(2 / seeds)
    failed = sum(1 for t in trials if not is_search_trial(t) and t.finished
                 and not (t.state == TrialState.COMPLETED and is_finite_number(t.best_value)))
    return NoiseEstimate(sigma, dof, low, high, tuple(arms), equal_p, resolvable, seeds,
                         tuple(groups), failed)


def _bartlett(arms: Sequence[ArmNoise]) -> float | None:
    """Bartlett's p for equal noise across arms, from each arm's pooled variance and its own
    degrees of freedom (each repeat group spends one on its mean, so the arms' deviations are
    not plain samples); None with fewer than two arms to compare, or an arm with no spread."""
    usable = [a for a in arms if a.dof >= 1 and a.sigma is not None]
    if len(usable) < 2 or any(a.sigma == 0 for a in usable):
        return None
    k = len(usable)
    dofs = [a.dof for a in usable]
    variances = [float(a.sigma) ** 2 for a in usable]  # type: ignore[arg-type]
    total = sum(dofs)
    pooled = sum(d * v for d, v in zip(dofs, variances, strict=True)) / total
    statistic = (total * math.log(pooled)
                 - sum(d * math.log(v) for d, v in zip(dofs, variances, strict=True)))
    correction = 1 + (sum(1 / d for d in dofs) - 1 / total) / (3 * (k - 1))
    return float(stats.chi2.sf(statistic / correction, k - 1))


def _t(dof: float, confidence: float = CONFIDENCE) -> float:
    return float(stats.t.ppf(1 - (1 - confidence) / 2, dof))


@dataclass(frozen=True)
class Estimate:
    """A configuration's mean over its repeats with a 95% interval (not simultaneous)."""

    group: RepeatGroup
    sigma: float
    dof: int

    @property
    def mean(self) -> float:
        return self.group.mean

    @property
    def half_width(self) -> float:
        return _t(self.dof) * self.sigma / math.sqrt(self.group.n)


def estimate_of(group: RepeatGroup, noise: NoiseEstimate) -> Estimate:
    sigma, dof = noise.arm_sigma(arm_text(group.arm))
    return Estimate(group, sigma, dof)


def best_group(groups: Sequence[RepeatGroup], mode: str) -> RepeatGroup:
    """The group with the best mean (ties: the lower original number)."""
    sign = direction(mode).sign
    return min(groups, key=lambda g: (sign * g.mean, g.original))


@dataclass(frozen=True)
class PairInterval:
    """``other``'s mean minus ``best``'s, in the sense of "how much worse", with a
    simultaneous 95% interval; ``resolved`` when the interval excludes zero."""

    difference: float
    low: float
    high: float
    critical: float  # the multiplier of the difference's standard error
    standard_error: float

    @property
    def resolved(self) -> bool:
        return self.low > 0 or self.high < 0


def pair_interval(best: Estimate, other: Estimate, values: int, noise: NoiseEstimate,
                  mode: str) -> PairInterval:
    """The interval of ``other - best`` (oriented so positive means ``other`` is worse in
    ``mode``), simultaneous over every pair of ``values`` compared."""
    sign = direction(mode).sign
    diff = sign * (other.mean - best.mean)
    if noise.unequal:  # Welch, Bonferroni over the m(m-1)/2 pairs
        va, vb = best.sigma**2 / best.group.n, other.sigma**2 / other.group.n
        se = math.sqrt(va + vb)
        dof = se**4 / (va**2 / best.dof + vb**2 / other.dof)
        pairs = max(values * (values - 1) // 2, 1)
        crit = _t(dof, 1 - (1 - CONFIDENCE) / pairs)
    else:  # Tukey-Kramer on the pooled sigma (m = 2: the two-sample t interval)
        se = noise.sigma * math.sqrt(1 / best.group.n + 1 / other.group.n)
        crit = _tukey_critical(max(values, 2), noise.dof)
    return PairInterval(diff, diff - crit * se, diff + crit * se, crit, se)


@functools.lru_cache(maxsize=256)
def _tukey_critical(values: int, dof: int) -> float:
    """The studentized range's 95% quantile over sqrt(2) (slow to compute: about 0.1 s)."""
    return float(stats.studentized_range.ppf(CONFIDENCE, values, dof)) / math.sqrt(2)


def seeds_to_resolve(gap: float, pair: PairInterval, seeds: int) -> int | None:
    """Repeats per configuration that would make an interval as wide as ``pair``'s (with the
    same multiplier) narrower than ``gap``: None for no gap at all."""
    if gap <= 0 or pair.standard_error <= 0:
        return None
    # The standard error shrinks as 1/sqrt(n): solve crit * se * sqrt(seeds / n) < gap.
    return max(seeds + 1, math.ceil(seeds * (pair.critical * pair.standard_error / gap) ** 2))


def method_name(noise: NoiseEstimate) -> str:
    return METHOD_WELCH if noise.unequal else METHOD_TUKEY
