"""A study's progress, as the web UI's study page shows it while the study runs: each finished
trial's best value in the order trials ended, and the study's best so far."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from searchsvc.core import StudyRecord, TrialRecord, improves, is_finite_number
from searchsvc.core.judging import is_best_candidate
from searchsvc.report.figures import PAGE_LAYOUT

if TYPE_CHECKING:
    import plotly.graph_objects as go


@dataclass(frozen=True)
class ProgressPlot:
    """A study's trials in the order they ended, each one's best value, and the study's best
    (core.judging: search trials that completed or were pruned within the constraints) as each
    ended: what the web UI shows while a study runs."""

    metric: str
    order: tuple[int, ...]  # 1, 2, ...: trials finished
    values: tuple[float, ...]
    labels: tuple[str, ...]  # "trial N (state)"
    best_so_far: tuple[float | None, ...]


def progress_plot(study: StudyRecord, trials: Sequence[TrialRecord]) -> ProgressPlot | None:
    """The finished trials with a finite value, in the order they ended (None: none yet)."""
    done = sorted((t for t in trials if t.finished_at is not None
                   and is_finite_number(t.best_value)), key=lambda t: t.finished_at or 0)
    if not done:
        return None
    best: list[float | None] = []
    for t in done:
        previous = best[-1] if best else None
        better = (is_best_candidate(t, study.constraints)
                  and improves(t.best_value, previous, study.mode))
        best.append(t.best_value if better else previous)
    return ProgressPlot(study.metric, tuple(range(1, len(done) + 1)),
                        tuple(float(t.best_value) for t in done),  # type: ignore[arg-type]
                        tuple(f"trial {t.number} ({t.state})" for t in done), tuple(best))


def progress_figure(plot: ProgressPlot) -> go.Figure:
    """The web UI's progress plot: each finished trial's best metric in the order trials
    finished (markers), and the study's best so far (a step line)."""
    import plotly.graph_objects as go

    fig = go.Figure()
    fig.add_scatter(x=plot.order, y=plot.values, mode="markers", name="trial", text=plot.labels,
                    marker=dict(size=6, color="#8aa4c8"))
    fig.add_scatter(x=plot.order, y=plot.best_so_far, mode="lines", name="best so far",
                    line=dict(color="#1f5fa8", width=2, shape="hv"))
    fig.update_layout(**PAGE_LAYOUT, xaxis_title="trials finished", yaxis_title=plot.metric,
                      legend=dict(orientation="h", y=1.12))
    return fig
