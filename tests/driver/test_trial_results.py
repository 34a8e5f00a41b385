"""The pure parts under the driver's Ray callback, without Ray: a running trial's results and
the outcome they give, a retry that redoes steps, and the writer that stores results in batches
and only then hands them to the trackers."""

from __future__ import annotations

import math
from typing import Any

from searchsvc.core import Constraint, Measurement, TrialRecord, TrialState
from searchsvc.core.judging import trial_outcome
from searchsvc.driver.trial_results import (
    INTERRUPTED_ERROR,
    ResultWriter,
    RunningTrial,
    step_telemetry,
    user_metrics,
)
from searchsvc.store import InMemoryStore, Store
from tests.tracking.test_tracking_spec import Recorder


class Seen(Recorder):
    """Records what it is given, with the steps the store held at that moment."""

    def __init__(self, store: Store):
        super().__init__("seen")
        self.store, self.calls = store, []  # type: ignore[var-annotated]

    def measurements(self, trial: TrialRecord, items: list[Measurement]) -> None:
        self.calls.append(("steps", [m.step for m in items], self._stored()))

    def trial_finished(self, trial: TrialRecord) -> None:
        self.calls.append(("finished", trial.state, trial.error))

    def _stored(self) -> list[int]:
        return [m.step for t in self.store.get_trials("s", measurements=True)
                for m in t.measurements]


def started(store: Store) -> RunningTrial:
    study = store.create_study(name="s", metric="loss", mode="min", searcher="random",
                               spec_text="", spec_file="<spec>", total_trials=1,
                               results_dir=None, provenance={})
    record = store.start_trial(study.id, number=0, config={"x": 1}, arm={}, seed=0)
    return RunningTrial(record.id, record.number, record.attempts, record=record)


def take(trial: RunningTrial, step: int, **metrics: Any) -> float | None:
    return trial.take(step, metrics, {}, "loss", ("loss", "speed"))


def test_a_running_trial_keeps_its_curve_final_metrics_and_first_non_finite_objective() -> None:
    trial = RunningTrial(1, 0, 1)
    assert take(trial, 1, loss=0.5, speed=2.0, note="warm") == 0.5
    assert take(trial, 2, loss=math.nan, speed=3.0) is not None  # NaN is a number: kept as such
    assert take(trial, 3, loss=0.4, speed=math.inf) == 0.4
    assert trial.non_finite == ("loss", 2)  # the first one, not speed's at step 3
    assert trial.final == {"loss": 0.4, "speed": 3.0}  # last finite value of each
    assert [row[0] for row in trial.unwritten] == [1, 2, 3]
    outcome = trial_outcome(trial.end(("loss", "speed"), ()))
    assert outcome.state == TrialState.INFEASIBLE and "loss" in (outcome.error or "")


def test_the_outcome_and_the_searchers_value_follow_the_constraints() -> None:
    trial = RunningTrial(1, 0, 1)
    take(trial, 1, loss=0.3, speed=1.0, memory=900.0)
    bound = (Constraint("memory", None, 500.0),)
    outcome = trial_outcome(trial.end(("loss", "speed"), bound))
    assert outcome.state == TrialState.INFEASIBLE and "memory" in (outcome.error or "")
    told = trial.observation({"x": 1}, outcome.state, "min", bound)
    assert told.state == TrialState.INFEASIBLE and told.final_metrics["memory"] == 900.0
    fine = trial_outcome(trial.end(("loss", "speed"), ()))
    assert fine.state == TrialState.COMPLETED
    assert trial.observation({"x": 1}, fine.state, "min", ()).value == 0.3


def test_a_retry_that_restarts_from_a_checkpoint_replaces_the_redone_steps() -> None:
    store = InMemoryStore()
    trial = started(store)
    writer = ResultWriter(store, "min", Seen(store))
    for step, loss in ((1, 0.9), (2, 0.8), (3, 0.7)):
        take(trial, step, loss=loss)
    writer.flush([trial])
    trial.retry()
    assert trial.failures == 1 and trial.redoes(2) and not trial.redoes(4)
    writer.discard_from(trial, 2)
    take(trial, 2, loss=0.6)
    assert not trial.redoes(2)  # the retry's own steps from now on
    writer.finish(trial, TrialState.COMPLETED, None, [])
    [stored] = store.get_trials("s", measurements=True)
    assert [(m.step, m.value) for m in stored.measurements] == [(1, 0.9), (2, 0.6)]
    assert trial.reports == [(1, 0.9), (2, 0.6)]


def test_the_writer_batches_and_the_trackers_get_each_batch_after_the_store() -> None:
    store = InMemoryStore()
    trial = started(store)
    seen = Seen(store)
    writer = ResultWriter(store, "min", seen, delay_s=0.5)
    assert not writer.due(now=100.0)
    take(trial, 1, loss=0.9)
    writer.received(now=100.0)
    take(trial, 2, loss=0.8)
    writer.received(now=100.3)  # the oldest pending result sets the clock
    assert not writer.due(now=100.4) and writer.due(now=100.5)
    assert seen.calls == [] and store.get_trials("s", measurements=True)[0].measurements == ()
    writer.flush([trial])
    assert not writer.due(now=1000.0)  # nothing pending
    take(trial, 3, loss=0.7)
    writer.finish(trial, TrialState.COMPLETED, None, ["/ckpt/1"])
    assert seen.calls == [("steps", [1, 2], [1, 2]), ("steps", [3], [1, 2, 3]),
                          ("finished", TrialState.COMPLETED, None)]
    [stored] = store.get_trials("s")
    assert stored.state == TrialState.COMPLETED and stored.final_metrics == {"loss": 0.7}


def test_interrupting_stores_what_was_pending_then_ends_the_trial() -> None:
    store = InMemoryStore()
    trial = started(store)
    seen = Seen(store)
    take(trial, 1, loss=0.9)
    ResultWriter(store, "min", seen).interrupt([trial])
    [stored] = store.get_trials("s", measurements=True)
    assert (stored.state, stored.error) == (TrialState.INTERRUPTED, INTERRUPTED_ERROR)
    assert [m.step for m in stored.measurements] == [1]
    assert seen.calls == [("steps", [1], [1]), ("finished", TrialState.INTERRUPTED,
                                                INTERRUPTED_ERROR)]


def test_a_ray_result_is_read_as_the_objectives_metrics_and_the_workers_telemetry() -> None:
    result = {"loss": 0.5, "training_iteration": 3, "time_total_s": 4.0, "hostname": "h",
              "time_this_iter_s": 1.5, "tags": ["not", "scalar"]}
    assert user_metrics(result) == {"loss": 0.5, "time_s": 4.0}
    assert step_telemetry(result)["step_time_s"] == 1.5  # only Ray's timing is known
    assert "ray.tune.report" in step_telemetry(result)["source"]


def test_a_retried_trys_timeout_counts_from_when_its_worker_starts_not_from_its_queueing() -> None:
    trial = started(InMemoryStore())
    trial.started = 0.0
    assert trial.overdue(20.0, now=25.0)
    trial.retry()  # queued again; it may wait for a free slot far longer than the timeout
    trial.placed(now=1000.0)
    assert not trial.overdue(20.0, now=1015.0) and trial.overdue(20.0, now=1021.0)
    take(trial, 3, loss=0.5)
    trial.placed(now=5000.0)  # a restart after a pause goes on with the same try's clock
    assert trial.overdue(20.0, now=1021.0)
