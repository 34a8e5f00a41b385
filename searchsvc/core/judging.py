"""How a study is judged, one rule each, the same on every surface (docs/DESIGN.md, "What every
surface reports"): what a search trial is, a trial's outcome, the study's best, its counts and
how it ends. The store's summaries, live progress, the command line, the Python and REST APIs,
the web UI, the report and the trackers all call these; none re-derives them.

- **Search trial**: a trial the searcher proposed. A *seed repeat* (``repeat_of`` set) reruns a
  ranked config with a new seed to measure the noise; it is never a search trial.
- **Outcome** (:func:`trial_outcome`): completed, pruned (stopped by a scheduler after it
  reported the metric), failed (raised, died, timed out, or never reported an objective) or
  infeasible (an objective went NaN/inf, it ran out of memory, or its final metrics are outside
  a ``constraints:`` bound or never reported that bound's metric).
- **Best** (:func:`best_trial`): the best value of the study's metric, in its direction, among
  the search trials that completed or were pruned and meet every constraint (each bound's metric
  reported in the trial's final metrics and inside it). A trial's value is its best step's
  (retrospective). Ties go to the lower trial number. A study with several objectives is judged
  on the first (its ``metric``), as the report's "Best trials" ranks them; its Pareto front is
  the report's ``pareto_front``.
- **Full budget** (:func:`reached_full_budget`, :func:`budget_split`): a trial reached the full
  budget unless an early-stopping rule stopped it (pruned) before ``budget.max_steps``. Seed
  repeats always run the whole budget, and without ``max_steps`` every trial counts. Analyses
  that compare scientific arms (isolation, importance, the best-per-arm tables) compare them
  only on such trials: a stopped trial's value is from fewer steps, and a slow-starting arm is
  stopped more often. The study's best is not judged this way: pruned trials count there.
- **Counts** (:class:`StudyCounts`): search trials by state; seed repeats by state, apart.
- **End** (:func:`study_end`): a study whose search trials all ended without a usable result
  (none completed or pruned) failed.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Generic, Protocol, TypeVar

from searchsvc.core.curve import is_finite_number
from searchsvc.core.direction import direction
from searchsvc.core.objectives import Constraint
from searchsvc.core.states import FINISHED_TRIAL_STATES, StudyState, TrialState


class Judged(Protocol):
    """What the rules read of a trial (a :class:`~searchsvc.core.TrialRecord` has it all)."""

    @property
    def number(self) -> int: ...
    @property
    def state(self) -> str: ...
    @property
    def best_value(self) -> float | None: ...
    @property
    def repeat_of(self) -> int | None: ...
    @property
    def final_metrics(self) -> Mapping[str, float]: ...


T = TypeVar("T", bound=Judged)


class Stepped(Judged, Protocol):
    """A trial with the step it reached (what the full-budget rule reads)."""

    @property
    def last_step(self) -> int | None: ...


S = TypeVar("S", bound=Stepped)


@dataclass(frozen=True)
class Candidate:
    """The little of a trial the rules read, where a store summarises rows without building
    whole trial records."""

    number: int
    state: str
    best_value: float | None
    repeat_of: int | None = None
    final_metrics: Mapping[str, float] = field(default_factory=dict)

# The outcomes that produced a result a study can be judged on.
USABLE_STATES = frozenset({TrialState.COMPLETED, TrialState.PRUNED})
# The outcomes that produced none (what "failed" counts in live progress and the CLI).
UNUSABLE_STATES = frozenset({TrialState.FAILED, TrialState.INFEASIBLE})


# -- search trials and seed repeats ------------------------------------------------------------

def is_search_trial(trial: Judged) -> bool:
    """Whether the searcher proposed ``trial`` (not a seed repeat of another trial)."""
    return trial.repeat_of is None


def search_trials(trials: Iterable[T]) -> list[T]:
    """The search's own trials, in the given order: every trial but the seed repeats."""
    return [t for t in trials if is_search_trial(t)]


def seed_repeats(trials: Iterable[T]) -> list[T]:
    """The seed repeats, in the given order (judged apart: the measured noise)."""
    return [t for t in trials if not is_search_trial(t)]


# -- the study's best --------------------------------------------------------------------------

def meets_constraints(final_metrics: Mapping[str, float],
                      constraints: Sequence[Constraint]) -> bool:
    """Whether every constraint's metric was reported and is inside its bounds."""
    return all(c.violation(final_metrics) == 0.0 for c in constraints)


def has_result(trial: Judged) -> bool:
    """Whether ``trial`` completed or was pruned with a finite value."""
    return (trial.state in USABLE_STATES and trial.best_value is not None
            and math.isfinite(trial.best_value))


