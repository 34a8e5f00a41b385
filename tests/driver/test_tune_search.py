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
