"""The suggested next study: the same study file with the ranges the boundary checks suggest,
parameters that did not matter fixed at their best value, and the step budget adjusted to what
the curves showed. The result is a study file ``searchsvc validate`` accepts."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from searchsvc.analysis.boundary import STATUS_DIVERGENCE_EDGE, STATUS_OK, BoundaryCheck
from searchsvc.analysis.curves import SATURATED, STILL_IMPROVING, CurveDiagnosis, diagnose_best
from searchsvc.analysis.isolation import METHOD_PROXY, VERDICT_DIFFERS, Isolation
from searchsvc.analysis.pareto import ObjectiveFindings
from searchsvc.analysis.replay import Replay
from searchsvc.analysis.trials import valued_by
from searchsvc.core import TrialRecord
from searchsvc.plugins import BACKENDS, SEARCHERS
from searchsvc.spec import RangeParameter, StudySpec
from searchsvc.spec.edits import (
    EarlyStopping,
    FixParameter,
    NextSeed,
    Rename,
    SetMaxSteps,
    SetParent,
    SetRange,
    SpecEdit,
    describe,
    write_edited,
)

NEGLIGIBLE_IMPORTANCE = 0.02  # a nuisance parameter explaining less than this gets fixed...
MIN_TRIALS_TO_FIX = 30  # ...once there are enough trials to trust the importance
MIN_TRIALS_TO_NARROW = 20  # ranges are narrowed around the top trials only past this many


@dataclass(frozen=True)
class NextStudy:
    """The suggested next study: typed edits of this study's file, and that file written."""

    edits: tuple[SpecEdit, ...]
    text: str  # the study file, YAML

    @property
    def changes(self) -> tuple[str, ...]:
        """What was changed and why, one line each."""
        return describe(self.edits)


_RANGE_REASONS = {"near_low": "the best trials crowded the low edge",
                  "near_high": "the best trials crowded the high edge",
                  "divergence_edge": "trials past the edge diverged",
                  "ok": "narrowed around the top trials"}


def suggest_next_study(spec: StudySpec, boundaries: Sequence[BoundaryCheck],
                       importance: Mapping[str, float], curves: Sequence[CurveDiagnosis],
                       best: TrialRecord | None, usable_trials: int,
                       replay: Replay | None = None,
                       isolation: Sequence[Isolation] = ()) -> NextStudy:
    """The next study's edits of ``spec``: ranges moved by the boundary checks, unimportant
    nuisance parameters fixed, scientific parameters whose verdict (judged on seed repeats)
    found one value better fixed at it, the step budget adjusted to the curves, and the early
    stopping a ``replay`` of this study's curves recommends (or its warning that it is
    unsafe)."""
    edits: list[SpecEdit] = [Rename(_next_name(spec.name)), SetParent(spec.name)]
    edits += _range_edits(spec, boundaries, usable_trials)
    if best is not None and usable_trials >= MIN_TRIALS_TO_FIX:
        edits += _fixing_edits(spec, importance, best)
    edits += _verdict_edits(spec, isolation)
    edits += _step_edits(spec, curves)
    if replay is not None:
        edits.append(early_stopping_edit(spec, replay))
    if spec.source.has(("seed",)):
        edits.append(NextSeed(spec.seed + 1))
    header = (f"# Suggested by searchsvc from study {spec.name!r}.\n"
              + "".join(f"# - {c}\n" for c in describe(edits) or ["no change needed"]))
    return NextStudy(tuple(edits), write_edited(spec, edits, header))


def suggest_for_objectives(spec: StudySpec, per_objective: Sequence[ObjectiveFindings],
                           search: Sequence[TrialRecord], usable_trials: int) -> NextStudy:
    """The next study of a study with several objectives, suggested over every one of them:
    a range is moved or widened where any objective's best trials crowd an edge and narrowed
    only to cover where each objective's best trials are; the step budget follows the curves
    of every objective's best trials. Nothing is fixed: a front has no one best trial whose
    value to fix a parameter at."""
    boundaries = merge_boundaries(per_objective)
    curves = [c for f in per_objective
              for c in diagnose_best(valued_by(search, f.objective.name), f.objective.name,
                                     f.objective.mode)]
    return suggest_next_study(spec, boundaries, {}, curves, None, usable_trials)


