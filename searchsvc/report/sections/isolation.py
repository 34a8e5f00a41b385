"""Isolation: each scientific parameter's effect with the nuisance parameters tuned away,
judged against the seed noise, on the trials that reached the full budget (how many of each
value's trials early stopping stopped is shown next to the verdict: ``stopped``)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from searchsvc.analysis import StudyAnalysis
from searchsvc.core import StudyRecord, TrialRecord
from searchsvc.report.plotdata import isolation_plots
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
        from searchsvc.report.figures import isolation_figure

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
