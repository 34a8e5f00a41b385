"""BOHB's model: hpbandster's BOHB config generator (Falkner et al., 2018), the reference
implementation Ray Tune's TuneBOHB also wraps, fed per budget with the values trials reached.

The search space is the arm's nuisance parameters as a ConfigSpace space: ranges keep their log
scale, stepped ranges become the integer index of their step (hpbandster's BOHB refuses ordinal
hyperparameters, and an index never lists the values, however many), choices categorical, and
``when`` conditions on other nuisance parameters become ConfigSpace conditions.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import numpy as np

from searchsvc.core.direction import direction
from searchsvc.spec import ChoiceParameter, Condition, RangeParameter, StudySpec


class _Job:
    """The slice of hpbandster's Job that its config generator reads."""

    def __init__(self, config: Mapping[str, Any], budget: float, loss: float | None):
        self.id = ("searchsvc", float(budget))  # hpbandster logs it when a job failed
        self.kwargs = {"config": dict(config), "budget": float(budget)}
        self.result = None if loss is None else {"loss": float(loss)}
        self.exception = None if loss is not None else "failed"
        self.timestamps: dict[str, float] = {}


class BohbModel:
    """One arm's BOHB model: ``suggest`` a config, ``tell`` the value a config reached at a
    budget (None: it failed before reaching it)."""

    def __init__(self, spec: StudySpec, context: Mapping[str, Any], seed: int, *,
                 random_fraction: float, top_n_percent: int):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from hpbandster.optimizers.config_generators.bohb import BOHB
        logging.getLogger("hpbandster").setLevel(logging.WARNING)
        self.spec, self.context, self.minimize = spec, dict(context), direction(
            spec.mode).lower_is_better
        self.space, self.params, self.indexed = _config_space(spec, self.context, seed)
        self.rng = np.random.default_rng(seed)
        self.generator = BOHB(self.space, min_points_in_model=None, top_n_percent=top_n_percent,
                              random_fraction=random_fraction)

    def suggest(self, number: int, budget: float) -> dict[str, Any]:
        with _seeded_numpy(int(self.rng.integers(2**31 - 1))), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            raw, _info = self.generator.get_config(float(budget))
        values = {name: _plain(value) for name, value in raw.items()}
        for name, param in self.indexed.items():
            if name in values:
                values[name] = param.grid_value(int(values[name]))
        return values

    def tell(self, config: Mapping[str, Any], budget: float, value: float | None) -> None:
        values = {k: v for k, v in config.items() if k in self.params}
        for name, param in self.indexed.items():
            if name in values:
                values[name] = param.grid_index(values[name])
        if None in values.values() or not _valid(self.space, values):
            return  # e.g. a config from before the study file was edited
        loss = None if value is None else (value if self.minimize else -value)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.generator.new_result(_Job(values, budget, loss), update_model=True)


def _config_space(spec: StudySpec, context: Mapping[str, Any], seed: int
                  ) -> tuple[Any, set[str], dict[str, RangeParameter]]:
    """The arm's space, the names in it, and the stepped ranges it holds as step indices."""
    import ConfigSpace as CS

    space = CS.ConfigurationSpace(seed=seed)
    names: set[str] = set()
    indexed: dict[str, RangeParameter] = {}
    conditions: list[CS.conditions.ConditionLike] = []
    for name in spec.parameter_order:
        param = spec.parameters[name]
        if param.role != "nuisance":
            continue
        outer = [c for c in param.when if c.parent not in _nuisance_names(spec)]
        if not all(c.holds(context) for c in outer):
            continue  # never active in this arm
        hp: CS.hyperparameters.Hyperparameter
        if isinstance(param, ChoiceParameter):
            hp = CS.CategoricalHyperparameter(name, list(param.values))
        elif isinstance(param, RangeParameter) and param.step is not None:
            hp = CS.UniformIntegerHyperparameter(name, 0, param.grid_size - 1)
            indexed[name] = param
        elif isinstance(param, RangeParameter) and param.kind == "int":
            hp = CS.UniformIntegerHyperparameter(name, int(param.low), int(param.high),
                                                 log=param.scale == "log")
        else:
            assert isinstance(param, RangeParameter)
            hp = CS.UniformFloatHyperparameter(name, param.low, param.high,
                                               log=param.scale == "log")
        space.add(hp)
        names.add(name)
        inner = [c for c in param.when if c.parent in names]
        parts = [CS.InCondition(hp, space[c.parent], _condition_values(c, indexed))
                 for c in inner]
        if len(parts) == 1:
            conditions.append(parts[0])
        elif parts:
            conditions.append(CS.AndConjunction(*parts))
    if conditions:
        space.add(conditions)
    return space, names, indexed


def _condition_values(condition: Condition, indexed: Mapping[str, RangeParameter]) -> list[Any]:
    """The values a condition wants, as its parent's hyperparameter holds them."""
    parent = indexed.get(condition.parent)
    if parent is None:
        return list(condition.values)
    return [i for i in map(parent.grid_index, condition.values) if i is not None]


def _nuisance_names(spec: StudySpec) -> set[str]:
    return {p.name for p in spec.nuisance}


def _valid(space: Any, values: Mapping[str, Any]) -> bool:
    import ConfigSpace as CS

    try:
        CS.Configuration(space, values=dict(values))
    except Exception:  # ConfigSpace raises several types for out-of-space values
        return False
    return True


def _plain(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value


@contextmanager
def _seeded_numpy(seed: int) -> Iterator[None]:
    """hpbandster draws from NumPy's global generator: seed it for this call only."""
    state = np.random.get_state()
    np.random.seed(seed)
    try:
        yield
    finally:
        np.random.set_state(state)
