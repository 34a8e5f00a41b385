"""A metric's learning curve and what "better" means: the one place that decides which values
count (finite ones) and which of two values is better in a study's mode."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from searchsvc.core.direction import direction


def is_finite_number(value: Any) -> bool:
    """A real number (not a bool) that is neither NaN nor infinite."""
    return (isinstance(value, int | float) and not isinstance(value, bool)
            and math.isfinite(value))


def improves(value: float | None, best: float | None, mode: str) -> bool:
    """Whether ``value`` is finite and beats ``best`` (None: nothing yet) in ``mode``."""
    if value is None or not is_finite_number(value):
        return False
    return best is None or direction(mode).better(float(value), best)


def best_of(values: Iterable[float | None], mode: str) -> float | None:
    """The best finite value of ``values`` in ``mode`` (None when there is none)."""
    best: float | None = None
    for value in values:
        if improves(value, best, mode):
            best = float(value)  # type: ignore[arg-type]
    return best


class Curve(tuple[tuple[int, float], ...]):
    """(step, value) pairs of one metric in step order, **finite values only**.

    The rule is enforced here, on construction, for every path that builds a curve (a live
    trial, a trial replayed from the store on resume, a simulated record in a test): a NaN or
    infinite report is not a point of the curve (the trial's state says it diverged), so no
    searcher or scheduler can be fed a value it would not have seen live.
    """

    __slots__ = ()

    def __new__(cls, points: Iterable[tuple[Any, Any]] = ()) -> Curve:
        return super().__new__(cls, ((int(s), float(v)) for s, v in points
                                     if is_finite_number(v)))

    @property
    def last_step(self) -> int | None:
        return self[-1][0] if self else None

    def value_at(self, step: int) -> float | None:
        """The value at the last point at or before ``step`` (None before the first)."""
        found = None
        for s, v in self:
            if s > step:
                break
            found = v
        return found

    def best(self, mode: str) -> tuple[int, float] | None:
        """(step, value) of the best point in ``mode``; the earliest one on ties."""
        found: tuple[int, float] | None = None
        for point in self:
            if improves(point[1], None if found is None else found[1], mode):
                found = point
        return found

    def before(self, step: int) -> Curve:
        """The points before ``step`` (what remains when a retry restarts at ``step``)."""
        return Curve(p for p in self if p[0] < step)
