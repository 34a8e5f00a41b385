"""What the scheduler did: the trials an early-stopping scheduler (ASHA, Hyperband, median)
stopped at each rung, and PBT's lineage of exploits; drawn as bars per rung and as each
trial's lifetime with an arrow for each exploit."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from searchsvc.analysis import StudyAnalysis
from searchsvc.core import StudyRecord, TrialRecord
from searchsvc.report.figures import LAYOUT
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


@dataclass(frozen=True)
class RungPlot:
    """Per rung (step, as a category): trials that reached it and trials stopped there."""

    key: str
    title: str
    x_label: str
    y_label: str
    steps: tuple[str, ...]
    reached: tuple[int, ...]
    stopped: tuple[int, ...]
    stopped_text: tuple[str, ...]


@dataclass(frozen=True)
class Arrow:
    """A PBT exploit: the child copied the parent's weights at the parent's step."""

    parent: int
    parent_step: int
    child: int
    step: int
    text: str


@dataclass(frozen=True)
class LineagePlot:
    """Every trial as a line from step 0 to its last step, and the exploits between them."""

    key: str
    title: str
    x_label: str
    y_label: str
    lifetimes: tuple[tuple[int, int], ...]  # (trial number, last step)
    arrows: tuple[Arrow, ...]


def rung_plot(analysis: StudyAnalysis) -> RungPlot | None:
    """Hyperband/ASHA: how many trials reached each rung and which were stopped there."""
    if not analysis.rungs:
        return None
    rungs = analysis.rungs
    return RungPlot(key="rungs", title="Early stopping: trials stopped at each rung",
                    x_label="rung (step)", y_label="trials",
                    steps=tuple(str(r.step) for r in rungs),
                    reached=tuple(r.reached for r in rungs),
                    stopped=tuple(len(r.stopped) for r in rungs),
                    stopped_text=tuple(", ".join(map(str, r.stopped[:12])) for r in rungs))


def lineage_plot(trials: Sequence[TrialRecord], analysis: StudyAnalysis) -> LineagePlot | None:
    """PBT: each trial's lifetime, and an arrow from the parent's step to the child wherever
    the child copied the parent's weights and perturbed its config."""
    if not analysis.lineage:
        return None
    arrows = []
    for e in analysis.lineage:
        if e.parent is None or e.step is None:
            continue
        change = ", ".join(f"{k}: {_short(a)}→{_short(b)}" for k, (a, b) in e.changes.items())
        arrows.append(Arrow(
            parent=e.parent, parent_step=e.parent_step if e.parent_step is not None else e.step,
            child=e.number, step=e.step,
            text=f"trial {e.number} copied trial {e.parent} at step {e.step}; {change}"))
    return LineagePlot(key="lineage", title="PBT lineage", x_label="step", y_label="trial",
                       lifetimes=tuple((t.number, t.last_step or 0) for t in trials),
                       arrows=tuple(arrows))


def _short(value: Any) -> str:
    """A changed value in an arrow's hover text: a float to 3 significant digits."""
    return f"{value:.3g}" if isinstance(value, float) else str(value)


def rung_figure(plot: RungPlot) -> go.Figure:
    """Per rung, the trials that reached it and those stopped there, as grouped bars."""
    import plotly.graph_objects as go

    fig = go.Figure([
        go.Bar(x=plot.steps, y=plot.reached, name="reached this step"),
        go.Bar(x=plot.steps, y=plot.stopped, name="stopped here", text=plot.stopped_text,
               hovertemplate="stopped: %{text}<extra></extra>"),
    ])
    fig.update_layout(title=plot.title, barmode="group", xaxis_title=plot.x_label,
                      yaxis_title=plot.y_label, **LAYOUT)
    return fig


def lineage_figure(plot: LineagePlot) -> go.Figure:
    """Lifetimes as grey lines; all exploits as one trace of arrows (segments split by None)."""
    import plotly.graph_objects as go

    fig = go.Figure()
    for number, last_step in plot.lifetimes:
        fig.add_trace(go.Scatter(x=[0, last_step], y=[number, number], mode="lines",
                                 line=dict(color="#bbb"), showlegend=False,
                                 hovertext=f"trial {number}"))
    xs: list[Any] = []
    ys: list[Any] = []
    text: list[str] = []
    for a in plot.arrows:
        xs += [a.parent_step, a.step, None]
        ys += [a.parent, a.child, None]
        text += ["", a.text, ""]
    fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines+markers", name="exploit (parent → child)",
                             hovertext=text, marker=dict(symbol="arrow", angleref="previous",
                                                         size=10)))
    fig.update_layout(title=plot.title, xaxis_title=plot.x_label, yaxis_title=plot.y_label,
                      **{**LAYOUT, "height": 160 + 22 * len(plot.lifetimes)})
    return fig
