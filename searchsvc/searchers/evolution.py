"""Neural architecture search over conditional spaces (``when:``): regularized evolution
(Real et al., 2019, "aging evolution") per scientific arm, or Optuna's TPE.

Regularized evolution is written here because no maintained library offers it over
define-by-run conditional spaces: a parameter that becomes active after a mutation (say
``units_3`` when ``num_layers`` grows to 3) needs a value, which the individual's dormant genes
supply.
"""

from __future__ import annotations

import math
from collections import deque
from functools import cached_property
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from searchsvc.core import TrialState
from searchsvc.core.direction import direction
from searchsvc.searchers.base import Observation, Proposal, Searcher
from searchsvc.searchers.bayesian import BayesianOptions, BayesianSearcher
from searchsvc.searchers.simple import halton_points
from searchsvc.searchers.space import Arm, build_config, nuisance_dimensions
from searchsvc.spec import ChoiceParameter, Parameter, RangeParameter


class NasOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    strategy: Literal["evolution", "tpe"] = "evolution"
    population: int | None = Field(default=None, ge=2, description=(
        "individuals alive per arm; the first ones are quasi-random (default: a third of the "
        "arm's share, 4 to 20)"))
    sample_size: int | None = Field(default=None, ge=1, description=(
        "tournament size: parents are the best of this many random members (default: "
        "population / 3)"))


class NasSearcher(Searcher):
    name = "nas"
    single_objective_because = "its evolution keeps the best architectures by one metric"
    stops_trials = True
    stops_trials_because = ("ages architectures out of its population by their final values, "
                            "which a trial stopped early would not have")
    summary = ("architecture search over conditional spaces: regularized (aging) evolution per "
               "arm, or Optuna TPE")
    Options = NasOptions

    @cached_property
    def _options(self) -> NasOptions:
        return self.options  # type: ignore[return-value]

    @property
    def population(self) -> int:
        share = math.ceil(self.total_trials / len(self.arms))
        if self._options.population:
            # A population larger than the arm's share never fills: the share is the same
            # search, without allocating for members that never come.
            return min(self._options.population, share)
        return max(4, min(20, math.ceil(share / 3)))

    @cached_property
    def _tpe(self) -> BayesianSearcher:
        return BayesianSearcher(self.spec, BayesianOptions(sampler="tpe",
                                                           warmup=self.population))

    @cached_property
    def _alive(self) -> list[deque[tuple[dict[str, Any], float]]]:
        return [deque(maxlen=self.population) for _ in self.arms]

    @cached_property
    def _initial(self) -> list[np.ndarray]:
        return [halton_points(self.spec, arm, self.population) for arm in self.arms]

    def propose(self, number: int) -> Proposal:
        if self._options.strategy == "tpe":
            return self._tpe.propose(number)
        arm, index = self.arm_for(number)
        rng = np.random.default_rng([self.spec.seed, arm.index, index, 11])
        alive = self._alive[arm.index]
        sample = self._options.sample_size or max(2, self.population // 3)
        if index < self.population or len(alive) < min(sample, 2):
            genes = self._random_genes(arm, index, rng)
        else:
            picks = rng.choice(len(alive), size=min(sample, len(alive)), replace=False)
            parent = min((alive[i] for i in picks), key=lambda m: self._loss(m[1]))[0]
            genes = self._mutate(arm, parent, rng)
        return Proposal(number, build_config(self.spec, arm, genes), arm, self.seed_for(number))

    def observe(self, observation: Observation) -> None:
        if self._options.strategy == "tpe":
            self._tpe.observe(observation)
            return
        if observation.state != TrialState.COMPLETED or observation.value is None:
            return  # failed or diverged architectures do not reproduce
        arm, _ = self.arm_for(observation.number)
        genes = {p.name: observation.config[p.name] for p in nuisance_dimensions(self.spec)
                 if p.name in observation.config}
        # The oldest member dies when a new one joins (the deque's maxlen): aging evolution.
        self._alive[arm.index].append((genes, observation.value))

    def _loss(self, value: float) -> float:
        return direction(self.spec.mode).loss(value)

    def _random_genes(self, arm: Arm, index: int, rng: np.random.Generator) -> dict[str, Any]:
        dims = nuisance_dimensions(self.spec)
        if index < self.population:
            point = self._initial[arm.index][index]
        else:
            point = rng.random(len(dims))
        return {p.name: p.from_unit(u) for p, u in zip(dims, point, strict=True)}

    def _mutate(self, arm: Arm, parent: dict[str, Any], rng: np.random.Generator
                ) -> dict[str, Any]:
        """Change one active nuisance value; parameters that become active take dormant genes,
        or fresh random values when the parent never carried them."""
        dims = nuisance_dimensions(self.spec)
        genes = dict(parent)
        for param in dims:
            if param.name not in genes:
                genes[param.name] = param.from_unit(rng.random())
        config = build_config(self.spec, arm, genes)
        active = [p for p in dims if p.name in config]
        if active:
            target = active[int(rng.integers(len(active)))]
            genes[target.name] = _mutated_value(target, genes[target.name], rng)
        return genes


def _mutated_value(param: Parameter, value: Any, rng: np.random.Generator) -> Any:
    """A different value: another choice, or a step of about a tenth of the range (in the
    range's own scale) for numbers."""
    if isinstance(param, ChoiceParameter):
        others = [v for v in param.values if v != value] or list(param.values)
        return others[int(rng.integers(len(others)))]
    assert isinstance(param, RangeParameter)
    for _ in range(8):
        u = param.to_unit(float(value)) + rng.normal(0.0, 0.15)
        new = param.from_unit(min(max(u, 0.0), 1.0))
        if new != value:
            return new
    return new
