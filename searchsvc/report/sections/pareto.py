"""Objectives and constraints: the Pareto front of several objectives, its hypervolume, each
constraint's feasibility, and each objective's own checks."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from searchsvc.analysis import StudyAnalysis
from searchsvc.analysis.pareto import ParetoAnalysis
from searchsvc.core import StudyRecord, TrialRecord
from searchsvc.report.figures import LAYOUT
from searchsvc.report.plotdata import Series
from searchsvc.report.sections.base import Section
from searchsvc.spec import StudySpec

if TYPE_CHECKING:
    import plotly.graph_objects as go


class Pareto(Section):
    key = "pareto"
    title = "Objectives and constraints"
    json_rank = 90

    def plots(self, spec: StudySpec, trials: Sequence[TrialRecord],
              analysis: StudyAnalysis) -> tuple[Any, ...]:
        return tuple(p for p in (pareto_plot(analysis), hypervolume_plot(analysis))
                     if p is not None)

    def figures(self, plots: Sequence[Any]) -> list[tuple[str, go.Figure]]:
        return [(p.key, pareto_figure(p) if isinstance(p, ParetoPlot) else hypervolume_figure(p))
                for p in plots]

    def data(self, study: StudyRecord, analysis: StudyAnalysis) -> dict[str, Any]:
        return {"objectives": objectives_data(analysis),
                "constraints": constraints_data(analysis.objectives),
                "pareto_front": pareto_data(analysis.objectives)}


def objectives_data(analysis: StudyAnalysis) -> list[dict[str, Any]]:
    """report.json's ``objectives``: each objective with its own boundary and isolation checks
    (a single-objective study: its metric, whose checks are ``boundary_checks``/``isolation``)."""
    pareto = analysis.objectives
    if pareto is None or not pareto.per_objective:
        summary = analysis.summary
        return [{"name": summary.metric, "mode": summary.mode}]
    return [{"name": f.objective.name, "mode": f.objective.mode,
             "boundary_checks": [
                 {"parameter": c.parameter, "status": c.status, "arm": c.arm,
                  "suggested_low": c.suggested_low, "suggested_high": c.suggested_high,
                  "detail": c.detail} for c in f.boundaries],
             "isolation": [
                 {"parameter": i.parameter, "verdict": i.verdict, "best_value": i.best_value,
                  "gap": i.gap, "method": i.method, "detail": i.detail,
                  "points": [{"value": p.value, "best": p.best, "number": p.number}
                             for p in i.points]} for i in f.isolation]}
            for f in pareto.per_objective]


def constraints_data(pareto: ParetoAnalysis | None) -> list[dict[str, Any]]:
    """report.json's ``constraints``: each bound and how many trials satisfied it."""
    if pareto is None:
        return []
    return [{**c.constraint.to_dict(), "satisfied": c.satisfied, "violated": c.violated,
             "unreported": c.unreported} for c in pareto.constraints]


def pareto_data(pareto: ParetoAnalysis | None) -> dict[str, Any] | None:
    """report.json's ``pareto_front`` (null for a single unconstrained metric): the feasible
    front overall and per arm, every completed trial's values and feasibility, and the
    hypervolume as trials finished."""
    if pareto is None:
        return None
    by_number = {p.number: p for p in pareto.points}
    front = set(pareto.front)
    return {
        "objectives": [o.name for o in pareto.objectives],
        "modes": [o.mode for o in pareto.objectives],
        "trials": [{"number": n, "values": list(by_number[n].values),
                    "arm": by_number[n].arm, "config": dict(by_number[n].config)}
                   for n in pareto.front],
        "arms": {arm or "all": list(numbers) for arm, numbers in pareto.arm_fronts.items()},
        "points": [{"number": p.number, "values": list(p.values), "arm": p.arm,
                    "feasible": p.feasible, "on_front": p.number in front,
                    "violations": list(p.violations)} for p in pareto.points],
        "reference_point": list(pareto.reference_point) if pareto.reference_point else None,
        "hypervolume": [{"trials": n, "hypervolume": hv} for n, hv in pareto.hypervolume],
    }


