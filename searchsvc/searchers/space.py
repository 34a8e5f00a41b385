"""Playbook role semantics over a spec: scientific arms, nuisance dimensions, trial configs.

A study's trials are split into *arms*, one per combination of scientific values (with `when`
conditions applied). Every arm gets an equal share of the budget and its own search over the
nuisance parameters; fixed parameters are copied into every config.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from typing import Any

from searchsvc.spec import ChoiceParameter, FixedParameter, Parameter, RangeParameter, StudySpec

Config = dict[str, Any]
Dimension = RangeParameter | ChoiceParameter  # a nuisance parameter: never a fixed one


@dataclass(frozen=True)
class Arm:
    """One combination of scientific values; ``values`` is empty for a plain optimisation."""

    index: int
    values: Mapping[str, Any]

    @property
    def label(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in self.values.items()) or "(all trials)"


def scientific_arms(spec: StudySpec) -> list[Arm]:
    """Every distinct combination of scientific values, conditions applied, in file order.
    Enumerates the product of the scientific parameters' values: callers keep it within
    ``SpecLimits.max_arms`` (see :func:`searchsvc.spec.limits.limit_issues`)."""
    scientific = [p for p in _ordered(spec) if p.role == "scientific"]
    fixed = {p.name: p.value for p in spec.fixed if isinstance(p, FixedParameter)}
    # Keyed by the values themselves (scientific values are plain scalars): a combination
    # that conditions make equal to an earlier one is found in O(1), not by a scan.
    arms: dict[tuple[tuple[str, Any], ...], dict[str, Any]] = {}
    for combo in itertools.product(*(p.choices() for p in scientific)):
        context = dict(fixed)
        values: dict[str, Any] = {}
        for param, value in zip(scientific, combo, strict=True):
            if param.is_active(context):
                context[param.name] = value
                values[param.name] = value
        arms.setdefault(tuple(values.items()), values)
    position = {name: i for i, name in enumerate(spec.parameters)}
    return [Arm(i, {k: a[k] for k in sorted(a, key=position.__getitem__)})
            for i, a in enumerate(arms.values())]


def nuisance_dimensions(spec: StudySpec) -> tuple[Dimension, ...]:
    """The nuisance parameters, one unit-cube dimension each (conditional ones included, so the
    dimension does not depend on which are active)."""
    return tuple(p for p in _ordered(spec)
                 if p.role == "nuisance" and not isinstance(p, FixedParameter))


def build_config(spec: StudySpec, arm: Arm, nuisance: Mapping[str, Any]) -> Config:
    """The config a trial receives: fixed values, the arm's scientific values, and the given
    nuisance values, keeping only parameters whose conditions hold, in file order."""
    context: Config = {}
    fill_context(_ordered(spec), arm, nuisance, context)
    return {name: context[name] for name in spec.parameters if name in context}


def fill_context(params: Iterable[Parameter], arm: Arm, nuisance: Mapping[str, Any],
                 context: MutableMapping[str, Any]) -> None:
    """Give each of ``params`` (in dependency order) whose conditions hold in ``context`` its
    value there: fixed, the arm's, or from ``nuisance``. :func:`build_config` over all the
    parameters; over a part closed under ``when`` parents, the same values for that part."""
    for param in params:
        if not param.is_active(context):
            continue
        if isinstance(param, FixedParameter):
            context[param.name] = param.value
        elif param.role == "scientific":
            if param.name in arm.values:
                context[param.name] = arm.values[param.name]
        elif param.name in nuisance:
            context[param.name] = nuisance[param.name]


def config_from_unit(spec: StudySpec, arm: Arm, point: Iterable[float]) -> Config:
    """The config for a point of the nuisance unit cube (one coordinate per nuisance dimension)."""
    dims = nuisance_dimensions(spec)
    values = {p.name: p.from_unit(u) for p, u in zip(dims, point, strict=True)}
    return build_config(spec, arm, values)


def on_grid(param: Parameter, value: Any) -> Any:
    """``value`` of a stepped float range as the spec's grid holds it (libraries add steps up:
    0.1 * 3 = 0.30000000000000004, which ``when`` conditions and the grid do not match);
    any other value unchanged."""
    if not isinstance(param, RangeParameter) or param.step is None or param.kind == "int":
        return value
    index = round((value - param.low) / param.step)
    return param.grid_value(min(max(index, 0), param.grid_size - 1))


def trial_seed(study_seed: int, number: int) -> int:
    """A distinct, reproducible seed per trial, handed to the objective."""
    return (study_seed * 1_000_003 + number * 7919 + 17) % (2**31 - 1)


def _ordered(spec: StudySpec) -> list[Parameter]:
    return [spec.parameters[name] for name in spec.parameter_order]


def arm_of(arms: Sequence[Arm], config: Mapping[str, Any]) -> Arm | None:
    """The arm whose scientific values ``config`` holds (None: none of them)."""
    for arm in arms:
        if all(k in config and config[k] == v for k, v in arm.values.items()):
            return arm
    return None


def fits_space(spec: StudySpec, config: Mapping[str, Any]) -> bool:
    """Whether ``config`` (another study's trial) is a point of ``spec``'s searched space:
    every searched parameter active under it is present and inside its range or values.
    Fixed values are not compared: a warm start matches trials on what is searched."""
    for param in spec.parameters.values():
        if not param.searched or not param.is_active(config):
            continue
        if param.name not in config:
            return False
        value = config[param.name]
        if isinstance(param, RangeParameter) and not param.is_discrete:
            if not (isinstance(value, int | float) and not isinstance(value, bool)
                    and param.low <= value <= param.high):
                return False
        elif not param.takes(value):
            return False
    return True
