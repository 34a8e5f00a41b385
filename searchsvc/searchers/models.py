"""Per-arm models of the model-based searchers, adapted from Optuna and hyperopt.

A model searches the nuisance parameters of one scientific arm. It is driven ask/tell style:
``suggest()`` returns nuisance values for a new trial and ``tell()`` feeds back a finished one —
either a trial it suggested or one replayed from the store on resume, which is how a resumed
study keeps everything its model had learnt.
"""

from __future__ import annotations

import logging
import warnings
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

import numpy as np

from searchsvc.core import TrialState
from searchsvc.core.direction import direction
from searchsvc.core.objectives import objective_values, violations
from searchsvc.searchers.space import on_grid
from searchsvc.spec import ChoiceParameter, Parameter, RangeParameter, StudySpec

Values = dict[str, Any]


class ArmModel(ABC):
    """A model-based search over the nuisance parameters of one arm.

    Contract: ``suggest(number)`` returns a value for every nuisance parameter that is active
    given ``context`` (the arm's fixed and scientific values) and the values chosen before it;
    ``tell(number, values, value, state, last_step, final_metrics)`` is called once per
    finished trial, whether or not this model suggested it. ``value`` is None unless the trial
    completed or was pruned; ``final_metrics`` (the last finite value of every metric it
    reported) is what a multi-objective study's objectives and its constraints are read from.
    """

    def __init__(self, spec: StudySpec, context: Mapping[str, Any], seed: int):
        self.spec, self.context, self.seed = spec, dict(context), seed
        self.minimize = direction(spec.mode).lower_is_better
        self.dims = [spec.parameters[n] for n in spec.parameter_order
                     if spec.parameters[n].role == "nuisance"]

    @abstractmethod
    def suggest(self, number: int) -> Values: ...

    @abstractmethod
    def tell(self, number: int, values: Mapping[str, Any], value: float | None, state: str,
             last_step: int | None, final_metrics: Mapping[str, float] | None = None
             ) -> None: ...

    def active(self, chosen: Mapping[str, Any]) -> list[Parameter]:
        """The nuisance parameters active given the arm and the values in ``chosen``."""
        known = {**self.context, **chosen}
        out = []
        for param in self.dims:
            if param.is_active(known):
                out.append(param)
                if param.name in chosen:
                    known[param.name] = chosen[param.name]
        return out

    def choose(self, pick: Callable[[Parameter], Any]) -> Values:
        """Define-by-run: ``pick`` a value for each nuisance parameter that is active given the
        arm and the values picked before it."""
        known, chosen = dict(self.context), {}
        for param in self.dims:
            if param.is_active(known):
                known[param.name] = chosen[param.name] = pick(param)
        return chosen


# --- Optuna (TPE, GP) ------------------------------------------------------------------------

def optuna_distribution(param: Parameter) -> Any:
    """The Optuna distribution of a searched parameter (log, step and int kept)."""
    from optuna.distributions import (
        CategoricalDistribution,
        FloatDistribution,
        IntDistribution,
    )

    if isinstance(param, ChoiceParameter):
        return CategoricalDistribution(list(param.values))
    assert isinstance(param, RangeParameter)
    log = param.scale == "log"
    if param.kind == "int":
        return IntDistribution(int(param.low), int(param.high), log=log,
                               step=int(param.step or 1))
    return FloatDistribution(param.low, param.high, log=log, step=param.step)


