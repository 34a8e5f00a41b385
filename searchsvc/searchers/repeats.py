"""Seed repeats (the study file's ``noise``): after the search, each arm's best configurations
run again with new seeds, so the report can measure trial-to-trial noise instead of guessing it
(docs/DESIGN.md, "Noise"; the statistics are in :mod:`searchsvc.analysis.noise`).

Repeats are ordinary trials numbered after the search's, in fixed slots: trial
``first + (arm * top_k + rank) * seeds + s`` is seed ``s`` of the arm's ``rank``-th best
configuration. The plan is a pure function of the finished search trials, so a resumed study
plans the same repeats and runs only the slots not yet finished.
"""

from __future__ import annotations

from collections.abc import Sequence

from searchsvc.core import TrialRecord
from searchsvc.core.judging import (
    completed_first,
    completed_first_on,
    has_result,
    search_trials,
)
from searchsvc.searchers.base import NoOptions, Proposal, Searcher
from searchsvc.searchers.space import Arm, trial_seed
from searchsvc.spec import Noise, StudySpec


def repeat_settings(spec: StudySpec, searcher: Searcher, runs_own_search: bool
                    ) -> Noise | None:
    """The repeats this study runs: its ``noise`` setting, unless its searcher or backend
    cannot repeat a trial (an explicit request was refused when the file was validated)."""
    if spec.noise is None or runs_own_search or not searcher.repeats_supported:
        return None
    return spec.noise


def planned_repeats(noise: Noise | None, arms: int) -> int:
    """The most repeat trials a study runs (an arm with fewer than ``top_k`` completed
    configurations gets fewer)."""
    return 0 if noise is None else arms * noise.top_k * noise.seeds


def plan_repeats(spec: StudySpec, noise: Noise, arms: Sequence[Arm],
                 trials: Sequence[TrialRecord], first: int) -> list[Proposal]:
    """The repeat proposals for the finished search ``trials``: per arm, the ``top_k`` best
    trials, each with ``seeds`` new seeds. Trials that ran their whole budget (completed) come
    first, best first; an arm with fewer of them fills up with its best pruned trials (judged
    on less training, but a multi-fidelity search can prune a whole weak arm, which would
    otherwise go unmeasured). Repeats always run the whole budget."""
    plan = []
    for a, arm in enumerate(arms):
        mine = [t for t in search_trials(trials)
                if has_result(t) and dict(t.arm) == dict(arm.values)]
        for rank, original in enumerate(repeat_order(spec, mine)[:noise.top_k]):
            for s in range(noise.seeds):
                number = first + (a * noise.top_k + rank) * noise.seeds + s
                plan.append(Proposal(number, dict(original.config), arm,
                                     trial_seed(spec.seed, number), repeat_of=original.number))
    return plan


def repeat_order(spec: StudySpec, trials: Sequence[TrialRecord]) -> list[TrialRecord]:
    """``trials`` (of one arm, with results) in the order their configurations are repeated.

    One metric: completed trials first, best first. Several objectives: the best on each
    objective in turn (the first objective's best, the second's, ..., then each one's next
    best), judged on final values, completed trials meeting every constraint first, so the
    repeats measure each end of the front."""
    if not spec.multi_objective:
        return completed_first(trials, spec.mode)
    rankings = [completed_first_on(trials, o.name, o.mode, spec.constraints)
                for o in spec.objectives]
    chosen: dict[int, TrialRecord] = {}
    while any(rankings):
        for ranking in rankings:
            while ranking and ranking[0].number in chosen:
                ranking.pop(0)
            if ranking:
                chosen[ranking[0].number] = ranking.pop(0)
    return list(chosen.values())


class PlannedSearcher(Searcher):
    """Proposes a fixed plan of proposals, by trial number."""

    name = "planned"
    summary = "a fixed plan of trials"
    Options = NoOptions

    def __init__(self, spec: StudySpec, plan: Sequence[Proposal]):
        super().__init__(spec, NoOptions())
        self.plan = {p.number: p for p in plan}

    @property
    def total_trials(self) -> int:
        return len(self.plan)

    def propose(self, number: int) -> Proposal:
        return self.plan[number]


class RepeatSearcher(PlannedSearcher):
    """Proposes a fixed plan of repeats (what the driver runs after the search)."""

    name = "repeats"
    summary = "seed repeats of the search's best configurations"

    def schedule(self) -> None:
        """None: a repeat runs its whole budget, whatever the study's early stopping (it
        measures the noise of a full run)."""
        return None
