"""Static plot files (PNG, matplotlib) for report.md: the metric against every searched
parameter. Only draws: what each plot shows comes from ``plotdata``, shared with the HTML
report's Plotly figures."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from searchsvc.report.plotdata import AxisPlot

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def axis_plots(plots: Sequence[AxisPlot], folder: Path) -> list[Path]:
    """Write ``axis_<parameter>.png`` into ``folder`` for each plot; returns their paths in
    the order of ``plots``."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for plot in plots:
        path = folder / f"axis_{plot.parameter}.png"
        draw_axis_plot(plot).savefig(path)
        paths.append(path)
    return paths


def draw_axis_plot(plot: AxisPlot) -> Figure:
    """``plot`` as a matplotlib figure, not yet saved: each arm's points in its own colour,
    infeasible trials as red crosses, the declared range's edges as dotted lines."""
    # A bare Figure, not pyplot: no global figure registry to leak into or close, and no
    # interactive backend is ever selected (savefig picks Agg for PNG by itself).
    from matplotlib.figure import Figure

    fig = Figure(figsize=(5, 3.4), dpi=110)
    ax = fig.subplots()
    for arm in plot.arms:
        ax.scatter(arm.x, arm.y, s=18, alpha=0.8, label=arm.name)
    if plot.infeasible is not None:
        bad = plot.infeasible
        ax.scatter(bad.x, bad.y, marker="x", color="red", label=bad.name)
    if plot.x_log:
        ax.set_xscale("log")
    if plot.edges is not None:
        for edge in plot.edges:
            ax.axvline(edge, color="grey", lw=0.8, ls=":")
    ax.set_xlabel(plot.x_label)
    ax.set_ylabel(plot.y_label)
    ax.set_title(plot.title, fontsize=10)
    if plot.arms or plot.infeasible is not None:
        ax.legend(fontsize=7)
    fig.tight_layout()
    return fig
