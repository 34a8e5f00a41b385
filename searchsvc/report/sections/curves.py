"""Training curves of the best trials, with their diagnoses (still improving, overfitting,
unstable, ...) and their seed repeats' noise band."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from searchsvc.analysis import StudyAnalysis
from searchsvc.core import StudyRecord, TrialRecord
from searchsvc.report.plotdata import curve_plot
from searchsvc.report.sections.base import ReportContext, Section
from searchsvc.spec import StudySpec

if TYPE_CHECKING:
    import plotly.graph_objects as go


class Curves(Section):
    key = "curves"
    title = "Training curves of the best trials"
    md_rank = 50
    json_rank = 40

    def plots(self, spec: StudySpec, trials: Sequence[TrialRecord],
              analysis: StudyAnalysis) -> tuple[Any, ...]:
        plot = curve_plot(spec, trials, analysis)
        return () if plot is None else (plot,)

    def figures(self, plots: Sequence[Any]) -> list[tuple[str, go.Figure]]:
        from searchsvc.report.figures import curve_figure

        return [(p.key, curve_figure(p)) for p in plots]

    def data(self, study: StudyRecord, analysis: StudyAnalysis) -> dict[str, Any]:
        return {"curve_diagnostics": [
            {"trial_id": c.number, "number": c.number, "arm": c.arm, "issues": list(c.issues),
             "best_step": c.best_step, "last_step": c.last_step,
             "best_step_position": c.best_step_position, "details": list(c.details)}
            for c in analysis.curves
        ]}

    def markdown(self, context: ReportContext, images: Sequence[Path]) -> list[str]:
        curves = context.analysis.curves
        if not curves:
            return []
        return ["", "## Training curves of the best trials", "",
                "| trial | arm | best step | issues |", "|---|---|---|---|",
                *(f"| {c.number} | {c.arm} | {c.best_step}/{c.last_step} "
                  f"({c.best_step_position}) | {', '.join(c.issues) or 'none'} |"
                  for c in curves)]
