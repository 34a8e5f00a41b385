"""Non-adaptive searchers: grid, random and quasi-random (scrambled Halton).

Each proposes trial ``number`` as a pure function of the spec and the number, so a resumed study
re-creates exactly the trials it had not finished.
"""

from __future__ import annotations

import itertools
from functools import cached_property

import numpy as np
from scipy.stats import qmc

from searchsvc.errors import SpecIssue
from searchsvc.searchers.base import Proposal, Searcher
from searchsvc.searchers.space import (
    Arm,
    Config,
    build_config,
    config_from_unit,
    nuisance_dimensions,
    scientific_arms,
)
from searchsvc.spec import StudySpec


class RandomSearcher(Searcher):
    name = "random"
    summary = "independent uniform samples (log ranges uniform in log space), per scientific arm"

    def propose(self, number: int) -> Proposal:
        arm, index = self.arm_for(number)
        rng = np.random.default_rng([self.spec.seed, arm.index, index])
        point = rng.random(len(nuisance_dimensions(self.spec)))
        return Proposal(number, config_from_unit(self.spec, arm, point), arm, self.seed_for(number))


class QuasiRandomSearcher(Searcher):
    name = "quasi_random"
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
    dims = len(nuisance_dimensions(spec))
    if dims == 0:
        return np.zeros((count, 0))
    rng = np.random.default_rng([spec.seed, arm.index])
    return qmc.Halton(d=dims, scramble=True, seed=rng).random(count)


class GridSearcher(Searcher):
    name = "grid"
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
        size = len(_grid(spec))
        trials = spec.budget.trials
        if trials is not None and trials % size != 0:
            issues.append(spec.source.issue(
                ("budget", "trials"), f"the grid has {size} points; budget.trials must be a "
                f"multiple of that (or omitted)", trials))
        return issues

    @property
    def total_trials(self) -> int:
        return self.spec.budget.trials or len(self._grid)

    @cached_property
    def _grid(self) -> list[tuple[Arm, Config]]:
        return _grid(self.spec)

    def propose(self, number: int) -> Proposal:
        arm, config = self._grid[number % len(self._grid)]
        return Proposal(number, config, arm, self.seed_for(number))


def _grid(spec: StudySpec) -> list[tuple[Arm, Config]]:
    """The distinct configs of the full grid, arms taking turns (balanced prefixes)."""
    dims = nuisance_dimensions(spec)
    per_arm: list[list[tuple[Arm, Config]]] = []
    for arm in scientific_arms(spec):
        configs: list[Config] = []
        for combo in itertools.product(*(p.choices() for p in dims)):
            config = build_config(spec, arm, dict(zip((p.name for p in dims), combo, strict=True)))
            if config not in configs:
                configs.append(config)
        per_arm.append([(arm, c) for c in configs])
    merged = itertools.zip_longest(*per_arm)
    return [item for row in merged for item in row if item is not None]
