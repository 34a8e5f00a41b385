"""The whole analysis of a study: every finding, typed, from its spec, trials and events."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from searchsvc.analysis.boundary import (
    STATUS_DIVERGENCE_EDGE,
    STATUS_OK,
    BoundaryCheck,
    check_boundaries,
)
from searchsvc.analysis.curves import CurveDiagnosis, diagnose_best
from searchsvc.analysis.importance import parameter_importance
from searchsvc.analysis.isolation import VERDICT_DIFFERS, VERDICT_WITHIN_NOISE, Isolation, isolate
from searchsvc.analysis.next_study import NextStudy, suggest_next_study
from searchsvc.analysis.schedulers import Exploit, Rung, lineage, rungs
from searchsvc.analysis.summary import StudySummary, summarize
from searchsvc.analysis.trials import ranked
from searchsvc.core import StudyRecord, TrialEvent, TrialRecord
from searchsvc.spec import StudySpec


@dataclass(frozen=True)
class StudyAnalysis:
    summary: StudySummary
    boundaries: tuple[BoundaryCheck, ...]
    isolation: tuple[Isolation, ...]
    curves: tuple[CurveDiagnosis, ...]
    importance: Mapping[str, float]
    rungs: tuple[Rung, ...]
    lineage: tuple[Exploit, ...]
    findings: tuple[str, ...]
    next_study: NextStudy


def analyze(study: StudyRecord, spec: StudySpec, trials: Sequence[TrialRecord],
            events: Sequence[TrialEvent] = (), *, top_fraction: float = 0.2) -> StudyAnalysis:
    """Analyse ``trials`` (with their measurements, for the curve diagnostics)."""
    summary = summarize(study, trials)
    boundaries = check_boundaries(spec, trials, top_fraction)
    isolation = isolate(spec, trials)
    curves = diagnose_best(trials, spec.metric, spec.mode)
    importance = parameter_importance(spec, trials, seed=spec.seed)
    usable = ranked(trials, spec.mode)
    next_study = suggest_next_study(spec, boundaries, importance, curves,
                                    usable[0] if usable else None, len(usable))
    findings = _findings(summary, boundaries, isolation, curves, importance)
    return StudyAnalysis(summary, tuple(boundaries), tuple(isolation), tuple(curves),
                         importance, tuple(rungs(trials, events)), tuple(lineage(events)),
                         tuple(findings), next_study)


def _findings(summary: StudySummary, boundaries: Sequence[BoundaryCheck],
              isolation: Sequence[Isolation], curves: Sequence[CurveDiagnosis],
              importance: Mapping[str, float]) -> list[str]:
    out = []
    if summary.best_trials:
        best = summary.best_trials[0]
        out.append(f"Best {summary.metric}: {best.value:.4g} (trial {best.number}, at step "
                   f"{best.best_step} of {best.last_step}).")
    else:
        out.append("No trial produced a finite result yet.")
    bad = {s: n for s, n in summary.counts.items() if s in ("failed", "infeasible") and n}
    if bad:
        out.append("Some trials did not produce a result: "
                   + ", ".join(f"{n} {s}" for s, n in bad.items()) + " (see trials.csv).")
    out += [c.detail[0].upper() + c.detail[1:] + "." for c in boundaries
            if c.status != STATUS_OK]
    if boundaries and all(c.status == STATUS_OK for c in boundaries):
        out.append("No searched range is too narrow: the best trials sit inside every range.")
    out += [i.detail + "." for i in isolation if i.verdict in (VERDICT_DIFFERS,
                                                                VERDICT_WITHIN_NOISE)]
    by_issue: dict[str, list[int]] = {}
    for c in curves:
        for issue in c.issues:
            by_issue.setdefault(issue, []).append(c.number)
    for issue, ids in by_issue.items():
        first = next(c for c in curves if c.number == ids[0])
        detail = first.details[first.issues.index(issue)]
        out.append(f"Curves of best trials {', '.join(map(str, ids))}: {detail}.")
    if importance:
        top = max(importance, key=importance.__getitem__)
        out.append(f"{top} matters most ({importance[top]:.0%} of the variance explained).")
    if any(c.status == STATUS_DIVERGENCE_EDGE for c in boundaries):
        out.append("Diverged trials mark a stability limit: the next study trims the range "
                   "there instead of expanding it.")
    return out

