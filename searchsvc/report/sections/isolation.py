"""Isolation: each scientific parameter's effect with the nuisance parameters tuned away,
judged against the seed noise, on the trials that reached the full budget (how many of each
value's trials early stopping stopped is shown next to the verdict: ``stopped``); drawn per
parameter as each value's best, its top trials and, with seed repeats, its mean's interval."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from searchsvc.analysis import StudyAnalysis
from searchsvc.core import StudyRecord, TrialRecord
from searchsvc.report.figures import LAYOUT
from searchsvc.report.plotdata import Series
from searchsvc.report.sections.base import ReportContext, Section
from searchsvc.spec import StudySpec

if TYPE_CHECKING:
    import plotly.graph_objects as go


class IsolationSection(Section):
    key = "isolation"
    title = "Isolation: scientific parameters"
    md_rank = 40
    json_rank = 30

    def plots(self, spec: StudySpec, trials: Sequence[TrialRecord],
              analysis: StudyAnalysis) -> tuple[Any, ...]:
        return isolation_plots(spec, analysis)

    def figures(self, plots: Sequence[Any]) -> list[tuple[str, go.Figure]]:
        return [(p.key, isolation_figure(p)) for p in plots]

    def data(self, study: StudyRecord, analysis: StudyAnalysis) -> dict[str, Any]:
        return {"isolation": [
            {"parameter": i.parameter, "verdict": i.verdict, "best_value": i.best_value,
             "gap": i.gap, "noise": i.noise, "detail": i.detail, "method": i.method,
             "difference_ci": [i.difference_low, i.difference_high],
             "seeds_needed": i.seeds_needed,
             "points": [{"value": p.value, "best": p.best, "trial_id": p.number,
                         "number": p.number, "trials": p.trials, "top_values": list(p.top_values),
                         "mean": p.mean, "ci_low": p.ci_low, "ci_high": p.ci_high,
                         "repeats": p.repeats, "repeat_of": p.repeat_of,
                         "stopped": p.stopped}
                        for p in i.points]}
            for i in analysis.isolation
        ]}

    def markdown(self, context: ReportContext, images: Sequence[Path]) -> list[str]:
        if not context.analysis.isolation:
            return []
        lines = ["", "## Isolation", ""]
        for iso in context.analysis.isolation:
            # A column of trials stopped early only where early stopping stopped some.
            stops = any(p.stopped for p in iso.points)
            lines += [f"**{iso.parameter}** — {iso.verdict}: {iso.detail}", "",
                      f"| {iso.parameter} | best {context.study.metric} | trial | trials |"
                      + (" stopped early |" if stops else ""),
                      "|---|---|---|---|" + ("---|" if stops else "")]
            lines += [f"| {p.value} | {_cell(p.best)} | {_cell(p.number)} | {p.trials} |"
                      + (f" {p.stopped} of {p.trials + p.stopped} |" if stops else "")
                      for p in iso.points]
            lines.append("")
        return lines


def _cell(value: float | int | None) -> str:
    """A table cell: a float to 5 significant digits; "—" for none (no trial of the value
    reached the full budget)."""
    if value is None:
        return "—"
    return f"{value:.5g}" if isinstance(value, float) else str(value)


@dataclass(frozen=True)
class IsolationPlot:
    """Best metric per scientific value (categorical x) after optimising away the nuisance
    parameters, with each value's top trials as the spread."""

    key: str
    parameter: str
    title: str
    x_label: str
    y_label: str
    best: Series
    spread: Series
    # With seed repeats: each value's best configuration's mean with its 95% interval.
    means: Series | None = None
    ci_low: tuple[float, ...] = ()
    ci_high: tuple[float, ...] = ()


def isolation_plots(spec: StudySpec, analysis: StudyAnalysis) -> tuple[IsolationPlot, ...]:
    """One IsolationPlot per isolated scientific parameter."""
    plots = []
    for iso in analysis.isolation:
        labels = tuple(str(p.value) for p in iso.points)
        # Each value's best over the trials that reached the full budget (a value none of
        # whose trials did has no point), with how many early stopping stopped.
        reached = [(label, p) for label, p in zip(labels, iso.points, strict=True)
                   if p.best is not None]
        best = Series("best trial", tuple(label for label, _ in reached),
                      tuple(float(p.best) for _, p in reached),  # type: ignore[arg-type]
                      tuple(f"trial {p.number}, {p.trials} trials"
                            + (f" ({p.stopped} more stopped early)" if p.stopped else "")
                            for _, p in reached))
        spread_x = tuple(label for label, p in zip(labels, iso.points, strict=True)
                         for _ in p.top_values)
        spread_y = tuple(v for p in iso.points for v in p.top_values)
        spread = Series("top trials", spread_x, spread_y, ("",) * len(spread_x))
        judged = [(label, p) for label, p in zip(labels, iso.points, strict=True)
                  if p.mean is not None and p.ci_low is not None and p.ci_high is not None]
        means = Series("mean over seed repeats (95% interval)",
                       tuple(label for label, _ in judged),
                       tuple(float(p.mean) for _, p in judged),  # type: ignore[arg-type]
                       tuple(f"trial {p.repeat_of}'s config, {p.repeats} seeds"
                             for _, p in judged)) if judged else None
        plots.append(IsolationPlot(
            key=f"isolation-{iso.parameter}", parameter=iso.parameter,
            title=f"Isolation: {iso.parameter} — {iso.verdict}", x_label=iso.parameter,
            y_label=f"best {spec.metric}", best=best, spread=spread, means=means,
            ci_low=tuple(float(p.ci_low) for _, p in judged),  # type: ignore[arg-type]
            ci_high=tuple(float(p.ci_high) for _, p in judged)))  # type: ignore[arg-type]
    return tuple(plots)


def isolation_figure(plot: IsolationPlot) -> go.Figure:
    """Each value's best as a line of markers, its top trials in grey, and, with seed
    repeats, its best configuration's mean with the 95% interval as an error bar."""
    import plotly.graph_objects as go

    fig = go.Figure()
    fig.add_trace(go.Scatter(x=plot.best.x, y=plot.best.y, mode="markers+lines",
                             name=plot.best.name, marker=dict(size=11), text=plot.best.text))
    fig.add_trace(go.Scatter(x=plot.spread.x, y=plot.spread.y, mode="markers",
                             name=plot.spread.name,
                             marker=dict(size=6, color="grey", opacity=0.6)))
    if plot.means is not None:
        fig.add_trace(go.Scatter(
            x=plot.means.x, y=plot.means.y, mode="markers", name=plot.means.name,
            text=plot.means.text, marker=dict(size=10, symbol="diamond", color="#c0302b"),
            error_y=dict(type="data", symmetric=False,
                         array=[h - m for h, m in zip(plot.ci_high, plot.means.y, strict=True)],
                         arrayminus=[m - lo for lo, m in zip(plot.ci_low, plot.means.y,
                                                              strict=True)])))
    fig.update_layout(title=plot.title, xaxis_title=plot.x_label, xaxis_type="category",
                      yaxis_title=plot.y_label, **LAYOUT)
    return fig
