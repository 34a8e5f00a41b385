"""Metric against each searched parameter: every trial's best value over each range, with
the range's edges and its boundary verdict; as Plotly figures for report.html and as PNGs
(``axis_<parameter>.png``) for report.md, both drawn from the same :class:`AxisPlot`.

A large study is downsampled so the plots stay usable: at most MAX_POINTS trials per plot,
the best quarter always among them (:func:`shown_trials`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from searchsvc.analysis import BoundaryCheck, StudyAnalysis
from searchsvc.analysis.trials import arm_label, search_trials
from searchsvc.core import TrialRecord, TrialState, is_finite_number
from searchsvc.core.direction import direction
from searchsvc.core.judging import by_value
from searchsvc.report.figures import LAYOUT
from searchsvc.report.plotdata import Series, seeded_sample
from searchsvc.report.plots import new_figure, save_png
from searchsvc.report.sections.base import ReportContext, Section
from searchsvc.spec import Parameter, RangeParameter, StudySpec

if TYPE_CHECKING:
    import plotly.graph_objects as go
    from matplotlib.figure import Figure

MAX_POINTS = 4000  # trials per axis plot; the best quarter always among them
NO_VALUE_HEIGHT = 1.0  # where infeasible trials sit when no trial has a finite value
INFEASIBLE_NAME = "diverged (NaN/inf)"
WEBGL_FROM = 3000  # trials per scatter plot above which WebGL draws them
STATUS_COLOURS = {"ok": "#2a7", "near_low": "#d80", "near_high": "#d80",
                  "divergence_edge": "#c33"}

Columns = tuple[list[Any], list[float], list[str]]  # a series' x, y and text, being gathered


class Axes(Section):
    key = "axes"
    title = "Metric against each searched parameter"
    md_rank = 100

    def plots(self, spec: StudySpec, trials: Sequence[TrialRecord],
              analysis: StudyAnalysis) -> tuple[Any, ...]:
        return axis_plots(spec, search_trials(trials), analysis.boundaries)

    def figures(self, plots: Sequence[Any]) -> list[tuple[str, go.Figure]]:
        return [(p.key, axis_figure(p)) for p in plots]

    def images(self, plots: Sequence[Any], folder: Path) -> list[Path]:
        return axis_pngs(plots, folder)

    def markdown(self, context: ReportContext, images: Sequence[Path]) -> list[str]:
        return ["", "## Metric against each searched parameter", "",
                *(f"![{p.stem}]({p})" for p in images)]


@dataclass(frozen=True)
class AxisPlot:
    """A trial's best metric against one searched parameter: one series per scientific arm,
    infeasible (diverged) trials as a series apart, each at its best finite value before it
    diverged, or, with none, at the worst edge of the plotted values (``worst_edge``: the
    lowest for ``max``, the highest for ``min``), never at a height that reads as good."""

    key: str  # "axis-<parameter>": the HTML element's id; the PNG is axis_<parameter>.png
    parameter: str
    title: str  # plain text; the boundary verdict is ``status``, drawn by each renderer
    x_label: str
    y_label: str
    x_log: bool
    edges: tuple[float, float] | None  # the declared range of a range parameter
    status: str | None  # the boundary check's verdict (ok, near_low, ...), if any
    arms: tuple[Series, ...]
    infeasible: Series | None
    shown: int  # trials drawn after downsampling (of ``total``)
    total: int


def axis_plots(spec: StudySpec, trials: Sequence[TrialRecord],
               boundaries: Sequence[BoundaryCheck] = ()) -> tuple[AxisPlot, ...]:
    """One AxisPlot per searched parameter, in the file's order, over ``shown_trials``."""
    checks = {c.parameter: c for c in boundaries}
    shown = shown_trials(spec, trials)
    note = "" if len(shown) == len(trials) else f" ({len(shown)} of {len(trials)} trials)"
    worst = worst_edge([t.best_value for t in shown], spec.mode)
    plots = []
    for param in spec.parameters.values():
        if not param.searched:
            continue
        arms, bad = _axis_series(param, shown, worst)
        x_log, edges, status = False, None, None
        if isinstance(param, RangeParameter):
            x_log, edges = param.scale == "log", (param.low, param.high)
            check = checks.get(param.name)
            status = check.status if check is not None else None
        plots.append(AxisPlot(
            key=f"axis-{param.name}", parameter=param.name,
            title=f"{spec.metric} vs {param.name} ({param.role}){note}",
            x_label=param.name, y_label=f"best {spec.metric} ({spec.mode})",
            x_log=x_log, edges=edges, status=status, arms=arms, infeasible=bad,
            shown=len(shown), total=len(trials)))
    return tuple(plots)