def _value_order(mode: str) -> Callable[[Judged], tuple[float, int]]:
    """The sort key of the best-first order: the value (best first), then the lower number."""
    sign = direction(mode).sign
    return lambda t: (sign * float(t.best_value), t.number)  # type: ignore[arg-type]


def by_value(trials: Iterable[T], mode: str) -> list[T]:
    """The trials of ``trials`` with a result, best value first (ties: the lower number)."""
    return sorted((t for t in trials if has_result(t)), key=_value_order(mode))


def completed_first(trials: Iterable[T], mode: str) -> list[T]:
    """The trials of ``trials`` with a result, those that trained their whole budget
    (completed) before those a scheduler stopped (pruned), each group best first (ties: the
    lower number): the order seed repeats take configurations in."""
    ordered = by_value(trials, mode)
    return ([t for t in ordered if t.state == TrialState.COMPLETED]
            + [t for t in ordered if t.state != TrialState.COMPLETED])


def completed_first_on(trials: Iterable[T], name: str, mode: str,
                       constraints: Sequence[Constraint] = ()) -> list[T]:
    """:func:`completed_first` for one objective ``name`` of several, judged on final values:
    the trials with a finite ``name``, those that completed and meet every constraint first,
    each group best first (ties: the lower number)."""
    sign = direction(mode).sign
    return sorted((t for t in trials if is_finite_number(t.final_metrics.get(name))),
                  key=lambda t: (t.state != TrialState.COMPLETED
                                 or not meets_constraints(t.final_metrics, constraints),
                                 sign * t.final_metrics[name], t.number))


def is_best_candidate(trial: Judged, constraints: Sequence[Constraint] = ()) -> bool:
    """Whether ``trial`` may be the study's best: a search trial that completed or was pruned
    with a finite value and meets every constraint."""
    return (is_search_trial(trial) and has_result(trial)
            and meets_constraints(trial.final_metrics, constraints))


def ranked(trials: Iterable[T], mode: str, constraints: Sequence[Constraint] = ()) -> list[T]:
    """The study's best candidates among ``trials``, best first (ties: the lower number)."""
    return by_value((t for t in trials if is_best_candidate(t, constraints)), mode)


def best_trial(trials: Iterable[T], mode: str, constraints: Sequence[Constraint] = ()
               ) -> T | None:
    """The study's best trial (None: no trial qualifies yet)."""
    found = ranked(trials, mode, constraints)
    return found[0] if found else None


def best_after(best: T | None, trial: T, mode: str, constraints: Sequence[Constraint] = ()
               ) -> T | None:
    """The study's best once ``trial`` has ended, given ``best``, the best of the trials that
    ended before it: :func:`best_trial`'s rule one trial at a time, so that a live count
    costs the same at trial 10,000 as at trial 1."""
    if not is_best_candidate(trial, constraints):
        return best
    if best is None:
        return trial
    order = _value_order(mode)
    return trial if order(trial) < order(best) else best


def best_value(trials: Iterable[Judged], mode: str, constraints: Sequence[Constraint] = ()
               ) -> float | None:
    """The study's best value (None: no trial qualifies yet)."""
    best = best_trial(trials, mode, constraints)
    return None if best is None else best.best_value


# -- the full budget -------------------------------------------------------------------------

def reached_full_budget(trial: Stepped, max_steps: int | None) -> bool:
    """Whether ``trial`` trained its whole budget: a seed repeat (always does), any trial of a
    study without ``max_steps``, a trial no early-stopping rule stopped (completed, or ended
    otherwise), or one stopped at ``max_steps`` or later. Only a pruned trial whose
    ``last_step`` is below ``max_steps`` did not: its value is from fewer steps."""
    if max_steps is None or trial.repeat_of is not None or trial.state != TrialState.PRUNED:
        return True
    return trial.last_step is not None and trial.last_step >= max_steps


@dataclass(frozen=True)
class BudgetSplit(Generic[S]):
    """Trials with a result split by :func:`reached_full_budget`, in the given order."""

    full: tuple[S, ...]  # reached the full budget: what arms are compared on
    stopped: tuple[S, ...]  # an early-stopping rule stopped them before it

    @property
    def total(self) -> int:
        return len(self.full) + len(self.stopped)

    @property
    def stopped_share(self) -> float:
        """The share of the trials that were stopped early (0 without trials)."""
        return len(self.stopped) / self.total if self.total else 0.0

    @property
    def mostly_stopped(self) -> bool:
        """Whether early stopping stopped more than half of the trials."""
        return 2 * len(self.stopped) > self.total


