"""Campaigns: the Playbook's rounds (run a study, read it, decide, run the next) as one record.

A study run by ``searchsvc next`` is the next round of its parent's campaign. Its provenance
holds ``campaign``: the campaign's name, its round, its parent, and the decisions that made it
from the parent (:func:`decisions`), each with its evidence from the parent's analysis. The
timeline (:func:`campaign_rounds`) reads those records and each round's own analysis (the one
its report shows): its search space, its best with the seed noise, its verdicts, decisions and
the compute it spent. Pure: records and analyses in, a timeline out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from searchsvc.analysis.isolation import (
    VERDICT_DIFFERS,
    VERDICT_STOPPED_EARLY,
    VERDICT_WITHIN_NOISE,
)
from searchsvc.analysis.study import StudyAnalysis
from searchsvc.core import StudyRecord, TrialRecord
from searchsvc.spec import ChoiceParameter, FixedParameter, RangeParameter, StudySpec
from searchsvc.spec.edits import EarlyStopping, FixParameter, SetMaxSteps, SetRange, SpecEdit

CAMPAIGN_KEY = "campaign"  # the provenance key of a study's place in its campaign


@dataclass(frozen=True)
class Decision:
    """One change from the parent study to this one, why, and what showed it."""

    kind: str  # range | fixed | steps | early_stopping | edited
    text: str
    evidence: Mapping[str, Any]


@dataclass(frozen=True)
class Round:
    """One study of a campaign, as the timeline shows it."""

    round: int
    study: str
    state: str
    parent: str | None
    metric: str
    mode: str
    space: tuple[str, ...]  # one line per parameter
    best_value: float | None  # the report's best (core.judging)
    best_trial: int | None
    noise: float | None  # seed noise sigma measured from its repeats (None: no repeats)
    verdicts: tuple[str, ...]
    decisions: tuple[Decision, ...]
    trials: int  # search trials that finished
    steps: int  # steps its trials ran
    trial_hours: float
    gpu_hours: float


@dataclass(frozen=True)
class Campaign:
    name: str
    rounds: tuple[Round, ...]

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "rounds": [asdict(r) for r in self.rounds]}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Campaign:
        """The campaign :meth:`as_dict` (or ``GET /campaigns/{name}``) wrote."""
        return cls(str(data["name"]), tuple(
            Round(**{**r, "space": tuple(r["space"]), "verdicts": tuple(r["verdicts"]),
                     "decisions": tuple(Decision(**d) for d in r["decisions"])})
            for r in data["rounds"]))


def membership(study: StudyRecord) -> Mapping[str, Any] | None:
    """A study's ``campaign`` record (None: it was never part of one)."""
    found = study.provenance.get(CAMPAIGN_KEY)
    return found if isinstance(found, Mapping) else None


def campaign_name(study: StudyRecord) -> str:
    """The campaign ``study`` belongs to: its recorded one, else one it would start (its own
    name)."""
    found = membership(study)
    return str(found["name"]) if found else study.name


def first_round(study: StudyRecord, spec: StudySpec) -> dict[str, Any]:
    """The campaign record of a study that starts a campaign (round 1, no decisions)."""
    return {"name": study.name, "round": 1, "parent": spec.parent, "decisions": []}


def next_round(parent: StudyRecord, decisions_made: Sequence[Decision]) -> dict[str, Any]:
    """The campaign record of the study made from ``parent`` by ``decisions_made``."""
    found = membership(parent)
    return {"name": campaign_name(parent), "round": int(found["round"]) + 1 if found else 2,
            "parent": parent.name, "decisions": [asdict(d) for d in decisions_made]}


def decisions(analysis: StudyAnalysis, edited: bool = False) -> list[Decision]:
    """The decisions behind the suggested next study of ``analysis``: each edit of its file
    with the findings that asked for it; ``edited``: the user changed the file by hand too."""
    out = [d for d in (_decision(e, analysis) for e in analysis.next_study.edits) if d]
    if edited:
        out.append(Decision("edited", "the study file was edited by hand before this round",
                            {}))
    return out