def _axis_series(param: Parameter, shown: Sequence[TrialRecord],
                 worst: float) -> tuple[tuple[Series, ...], Series | None]:
    """The trials that used ``param``: one series per arm, and the infeasible ones (at their
    best finite value, else at ``worst``)."""
    arms: dict[str, Columns] = {}
    bad: Columns = ([], [], [])
    for t in shown:
        if param.name not in t.config:
            continue  # a conditional parameter this trial did not use
        x = t.config[param.name]
        value = _finite(t.best_value)
        if t.state == TrialState.INFEASIBLE:
            bad[0].append(x)
            bad[1].append(worst if value is None else value)
            bad[2].append(f"trial {t.number} diverged")
        elif value is not None:
            xs, ys, text = arms.setdefault(arm_label(t) or "trials", ([], [], []))
            xs.append(x)
            ys.append(value)
            text.append(f"trial {t.number} ({t.state})")
    return (tuple(Series(label, tuple(xs), tuple(ys), tuple(text))
                  for label, (xs, ys, text) in arms.items()),
            Series(INFEASIBLE_NAME, tuple(bad[0]), tuple(bad[1]), tuple(bad[2]))
            if bad[0] else None)


def worst_edge(values: Sequence[float | None], mode: str) -> float:
    """The worst finite value in ``mode`` (the largest for ``min``, the smallest for ``max``):
    where an infeasible trial with no finite value is drawn, so that it never looks good."""
    finite = [v for v in map(_finite, values) if v is not None]
    if not finite:
        return NO_VALUE_HEIGHT
    return direction(mode).worst(finite)


def shown_trials(spec: StudySpec, trials: Sequence[TrialRecord]) -> list[TrialRecord]:
    """Every trial, or past MAX_POINTS the best MAX_POINTS // 4 plus a seeded uniform sample
    of the rest, in trial order: the front where decisions are made stays complete, the cloud
    stays light."""
    if len(trials) <= MAX_POINTS:
        return list(trials)
    top = by_value(trials, spec.mode)[:MAX_POINTS // 4]
    chosen = {t.number for t in top}
    rest = [t for t in trials if t.number not in chosen]
    sample = seeded_sample(rest, MAX_POINTS - len(top))
    return sorted([*top, *sample], key=lambda t: t.number)


def _finite(value: float | None) -> float | None:
    """``value`` as a float when it is a finite number, else None."""
    if value is None or not is_finite_number(value):
        return None
    return float(value)


def axis_figure(plot: AxisPlot) -> go.Figure:
    """One point per trial and one colour per arm; infeasible trials as red crosses; the
    declared range's edges as dotted lines; the boundary verdict, coloured, in the title."""
    import plotly.graph_objects as go

    fig = go.Figure()
    scatter = go.Scattergl if plot.shown > WEBGL_FROM else go.Scatter
    for arm in plot.arms:
        fig.add_trace(scatter(x=arm.x, y=arm.y, text=arm.text, mode="markers", name=arm.name,
                              marker=dict(size=6, opacity=0.75)))
    if plot.infeasible is not None:
        bad = plot.infeasible
        fig.add_trace(scatter(x=bad.x, y=bad.y, text=bad.text, mode="markers", name=bad.name,
                              marker=dict(symbol="x", color="red", size=8)))
    title = plot.title
    if plot.edges is not None:
        for edge in plot.edges:
            fig.add_vline(x=edge, line_dash="dot", line_color="grey")
    if plot.x_log:
        fig.update_xaxes(type="log")
    if plot.status is not None:
        colour = STATUS_COLOURS.get(plot.status, "#333")
        title += f" — <span style='color:{colour}'>{plot.status}</span>"
    fig.update_layout(title=title, xaxis_title=plot.x_label, yaxis_title=plot.y_label,
                      **LAYOUT)
    return fig


def axis_pngs(plots: Sequence[AxisPlot], folder: Path) -> list[Path]:
    """Write ``axis_<parameter>.png`` into ``folder`` for each plot; returns their paths in
    the order of ``plots``."""
    folder.mkdir(parents=True, exist_ok=True)
    return [save_png(draw_axis_plot(plot), folder / f"axis_{plot.parameter}.png")
            for plot in plots]


def draw_axis_plot(plot: AxisPlot) -> Figure:
    """``plot`` as a matplotlib figure, not yet saved: each arm's points in its own colour,
    infeasible trials as red crosses, the declared range's edges as dotted lines."""
    fig, ax = new_figure(5, 3.4)
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
