"""What the scheduler did: the trials an early-stopping scheduler (ASHA, Hyperband, median)
stopped at each rung, and PBT's lineage of exploits."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from searchsvc.analysis import StudyAnalysis
from searchsvc.core import StudyRecord, TrialRecord
from searchsvc.report.plotdata import RungPlot, lineage_plot, rung_plot
from searchsvc.report.sections.base import ReportContext, Section, fmt
from searchsvc.spec import StudySpec

if TYPE_CHECKING:
    import plotly.graph_objects as go


class Scheduler(Section):
    key = "scheduler"
    title = "What the scheduler did"
    md_rank = 70  # the rungs; the lineage at LINEAGE_MD_RANK, after the replay
    json_rank = 60

    LINEAGE_MD_RANK = 90

    def plots(self, spec: StudySpec, trials: Sequence[TrialRecord],
              analysis: StudyAnalysis) -> tuple[Any, ...]:
        return tuple(p for p in (rung_plot(analysis), lineage_plot(trials, analysis))
                     if p is not None)

    def figures(self, plots: Sequence[Any]) -> list[tuple[str, go.Figure]]:
        from searchsvc.report.figures import lineage_figure, rung_figure

        return [(p.key, rung_figure(p) if isinstance(p, RungPlot) else lineage_figure(p))
                for p in plots]

    def data(self, study: StudyRecord, analysis: StudyAnalysis) -> dict[str, Any]:
        return {
            "rungs": [asdict(r) for r in analysis.rungs],
            "lineage": [
                {"trial_id": e.number, "number": e.number, "step": e.step, "parent": e.parent,
                 "parent_step": e.parent_step,
                 "changes": {k: {"old": a, "new": b} for k, (a, b) in e.changes.items()}}
                for e in analysis.lineage
            ],
        }

    def markdown_parts(self, context: ReportContext, images: Sequence[Path]
                       ) -> list[tuple[int, list[str]]]:
        analysis = context.analysis
        rungs: list[str] = []
        if analysis.rungs:
            rungs = ["", "## Early stopping", "", "| rung (step) | reached | stopped |",
                     "|---|---|---|",
                     *(f"| {r.step} | {r.reached} | {len(r.stopped)} |" for r in analysis.rungs)]
        lineage: list[str] = []
        if analysis.lineage:
            lineage = ["", "## PBT lineage", "",
                       *(f"- step {e.step}: trial {e.number} copied trial {e.parent} ("
                         + ", ".join(f"{k} {fmt(a)} → {fmt(b)}"
                                     for k, (a, b) in e.changes.items())
                         + ")" for e in analysis.lineage)]
        return [(self.md_rank, rungs), (self.LINEAGE_MD_RANK, lineage)]
