"""One format for a length of time, wherever searchsvc shows one."""

from __future__ import annotations

import doctest
import math

import pytest

from searchsvc.core import durations
from searchsvc.core.durations import format_duration


@pytest.mark.parametrize("seconds, text", [
    (0, "0s"), (0.4, "0s"), (42, "42s"), (59.99, "59s"),  # whole seconds, fractions dropped
    (60, "1m 00s"), (65, "1m 05s"), (3599.9, "59m 59s"),
    (3600, "1h 00m"), (3725, "1h 02m"), (93784, "26h 03m"),  # hours go on past a day
    (-3.0, "0s"),  # a clock that stepped back reads as no time
])
def test_a_duration_reads_in_its_largest_two_units(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text


@pytest.mark.parametrize("seconds", [math.inf, -math.inf, math.nan])
def test_a_duration_that_is_not_finite_is_refused(seconds: float) -> None:
    with pytest.raises(ValueError, match="finite"):
        format_duration(seconds)


def test_the_docstrings_examples_hold() -> None:
    assert doctest.testmod(durations).failed == 0
