"""``searcher: keras_tuner``: KerasTuner's own oracles (random search, Bayesian optimisation)
proposing the nuisance values of each scientific arm, trials still run by Ray Tune and
recorded in the store. For Keras users who want KerasTuner's algorithms with searchsvc's
roles, store and reports. KerasTuner is imported only when this searcher is used."""

from __future__ import annotations

import math
import shutil
import tempfile
import weakref
from collections.abc import Mapping
from functools import cached_property
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from searchsvc.core import TrialState
from searchsvc.core.direction import direction
from searchsvc.searchers.base import Observation, Proposal, Searcher
from searchsvc.searchers.space import build_config, on_grid
from searchsvc.searchers.space import trial_seed as _mix
from searchsvc.spec import ChoiceParameter, RangeParameter


class KerasOracleOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    oracle: Literal["random", "bayesian"] = Field(default="bayesian", description=(
        "KerasTuner's RandomSearchOracle or BayesianOptimizationOracle (for Hyperband use "
        "searcher: hyperband, which runs on Ray Tune's scheduler)"))
    initial_points: int | None = Field(default=None, ge=1, description=(
        "bayesian: random trials per arm before the Gaussian process proposes"))


class KerasTunerSearcher(Searcher):
    name = "keras_tuner"
    single_objective_because = "KerasTuner's oracles optimise one objective"
    summary = "KerasTuner's own oracles (random, bayesian) per scientific arm"
    Options = KerasOracleOptions

    @cached_property
    def oracles(self) -> list[Any]:
        return [self._oracle(arm) for arm in self.arms]

    def _oracle(self, arm: Any) -> Any:
        import keras_tuner as kt

        opts: KerasOracleOptions = self.options  # type: ignore[assignment]
        share = math.ceil(self.total_trials / len(self.arms))
        objective = kt.Objective(self.spec.metric, str(direction(self.spec.mode)))
        common = {"objective": objective, "max_trials": share + 1,
                  "hyperparameters": _space(self.spec, build_config(self.spec, arm, {})),
                  # KerasTuner treats seed 0 as "no seed"
                  "seed": 1 + _mix(self.spec.seed, 3000 + arm.index) % (2**31 - 2),
                  # KerasTuner raises after 3 failed trials in a row by default; failures are
                  # the study's to count (budget.max_failures), so never here.
                  "max_consecutive_failed_trials": share + 1}
        if opts.oracle == "random":
            oracle = kt.oracles.RandomSearchOracle(**common)
        else:
            oracle = kt.oracles.BayesianOptimizationOracle(
                num_initial_points=opts.initial_points or max(2, share // 4), **common)
        # Oracles save each trial as JSON; searchsvc's store is the record, so a scratch folder,
        # deleted with this searcher (a finalizer, not state: the searcher stays picklable).
        scratch = tempfile.mkdtemp(prefix="searchsvc-kt-")
        weakref.finalize(self, shutil.rmtree, scratch, True)
        oracle._set_project_dir(scratch, f"arm{arm.index}")
        return oracle

    @cached_property
    def _asked(self) -> dict[int, Any]:
        return {}

    def propose(self, number: int) -> Proposal:
        arm, _ = self.arm_for(number)
        trial = self.oracles[arm.index].create_trial(tuner_id=f"trial-{number}")
        self._asked[number] = trial
        values = {k: on_grid(self.spec.parameters[k], _plain(v))
                  for k, v in trial.hyperparameters.values.items()}
        return Proposal(number, build_config(self.spec, arm, values), arm, self.seed_for(number))

    def observe(self, observation: Observation) -> None:
        from keras_tuner.engine.trial import TrialStatus

        arm, _ = self.arm_for(observation.number)
        oracle = self.oracles[arm.index]
        trial = self._asked.pop(observation.number, None)
        if trial is None:  # replayed from the store on resume: the oracle learns it too
            trial = _replayed_trial(oracle, observation.number, observation.config)
        ok = (observation.state in (TrialState.COMPLETED, TrialState.PRUNED)
              and observation.value is not None)
        if ok:
            oracle.update_trial(trial.trial_id, {self.spec.metric: observation.value})
        trial.status = TrialStatus.COMPLETED if ok else TrialStatus.FAILED
        oracle.end_trial(trial)


def _replayed_trial(oracle: Any, number: int, config: Mapping[str, Any]) -> Any:
    """Trial ``number``, asked of ``oracle`` again with the values the store holds for it.
    The oracle draws random values as it did when it first proposed the trial (a random
    oracle's generator stays in step, so a resumed search goes on as the original did) but
    fits no model: a Bayesian oracle would otherwise fit its Gaussian process and optimise
    its acquisition (seconds each) for every trial replayed, only for the values to be
    replaced by the stored ones."""
    names = {hp.name for hp in oracle.hyperparameters.space}

    def stored_values(trial_id: str) -> dict[str, Any]:
        oracle._random_values()
        return {"status": "RUNNING",
                "values": {k: v for k, v in config.items() if k in names}}

    oracle.populate_space = stored_values  # for this one call; the class's comes back after
    try:
        return oracle.create_trial(tuner_id=f"replay-{number}")
    finally:
        del oracle.populate_space


def _space(spec: Any, context: dict[str, Any]) -> Any:
    """The arm's nuisance parameters as KerasTuner hyperparameters (log scales, steps and
    conditions on other nuisance parameters kept)."""
    import keras_tuner as kt

    hp = kt.HyperParameters()
    nuisance = {p.name for p in spec.nuisance}
    for name in spec.parameter_order:
        param = spec.parameters[name]
        if param.role != "nuisance":
            continue
        outer = [c for c in param.when if c.parent not in nuisance]
        if not all(c.holds(context) for c in outer):
            continue
        inner = [c for c in param.when if c.parent in nuisance]
        scopes = [hp.conditional_scope(c.parent, list(c.values)) for c in inner]
        for scope in scopes:
            scope.__enter__()
        try:
            _declare(hp, param)
        finally:
            for scope in reversed(scopes):
                scope.__exit__(None, None, None)
    return hp


def _declare(hp: Any, param: Any) -> None:
    if isinstance(param, ChoiceParameter):
        hp.Choice(param.name, list(param.values))
        return
    assert isinstance(param, RangeParameter)
    sampling = "log" if param.scale == "log" else "linear"
    if param.kind == "int":
        # No step on a log scale: KerasTuner reads a log step as a factor and refuses 1.
        hp.Int(param.name, int(param.low), int(param.high),
               step=None if param.step is None else int(param.step), sampling=sampling)
    else:
        hp.Float(param.name, param.low, param.high, step=param.step, sampling=sampling)


def _plain(value: Any) -> Any:
    return value.item() if hasattr(value, "item") else value