@dataclass(frozen=True)
class ParetoPlot:
    """The first two objectives against each other: each arm's feasible trials, its front as
    a step line through them, and infeasible trials (a constraint violated) apart."""

    key: str
    title: str
    x_label: str
    y_label: str
    arms: tuple[Series, ...]
    fronts: tuple[Series, ...]  # one per arm, sorted along x
    infeasible: Series | None


@dataclass(frozen=True)
class HypervolumePlot:
    """The hypervolume of the feasible front after each finished trial."""

    key: str
    title: str
    trials: tuple[int, ...]
    values: tuple[float, ...]


def pareto_plot(analysis: StudyAnalysis) -> ParetoPlot | None:
    """The front of a study with two or more objectives (the first two are drawn)."""
    pareto = analysis.objectives
    if pareto is None or len(pareto.objectives) < 2 or not pareto.points:
        return None
    first, second = pareto.objectives[0], pareto.objectives[1]

    def series(name: str, points: Sequence[Any]) -> Series:
        return Series(name, tuple(p.values[0] for p in points), tuple(p.values[1] for p in points),
                      tuple(f"trial {p.number}" + (f" ({p.arm})" if p.arm else "")
                            for p in points))

    arms: dict[str, list[Any]] = {}
    for p in pareto.points:
        if p.feasible:
            arms.setdefault(p.arm, []).append(p)
    by_number = {p.number: p for p in pareto.points}
    fronts = tuple(series(f"{arm or 'all'}: front",
                          sorted((by_number[n] for n in pareto.arm_fronts.get(arm, ())),
                                 key=lambda p: p.values[0]))
                   for arm in arms)
    bad = [p for p in pareto.points if not p.feasible]
    return ParetoPlot(
        key="pareto", title=f"Pareto front: {first.name} ({first.mode}) against "
        f"{second.name} ({second.mode})", x_label=first.name, y_label=second.name,
        arms=tuple(series(arm or "trials", points) for arm, points in arms.items()),
        fronts=fronts,
        infeasible=series("infeasible (a constraint violated)", bad) if bad else None)


def hypervolume_plot(analysis: StudyAnalysis) -> HypervolumePlot | None:
    """The hypervolume as trials finished (None: fewer than two objectives, or none yet)."""
    pareto = analysis.objectives
    if pareto is None or len(pareto.objectives) < 2 or not pareto.hypervolume:
        return None
    return HypervolumePlot(key="hypervolume", title="Hypervolume of the feasible front",
                           trials=tuple(n for n, _ in pareto.hypervolume),
                           values=tuple(v for _, v in pareto.hypervolume))


def pareto_figure(plot: ParetoPlot) -> go.Figure:
    """Each arm's trials as points, its front as a step line; infeasible trials as crosses."""
    import plotly.graph_objects as go

    fig = go.Figure()
    for arm in plot.arms:
        fig.add_trace(go.Scatter(x=arm.x, y=arm.y, text=arm.text, mode="markers",
                                 name=arm.name, marker=dict(size=7, opacity=0.7)))
    for front in plot.fronts:
        fig.add_trace(go.Scatter(x=front.x, y=front.y, text=front.text, mode="lines+markers",
                                 name=front.name, line=dict(shape="hv", width=2),
                                 marker=dict(size=10, symbol="diamond-open")))
    if plot.infeasible is not None:
        bad = plot.infeasible
        fig.add_trace(go.Scatter(x=bad.x, y=bad.y, text=bad.text, mode="markers",
                                 name=bad.name, marker=dict(symbol="x", color="red", size=8)))
    fig.update_layout(title=plot.title, xaxis_title=plot.x_label, yaxis_title=plot.y_label,
                      **{**LAYOUT, "height": 450})
    return fig


def hypervolume_figure(plot: HypervolumePlot) -> go.Figure:
    """The hypervolume as a step line over the trials finished."""
    import plotly.graph_objects as go

    fig = go.Figure(go.Scatter(x=plot.trials, y=plot.values, mode="lines+markers",
                               line=dict(shape="hv"), name="hypervolume"))
    fig.update_layout(title=plot.title, xaxis_title="trials finished",
                      yaxis_title="hypervolume", **LAYOUT)
    return fig
