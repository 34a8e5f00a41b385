"""Population Based Training (PBT, and PB2 as a variant): a population per scientific arm,
trained together; weak members copy the checkpoint of strong ones and explore new nuisance
values. The runner maps the schedule to Ray Tune's PBT/PB2 schedulers."""

from __future__ import annotations

from functools import cached_property
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from searchsvc.errors import SpecIssue
from searchsvc.searchers.base import Proposal
from searchsvc.searchers.schedule import PopulationSchedule
from searchsvc.searchers.simple import QuasiRandomSearcher
from searchsvc.searchers.space import build_config, nuisance_dimensions, scientific_arms
from searchsvc.spec import ChoiceParameter, Parameter, RangeParameter, StudySpec


class PbtOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    variant: Literal["pbt", "pb2"] = Field(default="pbt", description=(
        "pbt: random perturbation; pb2: GP-bandit explore (Ray Tune's PB2), numeric ranges"))
    perturbation_interval: int | None = Field(default=None, ge=1, description=(
        "steps between exploit/explore decisions (default: max_steps / 5)"))
    quantile_fraction: float = Field(default=0.25, gt=0, le=0.5)
    resample_probability: float = Field(default=0.25, ge=0, le=1)
    synch: bool = Field(default=False, description=(
        "decide exploit/explore only once the whole population reached the same step "
        "(Ray Tune's synchronous PBT): slower, but the outcome does not depend on timing"))
    levels: int = Field(default=16, ge=3, le=1_000, description=(
        "values per continuous range that pbt moves between (neighbours on the range's scale)"))


class PbtSearcher(QuasiRandomSearcher):
    name = "pbt"
    summary = ("population based training (Ray Tune's PBT, or PB2): mutates the nuisance "
               "parameters during training; lineage recorded")
    Options = PbtOptions
    repeats_supported = False
    multi_objective = False
    stops_trials = True
    stops_trials_because = "pauses trials and copies the best ones' checkpoints itself"
    single_objective_because = ("pbt copies the weights of the best trials by one metric "
                                "while they train")
    no_repeats_because = ("pbt changes a trial's config while it trains, so no config of its "
                          "trials is what was measured")

    @classmethod
    def check(cls, spec: StudySpec) -> list[SpecIssue]:
        issues = super().check(spec)
        if spec.budget.max_steps is None:
            issues.append(spec.source.issue(("budget", "max_steps"), "pbt perturbs trials every "
                                            "few steps, so it needs budget.max_steps"))
        arms = len(scientific_arms(spec))
        if spec.budget.trials is not None and spec.budget.trials < 2 * arms:
            issues.append(spec.source.issue(
                ("budget", "trials"), f"pbt needs a population of at least 2 per scientific "
                f"combination ({2 * arms} trials)", spec.budget.trials))
        options = PbtOptions.model_validate(dict(spec.searcher_options))
        if not mutable_parameters(spec, options.variant):
            kinds = "numeric ranges" if options.variant == "pb2" else "parameters"
            issues.append(spec.source.issue(
                ("parameters",), f"{options.variant} needs at least one nuisance parameter to "
                f"mutate: unconditional {kinds} that no other parameter depends on"))
        return issues

    def propose(self, number: int) -> Proposal:
        """The quasi-random initial population, snapped onto pbt's mutation ladders."""
        arm, index = self.arm_for(number)
        point = self._points[arm.index][index]
        values = {}
        mutations = self.schedule().mutations
        for param, u in zip(nuisance_dimensions(self.spec), point, strict=True):
            value = param.from_unit(u)
            if param.name in mutations:  # start on the ladder pbt moves along
                value = _nearest(mutations[param.name], value, param)
            values[param.name] = value
        return Proposal(number, build_config(self.spec, arm, values), arm, self.seed_for(number))

    def schedule(self) -> PopulationSchedule:
        return self._schedule

    @cached_property
    def _schedule(self) -> PopulationSchedule:
        opts: PbtOptions = self.options  # type: ignore[assignment]
        max_steps = self.spec.budget.max_steps
        assert max_steps is not None
        mutable = mutable_parameters(self.spec, opts.variant)
        return PopulationSchedule(
            variant=opts.variant, max_steps=max_steps,
            perturbation_interval=opts.perturbation_interval or max(1, max_steps // 5),
            quantile_fraction=opts.quantile_fraction,
            resample_probability=opts.resample_probability, synch=opts.synch,
            mutations={p.name: _levels(p, opts.levels) for p in mutable},
            bounds={p.name: (p.low, p.high) for p in mutable if isinstance(p, RangeParameter)},
            seed=self.spec.seed,
        )


def mutable_parameters(spec: StudySpec, variant: str) -> list[Parameter]:
    """Nuisance parameters PBT may change mid-trial: present in every trial (no ``when``) and
    deciding no other parameter's presence. PB2 takes numeric ranges only."""
    parents = {c.parent for p in spec.parameters.values() for c in p.when}
    out = [p for p in spec.nuisance if not p.when and p.name not in parents]
    if variant == "pb2":
        out = [p for p in out if isinstance(p, RangeParameter)]
    return out


def _levels(param: Parameter, count: int) -> tuple[Any, ...]:
    if isinstance(param, ChoiceParameter):
        return tuple(param.values)
    assert isinstance(param, RangeParameter)
    if param.is_discrete and param.grid_size <= count:  # counted: the range may be huge
        return tuple(param.grid())
    values = [param.from_unit(u) for u in np.linspace(0.0, 1.0, count)]
    return tuple(dict.fromkeys(values))


def _nearest(levels: tuple[Any, ...], value: Any, param: Parameter) -> Any:
    if isinstance(param, ChoiceParameter):
        return value
    assert isinstance(param, RangeParameter)
    return min(levels, key=lambda level: abs(param.to_unit(level) - param.to_unit(value)))
