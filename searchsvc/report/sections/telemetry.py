"""Telemetry: time, memory and GPUs: per-trial summaries of what the workers measured,
GPU-hours, and the diagnoses drawn from them (input-bound, under-used GPU, out of memory);
drawn as each trial's mean step time and the share of it spent waiting for data."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from searchsvc.analysis import StudyAnalysis
from searchsvc.analysis.telemetry import INPUT_BOUND_FRACTION, StudyTelemetry
from searchsvc.core import StudyRecord, TrialRecord
from searchsvc.report.sections.base import Section
from searchsvc.spec import StudySpec

if TYPE_CHECKING:
    import plotly.graph_objects as go


class Telemetry(Section):
    key = "telemetry"
    title = "Telemetry: time, memory and GPUs"
    json_rank = 110

    def plots(self, spec: StudySpec, trials: Sequence[TrialRecord],
              analysis: StudyAnalysis) -> tuple[Any, ...]:
        plot = telemetry_plot(analysis.telemetry)
        return () if plot is None else (plot,)

    def figures(self, plots: Sequence[Any]) -> list[tuple[str, go.Figure]]:
        return [(p.key, telemetry_figure(p)) for p in plots]

    def data(self, study: StudyRecord, analysis: StudyAnalysis) -> dict[str, Any]:
        # per-trial summaries of the workers' telemetry, GPU-hours and the diagnoses
        return {"telemetry": analysis.telemetry.as_dict() if analysis.telemetry else None}


@dataclass(frozen=True)
class TelemetryBar:
    """One trial's mean step time and the share of it spent waiting for data (None: not
    measured)."""

    trial: str
    step_time_s: float
    data_wait: float | None


@dataclass(frozen=True)
class TelemetryPlot:
    """Per trial with telemetry: its mean step time, and its data-wait fraction against the
    input-bound threshold."""

    key: str
    title: str
    bars: tuple[TelemetryBar, ...]
    threshold: float  # the data-wait fraction above which a trial is input-bound


def telemetry_plot(telemetry: StudyTelemetry | None) -> TelemetryPlot | None:
    """The trials whose mean step time was measured (None: no such trial)."""
    shown = [t for t in (telemetry.trials if telemetry else ()) if t.step_time_mean_s is not None]
    if not shown:
        return None
    return TelemetryPlot(
        key="telemetry", title="Step time and data wait per trial",
        bars=tuple(TelemetryBar(str(t.number), float(t.step_time_mean_s),  # type: ignore[arg-type]
                                t.data_wait_fraction) for t in shown),
        threshold=INPUT_BOUND_FRACTION)


def telemetry_figure(plot: TelemetryPlot) -> go.Figure:
    """Per trial (with telemetry): mean step time (bars, left axis) and the fraction of it
    spent waiting for data (markers, right axis; the input-bound threshold dotted)."""
    import plotly.graph_objects as go

    fig = go.Figure()
    fig.add_trace(go.Bar(x=[b.trial for b in plot.bars], y=[b.step_time_s for b in plot.bars],
                         name="mean step time (s)"))
    waits = [b for b in plot.bars if b.data_wait is not None]
    if waits:
        fig.add_trace(go.Scatter(x=[b.trial for b in waits], y=[b.data_wait for b in waits],
                                 mode="markers", name="data-wait fraction", yaxis="y2",
                                 marker=dict(size=10, symbol="diamond")))
        fig.add_hline(y=plot.threshold, line_dash="dot", yref="y2",
                      annotation_text="input-bound above this")
    fig.update_layout(
        title=plot.title, height=380, xaxis_title="trial",
        xaxis_type="category", yaxis_title="mean step time (s)",
        yaxis2=dict(title="waiting for data", overlaying="y", side="right", range=[0, 1],
                    tickformat=".0%"),
        legend=dict(orientation="h", y=-0.25))
    return fig
