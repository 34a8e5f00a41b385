"""The rules every surface judges a study by (searchsvc.core.judging): search trials against
seed repeats, a trial's outcome, the study's best, its counts and how a study ends."""

from __future__ import annotations

import math

import pytest

from searchsvc.core import Constraint, StudyState, TrialRecord, TrialState
from searchsvc.core.judging import (
    StudyCounts,
    TrialEnd,
    best_trial,
    best_value,
    by_value,
    outside_constraints,
    ranked,
    search_trials,
    searcher_value,
    seed_repeats,
    study_counts,
    study_end,
    trial_outcome,
)

C, P, F, INF, R, X = (TrialState.COMPLETED, TrialState.PRUNED, TrialState.FAILED,
                    TrialState.INFEASIBLE, TrialState.RUNNING, TrialState.INTERRUPTED)


def trial(number: int, state: TrialState, value: float | None, *, repeat_of: int | None = None,
          final: dict[str, float] | None = None) -> TrialRecord:
    return TrialRecord(id=number, study_id=1, number=number, state=state, config={}, arm={},
                       seed=number, best_value=value, repeat_of=repeat_of,
                       final_metrics=final if final is not None else {"loss": value or 0.0})


MEMORY = Constraint("memory_mb", high=100.0)


def study(mode: str) -> list[TrialRecord]:
    """Every kind of trial; the seed repeats and the unusable trials beat every candidate."""
    good, better, lucky = (0.5, 0.4, 0.01) if mode == "min" else (0.5, 0.6, 0.99)
    return [
        trial(0, C, good, final={"loss": good, "memory_mb": 50}),
        trial(1, P, better, final={"loss": better, "memory_mb": 80}),
        trial(2, C, lucky, final={"loss": lucky, "memory_mb": 500}),  # violates the bound
        trial(3, C, lucky, final={"loss": lucky}),  # never reported memory_mb
        trial(4, F, lucky), trial(5, INF, lucky), trial(6, R, lucky), trial(7, X, lucky),
        trial(8, C, lucky, repeat_of=1, final={"loss": lucky, "memory_mb": 1}),
        trial(9, C, math.nan), trial(10, C, None),
    ]


@pytest.mark.parametrize("mode", ["min", "max"])
def test_the_best_is_a_feasible_completed_or_pruned_search_trial(mode: str) -> None:
    trials = study(mode)
    assert best_trial(trials, mode, (MEMORY,)).number == 1  # type: ignore[union-attr]
    assert best_value(trials, mode, (MEMORY,)) == (0.4 if mode == "min" else 0.6)
    assert [t.number for t in ranked(trials, mode, (MEMORY,))] == [1, 0]
    # Without constraints the bound no longer matters; repeats and unusable states still do.
    assert [t.number for t in ranked(trials, mode)] == [2, 3, 1, 0]


def test_no_candidate_means_no_best_and_ties_go_to_the_lower_number() -> None:
    assert best_trial([trial(0, F, 0.1), trial(1, C, 0.2, repeat_of=0)], "min") is None
    assert best_value([], "max") is None
    assert best_trial([trial(3, C, 0.2), trial(1, P, 0.2)], "min").number == 1  # type: ignore[union-attr]


def test_by_value_ranks_every_result_repeats_included() -> None:
    trials = study("min")
    assert [t.number for t in by_value(trials, "min")] == [2, 3, 8, 1, 0]


def test_search_trials_and_seed_repeats_split_the_study() -> None:
    trials = study("min")
    assert [t.number for t in seed_repeats(trials)] == [8]
    assert [t.number for t in search_trials(trials)] == [n for n in range(11) if n != 8]


def test_counts_keep_seed_repeats_apart_and_interrupted_trials_unfinished() -> None:
    counts = study_counts(study("min"))
    assert counts.search == {"completed": 5, "pruned": 1, "failed": 1, "infeasible": 1,
                             "running": 1, "interrupted": 1}
    assert counts.repeats == {"completed": 1}
    assert (counts.finished, counts.usable, counts.failed, counts.running) == (8, 6, 2, 1)
    assert counts.describe() == ("5 completed, 1 pruned, 1 failed, 1 infeasible, "
                                 "1 interrupted, 1 running; 1 seed repeats")
    assert StudyCounts.tally([("completed", False, 2), ("completed", True, 0)]) == StudyCounts(
        {"completed": 2}, {})
    assert StudyCounts().describe() == "no trials yet"


def test_a_study_without_a_usable_result_failed() -> None:
    failed = study_counts([trial(0, F, None), trial(1, INF, None), trial(2, C, 0.1, repeat_of=0)])
    state, why = study_end(failed, stopped=False)
    assert state == StudyState.FAILED and why is not None
    assert "no trial produced a usable result" in why and "all 2 search trials" in why
    assert study_end(failed, stopped=True) == (StudyState.INTERRUPTED, None)
    assert study_end(study_counts([trial(0, P, 0.3)]), stopped=False) == (
        StudyState.COMPLETED, None)


