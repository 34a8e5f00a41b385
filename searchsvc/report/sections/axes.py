"""Metric against each searched parameter: every trial's best value over each range, with
the range's edges and its boundary verdict."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from searchsvc.analysis import StudyAnalysis
from searchsvc.analysis.trials import search_trials
from searchsvc.core import TrialRecord
from searchsvc.report.plotdata import axis_plots
from searchsvc.report.sections.base import ReportContext, Section
from searchsvc.spec import StudySpec

if TYPE_CHECKING:
    import plotly.graph_objects as go


class Axes(Section):
    key = "axes"
    title = "Metric against each searched parameter"
    md_rank = 100

    def plots(self, spec: StudySpec, trials: Sequence[TrialRecord],
              analysis: StudyAnalysis) -> tuple[Any, ...]:
        return axis_plots(spec, search_trials(trials), analysis.boundaries)

    def figures(self, plots: Sequence[Any]) -> list[tuple[str, go.Figure]]:
        from searchsvc.report.figures import axis_figure

        return [(p.key, axis_figure(p)) for p in plots]

    def images(self, plots: Sequence[Any], folder: Path) -> list[Path]:
        from searchsvc.report.plots import axis_plots as axis_pngs

        return axis_pngs(plots, folder)

    def markdown(self, context: ReportContext, images: Sequence[Path]) -> list[str]:
        return ["", "## Metric against each searched parameter", "",
                *(f"![{p.stem}]({p})" for p in images)]