def merge_boundaries(per_objective: Sequence[ObjectiveFindings]) -> list[BoundaryCheck]:
    """One check per parameter over every objective's own checks: the suggested range spans
    each objective's suggestion, but never past a bound where some objective's trials diverged;
    its status is the first crowded edge (in the objectives' order), and ``detail`` names which
    objective found what."""
    by_parameter: dict[str, list[tuple[str, BoundaryCheck]]] = {}
    for findings in per_objective:
        for check in findings.boundaries:
            by_parameter.setdefault(check.parameter, []).append(
                (findings.objective.name, check))
    merged = []
    for checks in by_parameter.values():
        crowded = [c for _, c in checks if c.status != STATUS_OK]
        first = crowded[0] if crowded else checks[0][1]
        low = min(c.suggested_low for _, c in checks)
        high = max(c.suggested_high for _, c in checks)
        # Never into a region where any objective's trials diverged.
        for _, c in checks:
            if c.status == STATUS_DIVERGENCE_EDGE:
                low, high = max(low, c.suggested_low), min(high, c.suggested_high)
        merged.append(replace(
            first, suggested_low=low, suggested_high=high,
            detail="; ".join(f"{name}: {c.status.replace('_', ' ')}" for name, c in checks)))
    return merged


def _range_edits(spec: StudySpec, boundaries: Sequence[BoundaryCheck],
                 usable_trials: int) -> list[SpecEdit]:
    edits: list[SpecEdit] = []
    for check in boundaries:
        param = spec.parameters.get(check.parameter)
        if not isinstance(param, RangeParameter):
            continue
        if check.status == STATUS_OK and usable_trials < MIN_TRIALS_TO_NARROW:
            continue
        low, high = check.suggested_low, check.suggested_high
        if param.kind == "int":
            low, high = int(low), int(high)
        if (low, high) == (param.low, param.high) or low >= high:
            continue
        reason = _RANGE_REASONS[check.status]
        if spec.multi_objective:  # which objective asked for it
            reason = f"{reason}; {check.detail}"
        edits.append(SetRange(check.parameter, low, high, (check.low, check.high), reason))
    return edits


def _fixing_edits(spec: StudySpec, importance: Mapping[str, float],
                  best: TrialRecord) -> list[SpecEdit]:
    parents = {c.parent for p in spec.parameters.values() for c in p.when}
    edits: list[SpecEdit] = []
    for name, share in importance.items():
        param = spec.parameters.get(name)
        if (param is None or param.role != "nuisance" or param.when or name in parents
                or share >= NEGLIGIBLE_IMPORTANCE or name not in best.config):
            continue
        edits.append(FixParameter(name, best.config[name], f"the best trial's value; it "
                                  f"explained {share:.1%} of the variance"))
    return edits


def _verdict_edits(spec: StudySpec, isolation: Sequence[Isolation]) -> list[SpecEdit]:
    """Scientific parameters answered by their study: one value differs from the others
    beyond the seed noise measured on repeats (not the proxy without repeats), so the next
    round holds it there. A parameter others depend on (``when``) is kept."""
    parents = {c.parent for p in spec.parameters.values() for c in p.when}
    return [FixParameter(i.parameter, i.best_value,
                         f"its verdict: {i.best_value} differs beyond seed noise")
            for i in isolation
            if i.verdict == VERDICT_DIFFERS and i.method != METHOD_PROXY
            and i.parameter not in parents
            and getattr(spec.parameters.get(i.parameter), "role", None) == "scientific"]


def _step_edits(spec: StudySpec, curves: Sequence[CurveDiagnosis]) -> list[SpecEdit]:
    steps = spec.budget.max_steps
    if not curves or not steps:
        return []
    counts = Counter(issue for c in curves for issue in c.issues)
    if counts[STILL_IMPROVING] * 2 > len(curves):
        return [SetMaxSteps(steps * 2, steps, "most best trials were still improving at the "
                            "end")]
    if counts[SATURATED] * 2 > len(curves) and steps >= 4:
        return [SetMaxSteps(max(2, round(steps * 0.6)), steps, "most best trials had "
                            "saturated early")]
    return []


def early_stopping_edit(spec: StudySpec, replay: Replay) -> EarlyStopping:
    """The replay's recommendation as an edit: the recommended rule as the next study's
    ``early_stopping:`` block, which runs beside the study's own searcher; where that cannot
    run (a searcher that stops trials itself, a backend that runs its own search), or nothing
    is recommended, only the reason."""
    best = replay.recommended
    if best is None:
        return EarlyStopping(replay.reason)
    searcher = SEARCHERS.get(spec.searcher) if spec.searcher in SEARCHERS else None
    if searcher is not None and searcher.stops_trials:
        return EarlyStopping(f"{replay.reason}; searcher {spec.searcher!r} "
                             f"{searcher.stops_trials_because}, so the block is not added")
    backend = BACKENDS.get(spec.backend) if spec.backend in BACKENDS else None
    if backend is not None and backend.runs_own_search:
        return EarlyStopping(f"{replay.reason}; backend {spec.backend!r} runs its own search, "
                             "which searchsvc cannot stop trials of")
    return EarlyStopping(replay.reason, tuple(best.rule.as_block().items()))


def _next_name(name: str) -> str:
    match = re.fullmatch(r"(.*)-next(\d*)", name)
    if match:
        return f"{match.group(1)}-next{int(match.group(2) or 1) + 1}"
    return f"{name}-next"