class OptunaModel(ArmModel):
    """Optuna's TPE (multivariate, grouped for conditional spaces, constant liar for parallel
    trials), GP or NSGA-II sampler, on an in-memory Optuna study, sampled define-by-run. A
    study with several objectives gets a multi-objective Optuna study (one direction per
    objective); each constraint's violation is the trial's Optuna constraint (Optuna's
    convention: <= 0 is satisfied), which every Optuna sampler reads."""

    def __init__(self, spec: StudySpec, context: Mapping[str, Any], seed: int, *, sampler: str,
                 warmup: int):
        super().__init__(spec, context, seed)
        import optuna

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            impl: optuna.samplers.BaseSampler
            if sampler == "gp":
                impl = optuna.samplers.GPSampler(seed=seed, n_startup_trials=warmup,
                                                 warn_independent_sampling=False)
            elif sampler == "nsga2":
                impl = optuna.samplers.NSGAIISampler(seed=seed, population_size=max(warmup, 4))
            else:
                impl = optuna.samplers.TPESampler(
                    seed=seed, n_startup_trials=warmup, multivariate=True, group=True,
                    constant_liar=True)
        self.study = optuna.create_study(
            directions=[direction(o.mode).optuna for o in spec.objectives],
            sampler=impl)
        self.asked: dict[int, Any] = {}

    def _outcome(self, value: float | None, state: str, final: Mapping[str, float] | None
                 ) -> tuple[Any, dict[str, float]]:
        """What to tell Optuna of a finished trial: its value(s) (None: failed) and its
        constraints by index (an unreported metric counts as violated). A trial infeasible by
        its constraints alone comes with its value (core.judging.searcher_value): Optuna's
        constrained samplers learn from it as a completed trial with violations."""
        final = final or {}
        constraints = {str(i): 1.0 if v is None else v
                       for i, v in enumerate(violations(self.spec.constraints, final))}
        if self.spec.multi_objective:
            values = objective_values(self.spec.objectives, final)
            return (list(values) if _has_values(state, value) and values is not None
                    else None), constraints
        return value, constraints

    def suggest(self, number: int) -> Values:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            trial = self.study.ask()
            chosen = self.choose(lambda param: _optuna_suggest(trial, param))
        self.asked[number] = trial
        return chosen

    def tell(self, number: int, values: Mapping[str, Any], value: float | None, state: str,
             last_step: int | None, final_metrics: Mapping[str, float] | None = None) -> None:
        import optuna
        from optuna.trial import TrialState

        trial = self.asked.pop(number, None)
        result, constraints = self._outcome(value, state, final_metrics)
        multi = self.spec.multi_objective
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if trial is not None:
                for key, violation in constraints.items():
                    trial.set_constraint(key, violation)
                if multi:
                    if result is not None:
                        self.study.tell(trial, result)
                    else:
                        self.study.tell(trial, state=TrialState.FAIL)
                elif _has_values(state, value):
                    self.study.tell(trial, value)
                elif state == TrialState.PRUNED and value is not None:
                    trial.report(value, last_step or 0)
                    self.study.tell(trial, state=TrialState.PRUNED)
                else:
                    self.study.tell(trial, state=TrialState.FAIL)
                return
            params = {p.name: values[p.name] for p in self.active(values) if p.name in values}
            dists = {name: optuna_distribution(self.spec.parameters[name]) for name in params}
            kwargs: dict[str, Any] = {"params": params, "distributions": dists,
                                      "constraints": constraints or None}
            if multi and result is not None:
                kwargs.update(state=TrialState.COMPLETE, values=result)
            elif multi:
                kwargs.update(state=TrialState.FAIL)
            elif _has_values(state, value):
                kwargs.update(state=TrialState.COMPLETE, value=value)
            elif state == TrialState.PRUNED and value is not None:
                kwargs.update(state=TrialState.PRUNED,
                              intermediate_values={last_step or 0: value})
            else:
                kwargs.update(state=TrialState.FAIL)
            try:
                self.study.add_trial(optuna.trial.create_trial(**kwargs))
            except ValueError as exc:  # a value outside the space (the file was edited)
                logging.getLogger(__name__).warning("not replayed into the model: %s", exc)


def _has_values(state: str, value: float | None) -> bool:
    """Whether Optuna is told the trial as complete: it completed, or only its constraints made
    it infeasible (then it comes with a value)."""
    return value is not None and state in (TrialState.COMPLETED, TrialState.INFEASIBLE)


def _optuna_suggest(trial: Any, param: Parameter) -> Any:
    dist = optuna_distribution(param)
    if isinstance(param, ChoiceParameter):
        return trial.suggest_categorical(param.name, dist.choices)
    if isinstance(param, RangeParameter) and param.kind == "int":
        return trial.suggest_int(param.name, dist.low, dist.high, step=dist.step, log=dist.log)
    return on_grid(param, trial.suggest_float(param.name, dist.low, dist.high, step=dist.step,
                                              log=dist.log))


