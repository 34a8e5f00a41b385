"""Multi-fidelity searchers: Hyperband, ASHA and BOHB.

Each pairs a proposer (which configs to try) with a :class:`HyperbandSchedule` (which trials to
stop early); the runner carries the schedule out with searchsvc's own early-stopping scheduler
(``driver/schedulers.py``: ASHA's rule, with rungs per scientific arm).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import cached_property
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from searchsvc.errors import SpecIssue
from searchsvc.searchers.base import Observation, Proposal, Searcher
from searchsvc.searchers.bayesian import BayesianOptions, BayesianSearcher
from searchsvc.searchers.schedule import HyperbandSchedule
from searchsvc.searchers.simple import QuasiRandomSearcher, RandomSearcher
from searchsvc.searchers.space import arm_of, build_config
from searchsvc.searchers.space import trial_seed as _mix
from searchsvc.spec import StudySpec

MAX_RUNGS = 100  # a reduction factor of 2 fits 100 rungs below 10^30 steps


class HyperbandOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    grace_period: int = Field(default=1, ge=1, description="steps before any trial is stopped")
    reduction_factor: float = Field(default=3.0, gt=1, description=(
        "only the top 1/reduction_factor of a rung goes on to the next"))
    brackets: int | None = Field(default=None, ge=1, description=(
        "Hyperband brackets (hyperband default: all that fit; asha: 1)"))
    proposer: Literal["random", "quasi_random", "bayesian"] = "quasi_random"
    sampler: Literal["auto", "tpe", "gp", "hyperopt"] = "auto"
    promotion: Literal["cutoff", "quota"] = Field(default="cutoff", description=(
        "cutoff: go on when in the top 1/reduction_factor of the rung so far (Ray's ASHA); "
        "quota: also at most ceil(n/reduction_factor) of a rung's n trials go on"))


class HyperbandSearcher(Searcher):
    name = "hyperband"
    multi_fidelity = True
    stops_trials = True
    stops_trials_because = ("stops trials at its own rungs (set grace_period and "
                            "reduction_factor in its searcher_options)")
    single_objective_because = ("a multi-fidelity searcher stops trials early by ranking "
                                "them on one metric at each rung")
    summary = ("Hyperband's brackets run asynchronously, with rungs per scientific arm, "
               "configs from a random, quasi-random or Bayesian proposer")
    Options: ClassVar[type[HyperbandOptions | BohbOptions]] = HyperbandOptions
    default_brackets: int | None = None  # None: every bracket that fits

    @classmethod
    def check(cls, spec: StudySpec) -> list[SpecIssue]:
        issues = super().check(spec)
        if spec.budget.max_steps is None:
            return [*issues, spec.source.issue(
                ("budget", "max_steps"), f"searcher '{cls.name}' stops trials early at fractions "
                "of budget.max_steps, so it needs budget.max_steps")]
        options = cls.Options.model_validate(dict(spec.searcher_options))
        grace = options.grace_period
        if grace > spec.budget.max_steps:
            issues.append(spec.source.issue(
                ("searcher_options", "grace_period"), f"must not exceed budget.max_steps "
                f"({spec.budget.max_steps})", grace))
            return issues
        factor = options.reduction_factor
        rungs = int(math.log(spec.budget.max_steps / grace) / math.log(factor)) + 1
        if rungs > MAX_RUNGS:  # the schedule lists every rung of every bracket, per trial
            issues.append(spec.source.issue(
                ("searcher_options", "reduction_factor"), f"makes {rungs} rungs between "
                f"grace_period and budget.max_steps; at most {MAX_RUNGS} (a larger factor)",
                factor))
        return issues

    @cached_property
    def proposer(self) -> Searcher:
        opts: HyperbandOptions = self.options  # type: ignore[assignment]
        if opts.proposer == "bayesian":
            return BayesianSearcher(self.spec, BayesianOptions(sampler=opts.sampler))
        cls = RandomSearcher if opts.proposer == "random" else QuasiRandomSearcher
        return cls(self.spec, cls.Options())

    def propose(self, number: int) -> Proposal:
        return self.proposer.propose(number)

    def observe(self, observation: Observation) -> None:
        self.proposer.observe(observation)

    def warm_start(self, observations: Sequence[Observation]) -> int:
        return self.proposer.warm_start(observations)

    def schedule(self) -> HyperbandSchedule:
        opts: HyperbandOptions = self.options  # type: ignore[assignment]
        max_steps = self.spec.budget.max_steps
        assert max_steps is not None
        fitting = int(math.log(max_steps / opts.grace_period)
                      / math.log(opts.reduction_factor)) + 1
        brackets = min(opts.brackets or self.default_brackets or fitting, fitting)
        return HyperbandSchedule(max_steps, opts.grace_period, opts.reduction_factor,
                                 brackets, seed=self.spec.seed,
                                 promotion=opts.promotion)


class AshaSearcher(HyperbandSearcher):
    name = "asha"
    summary = ("asynchronous successive halving (Ray Tune's ASHA): one bracket, no trial waits "
               "for a rung to fill")
    default_brackets = 1


class BohbOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    grace_period: int = Field(default=1, ge=1)
    reduction_factor: float = Field(default=3.0, gt=1)
    brackets: int | None = Field(default=None, ge=1)
    random_fraction: float = Field(default=1 / 3, ge=0, le=1, description=(
        "share of configs drawn at random rather than from the model (BOHB's rho)"))
    top_n_percent: int = Field(default=15, ge=1, le=99, description=(
        "percentage of observations the model counts as good"))
    # BOHB's proposals improve as its model learns, so later trials beat earlier cutoffs and
    # asynchronous rungs let most of them through; the quota keeps Hyperband's budget.
    promotion: Literal["cutoff", "quota"] = "quota"


class BohbSearcher(HyperbandSearcher):
    name = "bohb"
    summary = ("BOHB: hpbandster's BOHB kernel-density model (the reference implementation) "
               "proposing configs, Hyperband brackets stopping them")
    Options = BohbOptions

    @cached_property
    def models(self) -> list[Any]:
        from searchsvc.searchers.bohb_model import BohbModel

        opts: BohbOptions = self.options  # type: ignore[assignment]
        return [BohbModel(self.spec, build_config(self.spec, arm, {}),
                          _mix(self.spec.seed, 2000 + arm.index),
                          random_fraction=opts.random_fraction, top_n_percent=opts.top_n_percent)
                for arm in self.arms]

    @cached_property
    def budgets(self) -> list[int]:
        """The steps at which BOHB's models see results: every rung, and the full budget."""
        schedule = self.schedule()
        steps = {s for b in range(schedule.brackets) for s in schedule.milestones(b)}
        return sorted(steps | {schedule.max_steps})

    def propose(self, number: int) -> Proposal:
        arm, _ = self.arm_for(number)
        values = self.models[arm.index].suggest(number, self.budgets[-1])
        return Proposal(number, build_config(self.spec, arm, values), arm, self.seed_for(number))

    def warm_start(self, observations: Sequence[Observation]) -> int:
        used = 0
        for observation in observations:
            arm = arm_of(self.arms, observation.config)
            if arm is not None:
                self._tell(self.models[arm.index], observation)
                used += 1
        return used

    def observe(self, observation: Observation) -> None:
        arm, _ = self.arm_for(observation.number)
        self._tell(self.models[arm.index], observation)

    def _tell(self, model: Any, observation: Observation) -> None:
        last = observation.last_step
        for budget in self.budgets:
            if last is None or last < budget:
                break
            model.tell(observation.config, budget, observation.value_at(budget))
        if last is None:
            model.tell(observation.config, self.budgets[0], None)