def budget_split(trials: Iterable[S], max_steps: int | None) -> BudgetSplit[S]:
    """The trials of ``trials`` with a result (:func:`has_result`), split into those that
    reached the full budget and those an early-stopping rule stopped before it: the one count
    of how many of an arm's trials were stopped early, and of those it is compared on."""
    usable = [t for t in trials if has_result(t)]
    return BudgetSplit(tuple(t for t in usable if reached_full_budget(t, max_steps)),
                       tuple(t for t in usable if not reached_full_budget(t, max_steps)))


def full_budget_trials(trials: Iterable[S], max_steps: int | None) -> list[S]:
    """The trials of ``trials`` with a result that reached the full budget, in the given
    order (:func:`budget_split`)."""
    return list(budget_split(trials, max_steps).full)


# -- counts ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class StudyCounts:
    """Search trials by state and seed repeats by state (only states with trials are keys)."""

    search: Mapping[str, int] = field(default_factory=dict)
    repeats: Mapping[str, int] = field(default_factory=dict)

    @classmethod
    def tally(cls, rows: Iterable[tuple[str, bool, int]]) -> StudyCounts:
        """From (state, is a seed repeat, how many) rows (a store's grouped query)."""
        search: dict[str, int] = {}
        repeats: dict[str, int] = {}
        for state, repeat, n in rows:
            if n:
                into = repeats if repeat else search
                into[str(state)] = into.get(str(state), 0) + int(n)
        return cls(_in_order(search), _in_order(repeats))

    def plus(self, trial: Judged) -> StudyCounts:
        """These counts with ``trial`` counted too (one more trial of the study)."""
        rows = [*((s, False, n) for s, n in self.search.items()),
                *((s, True, n) for s, n in self.repeats.items())]
        return StudyCounts.tally([*rows, (trial.state, not is_search_trial(trial), 1)])

    @property
    def finished(self) -> int:
        """Search trials that ended for good (not running, not interrupted: those run again)."""
        return sum(n for s, n in self.search.items() if s in FINISHED_TRIAL_STATES)

    @property
    def ended(self) -> int:
        """Every trial that ended for good, seed repeats included (what a study's
        ``total_trials``, which plans its repeats, is counted against)."""
        return self.finished + sum(n for s, n in self.repeats.items()
                                   if s in FINISHED_TRIAL_STATES)

    @property
    def usable(self) -> int:
        """Search trials that produced a result (completed or pruned)."""
        return sum(n for s, n in self.search.items() if s in USABLE_STATES)

    @property
    def failed(self) -> int:
        """Search trials that produced none (failed or infeasible)."""
        return sum(n for s, n in self.search.items() if s in UNUSABLE_STATES)

    @property
    def running(self) -> int:
        return self.search.get(TrialState.RUNNING, 0) + self.repeats.get(TrialState.RUNNING, 0)

    @property
    def repeats_total(self) -> int:
        return sum(self.repeats.values())

    @property
    def repeats_finished(self) -> int:
        """Seed repeats that ended for good."""
        return sum(n for s, n in self.repeats.items() if s in FINISHED_TRIAL_STATES)

    def describe(self) -> str:
        """``3 completed, 1 failed; 2 seed repeats`` ("no trials yet" without any)."""
        text = ", ".join(f"{n} {s}" for s, n in self.search.items()) or "no trials yet"
        if self.repeats:
            text += f"; {self.repeats_total} seed repeats"
        return text


def count_line(finished: int, total: int, repeats_finished: int = 0, repeats_total: int = 0
               ) -> str:
    """How far a study is, as live progress and the closing summary both say it: its search
    trials against the search's total, and its seed repeats apart (when it plans any):
    ``4/8 trials finished, 2/12 seed repeats``."""
    text = f"{finished}/{total} trials finished"
    if repeats_total:
        text += f", {repeats_finished}/{repeats_total} seed repeats"
    return text


# The order counts are given in: outcomes first, then what has not ended.
COUNT_ORDER = (TrialState.COMPLETED, TrialState.PRUNED, TrialState.FAILED,
               TrialState.INFEASIBLE, TrialState.INTERRUPTED, TrialState.RUNNING)


def _in_order(counts: Mapping[str, int]) -> dict[str, int]:
    rank = {str(s): i for i, s in enumerate(COUNT_ORDER)}
    return dict(sorted(counts.items(), key=lambda kv: (rank.get(kv[0], len(rank)), kv[0])))


def study_counts(trials: Iterable[Judged]) -> StudyCounts:
    """The counts of ``trials`` (every trial of one study)."""
    return StudyCounts.tally((t.state, not is_search_trial(t), 1) for t in trials)


# -- a trial's outcome -------------------------------------------------------------------------

