"""Early stopping, replayed: every early-stopping setting replayed on the study's full
curves, what each would have saved and kept, and the one recommended."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from searchsvc.analysis import StudyAnalysis
from searchsvc.core import StudyRecord, TrialRecord
from searchsvc.report.plotdata import replay_plot
from searchsvc.report.sections.base import ReportContext, Section, fmt
from searchsvc.spec import StudySpec

if TYPE_CHECKING:
    import plotly.graph_objects as go


class ReplaySection(Section):
    key = "replay"
    title = "Early stopping, replayed"
    md_rank = 80
    json_rank = 130

    def plots(self, spec: StudySpec, trials: Sequence[TrialRecord],
              analysis: StudyAnalysis) -> tuple[Any, ...]:
        plot = replay_plot(analysis.replay)
        return () if plot is None else (plot,)

    def figures(self, plots: Sequence[Any]) -> list[tuple[str, go.Figure]]:
        from searchsvc.report.figures import replay_figure

        return [(p.key, replay_figure(p)) for p in plots]

    def images(self, plots: Sequence[Any], folder: Path) -> list[Path]:
        from searchsvc.report.plots import replay_png

        path = replay_png(plots[0] if plots else None, folder)
        return [] if path is None else [path]

    def data(self, study: StudyRecord, analysis: StudyAnalysis) -> dict[str, Any]:
        # early stopping replayed on the full curves (analysis/replay.py; null: none to replay)
        return {"replay": analysis.replay.as_dict() if analysis.replay else None}

    def markdown(self, context: ReportContext, images: Sequence[Path]) -> list[str]:
        lines = replay_lines(context.analysis)
        if lines:
            lines += [line for p in images for line in ("", f"![early stopping replayed]({p})")]
        return lines


def replay_lines(analysis: StudyAnalysis) -> list[str]:
    """The early-stopping replay: one row per setting, and the recommendation."""
    replay = analysis.replay
    if replay is None:
        return []
    lines = ["", "## Early stopping, replayed", "",
             f"Every setting replayed on the {replay.trials} full curves, in the order the "
             f"trials ran, {replay.concurrency} at a time. {replay.reason[0].upper()}"
             f"{replay.reason[1:]}.", "",
             "| setting | steps saved | GPU-hours saved | best kept | top trials kept | "
             "best value | rank correlation at grace |", "|---|---|---|---|---|---|---|"]
    for s in replay.settings:
        kept = ", ".join(f"{n}{'' if ok else ' (stopped)'}" for n, ok in s.top_k.items())
        lines.append(f"| {s.rule.label} | {s.step_saving:.0%} | {_cell(s.gpu_hours_saved)} | "
                     f"{s.best_kept_text()} | {kept} | {_cell(s.best_value)} | "
                     f"{_cell(s.rank_correlation)} |")
    return lines



def _cell(value: float | None) -> str:
    return "-" if value is None else fmt(value)