def _decision(edit: SpecEdit, analysis: StudyAnalysis) -> Decision | None:
    text = edit.describe()
    if text is None:
        return None
    if isinstance(edit, SetRange):
        check = next((c for c in analysis.boundaries if c.parameter == edit.parameter), None)
        return Decision("range", text, {} if check is None else {
            "boundary_check": check.status, "detail": check.detail,
            "top_positions": list(check.top_positions), "was": list(edit.was),
            "now": [edit.low, edit.high]})
    if isinstance(edit, FixParameter):
        verdict = next((i for i in analysis.isolation if i.parameter == edit.parameter), None)
        return Decision("fixed", text, {
            "value": edit.value, "importance": analysis.importance.get(edit.parameter),
            **({"verdict": verdict.verdict, "detail": verdict.detail} if verdict else {})})
    if isinstance(edit, SetMaxSteps):
        return Decision("steps", text, {"was": edit.was, "now": edit.steps, "curves": [
            {"trial": c.number, "issues": list(c.issues)} for c in analysis.curves]})
    if isinstance(edit, EarlyStopping):
        replay = analysis.replay
        best = replay.recommended if replay else None
        return Decision("early_stopping", text, {
            "reason": edit.reason, "early_stopping": dict(edit.block) or None,
            "replay": None if best is None else {
                "setting": best.rule.label, "step_saving": best.step_saving,
                "gpu_hours_saved": best.gpu_hours_saved, "top_k": {
                    str(n): kept for n, kept in best.top_k.items()},
                "keeps_best": best.keeps_best, "shortfall": dict(best.shortfall),
                "rank_correlation": best.rank_correlation}})
    return Decision("other", text, {})


def round_of(study: StudyRecord, spec: StudySpec, trials: Sequence[TrialRecord],
             analysis: StudyAnalysis) -> Round:
    """``study``'s row of the timeline, from its campaign record and its report's analysis
    of ``trials``."""
    found = membership(study) or first_round(study, spec)
    best = analysis.summary.best_trials[0] if analysis.summary.best_trials else None
    telemetry = analysis.telemetry
    return Round(
        round=int(found["round"]), study=study.name, state=str(study.state),
        parent=found.get("parent"), metric=spec.metric, mode=spec.mode, space=space(spec),
        best_value=None if best is None else best.value,
        best_trial=None if best is None else best.number,
        noise=analysis.noise.sigma if analysis.noise else None,
        verdicts=tuple(f"{i.parameter}: {i.verdict} ({i.detail})" for i in analysis.isolation
                       if i.verdict in (VERDICT_DIFFERS, VERDICT_WITHIN_NOISE,
                                        VERDICT_STOPPED_EARLY)),
        decisions=tuple(Decision(str(d.get("kind")), str(d.get("text")),
                                 dict(d.get("evidence") or {}))
                        for d in found.get("decisions") or ()),
        trials=sum(analysis.summary.counts.values()),
        steps=sum(t.last_step or 0 for t in trials),
        trial_hours=telemetry.trial_hours if telemetry else 0.0,
        gpu_hours=telemetry.gpu_hours if telemetry else 0.0)


def space(spec: StudySpec) -> tuple[str, ...]:
    """The search space, one parameter a line: ``name (role): range | values | value``."""
    lines = []
    for name, p in spec.parameters.items():
        if isinstance(p, RangeParameter):
            shown = f"[{p.low:g}, {p.high:g}]" + (" log" if p.scale == "log" else "")
        elif isinstance(p, ChoiceParameter):
            shown = "{" + ", ".join(map(str, p.values)) + "}"
        elif isinstance(p, FixedParameter):
            shown = f"= {p.value}"
        else:
            shown = "?"
        lines.append(f"{name} ({p.role}): {shown}")
    return tuple(lines)


def campaign_rounds(name: str, rounds: Sequence[Round]) -> Campaign:
    """The campaign ``name`` with its ``rounds`` in round order."""
    return Campaign(name, tuple(sorted(rounds, key=lambda r: (r.round, r.study))))
