"""The whole analysis of a study: every finding, typed, from its spec, trials and events."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from searchsvc.analysis.boundary import (
    STATUS_DIVERGENCE_EDGE,
    STATUS_OK,
    BoundaryCheck,
    check_boundaries,
)
from searchsvc.analysis.compare import Comparison, compare
from searchsvc.analysis.curves import CurveDiagnosis, diagnose_best
from searchsvc.analysis.dimensionality import (
    DimensionalityAnalysis,
    study_dimensionality,
    training_loss_metric,
)
from searchsvc.analysis.importance import parameter_importance
from searchsvc.analysis.isolation import (
    VERDICT_DIFFERS,
    VERDICT_STOPPED_EARLY,
    VERDICT_WITHIN_NOISE,
    Isolation,
    isolate,
)
from searchsvc.analysis.next_study import NextStudy, suggest_for_objectives, suggest_next_study
from searchsvc.analysis.noise import NoiseEstimate, estimate_noise
from searchsvc.analysis.pareto import ParetoAnalysis, analyze_objectives
from searchsvc.analysis.preflight import summary_lines as preflight_lines
from searchsvc.analysis.replay import Replay, study_replay
from searchsvc.analysis.schedulers import Exploit, Rung, lineage, rungs
from searchsvc.analysis.summary import StudySummary, summarize
from searchsvc.analysis.telemetry import StudyTelemetry, auto_packing, study_telemetry
from searchsvc.analysis.trials import search_trials
from searchsvc.core import EventKind, StudyRecord, TrialEvent, TrialRecord
from searchsvc.core.judging import UNUSABLE_STATES, BudgetSplit, budget_split
from searchsvc.core.judging import ranked as best_ranked
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
    noise: NoiseEstimate | None = None  # measured from seed repeats (None: no repeats)
    comparison: Comparison | None = None  # against the study this one was made from
    # Several objectives or constraints: the front, hypervolume, feasibility, and the checks
    # per objective (None for a single unconstrained metric).
    objectives: ParetoAnalysis | None = None
    # Per-trial telemetry summaries, GPU-hours and the diagnoses drawn from them.
    telemetry: StudyTelemetry | None = None
    # What sdk.watch measured: layer curves, collapses, the early signal, transitions (None:
    # no trial measured any).
    dimensionality: DimensionalityAnalysis | None = None
    # Early stopping replayed on the study's full curves (None: it has none to replay).
    replay: Replay | None = None


def analyze(study: StudyRecord, spec: StudySpec, trials: Sequence[TrialRecord],
            events: Sequence[TrialEvent] = (), *, top_fraction: float = 0.2,
            parent: tuple[StudyRecord, Sequence[TrialRecord]] | None = None) -> StudyAnalysis:
    """Analyse ``trials`` (with their measurements, for the curve diagnostics); ``parent``:
    the study this one was made from, with its trials, to compare against. The search's
    own trials drive every finding about the space; seed repeats (``repeat_of``) measure the
    noise the scientific verdicts are judged against, and are counted in the summary."""
    summary = summarize(study, trials)
    search = search_trials(trials)
    noise = estimate_noise(trials)
    boundaries = check_boundaries(spec, search, top_fraction)
    isolation = isolate(spec, search, noise)
    curves = diagnose_best(search, spec.metric, spec.mode)
    importance = parameter_importance(spec, search, seed=spec.seed)
    objectives = analyze_objectives(spec, trials, top_fraction)
    replay = study_replay(spec, trials)  # its seed repeats measure the noise it keeps within
    next_study = _next_study(spec, search, objectives, boundaries, importance, curves, replay,
                             isolation)
    findings = _findings(summary, boundaries, isolation, curves, importance,
                         budget_split(search, spec.budget.max_steps))
    findings[1:1] = _noise_findings(noise)
    comparison = compare(parent[0], parent[1], study, trials) if parent else None
    if objectives is not None:
        findings[1:1] = _objective_findings(objectives)
    warm = study.provenance.get("warm_start")
    if warm:
        findings.insert(1, f"Warm start: {warm['used']} of study {warm['study']!r}'s "
                        f"{warm['finished_trials']} finished trials fed to the searcher's model "
                        f"before its first proposal ({warm['fitting_trials']} fit this space).")
    preflight = study.provenance.get("preflight")
    if preflight:
        findings[1:1] = preflight_lines(preflight)
    if comparison is not None:
        findings.insert(1, f"Compared with the parent study {parent[0].name!r}: "  # type: ignore[index]
                        f"{comparison.detail}.")
    auto = study.provenance.get("gpu_auto")  # resources.gpu: auto's decision
    gpu, cpu = ((spec.resources.gpu, spec.resources.cpu) if not auto
                else (float(auto["gpu"]), auto.get("cpu")))
    telemetry = study_telemetry(trials, gpu, spec.resources.worker_count, cpu)
    if auto:
        findings.append(auto_packing(auto) + ".")
    findings += [d + "." for d in telemetry.findings]
    dimensionality = study_dimensionality(trials, spec.metric, spec.mode, seed=spec.seed,
                                          loss_metric=training_loss_metric(trials))
    if dimensionality is not None:
        findings += dimensionality.findings
    findings += outage_findings(events)
    if replay is not None:
        findings.append(replay_finding(replay))
    return StudyAnalysis(summary, tuple(boundaries), tuple(isolation), tuple(curves),
                         importance, tuple(rungs(search, events)), tuple(lineage(events)),
                         tuple(findings), next_study, noise, comparison, objectives, telemetry,
                         dimensionality, replay)


def replay_finding(replay: Replay) -> str:
    """The replay in one line: the setting it recommends, or why none."""
    text = replay.reason[0].upper() + replay.reason[1:]
    return (f"Early stopping replayed on {replay.trials} full curves "
            f"({len(replay.settings)} settings): {text}.")


def _next_study(spec: StudySpec, search: Sequence[TrialRecord],
                objectives: ParetoAnalysis | None, boundaries: Sequence[BoundaryCheck],
                importance: Mapping[str, float], curves: Sequence[CurveDiagnosis],
                replay: Replay | None = None, isolation: Sequence[Isolation] = ()) -> NextStudy:
    """The suggested next study: over every objective for several, else over the metric
    (with the early stopping ``replay`` recommends and the scientific values the
    ``isolation`` verdicts settled)."""
    if objectives is not None and objectives.per_objective:
        feasible = sum(p.feasible for p in objectives.points)
        return suggest_for_objectives(spec, objectives.per_objective, search, feasible)
    usable = best_ranked(search, spec.mode, spec.constraints)
    return suggest_next_study(spec, boundaries, importance, curves,
                              usable[0] if usable else None, len(usable), replay, isolation)


def outage_findings(events: Sequence[TrialEvent]) -> list[str]:
    """One line on the store outages the run rode through (none: nothing to say)."""
    outages = [e for e in events if e.kind == EventKind.STORE_OUTAGE]
    if not outages:
        return []
    longest = max(outages, key=lambda e: float(e.data.get("seconds", 0.0)))
    when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(float(
        longest.data.get("started", longest.recorded_at))))
    times = "once" if len(outages) == 1 else f"{len(outages)} times"
    return [f"The store was unreachable {times} while the study ran (longest "
            f"{float(longest.data.get('seconds', 0.0)):.1f} s, from {when}: "
            f"{longest.data.get('error', 'unknown error')}); the run retried and every result "
            "was written once it was back."]


def _objective_findings(pareto: ParetoAnalysis) -> list[str]:
    out = []
    if len(pareto.objectives) > 1:
        names = " and ".join(f"{o.name} ({o.mode})" for o in pareto.objectives)
        feasible = sum(p.feasible for p in pareto.points)
        if pareto.front:
            last = pareto.hypervolume[-1][1] if pareto.hypervolume else 0.0
            out.append(f"Pareto front of {names}: {len(pareto.front)} of {feasible} feasible "
                       f"trials (trials {', '.join(map(str, pareto.front))}); hypervolume "
                       f"{last:.4g} against the reference point "
                       f"{tuple(round(v, 4) for v in pareto.reference_point or ())}.")
        else:
            out.append(f"No feasible trial reported every objective ({names}): no Pareto "
                       "front yet.")
    for c in pareto.constraints:
        text = (f"Constraint {c.constraint.describe()}: {c.satisfied} trials satisfy it, "
                f"{c.violated} violate it")
        if c.unreported:
            text += f", {c.unreported} never reported {c.constraint.metric} (infeasible)"
        out.append(text + ".")
    return out


def _noise_findings(noise: NoiseEstimate | None) -> list[str]:
    if noise is None:
        return []
    out = [f"Seed noise: sigma {noise.sigma:.3g} (95% interval {noise.sigma_low:.3g} to "
           f"{noise.sigma_high:.3g}, {noise.dof} degrees of freedom, from {len(noise.groups)} "
           f"configurations rerun with {noise.seeds} new seeds each); the smallest difference "
           f"between two such configurations this study can resolve is {noise.min_resolvable:.3g}."]
    if noise.unequal:
        arms = "; ".join(f"{a.arm or 'all'}: {a.sigma:.3g}" for a in noise.per_arm
                         if a.sigma is not None)
        out.append(f"The arms differ in seed noise (Bartlett p = {noise.equal_noise_p:.2g}): "
                   f"{arms}; each arm's own noise is used.")
    if noise.failed_repeats:
        out.append(f"{noise.failed_repeats} seed repeats produced no finite value: the "
                   "configurations they repeat are unstable across seeds.")
    return out


def _findings(summary: StudySummary, boundaries: Sequence[BoundaryCheck],
              isolation: Sequence[Isolation], curves: Sequence[CurveDiagnosis],
              importance: Mapping[str, float],
              budget: BudgetSplit[TrialRecord] | None = None) -> list[str]:
    """The findings, in order; ``budget``: the search trials split by whether they reached
    the full budget (isolation and importance compare only those that did)."""
    out = []
    if summary.best_trials:
        best = summary.best_trials[0]
        out.append(f"Best {summary.metric}: {best.value:.4g} (trial {best.number}, at step "
                   f"{best.best_step} of {best.last_step}).")
    else:
        out.append("No trial produced a finite result yet.")
    bad = {s: n for s, n in summary.counts.items() if s in UNUSABLE_STATES and n}
    if bad:
        out.append("Some trials did not produce a result: "
                   + ", ".join(f"{n} {s}" for s, n in bad.items()) + " (see trials.csv).")
    out += [c.detail[0].upper() + c.detail[1:] + "." for c in boundaries
            if c.status != STATUS_OK]
    if boundaries and all(c.status == STATUS_OK for c in boundaries):
        out.append("No searched range is too narrow: the best trials sit inside every range.")
    out += [i.detail + "." for i in isolation
            if i.verdict in (VERDICT_DIFFERS, VERDICT_WITHIN_NOISE, VERDICT_STOPPED_EARLY)]
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
        left_out = (f", over the {len(budget.full)} trials that reached the full budget; the "
                    f"{len(budget.stopped)} that early stopping stopped are left out"
                    if budget is not None and budget.stopped else "")
        out.append(f"{top} matters most ({importance[top]:.0%} of the variance explained"
                   f"{left_out}).")
    if any(c.status == STATUS_DIVERGENCE_EDGE for c in boundaries):
        out.append("Diverged trials mark a stability limit: the next study trims the range "
                   "there instead of expanding it.")
    return out

