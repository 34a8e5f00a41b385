"""Early stopping, replayed: every early-stopping setting replayed on the study's full
curves, what each would have saved and kept, and the one recommended; drawn as each setting's
saving against the best value it keeps, a Plotly figure for report.html and ``replay.png``
for report.md."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from searchsvc.analysis import StudyAnalysis
from searchsvc.analysis.replay import Replay
from searchsvc.core import StudyRecord, TrialRecord
from searchsvc.report.figures import LAYOUT
from searchsvc.report.plotdata import Series
from searchsvc.report.plots import new_figure, save_png
from searchsvc.report.sections.base import ReportContext, Section, fmt
from searchsvc.spec import StudySpec

if TYPE_CHECKING:
    import plotly.graph_objects as go
    from matplotlib.figure import Figure


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
        return [(p.key, replay_figure(p)) for p in plots]

    def images(self, plots: Sequence[Any], folder: Path) -> list[Path]:
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


@dataclass(frozen=True)
class ReplayPlot:
    """Each replayed early-stopping setting: the share of steps it saves (x) against the best
    value the study would have ended with (y), apart by whether it keeps the top trials."""

    key: str
    title: str
    x_label: str
    y_label: str
    kept: Series  # settings that keep every top trial
    lost: Series  # settings that stop one of them
    full_best: float | None  # the study's own best (every curve to its end)
    recommended: str | None  # the recommended setting's label


def replay_plot(replay: Replay | None) -> ReplayPlot | None:
    """The early-stopping replay: saving against the best value, per setting."""
    if replay is None:
        return None

    def series(name: str, keeps: bool) -> Series:
        chosen = [s for s in replay.settings if s.keeps_best == keeps and s.best_value is not None]
        return Series(name, tuple(100 * s.step_saving for s in chosen),
                      tuple(float(s.best_value) for s in chosen),  # type: ignore[arg-type]
                      tuple(s.rule.label for s in chosen))

    return ReplayPlot(
        key="replay", title="Early stopping replayed: steps saved against the best value kept",
        x_label="steps saved (%)", y_label=f"best {replay.metric}",
        kept=series("keeps the best within noise", True),
        lost=series("loses the best", False), full_best=replay.best_value,
        recommended=replay.recommended.rule.label if replay.recommended else None)


def replay_figure(plot: ReplayPlot) -> go.Figure:
    """Each replayed setting: green where it keeps the top trials, red where it loses one; the
    study's own best as a dotted line."""
    import plotly.graph_objects as go

    fig = go.Figure()
    for series, colour in ((plot.kept, "#2a7"), (plot.lost, "#c33")):
        fig.add_trace(go.Scatter(x=list(series.x), y=list(series.y), text=list(series.text),
                                 mode="markers", name=series.name,
                                 marker=dict(color=colour, size=9)))
    if plot.full_best is not None:
        fig.add_hline(y=plot.full_best, line_dash="dot", line_color="grey",
                      annotation_text="every trial to its end")
    fig.update_layout(title=plot.title, xaxis_title=plot.x_label, yaxis_title=plot.y_label,
                      **LAYOUT)
    return fig


def replay_png(plot: ReplayPlot | None, folder: Path) -> Path | None:
    """Write ``replay.png`` into ``folder`` (None, and nothing written, without a replay)."""
    if plot is None:
        return None
    return save_png(draw_replay_plot(plot), folder / "replay.png")


def draw_replay_plot(plot: ReplayPlot) -> Figure:
    """``plot`` as a matplotlib figure, not yet saved: settings that keep the top trials in
    green, those that lose one as red crosses, the study's own best as a dotted line, the
    recommended setting labelled."""
    fig, ax = new_figure(6, 3.6)
    ax.scatter(plot.kept.x, plot.kept.y, color="#2a7", label=plot.kept.name)
    ax.scatter(plot.lost.x, plot.lost.y, color="#c33", marker="x", label=plot.lost.name)
    if plot.full_best is not None:
        ax.axhline(plot.full_best, color="grey", lw=0.8, ls=":")
    for x, y, label in zip(plot.kept.x, plot.kept.y, plot.kept.text, strict=True):
        if label == plot.recommended:
            ax.annotate(f"recommended: {label}", (x, y), fontsize=7,
                        xytext=(4, 10), textcoords="offset points", ha="left")
    ax.set_xlabel(plot.x_label)
    ax.set_ylabel(plot.y_label)
    ax.set_title(plot.title, fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig
