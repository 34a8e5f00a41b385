"""Multi-objective and constrained studies: each trial's objective values and constraint
feasibility (from its final metrics), the Pareto front overall and per scientific arm, the
hypervolume reached as trials finished, and the boundary and isolation checks of every
objective on its own.

A trial is on the front when it completed, reported every objective, satisfies every
constraint, and no other such trial is at least as good on every objective and better on one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from searchsvc.analysis.boundary import BoundaryCheck, check_boundaries
from searchsvc.analysis.isolation import Isolation, isolate
from searchsvc.analysis.trials import arm_label, search_trials, valued_by
from searchsvc.core import Constraint, Objective, TrialRecord, TrialState, objective_values
from searchsvc.core.direction import direction
from searchsvc.core.judging import outside_constraints
from searchsvc.core.objectives import violations
from searchsvc.spec import StudySpec


@dataclass(frozen=True)
class ObjectivePoint:
    """A completed trial that reported every objective."""

    number: int
    arm: str
    values: tuple[float, ...]  # one per objective, in the study's order
    violations: tuple[float | None, ...]  # one per constraint: 0 satisfied, None unreported
    config: Mapping[str, Any]

    @property
    def feasible(self) -> bool:
        return all(v == 0.0 for v in self.violations)


@dataclass(frozen=True)
class ConstraintSummary:
    """How the search's finished trials fared against one constraint."""

    constraint: Constraint
    satisfied: int
    violated: int
    unreported: int  # finished trials that never reported the metric (counted infeasible)


@dataclass(frozen=True)
class ObjectiveFindings:
    """Boundary and isolation checks of one objective, judged on its own."""

    objective: Objective
    boundaries: tuple[BoundaryCheck, ...]
    isolation: tuple[Isolation, ...]


@dataclass(frozen=True)
class ParetoAnalysis:
    objectives: tuple[Objective, ...]
    constraints: tuple[ConstraintSummary, ...]
    points: tuple[ObjectivePoint, ...]  # by trial number
    front: tuple[int, ...]  # numbers of the feasible trials on the overall front
    arm_fronts: Mapping[str, tuple[int, ...]]  # per scientific arm ("" without arms)
    reference_point: tuple[float, ...] | None  # worst value of each objective, plus a margin
    hypervolume: tuple[tuple[int, float], ...]  # (trials finished, hypervolume) by number
    per_objective: tuple[ObjectiveFindings, ...]


def analyze_objectives(spec: StudySpec, trials: Sequence[TrialRecord], top_fraction: float
                       ) -> ParetoAnalysis | None:
    """The analysis of a study with several objectives or with constraints (None otherwise)."""
    if not (spec.multi_objective or spec.constraints):
        return None
    search = search_trials(trials)
    points = objective_points(spec, search)
    feasible = [p for p in points if p.feasible]
    front = pareto_front(spec.objectives, feasible)
    arms: dict[str, list[ObjectivePoint]] = {}
    for p in feasible:
        arms.setdefault(p.arm, []).append(p)
    arm_fronts = {arm: pareto_front(spec.objectives, group) for arm, group in arms.items()}
    reference = reference_point(spec.objectives, points)
    curve = hypervolume_curve(spec.objectives, search, feasible, reference)
    per_objective = tuple(_objective_findings(spec, o, search, top_fraction)
                          for o in spec.objectives) if spec.multi_objective else ()
    return ParetoAnalysis(spec.objectives, constraint_summaries(spec, search), tuple(points),
                          front, arm_fronts, reference, curve, per_objective)


def objective_points(spec: StudySpec, trials: Sequence[TrialRecord]) -> list[ObjectivePoint]:
    """The trials placed by their values (:func:`judged_on_values`) that reported every
    objective, by number."""
    out = []
    for t in sorted(trials, key=lambda t: t.number):
        values = objective_values(spec.objectives, t.final_metrics)
        if not judged_on_values(t, spec.constraints) or values is None:
            continue
        out.append(ObjectivePoint(t.number, arm_label(t), values,
                                  violations(spec.constraints, t.final_metrics), t.config))
    return out


def judged_on_values(trial: TrialRecord, constraints: Sequence[Constraint]) -> bool:
    """Whether ``trial`` is placed by its values: it completed, or only its constraints made it
    infeasible (then it is drawn, and counted, as an infeasible point)."""
    return trial.state == TrialState.COMPLETED or outside_constraints(trial, constraints)


