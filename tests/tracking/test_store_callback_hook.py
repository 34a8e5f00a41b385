"""The driver's store callback feeds the trackers: each start, batch of steps and end reaches
them after the store holds it, and the callback still pickles detached (Ray Tune pickles its
callbacks; the trackers must never travel)."""

from __future__ import annotations

import io
import pickle
from dataclasses import dataclass, field
from typing import Any

from searchsvc.core import TrialState
from searchsvc.driver.callbacks import StoreCallback
from searchsvc.driver.progress import Progress
from searchsvc.searchers import create_searcher
from searchsvc.store import InMemoryStore, Store
from searchsvc.tracking import Trackers
from searchsvc.worker.context import META_KEY
from tests.tracking.records import SPEC, spec
from tests.tracking.test_tracking_spec import Recorder


class StoreChecker(Recorder):
    """Records each call with what the store holds of the trial at that moment."""

    def __init__(self, store: Store):
        super().__init__("checker")
        self.store = store
        self.seen: list[tuple[str, int, Any, list[int]]] = []

    def _stored(self, number: int) -> tuple[Any, list[int]]:
        [trial] = [t for t in self.store.get_trials("tracked", measurements=True)
                   if t.number == number]
        return trial.state, [m.step for m in trial.measurements]

    def trial_started(self, trial: Any) -> None:
        self.seen.append(("started", trial.number, *self._stored(trial.number)))

    def measurements(self, trial: Any, items: Any) -> None:
        self.seen.append(("steps", trial.number, [m.step for m in items],
                          self._stored(trial.number)[1]))

    def trial_finished(self, trial: Any) -> None:
        self.seen.append(("finished", trial.number, trial.state, self._stored(trial.number)[0]))


@dataclass
class FakeTrial:
    """What the callback reads of Ray Tune's trial object."""

    trial_id: str
    config: dict
    path: str | None = None
    temporary_state: Any = None
    error_file: str | None = None
    extra: dict = field(default_factory=dict)


def callback(store: Store, trackers: Trackers) -> StoreCallback:
    study = store.create_study(name="tracked", metric="loss", mode="min", searcher="quasi_random",
                               spec_text=SPEC, spec_file="<spec>", total_trials=2,
                               results_dir=None, provenance={})
    progress = Progress("tracked", 2, "loss", "min", stream=io.StringIO(), live=False)
    return StoreCallback(store, study, create_searcher(spec()), progress, trackers=trackers)


def fake_trial(number: int) -> FakeTrial:
    return FakeTrial(f"ray-{number}", {"lr": 0.01, "depth": 1, META_KEY: {
        "number": number, "arm": {"depth": 1}, "seed": 7}})


def test_trackers_get_each_write_after_the_store_has_it() -> None:
    store = InMemoryStore()
    checker = StoreChecker(store)
    trackers = Trackers([checker])
    cb = callback(store, trackers)
    one, two = fake_trial(0), fake_trial(1)

    def then(_: object = None) -> None:
        # Tracker calls run on the trackers' own thread: waiting for each lets the checker
        # see the store as it was right after the write that queued the call.
        trackers.drain()

    then(cb.on_trial_start(0, [], one))
    then(cb.on_trial_start(0, [], two))
    for step in (1, 2):
        then(cb.on_trial_result(0, [], one, {"training_iteration": step, "loss": 1.0 / step}))
    then(cb.write_results())
    then(cb.on_trial_result(0, [], one, {"training_iteration": 3, "loss": 0.3}))
    then(cb.on_trial_result(0, [], two, {"training_iteration": 1, "loss": 0.9}))
    then(cb.on_trial_complete(0, [], one))  # its last step and its end, written together
    then(cb.interrupt_all())  # the study stops while trial 1 runs
    assert checker.seen == [
        ("started", 0, "running", []),
        ("started", 1, "running", []),
        ("steps", 0, [1, 2], [1, 2]),
        ("steps", 0, [3], [1, 2, 3]),
        ("finished", 0, TrialState.COMPLETED, TrialState.COMPLETED),
        ("steps", 1, [1], [1]),
        ("finished", 1, TrialState.INTERRUPTED, TrialState.INTERRUPTED),
    ]


def test_the_callback_pickles_without_its_trackers() -> None:
    store = InMemoryStore()
    cb = callback(store, Trackers([StoreChecker(store)]))
    copy = pickle.loads(pickle.dumps(cb))
    assert copy.detached and not hasattr(copy, "trackers")


def test_a_result_sent_by_another_trial_never_lands_in_this_ones_record() -> None:
    store = InMemoryStore()
    cb = callback(store, Trackers([]))
    one = fake_trial(1)
    cb.on_trial_start(0, [], one)
    cb.on_trial_result(0, [], one, {"training_iteration": 1, "loss": 0.7, "searchsvc_trial": 1})
    for step in (2, 3):  # trial 0's, through the worker Ray Tune reused for trial 1
        cb.on_trial_result(0, [], one, {"training_iteration": step, "loss": 0.1,
                                        "searchsvc_trial": 0})
    cb.on_trial_result(0, [], one, {"training_iteration": 2, "loss": 0.6})  # unmarked: its own
    cb.on_trial_complete(0, [], one)
    [trial] = store.get_trials("tracked", measurements=True)
    assert [(m.step, m.metrics["loss"]) for m in trial.measurements] == [(1, 0.7), (2, 0.6)]
    assert "searchsvc_trial" not in trial.measurements[0].metrics
    assert trial.final_metrics["loss"] == 0.6
    events = [e for e in store.get_events("tracked") if e.kind == "foreign_result"]
    assert [(e.number, e.step, e.data) for e in events] == [(1, 2, {"from": 0})]