@dataclass(frozen=True)
class TrialEnd:
    """What is known of a trial when it ends, whatever ran it (Ray Tune, a backend's own
    search): the evidence :func:`trial_outcome` decides on."""

    objectives: Sequence[str]  # the study's objectives; the first is its metric
    final_metrics: Mapping[str, float]  # the last finite value of every metric reported
    reported: Iterable[str] = ()  # every metric name it reported (for the error message)
    error: str | None = None  # it raised, died or timed out: the error
    out_of_memory: bool = False  # ... and that error was running out of memory
    non_finite: tuple[str, int] | None = None  # (objective, step) that first went NaN/inf
    stopped_early: str | None = None  # a scheduler stopped it: why
    constraints: Sequence[Constraint] = ()  # the study's bounds on its final metrics


@dataclass(frozen=True)
class Outcome:
    state: TrialState
    error: str | None = None


def trial_outcome(end: TrialEnd) -> Outcome:
    """A finished trial's outcome. In order: an error fails it (infeasible when it ran out of
    memory); an objective that went NaN/inf makes it infeasible; an objective never reported
    fails it; final metrics outside a constraint's bounds (or without its metric) make it
    infeasible; a scheduler's stop prunes it; else it completed. A trial infeasible by its
    constraints keeps its values: searchers and the Pareto front judge it on them
    (:func:`outside_constraints`)."""
    if end.error is not None:
        return Outcome(TrialState.INFEASIBLE if end.out_of_memory else TrialState.FAILED,
                       end.error)
    if end.non_finite is not None:
        name, step = end.non_finite
        return Outcome(TrialState.INFEASIBLE, f"{name} became non-finite at step {step}")
    metric = end.objectives[0] if end.objectives else None
    pruned = end.stopped_early is not None and metric in end.final_metrics
    unreported = [n for n in end.objectives if n not in end.final_metrics]
    if unreported and not pruned:
        seen = ", ".join(sorted(set(end.reported))) or "nothing"
        missing = " and ".join(repr(n) for n in unreported)
        return Outcome(TrialState.FAILED, f"the objective finished without reporting the "
                                          f"metric {missing} (it reported: {seen})")
    broken = constraint_breaches(end.constraints, end.final_metrics)
    if broken:
        return Outcome(TrialState.INFEASIBLE, "; ".join(broken))
    if pruned:
        return Outcome(TrialState.PRUNED, end.stopped_early)
    return Outcome(TrialState.COMPLETED)


def constraint_breaches(constraints: Sequence[Constraint], final_metrics: Mapping[str, float]
                        ) -> list[str]:
    """What each constraint the final metrics break says (empty: they meet them all)."""
    out = []
    for c in constraints:
        violation = c.violation(final_metrics)
        if violation is None:
            out.append(f"outside the constraint {c.describe()}: {c.metric} was never reported")
        elif violation > 0:
            out.append(f"outside the constraint {c.describe()}: {c.metric} = "
                       f"{final_metrics[c.metric]:.6g}")
    return out


def outside_constraints(trial: Judged, constraints: Sequence[Constraint]) -> bool:
    """Whether ``trial`` is infeasible because of its constraints (not because it diverged or
    ran out of memory): its values are real results, judged infeasible."""
    return (trial.state == TrialState.INFEASIBLE and bool(constraints)
            and not meets_constraints(trial.final_metrics, constraints))


def searcher_value(trial: Judged, constraints: Sequence[Constraint] = ()) -> float | None:
    """The value a searcher is told for a finished ``trial``: its best when it completed or
    was pruned, or when only its constraints made it infeasible (constraint-aware samplers
    need it); None when it produced no result."""
    if trial.state in USABLE_STATES or outside_constraints(trial, constraints):
        value = trial.best_value
        return float(value) if value is not None and math.isfinite(value) else None
    return None


# -- how a study ends --------------------------------------------------------------------------

NO_RESULT = "no trial produced a usable result"
# The provenance key that holds why a study failed (written by whatever failed it).
FAILURE_KEY = "failure"


def study_end(counts: StudyCounts, *, stopped: bool, failed_fast: str | None = None
              ) -> tuple[StudyState, str | None]:
    """The state a run leaves its study in and, when it failed, why. ``stopped``: the run
    ended before its budget was spent (Ctrl-C, a time limit, a cancel): resumable.
    ``failed_fast``: why the run stopped itself (:func:`searchsvc.core.failures.fail_fast`):
    failed, and resumable once the cause is fixed."""
    if failed_fast is not None:
        return StudyState.FAILED, failed_fast
    if stopped:
        return StudyState.INTERRUPTED, None
    if counts.usable == 0:
        n = counts.finished
        return StudyState.FAILED, (f"{NO_RESULT}: all {n} search trials failed or were "
                                   "infeasible (see each trial's error)" if n else
                                   f"{NO_RESULT}: no search trial ran")
    return StudyState.COMPLETED, None