def constraint_summaries(spec: StudySpec, trials: Sequence[TrialRecord]
                         ) -> tuple[ConstraintSummary, ...]:
    finished = [t for t in trials if judged_on_values(t, spec.constraints)]
    out = []
    for c in spec.constraints:
        found = [c.violation(t.final_metrics) for t in finished]
        out.append(ConstraintSummary(c, sum(v == 0.0 for v in found),
                                     sum(v is not None and v > 0 for v in found),
                                     sum(v is None for v in found)))
    return tuple(out)


def _losses(objectives: Sequence[Objective], points: Sequence[ObjectivePoint]) -> np.ndarray:
    """The points' values as losses (maximised objectives negated): smaller is better."""
    signs = np.array([direction(o.mode).sign for o in objectives])
    return np.array([p.values for p in points], dtype=float).reshape(
        len(points), len(objectives)) * signs


def pareto_front(objectives: Sequence[Objective], points: Sequence[ObjectivePoint]
                 ) -> tuple[int, ...]:
    """The numbers of the ``points`` no other point dominates (ties: both stay)."""
    if not points:
        return ()
    losses = _losses(objectives, points)
    on_front = [not np.any(np.all(losses <= row, axis=1) & np.any(losses < row, axis=1))
                for row in losses]
    return tuple(p.number for p, keep in zip(points, on_front, strict=True) if keep)


def reference_point(objectives: Sequence[Objective], points: Sequence[ObjectivePoint]
                    ) -> tuple[float, ...] | None:
    """The worst value of each objective over ``points``, moved out by a tenth of its range
    (so the worst points still add volume): the hypervolume's reference, in the objectives'
    own units and directions."""
    if not points:
        return None
    losses = _losses(objectives, points)
    worst, best = losses.max(axis=0), losses.min(axis=0)
    span = np.where(worst > best, worst - best, np.maximum(np.abs(worst), 1.0))
    ref = worst + 0.1 * span
    signs = np.array([direction(o.mode).sign for o in objectives])
    return tuple(float(v) for v in ref * signs)


def hypervolume(objectives: Sequence[Objective], points: Sequence[ObjectivePoint],
                reference: Sequence[float]) -> float:
    """The volume the points dominate up to ``reference`` (Optuna's exact algorithm)."""
    from optuna._hypervolume import compute_hypervolume

    signs = np.array([direction(o.mode).sign for o in objectives])
    ref = np.asarray(reference, dtype=float) * signs
    losses = _losses(objectives, points)
    inside = losses[np.all(losses < ref, axis=1)] if len(points) else losses
    if not len(inside):
        return 0.0
    return float(compute_hypervolume(inside, ref))


def hypervolume_curve(objectives: Sequence[Objective], trials: Sequence[TrialRecord],
                      feasible: Sequence[ObjectivePoint], reference: Sequence[float] | None
                      ) -> tuple[tuple[int, float], ...]:
    """The hypervolume of the feasible points among the first n finished trials (by number),
    for each n at which it changes and at the last."""
    if reference is None:
        return ()
    by_number = {p.number: p for p in feasible}
    finished = sorted(t.number for t in trials if t.finished)
    out: list[tuple[int, float]] = []
    seen: list[ObjectivePoint] = []
    for count, number in enumerate(finished, start=1):
        if number in by_number:
            seen.append(by_number[number])
            out.append((count, hypervolume(objectives, seen, reference)))
    if finished and (not out or out[-1][0] != len(finished)):
        out.append((len(finished), out[-1][1] if out else 0.0))
    return tuple(out)


def _objective_findings(spec: StudySpec, objective: Objective, trials: Sequence[TrialRecord],
                        top_fraction: float) -> ObjectiveFindings:
    """Boundary and isolation checks with ``objective`` as the study's only metric, each
    trial valued by its final value of it."""
    alone = replace(spec, metric=objective.name, mode=objective.mode, objectives=(objective,))
    valued = valued_by(trials, objective.name)
    return ObjectiveFindings(objective, tuple(check_boundaries(alone, valued, top_fraction)),
                             tuple(isolate(alone, valued, None)))
