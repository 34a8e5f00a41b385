"""Parameter importance: each parameter's share of the metric's variance (fANOVA), and the
trials in parallel coordinates."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from searchsvc.analysis import StudyAnalysis
from searchsvc.analysis.trials import search_trials
from searchsvc.core import StudyRecord, TrialRecord
from searchsvc.report.plotdata import BarPlot, importance_plot, parallel_plot
from searchsvc.report.sections.base import ReportContext, Section
from searchsvc.spec import StudySpec

if TYPE_CHECKING:
    import plotly.graph_objects as go


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
        from searchsvc.report.figures import importance_figure, parallel_figure

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
