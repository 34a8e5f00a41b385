"""Representation dimensionality: what ``sdk.watch`` measured, each watched layer's
participation ratio over training, the collapses and what the early values predict."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from searchsvc.analysis import StudyAnalysis
from searchsvc.analysis.trials import search_trials
from searchsvc.core import StudyRecord, TrialRecord
from searchsvc.report.plotdata import dimensionality_plots
from searchsvc.report.sections.base import Section
from searchsvc.spec import StudySpec

if TYPE_CHECKING:
    import plotly.graph_objects as go


class Dimensionality(Section):
    key = "dimensionality"
    title = "Representation dimensionality"
    json_rank = 120

    def plots(self, spec: StudySpec, trials: Sequence[TrialRecord],
              analysis: StudyAnalysis) -> tuple[Any, ...]:
        return dimensionality_plots(spec, search_trials(trials), analysis)

    def figures(self, plots: Sequence[Any]) -> list[tuple[str, go.Figure]]:
        from searchsvc.report.figures import curve_figure

        return [(p.key, curve_figure(p)) for p in plots]

    def data(self, study: StudyRecord, analysis: StudyAnalysis) -> dict[str, Any]:
        # what sdk.watch measured (analysis/dimensionality.py; null: nothing was)
        dims = analysis.dimensionality
        return {"dimensionality": dims.as_dict() if dims else None}
