"""The typed, immutable study spec: what a study file means once it has been validated.

Parameters come in three shapes: a numeric range (:class:`RangeParameter`), a list of choices
(:class:`ChoiceParameter`) and a held value (:class:`FixedParameter`). Every one has a role
(scientific, nuisance or fixed, as in the Deep Learning Tuning Playbook) and may be conditional
on other parameters (``when``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property
from types import MappingProxyType
from typing import Any, Literal

from searchsvc.core.objectives import Constraint, Objective
from searchsvc.core.stopping import StoppingRule
from searchsvc.plugins import BACKENDS, SEARCHERS, TRACKERS
from searchsvc.spec.references import CALLABLE_FIELD
from searchsvc.spec.source import SpecSource

Role = Literal["scientific", "nuisance", "fixed"]
Scale = Literal["linear", "log"]
Mode = Literal["min", "max"]
Scalar = str | int | float | bool

ROLES: tuple[Role, ...] = ("scientific", "nuisance", "fixed")


@dataclass(frozen=True)
class Condition:
    """``parent`` must take one of ``values`` for the owning parameter to exist in a trial."""

    parent: str
    values: tuple[Scalar, ...]

    def holds(self, config: Mapping[str, Any]) -> bool:
        return self.parent in config and _member(config[self.parent], self.values,
                                                 self._value_set)

    @cached_property
    def _value_set(self) -> frozenset[Scalar]:
        # holds() runs for every parameter of every config a searcher builds: keep it O(1)
        # however many values a condition lists.
        return frozenset(self.values)


@dataclass(frozen=True)
class _ParameterBase:
    name: str
    role: Role
    when: tuple[Condition, ...] = ()

    def is_active(self, config: Mapping[str, Any]) -> bool:
        """Whether this parameter exists given the values chosen so far."""
        return all(c.holds(config) for c in self.when)

    @property
    def searched(self) -> bool:
        return self.role != "fixed"


@dataclass(frozen=True)
class RangeParameter(_ParameterBase):
    """A float or int between ``low`` and ``high`` (both included), optionally on a log scale
    and/or a grid of ``step``."""

    kind: Literal["float", "int"] = "float"
    low: float = 0.0
    high: float = 1.0
    scale: Scale = "linear"
    step: float | None = None

    @property
    def is_discrete(self) -> bool:
        return self.kind == "int" or self.step is not None

    def to_unit(self, value: float) -> float:
        """Position of ``value`` in [0, 1] along the parameter's own scale."""
        if self.scale == "log":
            lo, hi, v = math.log(self.low), math.log(self.high), math.log(value)
        else:
            lo, hi, v = self.low, self.high, value
        return (v - lo) / (hi - lo)

    def from_unit(self, u: float) -> float | int:
        """Map ``u`` in [0, 1) to a value, uniformly in the parameter's own scale."""
        u = min(max(u, 0.0), 1.0)
        if self.step is not None or (self.kind == "int" and self.scale == "linear"):
            size = self.grid_size
            # Beyond 2**53 values a float product would be inexact or overflow: exact instead.
            index = int(u * size) if size < 2**53 else math.floor(Fraction(u) * size)
            return self.grid_value(min(index, size - 1))
        if self.scale == "log":
            value = math.exp(math.log(self.low) + u * (math.log(self.high) - math.log(self.low)))
        else:
            value = self.low + u * (self.high - self.low)
        if self.kind == "int":
            return int(min(max(round(value), self.low), self.high))
        return float(min(max(value, self.low), self.high))

    @property
    def grid_size(self) -> int:
        """How many values a discrete range has, computed (never enumerated)."""
        if not self.is_discrete:
            raise ValueError(f"{self.name} is continuous and has no grid")
        if self.kind == "int":
            return (int(self.high) - int(self.low)) // int(self.step or 1) + 1
        assert self.step is not None
        return math.floor((self.high - self.low) / self.step + 1e-9) + 1

    def grid_value(self, index: int) -> float | int:
        """The ``index``-th value of the grid (0-based), as :meth:`grid` would list it."""
        if not 0 <= index < self.grid_size:
            raise IndexError(f"{self.name} has {self.grid_size} grid values; no index {index}")
        if self.kind == "int":
            return int(self.low) + index * int(self.step or 1)
        assert self.step is not None
        return round(self.low + index * self.step, 12)

    def grid(self) -> tuple[float | int, ...]:
        """Every value of a discrete range, in order. Continuous ranges have no grid.
        Allocates :attr:`grid_size` values: callers that may meet a large range count with
        :attr:`grid_size` and index with :meth:`grid_value` instead."""
        return tuple(self.grid_value(i) for i in range(self.grid_size))

    def takes(self, value: Any) -> bool:
        """Whether ``value`` equals (==) one of the grid's values, computed arithmetically."""
        return self.grid_index(value) is not None

    def grid_index(self, value: Any) -> int | None:
        """The index of ``value`` in the grid (the ``i`` with ``grid_value(i) == value``), or
        None when the grid does not hold it. Computed, not searched."""
        if not self.is_discrete or not isinstance(value, int | float):
            return None
        if isinstance(value, float) and not math.isfinite(value):
            return None
        if self.kind == "int":
            step = int(self.step or 1)
            offset = int(value) - int(self.low)
            inside = value == int(value) and self.low <= value <= self.high
            return offset // step if inside and offset % step == 0 else None
        assert self.step is not None
        try:
            near = round((value - self.low) / self.step)
        except OverflowError:  # an int far beyond float range
            return None
        # The grid's values are rounded to 12 decimals: look at the neighbours too.
        return next((i for i in (near, near - 1, near + 1)
                     if 0 <= i < self.grid_size and self.grid_value(i) == value), None)

    def choices(self) -> tuple[Scalar, ...]:
        return self.grid()


