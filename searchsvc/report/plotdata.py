"""What the report's plot data is made of, shared by every section and chart: the pieces of
that data more than one of them draws (``Series``, ``CurveLine``/``CurvePlot``), the seeded
downsampling, and ``ReportPlots``, the data of one report's plots by section.

Each section's and chart's own plot data (its frozen dataclasses and the pure functions that
compute them from trials and analysis, as Optuna's ``_get_*_info``) lives in its own module,
``searchsvc/report/sections/<name>.py`` or ``searchsvc/report/charts/<name>.py``, next to its
drawings: which trials are drawn, where infeasible ones sit, axis scales, labels and titles
are decided there once, so report.html's Plotly figures and report.md's PNGs cannot disagree
and the decisions are tested without drawing anything. No plotting library is imported here.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

SAMPLE_SEED = 0  # downsampling is seeded: the same study gives the same plots every time

T = TypeVar("T")


@dataclass(frozen=True)
class Series:
    """Points drawn together under one legend entry; ``text[i]`` describes point i (hover)."""

    name: str
    x: tuple[Any, ...]
    y: tuple[float, ...]
    text: tuple[str, ...]


@dataclass(frozen=True)
class CurveLine:
    """One trial's curve; ``best`` is its best step and value, when marked on the curve."""

    name: str
    steps: tuple[int, ...]
    values: tuple[float, ...]
    best: tuple[int, float] | None
    best_text: str
    # The trial's seed repeats, step by step: mean -/+ one standard deviation (None: fewer
    # than two repeats with curves).
    band: tuple[tuple[int, ...], tuple[float, ...], tuple[float, ...]] | None = None


@dataclass(frozen=True)
class CurvePlot:
    """Lines over steps (training curves, a layer's dimensionality): drawn by ``curve_figure``
    of :mod:`searchsvc.report.figures`."""

    key: str
    title: str
    x_label: str
    y_label: str
    lines: tuple[CurveLine, ...]


@dataclass(frozen=True)
class ReportPlots:
    """Every plot of one report, by section (the section's key: its plot data, in the order
    it draws them; empty where the study has nothing to show)."""

    sections: Mapping[str, tuple[Any, ...]]

    def of(self, key: str) -> tuple[Any, ...]:
        """The plot data of the section ``key`` (empty: none, or no such section)."""
        return self.sections.get(key, ())


def seeded_sample(items: Sequence[T], count: int) -> list[T]:
    """``count`` of ``items`` drawn uniformly with SAMPLE_SEED: a large study's plots are
    downsampled the same way every time they are drawn."""
    return random.Random(SAMPLE_SEED).sample(list(items), count)
