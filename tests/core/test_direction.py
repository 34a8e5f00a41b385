"""A metric's direction is one type: its sign, what is better and worse, and Optuna's name."""

from __future__ import annotations

import pytest

from searchsvc.core import Direction, best_of, direction, improves


def test_the_two_directions() -> None:
    low, high = direction("min"), direction("max")
    assert (low, high) == (Direction.MIN, Direction.MAX) and low == "min" and str(high) == "max"
    assert (low.sign, high.sign) == (1.0, -1.0)
    assert (low.loss(0.3), high.loss(0.3)) == (0.3, -0.3)
    assert low.better(0.1, 0.2) and not low.better(0.2, 0.2) and high.better(0.2, 0.1)
    assert (low.worst([1.0, 3.0, 2.0]), high.worst([1.0, 3.0, 2.0])) == (3.0, 1.0)
    assert (low.optuna, high.optuna) == ("minimize", "maximize")
    assert low.lower_is_better and not high.lower_is_better
    assert best_of([0.5, float("nan"), 0.2], "min") == 0.2 and improves(0.9, 0.5, "max")


def test_an_unknown_direction_is_refused_with_the_valid_ones() -> None:
    with pytest.raises(ValueError, match="mode 'lowest': expected 'min' or 'max'"):
        direction("lowest")
