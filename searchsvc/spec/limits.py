"""Upper bounds on the work a study file may ask for, checked by arithmetic alone.

A few hundred bytes can describe an astronomically large search (twelve integer ranges of a
thousand values make a grid of 10^36 points), so every size is computed from the parameters'
value counts, with Python ints and never by enumerating, and compared with :class:`SpecLimits`
before any searcher looks at the spec.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from searchsvc.errors import SpecIssue
from searchsvc.plugins import SEARCHERS
from searchsvc.spec.model import ChoiceParameter, FixedParameter, Parameter, StudySpec


@dataclass(frozen=True)
class SpecLimits:
    """Upper bounds on the work a study file may ask for."""

    max_trials: int = 100_000  # budget.trials, and the grid's size when trials is omitted
    max_parameters: int = 1_000
    # Points of a grid search: the product of value counts, an upper bound before conditions.
    max_grid_points: int = 100_000
    max_arms: int = 10_000  # combinations of scientific values (upper bound)

    def __post_init__(self) -> None:
        for name in ("max_trials", "max_parameters", "max_grid_points", "max_arms"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"SpecLimits.{name} must be a positive int (got {value!r})")


DEFAULT_LIMITS = SpecLimits()

_EXACT_BELOW = 10**7  # sizes below this are shown in full, larger ones as 1.01e36
_FACTORS_SHOWN = 4  # distinct value counts spelled out in a message


def value_count(param: Parameter) -> int | None:
    """How many values a discrete parameter takes, computed without listing them (a fixed
    parameter: 1); None for a continuous range."""
    if isinstance(param, FixedParameter):
        return 1
    if isinstance(param, ChoiceParameter):
        return len(param.values)
    return param.grid_size if param.is_discrete else None


def limit_issues(spec: StudySpec, limits: SpecLimits = DEFAULT_LIMITS) -> list[SpecIssue]:
    """The ways ``spec`` exceeds ``limits``, each located at the field to change and naming the
    limit. Costs time linear in the number of parameters, whatever sizes they describe."""
    return [*_parameter_issues(spec, limits), *_trial_issues(spec, limits),
            *_arm_issues(spec, limits), *_grid_issues(spec, limits),
            *_repeat_issues(spec, limits)]


def _parameter_issues(spec: StudySpec, limits: SpecLimits) -> list[SpecIssue]:
    count = len(spec.parameters)
    if count <= limits.max_parameters:
        return []
    return [spec.source.issue(("parameters",), f"the study declares {count} parameters, over "
                              f"the limit max_parameters = {limits.max_parameters}", count)]


def _trial_issues(spec: StudySpec, limits: SpecLimits) -> list[SpecIssue]:
    trials = spec.budget.trials
    if trials is None or trials <= limits.max_trials:
        return []
    return [spec.source.issue(("budget", "trials"), f"{_size_text(trials)} trials is over the "
                              f"limit max_trials = {limits.max_trials}", trials)]


def _arm_issues(spec: StudySpec, limits: SpecLimits) -> list[SpecIssue]:
    counts = [value_count(p) for p in spec.scientific]
    if any(c is None for c in counts):
        return []  # a continuous scientific parameter is reported by the spec's own checks
    known = [c for c in counts if c is not None]
    if not _exceeds(known, limits.max_arms):
        return []
    return [spec.source.issue(("parameters",), f"the scientific parameters have "
                              f"{_product_text(known)} combinations, over the limit "
                              f"max_arms = {limits.max_arms}")]


def _repeat_issues(spec: StudySpec, limits: SpecLimits) -> list[SpecIssue]:
    """Seed repeats are trials too: the search's and the most repeats together (every arm's
    top_k configurations, seeds each) must stay within max_trials."""
    counts = [value_count(p) for p in spec.scientific]
    if spec.noise is None or any(c is None for c in counts):
        return []
    known = [c for c in counts if c is not None]
    if _exceeds(known, limits.max_arms):
        return []  # reported by _arm_issues
    arms = math.prod(known)
    repeats = arms * spec.noise.top_k * spec.noise.seeds
    total = (spec.budget.trials or 0) + repeats
    if total <= limits.max_trials:
        return []
    return [spec.source.issue(("noise",), f"the seed repeats add {repeats} trials ({arms} "
                              f"combinations x top_k {spec.noise.top_k} x seeds "
                              f"{spec.noise.seeds}), {total} in all, over the limit max_trials "
                              f"= {limits.max_trials}")]


def _grid_issues(spec: StudySpec, limits: SpecLimits) -> list[SpecIssue]:
    if spec.searcher not in SEARCHERS or not SEARCHERS.get(spec.searcher).exhaustive:
        return []
    counts = [value_count(p) for p in spec.parameters.values() if p.searched]
    if any(c is None for c in counts):
        return []  # a continuous range has no grid: the grid searcher's own check says so
    known = [c for c in counts if c is not None]
    if _exceeds(known, limits.max_grid_points):
        return [spec.source.issue(("searcher",), f"the grid has {_product_text(known)} points, "
                                  f"over the limit max_grid_points = {limits.max_grid_points}",
                                  spec.searcher)]
    if spec.budget.trials is None and _exceeds(known, limits.max_trials):
        return [spec.source.issue(("budget", "trials"), f"budget.trials is omitted, so the study "
                                  f"runs the whole grid: {_product_text(known)} trials, over the "
                                  f"limit max_trials = {limits.max_trials}")]
    return []


def _exceeds(counts: Iterable[int], limit: int) -> bool:
    """Whether the product of ``counts`` exceeds ``limit``; stops multiplying as soon as it
    does, so ten thousand huge counts cost no more than a few."""
    total = 1
    for count in counts:
        total *= count
        if total > limit:
            return True
    return False


def _product_text(counts: list[int]) -> str:
    """``counts`` multiplied out for a message: ``1001^12 = 1.01e36``, or ``6`` alone."""
    groups = sorted(Counter(c for c in counts if c > 1).items(), key=lambda g: -g[0])
    if not groups:
        return "1"
    factors = [f"{c}^{n}" if n > 1 else f"{c}" for c, n in groups[:_FACTORS_SHOWN]]
    if len(groups) > _FACTORS_SHOWN:
        factors.append("...")
    if len(groups) == 1 and groups[0][1] == 1:
        return factors[0]
    return f"{' * '.join(factors)} = {_size_text(counts)}"


def _size_text(counts: int | list[int]) -> str:
    """A (possibly astronomically large) product as text: exact below 10^7, else like
    1.01e36. Works from logarithms, so it never builds, or prints, a huge int."""
    counts = [counts] if isinstance(counts, int) else counts
    if not _exceeds(counts, _EXACT_BELOW - 1):
        return str(math.prod(counts))
    digits = sum(math.log10(c) for c in counts)
    exponent = math.floor(digits)
    mantissa = 10 ** (digits - exponent)
    if round(mantissa, 2) >= 10:  # 9.999 rounds up to the next power of ten
        mantissa, exponent = mantissa / 10, exponent + 1
    return f"{mantissa:.2f}e{exponent}"
