"""Bayesian optimisation: per scientific arm, a quasi-random warm-up followed by proposals from
an Optuna (TPE, GP) or hyperopt (TPE) model of that arm's finished trials."""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import cached_property
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from searchsvc.errors import SpecIssue
from searchsvc.searchers.base import Observation, Proposal, Searcher
from searchsvc.searchers.models import ArmModel, create_model
from searchsvc.searchers.simple import halton_points
from searchsvc.searchers.space import (
    arm_of,
    build_config,
    config_from_unit,
    nuisance_dimensions,
)
from searchsvc.searchers.space import trial_seed as _mix
from searchsvc.spec import StudySpec

# GP regression cost grows with dimensions and trials; past this TPE is the better default.
AUTO_GP_MAX_DIMS = 12
# auto: the most trials an arm may have for the GP: its cost grows with every trial it fits
# (on the scale study, 3.7 trials/s over the first 250 trials, 0.9 over trials 500-750)
AUTO_GP_MAX_TRIALS = 300


class BayesianOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    sampler: Literal["auto", "tpe", "gp", "nsga2", "hyperopt"] = Field(
        default="auto", description=(
            "auto: Optuna GP for small spaces without conditions and up to 300 trials per "
            "arm (sample-efficient, but its cost grows with every trial), else TPE; nsga2: "
            "Optuna's NSGA-II (multi-objective studies with many trials); "
            "hyperopt: single objective without constraints only"))
    warmup: int | None = Field(default=None, ge=1, description=(
        "quasi-random trials per arm before the model proposes (default: a quarter of the "
        "arm's share, between 2 and 10)"))


class BayesianSearcher(Searcher):
    name = "bayesian"
    summary = ("model-based search per arm after a quasi-random warm-up: Optuna GP or TPE "
               "(auto picks), or hyperopt TPE")
    Options = BayesianOptions
    multi_objective = True  # Optuna's multi-objective TPE, GP and NSGA-II

    @classmethod
    def check(cls, spec: StudySpec) -> list[SpecIssue]:
        issues = super().check(spec)
        if spec.searcher_options.get("sampler") == "hyperopt" and (
                spec.multi_objective or spec.constraints):
            issues.append(spec.source.issue(
                ("searcher_options", "sampler"), "hyperopt's TPE takes one objective and no "
                "constraints: use tpe, gp or nsga2", "hyperopt"))
        return issues

    @property
    def warmup(self) -> int:
        opts: BayesianOptions = self.options  # type: ignore[assignment]
        share = math.ceil(self.total_trials / len(self.arms))
        if opts.warmup is not None:
            # No arm has more trials than its share: a longer warm-up would only allocate
            # Halton points no trial uses (searcher_options.warmup is not bounded otherwise).
            return min(opts.warmup, share)
        return max(2, min(10, math.ceil(share / 4)))

    @property
    def sampler(self) -> str:
        """The sampler in use (``auto`` resolved)."""
        opts: BayesianOptions = self.options  # type: ignore[assignment]
        if opts.sampler != "auto":
            return opts.sampler
        dims = nuisance_dimensions(self.spec)
        small_and_flat = len(dims) <= AUTO_GP_MAX_DIMS and not any(p.when for p in dims)
        short = math.ceil(self.total_trials / len(self.arms)) <= AUTO_GP_MAX_TRIALS
        return "gp" if small_and_flat and short else "tpe"

    @cached_property
    def models(self) -> list[ArmModel]:
        return [create_model(self.sampler, self.spec, build_config(self.spec, arm, {}),
                             _mix(self.spec.seed, 1000 + arm.index), self.warmup)
                for arm in self.arms]

    @cached_property
    def _warmup_points(self) -> list[Any]:
        return [halton_points(self.spec, arm, self.warmup) for arm in self.arms]

    def warm_start(self, observations: Sequence[Observation]) -> int:
        """Tell each arm's model the other study's trials of that arm; an arm's quasi-random
        warm-up shortens by as many, so its model proposes as soon as it has enough data."""
        used = 0
        for observation in observations:
            arm = arm_of(self.arms, observation.config)
            if arm is None:
                continue
            self.models[arm.index].tell(observation.number, observation.config,
                                        observation.value, observation.state,
                                        observation.last_step, observation.final_metrics)
            self._warmed[arm.index] = self._warmed.get(arm.index, 0) + 1
            used += 1
        return used

    @cached_property
    def _warmed(self) -> dict[int, int]:
        return {}

    def propose(self, number: int) -> Proposal:
        arm, index = self.arm_for(number)
        if index < self.warmup - self._warmed.get(arm.index, 0):
            config = config_from_unit(self.spec, arm, self._warmup_points[arm.index][index])
        else:
            config = build_config(self.spec, arm, self.models[arm.index].suggest(number))
        return Proposal(number, config, arm, self.seed_for(number))

    def observe(self, observation: Observation) -> None:
        arm, _ = self.arm_for(observation.number)
        self.models[arm.index].tell(observation.number, observation.config, observation.value,
                                    observation.state, observation.last_step,
                                    observation.final_metrics)
