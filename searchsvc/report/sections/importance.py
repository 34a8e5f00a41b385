"""Parameter importance: each parameter's share of the metric's variance (fANOVA), and the
trials in parallel coordinates (at most MAX_LINES lines, the best KEEP_LINES always among
them)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from searchsvc.analysis import StudyAnalysis
from searchsvc.analysis.trials import search_trials
from searchsvc.core import StudyRecord, TrialRecord
from searchsvc.core.direction import direction
from searchsvc.core.judging import by_value
from searchsvc.report.figures import LAYOUT
from searchsvc.report.plotdata import seeded_sample
from searchsvc.report.sections.base import ReportContext, Section
from searchsvc.spec import ChoiceParameter, Parameter, RangeParameter, StudySpec

if TYPE_CHECKING:
    import plotly.graph_objects as go

MAX_LINES = 2000  # parallel-coordinates lines
KEEP_LINES = 500  # the best lines, always among MAX_LINES


class Importance(Section):
    key = "importance"
    title = "Parameter importance"
    md_rank = 60
    json_rank = 50

    def plots(self, spec: StudySpec, trials: Sequence[TrialRecord],
              analysis: StudyAnalysis) -> tuple[Any, ...]:
        return tuple(p for p in (importance_plot(analysis),
                                 parallel_plot(spec, search_trials(trials))) if p is not None)

    def figures(self, plots: Sequence[Any]) -> list[tuple[str, go.Figure]]:
        return [(p.key, importance_figure(p) if isinstance(p, BarPlot) else parallel_figure(p))
                for p in plots]

    def data(self, study: StudyRecord, analysis: StudyAnalysis) -> dict[str, Any]:
        return {"importance": dict(analysis.importance)}

    def markdown(self, context: ReportContext, images: Sequence[Path]) -> list[str]:
        importance = context.analysis.importance
        if not importance:
            return []
        return ["", "## Parameter importance (fANOVA)", "",
                *(f"- {k}: {v:.0%}" for k, v in
                  sorted(importance.items(), key=lambda kv: -kv[1]))]


@dataclass(frozen=True)
class BarPlot:
    """Horizontal bars: ``values[i]`` (a fraction) for ``labels[i]``, smallest first."""

    key: str
    title: str
    labels: tuple[str, ...]
    values: tuple[float, ...]
    text: tuple[str, ...]


@dataclass(frozen=True)
class Dimension:
    """One parallel-coordinates axis; a choice parameter's values are coded 0..n-1 and named
    by ``tick_values``/``tick_text``."""

    label: str
    values: tuple[float, ...]
    tick_values: tuple[int, ...] | None = None
    tick_text: tuple[str, ...] | None = None


@dataclass(frozen=True)
class ParallelPlot:
    """One line per trial across ``dimensions`` (the last one is the metric), coloured by
    ``colour`` (the metric), the colour scale reversed when lower is better."""

    key: str
    title: str
    dimensions: tuple[Dimension, ...]
    colour: tuple[float, ...]
    lower_is_better: bool


def importance_plot(analysis: StudyAnalysis) -> BarPlot | None:
    """Each parameter's share of the metric's variance (fANOVA), smallest first."""
    if not analysis.importance:
        return None
    items = sorted(analysis.importance.items(), key=lambda kv: kv[1])
    return BarPlot(key="importance", title="Parameter importance (fANOVA share of variance)",
                   labels=tuple(k for k, _ in items), values=tuple(v for _, v in items),
                   text=tuple(f"{v:.0%}" for _, v in items))


def parallel_plot(spec: StudySpec, trials: Sequence[TrialRecord]) -> ParallelPlot | None:
    """Parallel coordinates over the searched parameters (log ranges as log10) and the metric;
    at most MAX_LINES trials, the best KEEP_LINES always included (None: fewer than two ranked
    trials, or no parameter every drawn trial has)."""
    usable = by_value(trials, spec.mode)
    if len(usable) < 2:
        return None
    if len(usable) > MAX_LINES:
        usable = usable[:KEEP_LINES] + seeded_sample(usable[KEEP_LINES:], MAX_LINES - KEEP_LINES)
    dims = [d for param in spec.parameters.values()
            if param.searched and all(param.name in t.config for t in usable)
            and (d := _dimension(param, [t.config[param.name] for t in usable])) is not None]
    if not dims:
        return None
    metric = tuple(t.best_value for t in usable if t.best_value is not None)  # all: ranked
    dims.append(Dimension(spec.metric, metric))
    return ParallelPlot(key="parallel", title="Parallel coordinates (brush an axis to filter)",
                        dimensions=tuple(dims), colour=metric,
                        lower_is_better=direction(spec.mode).lower_is_better)


def _dimension(param: Parameter, values: Sequence[Any]) -> Dimension | None:
    """``param``'s axis over ``values`` (None: a fixed parameter has none)."""
    if isinstance(param, RangeParameter):
        log = param.scale == "log"
        return Dimension(f"log10 {param.name}" if log else param.name,
                         tuple(math.log10(v) if log else v for v in values))
    if isinstance(param, ChoiceParameter):
        codes = {v: i for i, v in enumerate(param.values)}
        return Dimension(param.name, tuple(codes.get(v, 0) for v in values),
                         tuple(codes.values()), tuple(str(v) for v in codes))
    return None


def importance_figure(plot: BarPlot) -> go.Figure:
    """The shares as horizontal bars, labelled as percentages."""
    import plotly.graph_objects as go

    fig = go.Figure(go.Bar(x=plot.values, y=plot.labels, orientation="h", text=plot.text,
                           textposition="auto"))
    fig.update_layout(title=plot.title, xaxis_tickformat=".0%",
                      **{**LAYOUT, "height": 120 + 40 * len(plot.labels)})
    return fig


def parallel_figure(plot: ParallelPlot) -> go.Figure:
    """The dimensions as Plotly parallel coordinates, coloured by the metric."""
    import plotly.graph_objects as go

    dims = []
    for d in plot.dimensions:
        dim: dict[str, Any] = dict(label=d.label, values=d.values)
        if d.tick_values is not None:
            dim.update(tickvals=d.tick_values, ticktext=d.tick_text)
        dims.append(dim)
    fig = go.Figure(go.Parcoords(
        line=dict(color=plot.colour, colorscale="Viridis", showscale=True,
                  reversescale=plot.lower_is_better), dimensions=dims))
    fig.update_layout(title=plot.title,
                      **{**LAYOUT, "height": 420, "margin": dict(l=80, r=40, t=80, b=40)})
    return fig
