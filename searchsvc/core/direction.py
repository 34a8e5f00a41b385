"""The direction of a metric: whether lower or higher values are better. One type, so no layer
compares a mode string itself; a study file's ``mode: min | max`` is one of these (a str enum:
it prints, compares and stores as ``"min"`` / ``"max"``)."""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum
from typing import Literal


class Direction(StrEnum):
    """``min``: lower is better (a loss); ``max``: higher is better (an accuracy)."""

    MIN = "min"
    MAX = "max"

    @property
    def sign(self) -> float:
        """+1 for ``min``, -1 for ``max``: ``sign * value`` is a loss (lower is better)."""
        return 1.0 if self is Direction.MIN else -1.0

    @property
    def lower_is_better(self) -> bool:
        return self is Direction.MIN

    @property
    def optuna(self) -> Literal["minimize", "maximize"]:
        """Optuna's name for it: ``minimize`` or ``maximize``."""
        return "minimize" if self is Direction.MIN else "maximize"

    def loss(self, value: float) -> float:
        """``value`` as a loss: itself for ``min``, negated for ``max``."""
        return self.sign * value

    def better(self, a: float, b: float) -> bool:
        """Whether ``a`` is strictly better than ``b``."""
        return a < b if self is Direction.MIN else a > b

    def worst(self, values: Iterable[float]) -> float:
        """The worst of (non-empty) ``values``."""
        return max(values) if self is Direction.MIN else min(values)


def direction(mode: str) -> Direction:
    """The :class:`Direction` named ``mode`` (``"min"`` or ``"max"``); ValueError otherwise."""
    try:
        return Direction(mode)
    except ValueError:
        raise ValueError(f"mode {mode!r}: expected 'min' or 'max'") from None