# --- hyperopt (TPE) --------------------------------------------------------------------------

class HyperoptModel(ArmModel):
    """hyperopt's TPE (``tpe.suggest``) over a flat space: categorical choices by index, ranges
    as uniform positions in the parameter's own scale (so log ranges are log-uniform and
    int/step ranges are rounded by the spec). Inactive conditional values are ignored."""

    def __init__(self, spec: StudySpec, context: Mapping[str, Any], seed: int, *, warmup: int):
        super().__init__(spec, context, seed)
        import hyperopt
        from hyperopt import hp

        logging.getLogger("hyperopt").setLevel(logging.WARNING)
        space = {
            p.name: hp.choice(p.name, list(range(len(p.values))))
            if isinstance(p, ChoiceParameter) else hp.uniform(p.name, 0.0, 1.0)
            for p in self.dims
        }
        self.domain = hyperopt.Domain(lambda _: 0.0, space)
        self.trials = hyperopt.Trials()
        self.algo = partial(hyperopt.tpe.suggest, n_startup_jobs=warmup)
        self.rng = np.random.default_rng(seed)
        self.asked: dict[int, int] = {}

    def suggest(self, number: int) -> Values:
        [tid] = self.trials.new_trial_ids(1)
        docs = self.algo([tid], self.domain, self.trials, int(self.rng.integers(2**31 - 1)))
        self.trials.insert_trial_docs(docs)
        self.trials.refresh()
        self.asked[number] = tid
        raw = {k: v[0] for k, v in docs[0]["misc"]["vals"].items() if v}
        return self.choose(lambda param: _from_hyperopt(param, raw[param.name]))

    def tell(self, number: int, values: Mapping[str, Any], value: float | None, state: str,
             last_step: int | None, final_metrics: Mapping[str, float] | None = None) -> None:
        from hyperopt import JOB_STATE_DONE, JOB_STATE_ERROR, STATUS_FAIL, STATUS_OK

        ok = state == TrialState.COMPLETED and value is not None
        result = ({"status": STATUS_OK, "loss": value if self.minimize else -value}
                  if ok and value is not None else {"status": STATUS_FAIL})
        tid = self.asked.pop(number, None)
        if tid is None:  # replayed from the store: write the trial as hyperopt would have
            [tid] = self.trials.new_trial_ids(1)
            active = {p.name for p in self.active(values)}
            vals = {p.name: [_to_hyperopt(p, values[p.name])] if p.name in active
                    and p.name in values else [] for p in self.dims}
            misc = {"tid": tid, "cmd": self.domain.cmd, "workdir": None,
                    "idxs": {k: [tid] if v else [] for k, v in vals.items()}, "vals": vals}
            [doc] = self.trials.new_trial_docs([tid], [None], [result], [misc])
            self.trials.insert_trial_docs([doc])
        self.trials.refresh()
        for doc in self.trials._dynamic_trials:
            if doc["tid"] == tid:
                doc["result"] = result
                doc["state"] = JOB_STATE_DONE if ok else JOB_STATE_ERROR
        self.trials.refresh()


def _from_hyperopt(param: Parameter, raw: Any) -> Any:
    if isinstance(param, ChoiceParameter):
        return param.values[int(raw)]
    assert isinstance(param, RangeParameter)
    return param.from_unit(float(raw))


def _to_hyperopt(param: Parameter, value: Any) -> Any:
    if isinstance(param, ChoiceParameter):
        return param.values.index(value)
    assert isinstance(param, RangeParameter)
    return min(max(param.to_unit(float(value)), 0.0), 1.0)


SAMPLERS = ("tpe", "gp", "nsga2", "hyperopt")


def create_model(sampler: str, spec: StudySpec, context: Mapping[str, Any], seed: int,
                 warmup: int) -> ArmModel:
    """The model named ``sampler`` (one of :data:`SAMPLERS`) for one arm."""
    if sampler == "hyperopt":
        return HyperoptModel(spec, context, seed, warmup=warmup)
    if sampler in ("tpe", "gp", "nsga2"):
        return OptunaModel(spec, context, seed, sampler=sampler, warmup=warmup)
    raise ValueError(f"unknown sampler {sampler!r} (valid: {', '.join(SAMPLERS)})")
