"""StudySearch, the adapter Ray Tune asks for trials: proposals in trial-number order, and
"finished" only once every trial it started has ended (so Tune keeps workers for reuse while
PBT pauses and resumes trials)."""

from __future__ import annotations

from ray.tune.search import Searcher as TuneSearcher

from searchsvc.driver.tune_search import StudySearch
from searchsvc.searchers import create_searcher
from searchsvc.usecases import validate_text
from searchsvc.worker.context import META_KEY

SPEC = """
study: adapter
objective: objectives.synthetic:branin
metric: value
mode: min
searcher: random
budget: {trials: 3, max_concurrent: 2}
parameters:
  x1: {role: nuisance, low: -5.0, high: 10.0}
  x2: {role: nuisance, low: 0.0, high: 15.0}
"""


def _search(pending: list[int]) -> StudySearch:
    spec = validate_text(SPEC)
    return StudySearch(create_searcher(spec), pending, "value", "min")


def test_proposals_come_in_trial_number_order_with_their_numbers() -> None:
    search = _search([0, 2])
    first, second = search.suggest("a"), search.suggest("b")
    assert first is not None and second is not None
    assert [first[META_KEY]["number"], second[META_KEY]["number"]] == [0, 2]
    assert {"x1", "x2"} <= set(first)


def test_the_search_finishes_only_when_every_started_trial_has_ended() -> None:
    search = _search([0, 1])
    search.suggest("a")
    search.suggest("b")
    assert search.suggest("c") is None  # nothing left to start, but two trials still run
    search.on_trial_complete("a")
    assert search.suggest("d") is None
    search.on_trial_complete("b", error=True)  # a failed trial has ended too
    assert search.suggest("e") == TuneSearcher.FINISHED


def test_a_resumed_study_with_nothing_pending_is_finished_at_once() -> None:
    assert _search([]).suggest("a") == TuneSearcher.FINISHED


def test_at_its_allowance_the_search_proposes_nothing_until_a_trial_ends() -> None:
    allowed = [2]
    search = StudySearch(create_searcher(validate_text(SPEC)), [0, 1, 2], "value", "min",
                         allowance=lambda: allowed[0])
    assert search.suggest("a") is not None and search.suggest("b") is not None
    allowed[0] = 1  # another user's study arrived
    search.on_trial_complete("a")
    assert search.suggest("c") is None  # one runs: that is the whole allowance
    search.on_trial_complete("b")
    third = search.suggest("d")
    assert third is not None and third[META_KEY]["number"] == 2
    allowed[0] = 0
    search.on_trial_complete("d")
    assert search.suggest("e") == TuneSearcher.FINISHED  # nothing left: done, allowance or not


def test_it_holds_back_only_where_the_allowance_is_below_its_own_concurrency() -> None:
    allowed: list[int | None] = [None]
    search = StudySearch(create_searcher(validate_text(SPEC)), [0, 1, 2], "value", "min",
                         allowance=lambda: allowed[0], concurrency=2)
    search.suggest("a")
    search.suggest("b")
    assert not search.holds_back()  # no allowance: Tune keeps its workers as it does
    allowed[0] = 2
    assert not search.holds_back()  # at its own limit, not held by the allowance
    allowed[0] = 1
    assert search.holds_back()  # two run, one allowed: a worker that frees is let go
    search.on_trial_complete("a")
    search.on_trial_complete("b")
    assert not search.holds_back()  # below it: the next trial takes the freed worker
    search.suggest("c")
    assert search.holds_back()  # trial 2 runs and none is left to start


def test_an_allowance_at_its_own_concurrency_leaves_the_limit_to_tune() -> None:
    # Tune asks for the next trial as one ends, before it reports that trial complete: at 2 of
    # 2 the search then proposed nothing, and Tune ended the worker it kept for the next
    # trial (a worker process per trial on the service's shared Ray).
    allowed = [2]
    search = StudySearch(create_searcher(validate_text(SPEC)), [0, 1, 2], "value", "min",
                         allowance=lambda: allowed[0], concurrency=2)
    assert search.suggest("a") is not None and search.suggest("b") is not None
    assert search.suggest("c") is not None  # Tune's max_concurrent_trials is the limit
    allowed[0] = 1  # below its concurrency: the allowance holds it back again
    assert search.suggest("d") is None
