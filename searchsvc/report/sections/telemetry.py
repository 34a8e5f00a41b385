"""Telemetry: time, memory and GPUs: per-trial summaries of what the workers measured,
GPU-hours, and the diagnoses drawn from them (input-bound, under-used GPU, out of memory)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from searchsvc.analysis import StudyAnalysis
from searchsvc.core import StudyRecord, TrialRecord
from searchsvc.report.plotdata import telemetry_plot
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
        from searchsvc.report.figures import telemetry_figure

        return [(p.key, telemetry_figure(p)) for p in plots]

    def data(self, study: StudyRecord, analysis: StudyAnalysis) -> dict[str, Any]:
        # per-trial summaries of the workers' telemetry, GPU-hours and the diagnoses
        return {"telemetry": analysis.telemetry.as_dict() if analysis.telemetry else None}
