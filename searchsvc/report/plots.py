"""What the static plot files (PNG, matplotlib) share: a bare figure at the report's
resolution, and saving one into the plot folder. Each section's and chart's own drawing
(report.md's axis and replay PNGs, the campaign's figure) lives in its own module
(``searchsvc/report/sections/<name>.py``, ``searchsvc/report/charts/<name>.py``), drawing the
same plot data as its Plotly figures.

matplotlib is imported only inside the functions that draw."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

DPI = 110


def new_figure(width: float, height: float) -> tuple[Figure, Axes]:
    """A figure of ``width`` x ``height`` inches with one axes, not yet drawn on."""
    # A bare Figure, not pyplot: no global figure registry to leak into or close, and no
    # interactive backend is ever selected (savefig picks Agg for PNG by itself).
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=DPI)
    return fig, fig.subplots()


def save_png(fig: Figure, path: Path) -> Path:
    """``fig`` written to ``path`` (its folder made if need be); the path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    return path