def end(**kw) -> TrialEnd:  # type: ignore[no-untyped-def]
    base = {"objectives": ("loss",), "final_metrics": {"loss": 0.3}, "reported": ("loss",)}
    return TrialEnd(**{**base, **kw})


def test_the_outcome_of_a_trial() -> None:
    assert trial_outcome(end()).state == C
    assert trial_outcome(end(error="boom")) == trial_outcome(end(error="boom", non_finite=(
        "loss", 2))) and trial_outcome(end(error="boom")).state == F
    oom = trial_outcome(end(error="CUDA out of memory", out_of_memory=True))
    assert (oom.state, oom.error) == (INF, "CUDA out of memory")
    diverged = trial_outcome(end(non_finite=("loss", 3), stopped_early="rung 1"))
    assert (diverged.state, diverged.error) == (INF, "loss became non-finite at step 3")
    assert trial_outcome(end(stopped_early="rung 1")) == trial_outcome(end(
        stopped_early="rung 1"))
    assert trial_outcome(end(stopped_early="rung 1")).state == P
    silent = trial_outcome(end(final_metrics={}, reported=("acc",), stopped_early="rung 1"))
    assert silent.state == F and silent.error == (
        "the objective finished without reporting the metric 'loss' (it reported: acc)")
    half = trial_outcome(end(objectives=("loss", "latency"), reported=()))
    assert half.state == F and "'latency'" in (half.error or "") and "nothing" in (
        half.error or "")
    # Without constraints a metric's value never changes the outcome.
    assert trial_outcome(end(final_metrics={"loss": 0.3, "memory_mb": 900})).state == C


def test_final_metrics_outside_a_constraint_make_a_trial_infeasible() -> None:
    bounds = (MEMORY, Constraint("latency", low=1.0, high=5.0))
    inside = {"loss": 0.3, "memory_mb": 90, "latency": 2.0}
    assert trial_outcome(end(final_metrics=inside, constraints=bounds)).state == C
    over = trial_outcome(end(final_metrics={**inside, "memory_mb": 900}, constraints=bounds))
    assert (over.state, over.error) == (INF, "outside the constraint memory_mb <= 100: "
                                             "memory_mb = 900")
    both = trial_outcome(end(final_metrics={"loss": 0.3, "latency": 9.0}, constraints=bounds))
    assert both.state == INF and both.error == (
        "outside the constraint memory_mb <= 100: memory_mb was never reported; "
        "outside the constraint 1 <= latency <= 5: latency = 9")
    # A pruned trial is judged on its bounds too; an error or divergence comes first.
    pruned = trial_outcome(end(final_metrics={**inside, "memory_mb": 900}, constraints=bounds,
                               stopped_early="rung 1"))
    assert pruned.state == INF
    assert trial_outcome(end(final_metrics=inside, constraints=bounds,
                             stopped_early="rung 1")).state == P
    assert trial_outcome(end(final_metrics={"loss": 0.3}, constraints=bounds,
                             error="boom")).state == F
    assert trial_outcome(end(final_metrics={"loss": 0.3}, constraints=bounds,
                             non_finite=("loss", 2))).error == "loss became non-finite at step 2"


def test_a_searcher_is_told_the_value_of_a_trial_infeasible_only_by_its_constraints() -> None:
    over = trial(0, INF, 0.2, final={"loss": 0.2, "memory_mb": 900})
    diverged = trial(1, INF, 0.1, final={"loss": 0.1, "memory_mb": 50})
    assert outside_constraints(over, (MEMORY,)) and not outside_constraints(diverged, (MEMORY,))
    assert searcher_value(over, (MEMORY,)) == 0.2  # a real result, outside the bound
    assert searcher_value(diverged, (MEMORY,)) is None  # NaN/inf or out of memory: none
    assert searcher_value(over) is None  # without the constraint nothing explains it
    assert [searcher_value(trial(2, s, 0.3)) for s in (C, P, F)] == [0.3, 0.3, None]


@pytest.mark.parametrize("seed", range(5))
def test_the_best_and_the_counts_one_trial_at_a_time_agree_with_the_whole_study(
        seed: int) -> None:
    """Live progress folds each ended trial into the best and counts (best_after,
    StudyCounts.plus); that must equal judging all of them at once (best_trial,
    study_counts), ties, repeats, constraints and non-finite values included."""
    import random

    from searchsvc.core.judging import Candidate, StudyCounts, best_after, best_trial, study_counts

    rng = random.Random(seed)
    constraints = (Constraint("mem", high=5.0),)
    states = [TrialState.COMPLETED, TrialState.PRUNED, TrialState.FAILED,
              TrialState.INFEASIBLE]
    trials = [Candidate(n, rng.choice(states),
                        rng.choice([None, math.nan, float(rng.randint(0, 6))]),
                        rng.choice([None, None, 0]), {"mem": float(rng.randint(0, 9))})
              for n in range(60)]
    for mode in ("min", "max"):
        best, counts = None, StudyCounts()
        for i, trial in enumerate(trials):
            best = best_after(best, trial, mode, constraints)
            counts = counts.plus(trial)
            assert best is best_trial(trials[:i + 1], mode, constraints)
            assert counts == study_counts(trials[:i + 1])
