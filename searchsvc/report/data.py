"""report.json: the analysis as plain data, for other tools (documented keys, stable names).

Trials are named by their study-local number under ``number``; ``trial_id`` holds the same
number, the name report.json has always used, kept so users' scripts do not break.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from searchsvc.analysis import StudyAnalysis
from searchsvc.analysis.compare import Comparison
from searchsvc.analysis.noise import NoiseEstimate, method_name
from searchsvc.analysis.pareto import ParetoAnalysis
from searchsvc.core import StudyRecord

JSON_COUNT_STATES = ("completed", "pruned", "failed", "infeasible")


def report_data(study: StudyRecord, analysis: StudyAnalysis) -> dict[str, Any]:
    summary = analysis.summary
    counts = {s: summary.counts.get(s, 0) for s in JSON_COUNT_STATES}
    counts.update({s: n for s, n in summary.counts.items() if n and s not in counts})
    return {
        "study": study.name,
        "metric": study.metric,
        "mode": study.mode,
        "searcher": study.searcher,
        "state": study.state,
        "total_trials": study.total_trials,
        "counts": counts,  # search trials by state (core.judging)
        "repeat_counts": dict(summary.repeat_counts),  # seed repeats by state, apart
        "best_trials": [
            {"trial_id": t.number, "number": t.number, "value": t.value,
             "best_step": t.best_step, "last_step": t.last_step, "arm": dict(t.arm),
             "config": dict(t.config),
             "checkpoints": list(t.checkpoints)}
            for t in summary.best_trials
        ],
        "boundary_checks": [
            {"parameter": c.parameter, "status": c.status, "scale": c.scale, "low": c.low,
             "high": c.high, "suggested_low": c.suggested_low,
             "suggested_high": c.suggested_high, "arm": c.arm, "detail": c.detail,
             "top_positions": list(c.top_positions)}
            for c in analysis.boundaries
        ],
        "isolation": [
            {"parameter": i.parameter, "verdict": i.verdict, "best_value": i.best_value,
             "gap": i.gap, "noise": i.noise, "detail": i.detail, "method": i.method,
             "difference_ci": [i.difference_low, i.difference_high],
             "seeds_needed": i.seeds_needed,
             "points": [{"value": p.value, "best": p.best, "trial_id": p.number,
                         "number": p.number, "trials": p.trials, "top_values": list(p.top_values),
                         "mean": p.mean, "ci_low": p.ci_low, "ci_high": p.ci_high,
                         "repeats": p.repeats, "repeat_of": p.repeat_of}
                        for p in i.points]}
            for i in analysis.isolation
        ],
        "curve_diagnostics": [
            {"trial_id": c.number, "number": c.number, "arm": c.arm, "issues": list(c.issues),
             "best_step": c.best_step, "last_step": c.last_step,
             "best_step_position": c.best_step_position, "details": list(c.details)}
            for c in analysis.curves
        ],
        "importance": dict(analysis.importance),
        "rungs": [asdict(r) for r in analysis.rungs],
        "lineage": [
            {"trial_id": e.number, "number": e.number, "step": e.step, "parent": e.parent,
             "parent_step": e.parent_step,
             "changes": {k: {"old": a, "new": b} for k, (a, b) in e.changes.items()}}
            for e in analysis.lineage
        ],
        "noise": noise_data(analysis.noise),
        "repeats": [
            {"trial_id": number, "number": number, "repeat_of": g.original, "seed": seed,
             "value": value}
            for g in (analysis.noise.groups if analysis.noise else ())
            for number, seed, value in zip(g.numbers, g.seeds, g.values, strict=True)
        ],
        "comparison": comparison_data(analysis.comparison),
        "objectives": objectives_data(analysis),
        "constraints": constraints_data(analysis.objectives),
        "pareto_front": pareto_data(analysis.objectives),
        "findings": list(analysis.findings),
        # per-trial summaries of the workers' telemetry, GPU-hours and the diagnoses
        "telemetry": analysis.telemetry.as_dict() if analysis.telemetry else None,
        # what sdk.watch measured (analysis/dimensionality.py; null: nothing was)
        "dimensionality": analysis.dimensionality.as_dict() if analysis.dimensionality
        else None,
        "next_study": analysis.next_study.text,
        "next_study_changes": list(analysis.next_study.changes),
        # preflight's checks, timing and cost estimate (null: the study ran without it)
        "preflight": study.provenance.get("preflight"),
        "provenance": dict(study.provenance),
    }


def noise_data(noise: NoiseEstimate | None) -> dict[str, Any] | None:
    """report.json's ``noise``: the seed noise measured from repeats (null without them)."""
    if noise is None:
        return None
    return {"sigma": noise.sigma, "dof": noise.dof, "sigma_ci": [noise.sigma_low,
                                                                noise.sigma_high],
            "per_arm": [{"arm": a.arm, "sigma": a.sigma, "dof": a.dof} for a in noise.per_arm],
            "equal_noise_p": noise.equal_noise_p, "min_resolvable": noise.min_resolvable,
            "seeds": noise.seeds, "failed_repeats": noise.failed_repeats,
            "method": method_name(noise)}


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
    return [{"metric": c.constraint.metric, "min": c.constraint.low, "max": c.constraint.high,
             "satisfied": c.satisfied, "violated": c.violated, "unreported": c.unreported}
            for c in pareto.constraints]


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


def comparison_data(comparison: Comparison | None) -> dict[str, Any] | None:
    """report.json's ``comparison`` (and ``searchsvc compare --json``): B against A."""
    if comparison is None:
        return None
    return {"baseline": asdict(comparison.baseline), "candidate": asdict(comparison.candidate),
            "metric": comparison.metric, "mode": comparison.mode,
            "verdict": comparison.verdict, "difference": comparison.difference,
            "ci_low": comparison.ci_low, "ci_high": comparison.ci_high,
            "method": comparison.method, "detail": comparison.detail,
            "objectives": [comparison_data(c) for c in comparison.objectives],
            "hypervolumes": (None if comparison.hypervolumes is None
                             else dict(zip(("baseline", "candidate"), comparison.hypervolumes,
                                           strict=True))),
            "reference_point": (None if comparison.reference_point is None
                                else list(comparison.reference_point))}
