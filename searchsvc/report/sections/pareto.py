"""Objectives and constraints: the Pareto front of several objectives, its hypervolume, each
constraint's feasibility, and each objective's own checks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from searchsvc.analysis import StudyAnalysis
from searchsvc.analysis.pareto import ParetoAnalysis
from searchsvc.core import StudyRecord, TrialRecord
from searchsvc.report.plotdata import ParetoPlot, hypervolume_plot, pareto_plot
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
        from searchsvc.report.figures import hypervolume_figure, pareto_figure

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
