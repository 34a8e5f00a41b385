"""What a trial is judged on: one or more objectives (a metric and a direction each) and
constraints on other metrics, evaluated on the trial's *final metrics* (the last finite value
of every metric it reported, as OSS Vizier's final measurement)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from searchsvc.core.curve import is_finite_number

Direction = Literal["min", "max"]


@dataclass(frozen=True)
class Objective:
    """A metric to minimise or maximise."""

    name: str
    mode: Direction


@dataclass(frozen=True)
class Constraint:
    """``low <= metric <= high`` (either bound may be absent) must hold for a trial to count as
    feasible. A trial that never reported ``metric`` is not feasible: nothing says it holds."""

    metric: str
    low: float | None = None
    high: float | None = None

    def violation(self, final_metrics: Mapping[str, float]) -> float | None:
        """How far the trial is outside the bounds (0 when inside); None when unreported."""
        value = final_metrics.get(self.metric)
        if value is None or not is_finite_number(value):
            return None
        over = value - self.high if self.high is not None else -math.inf
        under = self.low - value if self.low is not None else -math.inf
        return max(over, under, 0.0)

    def to_dict(self) -> dict[str, Any]:
        """As the study file writes it, and as stores and APIs keep it:
        ``{"metric": ..., "min": ..., "max": ...}``."""
        return {"metric": self.metric, "min": self.low, "max": self.high}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Constraint:
        """The constraint :meth:`to_dict` wrote."""
        return cls(str(data["metric"]), data.get("min"), data.get("max"))

    def describe(self) -> str:
        if self.low is not None and self.high is not None:
            return f"{self.low:g} <= {self.metric} <= {self.high:g}"
        if self.high is not None:
            return f"{self.metric} <= {self.high:g}"
        return f"{self.metric} >= {self.low:g}"


def update_final(final: MutableMapping[str, float], metrics: Mapping[str, Any]) -> None:
    """Fold one report's ``metrics`` into ``final``: each finite number replaces the earlier
    value of its metric (non-finite and non-numeric values are never final)."""
    for name, value in metrics.items():
        if is_finite_number(value):
            final[name] = float(value)


def final_metrics(reports: Iterable[Mapping[str, Any]]) -> dict[str, float]:
    """The final metrics of reports given in step order."""
    final: dict[str, float] = {}
    for metrics in reports:
        update_final(final, metrics)
    return final


def objective_values(objectives: Sequence[Objective], final: Mapping[str, float]
                     ) -> tuple[float, ...] | None:
    """The trial's value of each objective, in order; None when any is missing."""
    values = tuple(final.get(o.name) for o in objectives)
    if any(v is None for v in values):
        return None
    return tuple(float(v) for v in values if v is not None)


def violations(constraints: Sequence[Constraint], final: Mapping[str, float]
               ) -> tuple[float | None, ...]:
    """Each constraint's violation (0: satisfied; None: the metric was never reported)."""
    return tuple(c.violation(final) for c in constraints)