@dataclass(frozen=True)
class ChoiceParameter(_ParameterBase):
    """One of an explicit list of ``values`` (categorical, or a discrete list of numbers)."""

    kind: Literal["float", "int", "categorical"] = "categorical"
    values: tuple[Scalar, ...] = ()

    is_discrete = True

    def from_unit(self, u: float) -> Scalar:
        return self.values[min(int(max(u, 0.0) * len(self.values)), len(self.values) - 1)]

    def choices(self) -> tuple[Scalar, ...]:
        return self.values

    def takes(self, value: Any) -> bool:
        """Whether ``value`` equals (==) one of ``values``."""
        return _member(value, self.values, self._value_set)

    @cached_property
    def _value_set(self) -> frozenset[Scalar]:
        return frozenset(self.values)


@dataclass(frozen=True)
class FixedParameter(_ParameterBase):
    """A value held constant: passed to the objective unchanged and recorded, never searched."""

    value: Any = None
    role: Role = "fixed"

    is_discrete = True

    def choices(self) -> tuple[Any, ...]:
        return (self.value,)

    def takes(self, value: Any) -> bool:
        return bool(value == self.value)


Parameter = RangeParameter | ChoiceParameter | FixedParameter


def _member(value: Any, values: tuple[Any, ...], value_set: frozenset[Any]) -> bool:
    """``value in values`` in O(1) for hashable values (a fixed parameter's list or mapping
    value is not hashable: compared one by one)."""
    try:
        return value in value_set
    except TypeError:
        return value in values


@dataclass(frozen=True)
class Budget:
    trials: int | None = None
    max_concurrent: int | None = None
    max_steps: int | None = None
    time_limit_s: float | None = None
    max_failures: int = 0
    trial_timeout_s: float | None = None
    # Stop when the first N trials of a run all failed alike and none produced a result
    # (core.failures.fail_fast); 0: never.
    fail_fast: int = 3


@dataclass(frozen=True)
class Resources:
    """Per trial, or per worker of a data-parallel trial."""

    cpu: float = 1.0
    gpu: float = 0.0  # the share of a GPU each trial holds (with gpu_auto: the first trials')
    # ``gpu: auto``: the first trial runs on a whole GPU (``gpu`` is 1), the driver packs the
    # rest by its measured peak memory and utilisation (core/packing.py)
    gpu_auto: bool = False
    # Ray Train workers per trial, when the file sets ``workers`` (even 1: a training function
    # written for Ray Train then runs as a Train run of one worker); None: a plain Tune trial.
    workers: int | None = None

    @property
    def data_parallel(self) -> bool:
        """Whether each trial runs on Ray Train workers."""
        return self.workers is not None

    @property
    def worker_count(self) -> int:
        """The processes one trial trains on."""
        return self.workers or 1


