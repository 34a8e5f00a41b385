"""Playbook role semantics over a spec: scientific arms, nuisance dimensions, trial configs.

A study's trials are split into *arms*, one per combination of scientific values (with `when`
conditions applied). Every arm gets an equal share of the budget and its own search over the
nuisance parameters; fixed parameters are copied into every config.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from searchsvc.spec import FixedParameter, Parameter, StudySpec

Config = dict[str, Any]


@dataclass(frozen=True)
class Arm:
    """One combination of scientific values; ``values`` is empty for a plain optimisation."""

    index: int
    values: Mapping[str, Any]

    @property
    def label(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in self.values.items()) or "(all trials)"


def scientific_arms(spec: StudySpec) -> list[Arm]:
    """Every distinct combination of scientific values, conditions applied, in file order."""
    scientific = [p for p in _ordered(spec) if p.role == "scientific"]
    fixed = {p.name: p.value for p in spec.fixed if isinstance(p, FixedParameter)}
    arms: list[dict[str, Any]] = []
    for combo in itertools.product(*(p.choices() for p in scientific)):
        context = dict(fixed)
        values: dict[str, Any] = {}
        for param, value in zip(scientific, combo, strict=True):
            if param.is_active(context):
                context[param.name] = value
                values[param.name] = value
        if values not in arms:
            arms.append(values)
    file_order = list(spec.parameters)
    return [
        Arm(i, {k: a[k] for k in sorted(a, key=file_order.index)}) for i, a in enumerate(arms)
    ]


def nuisance_dimensions(spec: StudySpec) -> tuple[Parameter, ...]:
    """The nuisance parameters, one unit-cube dimension each (conditional ones included, so the
    dimension does not depend on which are active)."""
    return tuple(p for p in _ordered(spec) if p.role == "nuisance")


def build_config(spec: StudySpec, arm: Arm, nuisance: Mapping[str, Any]) -> Config:
    """The config a trial receives: fixed values, the arm's scientific values, and the given
    nuisance values, keeping only parameters whose conditions hold, in file order."""
    context: Config = {}
    for param in _ordered(spec):
        if not param.is_active(context):
            continue
        if isinstance(param, FixedParameter):
            context[param.name] = param.value
        elif param.role == "scientific":
            if param.name in arm.values:
                context[param.name] = arm.values[param.name]
        elif param.name in nuisance:
            context[param.name] = nuisance[param.name]
    return {name: context[name] for name in spec.parameters if name in context}


def config_from_unit(spec: StudySpec, arm: Arm, point: Sequence[float]) -> Config:
    """The config for a point of the nuisance unit cube (one coordinate per nuisance dimension)."""
    dims = nuisance_dimensions(spec)
    values = {p.name: p.from_unit(u) for p, u in zip(dims, point, strict=True)}  # type: ignore[union-attr]
    return build_config(spec, arm, values)


def trial_seed(study_seed: int, number: int) -> int:
    """A distinct, reproducible seed per trial, handed to the objective."""
    return (study_seed * 1_000_003 + number * 7919 + 17) % (2**31 - 1)


def _ordered(spec: StudySpec) -> list[Parameter]:
    return [spec.parameters[name] for name in spec.parameter_order]
