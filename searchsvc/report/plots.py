"""Static plot files (PNG, matplotlib) for report.md: the metric against every searched
parameter. Only draws: what each plot shows comes from ``plotdata``, shared with the HTML
report's Plotly figures."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from searchsvc.report.plotdata import AxisPlot, CampaignPlot, ReplayPlot

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
        if not any(arm.x for arm in plot.arms) and not (plot.infeasible and plot.infeasible.x):
            # No trial to place (e.g. every one failed): the declared range alone spans the
            # axis, which otherwise has no width and matplotlib warns.
            ax.set_xlim(*plot.edges)
        for edge in plot.edges:
            ax.axvline(edge, color="grey", lw=0.8, ls=":")
    ax.set_xlabel(plot.x_label)
    ax.set_ylabel(plot.y_label)
    ax.set_title(plot.title, fontsize=10)
    if plot.arms or plot.infeasible is not None:
        ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def replay_png(plot: ReplayPlot | None, folder: Path) -> Path | None:
    """Write ``replay.png`` into ``folder`` (None, and nothing written, without a replay)."""
    if plot is None:
        return None
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "replay.png"
    draw_replay_plot(plot).savefig(path)
    return path


def draw_replay_plot(plot: ReplayPlot) -> Figure:
    """``plot`` as a matplotlib figure, not yet saved: settings that keep the top trials in
    green, those that lose one as red crosses, the study's own best as a dotted line, the
    recommended setting labelled."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6, 3.6), dpi=110)
    ax = fig.subplots()
    ax.scatter(plot.kept.x, plot.kept.y, color="#2a7", label=plot.kept.name)
    ax.scatter(plot.lost.x, plot.lost.y, color="#c33", marker="x", label=plot.lost.name)
    if plot.full_best is not None:
        ax.axhline(plot.full_best, color="grey", lw=0.8, ls=":")
    for x, y, label in zip(plot.kept.x, plot.kept.y, plot.kept.text, strict=True):
        if label == plot.recommended:
            ax.annotate(f"recommended: {label}", (x, y), fontsize=7,
                        xytext=(4, 10), textcoords="offset points", ha="left")
    ax.set_xlabel(plot.x_label)
    ax.set_ylabel(plot.y_label)
    ax.set_title(plot.title, fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def draw_campaign_plot(plot: CampaignPlot) -> Figure:
    """``plot`` as a matplotlib figure, not yet saved: the best per round with its seed noise
    as an error bar, each round labelled with its study and the kinds of its decisions."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6, 3.4), dpi=110)
    ax = fig.subplots()
    ax.errorbar(plot.rounds, plot.best, yerr=plot.noise, marker="o", capsize=4)
    for x, y, label in zip(plot.rounds, plot.best, plot.labels, strict=True):
        ax.annotate(label, (x, y), fontsize=7, xytext=(4, 8), textcoords="offset points")
    ax.set_xticks(list(plot.rounds))
    ax.set_xlim(min(plot.rounds) - 0.3, max(plot.rounds) + 1.2)
    ax.set_xlabel(plot.x_label)
    ax.set_ylabel(plot.y_label)
    ax.set_title(plot.title, fontsize=9)
    fig.tight_layout()
    return fig