@dataclass(frozen=True)
class Checkpoints:
    keep_best: int | None = None


@dataclass(frozen=True)
class Noise:
    """Seed repeats after the search: each arm's ``top_k`` best configurations (completed
    trials first, then pruned ones) run again with ``seeds`` new seeds each, for their whole
    budget. ``explicit``: the study file asked for them (rather than getting the default)."""

    top_k: int = 2
    seeds: int = 3
    explicit: bool = False


@dataclass(frozen=True)
class Dimensionality:
    """When ``sdk.watch`` measures (worker/dimensionality.py): ``every`` training forward
    passes ("auto": adaptive, at most 5% of the training time); ``until`` reported steps, or
    that fraction of ``budget.max_steps`` when below 1 ("off": the whole trial)."""

    every: str | int = "auto"
    until: str | int | float = "off"
    stop_collapsed: bool = False  # multi-fidelity searchers stop a trial whose layer collapsed

    def settings(self) -> tuple[tuple[str, object], ...]:
        """What a trial's worker is told (``TrialSettings.dimensionality``)."""
        return (("every", self.every), ("until", self.until))


@dataclass(frozen=True, init=False)
class Tracking:
    """The experiment trackers a study is written to as it runs: each registered tracker's
    settings (its ``Options``) by its name, read as an attribute (``tracking.<name>``: None
    when the study does not turn that tracker on)."""

    settings: tuple[tuple[str, Any], ...] = ()

    def __init__(self, **settings: Any):
        object.__setattr__(self, "settings", tuple(sorted(
            (name, value) for name, value in settings.items() if value is not None)))

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or name not in TRACKERS:
            raise AttributeError(f"{type(self).__name__!r} has no attribute {name!r} (not a "
                                 "registered tracker)")
        return self.get(name)

    def get(self, name: str) -> Any:
        """The settings of tracker ``name`` (None: not turned on)."""
        return dict(self.settings).get(name)

    @property
    def enabled(self) -> bool:
        return bool(self.settings)


@dataclass(frozen=True)
class StudySpec:
    """A validated study. Parameters keep the file's order; ``parameter_order`` is an order in
    which every parameter comes after the parameters its ``when`` depends on."""

    name: str
    objective: str = field(metadata=CALLABLE_FIELD)
    metric: str
    mode: Mode
    parameters: Mapping[str, Parameter]
    parameter_order: tuple[str, ...]
    description: str = ""
    backend: str = BACKENDS.default_name()
    backend_options: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    searcher: str = SEARCHERS.default_name()
    searcher_options: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    budget: Budget = field(default_factory=Budget)
    resources: Resources = field(default_factory=Resources)
    priority: int = 0  # on a shared cluster: higher takes free slots first
    seed: int = 0
    checkpoints: Checkpoints = field(default_factory=Checkpoints)
    noise: Noise | None = None  # None: no repeats (`noise: off`, or no scientific parameter)
    parent: str | None = None  # the study this one was suggested by
    warm_start: str | None = None  # a stored study whose trials seed the searcher's model
    dimensionality: Dimensionality = field(default_factory=Dimensionality)
    early_stopping: StoppingRule | None = None  # the file's `early_stopping:` block
    tracking: Tracking = field(default_factory=Tracking)  # MLflow / TensorBoard (none by default)
    # Every objective, the first being ``metric``/``mode`` (a single-objective study has
    # one); constraints on the trials' final metrics.
    objectives: tuple[Objective, ...] = ()
    constraints: tuple[Constraint, ...] = ()
    source: SpecSource = field(default_factory=SpecSource, compare=False)

    def __post_init__(self) -> None:
        if not self.objectives:
            object.__setattr__(self, "objectives", (Objective(self.metric, self.mode),))

    @property
    def multi_objective(self) -> bool:
        return len(self.objectives) > 1

    def by_role(self, role: Role) -> tuple[Parameter, ...]:
        return tuple(p for p in self.parameters.values() if p.role == role)

    @property
    def scientific(self) -> tuple[Parameter, ...]:
        return self.by_role("scientific")

    @property
    def nuisance(self) -> tuple[Parameter, ...]:
        return self.by_role("nuisance")

    @property
    def fixed(self) -> tuple[Parameter, ...]:
        return self.by_role("fixed")
