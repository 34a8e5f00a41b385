"""Non-adaptive searchers: grid, random and quasi-random (scrambled Halton).

Each proposes trial ``number`` as a pure function of the spec and the number, so a resumed study
re-creates exactly the trials it had not finished.
"""

from __future__ import annotations

import itertools
from collections import ChainMap
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from searchsvc.errors import SpecIssue
from searchsvc.searchers.base import Proposal, Searcher
from searchsvc.searchers.space import (
    Arm,
    Config,
    build_config,
    config_from_unit,
    fill_context,
    nuisance_dimensions,
    scientific_arms,
)
from searchsvc.spec import Parameter, StudySpec
from searchsvc.spec.limits import value_count


class RandomSearcher(Searcher):
    name = "random"
    multi_objective = True  # proposes without looking at results
    summary = "independent uniform samples (log ranges uniform in log space), per scientific arm"

    def propose(self, number: int) -> Proposal:
        arm, index = self.arm_for(number)
        rng = np.random.default_rng([self.spec.seed, arm.index, index])
        point = rng.random(len(nuisance_dimensions(self.spec)))
        return Proposal(number, config_from_unit(self.spec, arm, point), arm, self.seed_for(number))


class QuasiRandomSearcher(Searcher):
    name = "quasi_random"
    multi_objective = True  # proposes without looking at results
    summary = ("scrambled Halton sequence (scipy.stats.qmc), the Tuning Playbook's choice for "
               "exploration: uniform coverage, reproducible, order-independent")

    @cached_property
    def _points(self) -> list[np.ndarray]:
        """Per arm, the Halton points it needs (each arm has its own scrambled sequence)."""
        per_arm = -(-self.total_trials // len(self.arms))
        return [halton_points(self.spec, a, per_arm) for a in self.arms]

    def propose(self, number: int) -> Proposal:
        arm, index = self.arm_for(number)
        point = self._points[arm.index][index]
        return Proposal(number, config_from_unit(self.spec, arm, point), arm, self.seed_for(number))


def halton_points(spec: StudySpec, arm: Arm, count: int) -> np.ndarray:
    """``count`` points of the arm's own scrambled Halton sequence over the nuisance unit cube
    (reproducible for the study's seed)."""
    from scipy.stats import qmc  # all of scipy.stats (half a second): only this searcher's

    dims = len(nuisance_dimensions(spec))
    if dims == 0:
        return np.zeros((count, 0))
    rng = np.random.default_rng([spec.seed, arm.index])
    return qmc.Halton(d=dims, scramble=True, seed=rng).random(count)


class GridSearcher(Searcher):
    name = "grid"
    exhaustive = True
    multi_objective = True  # proposes without looking at results
    summary = ("every combination of the discrete values (conditions applied); budget.trials "
               "may repeat the grid a whole number of times with different seeds")

    @classmethod
    def check(cls, spec: StudySpec) -> list[SpecIssue]:
        issues = [
            spec.source.issue(("parameters", p.name), "grid search needs discrete values: give "
                              "`values` or a `step` for this range")
            for p in spec.parameters.values() if p.searched and not p.is_discrete
        ]
        if issues:
            return issues
        trials = spec.budget.trials
        if trials is None:
            return issues  # the whole grid, once: nothing to compare its size with
        size = grid_size(spec)
        if trials % size != 0:
            issues.append(spec.source.issue(
                ("budget", "trials"), f"the grid has {size} points; budget.trials must be a "
                f"multiple of that (or omitted)", trials))
        return issues

    @property
    def total_trials(self) -> int:
        return self.spec.budget.trials or len(self._grid)

    @cached_property
    def _grid(self) -> list[tuple[Arm, GridPoint]]:
        return _grid(self.spec)

    @cached_property
    def _axes(self) -> _Axes:
        return _Axes.of(self.spec)

    def propose(self, number: int) -> Proposal:
        arm, point = self._grid[number % len(self._grid)]
        return Proposal(number, self._axes.config(self.spec, arm, point), arm,
                        self.seed_for(number))


# A grid point within its arm: per varying nuisance parameter, (value,) when it is active and
# () when its conditions leave it out. Plain tuples: hashable, small, and picklable.
GridPoint = tuple[tuple[Any, ...], ...]


@dataclass(frozen=True)
class _Axes:
    """The grid's nuisance parameters: those with one value (the same in every config) and
    those the grid varies. A point records only the varying ones: two combinations give the
    same config exactly when they agree on the varying parameters that are active (every
    other value and condition follows from those), so that short key finds duplicates, in a
    set. Only ``moving`` parameters (ancestors, by ``when``, of a varying one and depending on
    one) are evaluated per combination; ``settled`` ones once per arm; others never."""

    constant: dict[str, Any]
    varying: tuple[Parameter, ...]
    settled: tuple[Parameter, ...]
    moving: tuple[Parameter, ...]

    @classmethod
    def of(cls, spec: StudySpec) -> _Axes:
        dims = nuisance_dimensions(spec)
        varying = tuple(p for p in dims if value_count(p) != 1)
        ordered = [spec.parameters[name] for name in spec.parameter_order]
        needed = {p.name for p in varying}  # and, below, everything their conditions read
        for param in reversed(ordered):  # parents come first in the order: one pass
            if param.name in needed:
                needed.update(c.parent for c in param.when)
        moves = {p.name for p in varying}
        for param in ordered:
            if any(c.parent in moves for c in param.when):
                moves.add(param.name)
        relevant = [p for p in ordered if p.name in needed]
        return cls(constant={p.name: p.choices()[0] for p in dims if value_count(p) == 1},
                   varying=varying,
                   settled=tuple(p for p in relevant if p.name not in moves),
                   moving=tuple(p for p in relevant if p.name in moves))

    def points(self, arm: Arm) -> Iterator[GridPoint]:
        """The arm's distinct points, in the order of their first combination in the
        Cartesian product of the varying values: time linear in the product's size."""
        names = [p.name for p in self.varying]
        base: dict[str, Any] = {}
        fill_context(self.settled, arm, self.constant, base)
        seen: set[GridPoint] = set()
        for combo in itertools.product(*(p.choices() for p in self.varying)):
            context: ChainMap[str, Any] = ChainMap({}, base)
            fill_context(self.moving, arm, ChainMap(dict(zip(names, combo, strict=True)),
                                                    self.constant), context)
            point = tuple((context[n],) if n in context else () for n in names)
            if point not in seen:
                seen.add(point)
                yield point

    def config(self, spec: StudySpec, arm: Arm, point: GridPoint) -> Config:
        values = {p.name: v[0] for p, v in zip(self.varying, point, strict=True) if v}
        return build_config(spec, arm, {**self.constant, **values})


def grid_size(spec: StudySpec) -> int:
    """The number of distinct configs of the grid (conditions applied), counted without
    keeping them. Enumerates the product of the value counts: callers keep that within
    ``SpecLimits.max_grid_points`` (see :func:`searchsvc.spec.limits.limit_issues`)."""
    axes = _Axes.of(spec)
    return sum(sum(1 for _ in axes.points(arm)) for arm in scientific_arms(spec))


def _grid(spec: StudySpec) -> list[tuple[Arm, GridPoint]]:
    """The distinct points of the full grid, arms taking turns (balanced prefixes)."""
    axes = _Axes.of(spec)
    per_arm = [[(arm, p) for p in axes.points(arm)] for arm in scientific_arms(spec)]
    merged = itertools.zip_longest(*per_arm)
    return [item for row in merged for item in row if item is not None]
