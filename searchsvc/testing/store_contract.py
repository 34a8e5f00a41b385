"""The contract every :class:`~searchsvc.store.Store` implementation passes, as a reusable pytest
suite: subclass :class:`StoreContract` in a test module and give it a ``store`` fixture that
yields a fresh, empty store::

    class TestMyStore(StoreContract):
        @pytest.fixture
        def store(self, tmp_path):
            yield MyStore(...)

The suite uses the public API only, so SQL and in-memory stores pass the same tests.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pytest

from searchsvc.core import Constraint, EventKind, StudyRecord, StudyState, TokenGrant, TrialState
from searchsvc.errors import ConflictError, NotFoundError
from searchsvc.store import Store


def new_study(store: Store, name: str = "s", mode: str = "min", owner: str | None = None,
              constraints: tuple[Constraint, ...] = ()) -> StudyRecord:
    """A study of metric ``loss`` in ``mode``, as the suite's tests create it."""
    return store.create_study(name=name, metric="loss", mode=mode, searcher="random",
                              spec_text="study: s", spec_file="/x/s.yaml", total_trials=4,
                              results_dir="/tmp/r", provenance={"seed": 3}, owner=owner,
                              constraints=constraints)


def loss(value: float) -> tuple[float, dict[str, Any]]:
    """(value, metrics) of a report of the metric ``loss``."""
    return value, {"loss": value}


class StoreContract:
    """Tests every store passes; a subclass supplies the ``store`` fixture (a fresh store)."""

    @pytest.fixture
    def store(self) -> Iterator[Store]:
        raise NotImplementedError("a subclass of StoreContract provides the store under test")

    # -- studies -------------------------------------------------------------------------------

    def test_a_new_study_is_created_empty(self, store: Store) -> None:
        created = new_study(store, owner="ada")
        assert (created.name, created.state, created.metric, created.mode, created.searcher) == (
            "s", StudyState.CREATED, "loss", "min", "random")
        assert (created.spec_text, created.spec_file, created.total_trials,
                created.results_dir) == ("study: s", "/x/s.yaml", 4, "/tmp/r")
        assert (created.trial_counts, created.best_value, created.driver) == ({}, None, {})
        assert created.provenance == {"seed": 3} and created.owner == "ada"
        assert created.started_at is None and created.finished_at is None
        assert store.get_study("s") == created

    def test_duplicate_study_name_conflicts(self, store: Store) -> None:
        first = new_study(store)
        with pytest.raises(ConflictError, match="a study named 's' already exists"):
            new_study(store, mode="max")
        assert store.get_study("s") == first

    @pytest.mark.parametrize("call", ["get_study", "get_trials", "get_events", "update_study",
                                      "delete_study"])
    def test_unknown_study_is_not_found(self, store: Store, call: str) -> None:
        new_study(store)
        with pytest.raises(NotFoundError, match="no study named 'nope'"):
            getattr(store, call)("nope")

    def test_a_trial_or_event_of_an_unknown_study_id_is_not_found(self, store: Store) -> None:
        study = new_study(store)
        with pytest.raises(NotFoundError, match=f"no study with id {study.id + 1}"):
            store.start_trial(study.id + 1, number=0, config={}, arm={}, seed=0)
        with pytest.raises(NotFoundError, match=f"no study with id {study.id + 1}"):
            store.record_event(study.id + 1, 0, "retried")
        assert store.get_trials("s") == [] and store.get_events("s") == []

    def test_update_study_sets_the_named_fields(self, store: Store) -> None:
        new_study(store)
        updated = store.update_study("s", state=StudyState.RUNNING, started_at=12.5, total_trials=9,
                                     results_dir="/r2", driver={"pid": 42, "host": "h"},
                                     provenance={"git": "abc"})
        assert (updated.state, updated.started_at, updated.total_trials, updated.results_dir) == (
            StudyState.RUNNING, 12.5, 9, "/r2")
        assert updated.driver == {"pid": 42, "host": "h"} and updated.provenance == {"git": "abc"}
        assert store.get_study("s") == updated
        finished = store.update_study("s", finished_at=20.0)
        assert (finished.finished_at, finished.started_at, finished.driver) == (
            20.0, 12.5, {"pid": 42, "host": "h"})

    def test_update_study_refuses_unknown_fields_and_states_changing_nothing(
            self, store: Store) -> None:
        before = new_study(store)
        with pytest.raises(ValueError, match=r"cannot update study fields \['metric'\]"):
            store.update_study("s", state=StudyState.RUNNING, metric="acc")
        with pytest.raises(ValueError):
            store.update_study("s", state="sideways", total_trials=99)
        assert store.get_study("s") == before

    def test_studies_are_listed_oldest_first_by_owner_and_state(self, store: Store) -> None:
        for name, owner in [("a", "ada"), ("b", "bob"), ("c", "ada")]:
            new_study(store, name, owner=owner)
        store.update_study("b", state=StudyState.RUNNING)
        store.update_study("c", state=StudyState.RUNNING)
        assert [s.name for s in store.list_studies()] == ["a", "b", "c"]
        assert [s.name for s in store.list_studies(owner="ada")] == ["a", "c"]
        assert [s.name for s in store.list_studies(states=[StudyState.RUNNING])] == ["b", "c"]
        assert [s.name for s in store.list_studies(owner="ada", states=["running"])] == ["c"]
        assert store.list_studies(owner="eve") == [] and store.list_studies(states=[]) == []

    # -- API tokens ----------------------------------------------------------------------------

    def test_tokens_name_their_user_and_what_they_may_do(self, store: Store) -> None:
        plain, coder = store.create_token("ada"), store.create_token("bob", allow_code=True)
        assert plain != coder and len(plain) >= 32
        assert store.user_for_token(plain) == "ada" and store.user_for_token(coder) == "bob"
        assert store.grant_for_token(plain) == TokenGrant("ada", allow_code=False)
        assert store.grant_for_token(coder) == TokenGrant("bob", allow_code=True)
        assert store.grant_for_token(plain + "x") is None
        assert store.user_for_token("") is None
        lead = store.create_token("cy", max_priority=50)
        assert store.grant_for_token(lead) == TokenGrant("cy", max_priority=50)
        with pytest.raises(ValueError, match="got 101"):
            store.create_token("cy", max_priority=101)

    def test_quotas_are_set_replaced_and_removed_per_user(self, store: Store) -> None:
        assert store.get_quotas() == {}
        store.set_quota("ada", {"GPU": 1})
        store.set_quota("bob", {"CPU": 4, "GPU": 0.5})
        assert store.get_quotas() == {"ada": {"GPU": 1.0}, "bob": {"CPU": 4.0, "GPU": 0.5}}
        store.set_quota("ada", {"CPU": 2})  # replaced whole: no GPU limit left
        store.set_quota("bob", {})
        assert store.get_quotas() == {"ada": {"CPU": 2.0}}
        with pytest.raises(ValueError, match="got \\['memory'\\]"):
            store.set_quota("ada", {"memory": 3})
        with pytest.raises(ValueError, match="-1"):
            store.set_quota("ada", {"GPU": -1})
        assert store.get_quotas() == {"ada": {"CPU": 2.0}}

    # -- trials and measurements ---------------------------------------------------------------

    def test_measurements_round_trip_including_nan(self, store: Store) -> None:
        study = new_study(store)
        t = store.start_trial(study.id, number=0, config={"lr": 0.1}, arm={"d": 1}, seed=7)
        assert (t.number, t.state, t.attempts, t.study_id, t.measurements) == (
            0, TrialState.RUNNING, 1, study.id, ())
        store.record_measurements(t.id, 1, "min", [
            (1, 0.9, {"loss": 0.9, "acc": 0.1}),
            (2, 0.4, {"loss": 0.4, "acc": 0.5}),
            (3, float("nan"), {"loss": float("nan"), "acc": float("inf")}),
        ])
        store.finish_trial(t.id, TrialState.INFEASIBLE, error="diverged")
        [trial] = store.get_trials("s", measurements=True)
        assert (trial.state, trial.best_value, trial.best_step, trial.last_step) == (
            TrialState.INFEASIBLE, 0.4, 2, 3)
        assert [m.step for m in trial.measurements] == [1, 2, 3]
        assert [m.value for m in trial.measurements[:2]] == [0.9, 0.4]
        assert math.isnan(trial.measurements[2].metrics["loss"])
        assert trial.measurements[2].metrics["acc"] == math.inf
        assert trial.measurements[2].value is None
        assert trial.config == {"lr": 0.1} and trial.arm == {"d": 1} and trial.seed == 7
        assert trial.error == "diverged" and trial.finished_at is not None

    def test_telemetry_is_kept_per_step_apart_from_the_metrics(self, store: Store) -> None:
        study = new_study(store)
        t = store.start_trial(study.id, number=0, config={}, arm={}, seed=0)
        telemetry = {"step_time_s": 0.25, "rss_mb": 310.5, "gpu": "none assigned",
                     "gpu_ids": []}
        store.record_measurements(t.id, 1, "min", [
            (1, *loss(0.9), telemetry),
            (2, *loss(0.5)),  # the three-element row stays valid: no telemetry
            (3, *loss(0.4), {}),
        ])
        [trial] = store.get_trials("s", measurements=True)
        assert [dict(m.telemetry) for m in trial.measurements] == [telemetry, {}, {}]
        assert all("step_time_s" not in m.metrics for m in trial.measurements)
        assert (trial.best_value, trial.last_step) == (0.4, 3)

    def test_a_large_studys_measurements_come_back_whole_and_in_order(self, store: Store
                                                                      ) -> None:
        # More rows than one read batch (a store may read a large study in batches).
        study = new_study(store)
        steps = {number: 1 + (number * 37) % 300 for number in range(40)}
        for number, count in steps.items():
            t = store.start_trial(study.id, number=number, config={}, arm={}, seed=number)
            store.record_measurements(t.id, 1, "min", [
                (step, *loss(number + 1 / step)) for step in range(1, count + 1)])
        assert sum(steps.values()) > 6000
        trials = store.get_trials("s", measurements=True)
        assert {t.number: [m.step for m in t.measurements] for t in trials} == {
            n: list(range(1, c + 1)) for n, c in steps.items()}
        assert all(m.value == t.number + 1 / m.step and m.telemetry == {}
                   for t in trials for m in t.measurements)

    def test_dimensionality_is_kept_per_step_and_layer_apart_from_the_rest(self, store: Store
                                                                           ) -> None:
        study = new_study(store)
        t = store.start_trial(study.id, number=0, config={}, arm={}, seed=0)
        measured = {"source": "probe", "layers": {
            "fc1": {"participation_ratio": 7.25, "stable_rank": 3.5},
            "blocks.0.attn": {"participation_ratio": 1.0, "stable_rank": 1.0}}}
        store.record_measurements(t.id, 1, "min", [
            (1, *loss(0.9), {"step_time_s": 0.25}, measured),
            (2, *loss(0.5), {}),  # telemetry but nothing measured
            (3, *loss(0.4), {}, {}),
        ])
        [trial] = store.get_trials("s", measurements=True)
        assert [dict(m.dimensionality) for m in trial.measurements] == [measured, {}, {}]
        assert dict(trial.measurements[0].telemetry) == {"step_time_s": 0.25}
        assert all("layers" not in m.metrics for m in trial.measurements)

    def test_a_seed_repeat_keeps_the_trial_it_repeats_across_attempts(self, store: Store
                                                                      ) -> None:
        study = new_study(store)
        store.start_trial(study.id, number=0, config={"lr": 0.1}, arm={}, seed=1)
        first = store.start_trial(study.id, number=5, config={"lr": 0.1}, arm={}, seed=9,
                                  repeat_of=0)
        assert first.repeat_of == 0
        store.interrupt_running_trials(study.id)
        again = store.start_trial(study.id, number=5, config={"lr": 0.1}, arm={}, seed=9,
                                  repeat_of=0)  # resumed: attempt 2 of the same repeat
        assert (again.attempts, again.repeat_of) == (2, 0)
        by_number = {t.number: t for t in store.get_trials("s")}
        assert (by_number[0].repeat_of, by_number[5].repeat_of, by_number[5].seed) == (None, 0, 9)

    def test_final_metrics_are_kept_and_cleared_by_a_new_attempt(self, store: Store) -> None:
        study = new_study(store)
        t = store.start_trial(study.id, number=0, config={}, arm={}, seed=0)
        store.finish_trial(t.id, "completed", final_metrics={"loss": 0.25, "latency_ms": 12.0})
        assert store.get_trials("s")[0].final_metrics == {"loss": 0.25, "latency_ms": 12.0}
        u = store.start_trial(study.id, number=1, config={}, arm={}, seed=0)
        store.finish_trial(u.id, "interrupted")
        assert store.get_trials("s")[1].final_metrics == {}
        store.finish_trial(u.id, "interrupted", final_metrics={"loss": 0.5})
        again = store.start_trial(study.id, number=1, config={}, arm={}, seed=0)
        assert again.attempts == 2 and again.final_metrics == {}
        assert store.get_trials("s")[1].final_metrics == {}

    def test_best_value_follows_mode(self, store: Store) -> None:
        study = new_study(store, mode="max")
        t = store.start_trial(study.id, number=0, config={}, arm={}, seed=0)
        store.record_measurements(t.id, 1, "max", [(1, *loss(0.2)), (2, *loss(0.7)),
                                                   (3, *loss(0.5))])
        store.finish_trial(t.id, TrialState.COMPLETED)
        assert (store.get_trials("s")[0].best_value, store.get_trials("s")[0].best_step) == (
            0.7, 2)
        assert store.get_study("s").best_value == 0.7

    @pytest.mark.parametrize("mode", ["min", "max"])
    def test_the_study_best_is_the_best_completed_or_pruned_search_trial(self, store: Store,
                                                                         mode: str) -> None:
        study = new_study(store, mode=mode)
        lucky = 0.1 if mode == "min" else 0.95
        values = {0: [0.5, 0.45], 1: [0.3, float("nan")], 2: [float("inf")], 3: [0.9, 0.2],
                  4: [lucky], 5: [lucky], 6: [lucky]}
        states = {0: TrialState.COMPLETED, 1: TrialState.INFEASIBLE, 2: TrialState.INFEASIBLE,
                  3: TrialState.PRUNED, 4: TrialState.FAILED, 5: TrialState.INTERRUPTED,
                  6: TrialState.COMPLETED}
        for number, reports in values.items():
            t = store.start_trial(study.id, number=number, config={}, arm={}, seed=number,
                                  repeat_of=0 if number == 6 else None)  # 6: a seed repeat
            store.record_measurements(t.id, 1, mode, [(step, *loss(v))
                                                      for step, v in enumerate(reports, 1)])
            store.finish_trial(t.id, states[number])
        running = store.start_trial(study.id, number=7, config={}, arm={}, seed=7)
        store.record_measurements(running.id, 1, mode, [(1, *loss(lucky))])
        record = store.get_study("s")
        # Neither the running, failed or interrupted trial nor the seed repeat is the best.
        assert record.best_value == (0.2 if mode == "min" else 0.9)
        assert record.trial_counts == {TrialState.COMPLETED: 1, TrialState.INFEASIBLE: 2,
                                       TrialState.PRUNED: 1, TrialState.FAILED: 1,
                                       TrialState.INTERRUPTED: 1, TrialState.RUNNING: 1}
        assert record.repeat_counts == {TrialState.COMPLETED: 1}
        assert record.counts.finished == 5
        bests = [t.best_value for t in store.get_trials("s")]
        assert bests == ([0.45, 0.3, None, 0.2, 0.1, 0.1, 0.1, 0.1] if mode == "min"
                         else [0.5, 0.3, None, 0.9, 0.95, 0.95, 0.95, 0.95])
        [listed] = store.list_studies()
        assert (listed.best_value, listed.trial_counts, listed.repeat_counts) == (
            record.best_value, record.trial_counts, record.repeat_counts)

    @pytest.mark.parametrize("mode", ["min", "max"])
    def test_the_study_best_meets_every_constraint(self, store: Store, mode: str) -> None:
        bound = (Constraint("memory_mb", high=100.0), Constraint("latency_ms", low=1.0))
        study = new_study(store, mode=mode, constraints=bound)
        assert study.constraints == bound
        plain = new_study(store, "plain", mode=mode)
        good, better, best = (0.5, 0.4, 0.1) if mode == "min" else (0.5, 0.6, 0.9)
        finals = [(good, {"memory_mb": 50, "latency_ms": 2}, TrialState.COMPLETED),
                  (better, {"memory_mb": 100, "latency_ms": 1}, TrialState.PRUNED),
                  (best, {"memory_mb": 101, "latency_ms": 2}, TrialState.COMPLETED),  # too big
                  (best, {"memory_mb": 10}, TrialState.COMPLETED)]  # latency never reported
        for owner in (study, plain):
            for number, (value, final, state) in enumerate(finals):
                t = store.start_trial(owner.id, number=number, config={}, arm={}, seed=0)
                store.record_measurements(t.id, 1, mode, [(1, *loss(value))])
                store.finish_trial(t.id, state, final_metrics={"loss": value, **final})
        assert store.get_study("s").best_value == better
        assert store.get_study("plain").best_value == best  # no bound: the lucky one wins
        assert [s.best_value for s in store.list_studies()] == [better, best]
        assert store.get_study("s").constraints == bound

    @pytest.mark.parametrize("state", [TrialState.COMPLETED, TrialState.PRUNED, TrialState.FAILED,
                                       TrialState.INFEASIBLE])
    def test_finished_trial_is_never_started_again(self, store: Store, state: str) -> None:
        study = new_study(store)
        t = store.start_trial(study.id, number=0, config={}, arm={}, seed=0)
        store.finish_trial(t.id, state)
        with pytest.raises(ConflictError, match=f"trial 0 of study {study.id} already "
                                                f"finished \\({state}\\); it is never run twice"):
            store.start_trial(study.id, number=0, config={}, arm={}, seed=0)
        [trial] = store.get_trials("s")
        assert (trial.state, trial.attempts) == (state, 1)

    def test_interrupted_trial_restarts_as_new_attempt_keeping_old_measurements(
            self, store: Store) -> None:
        study = new_study(store)
        t = store.start_trial(study.id, number=1, config={"lr": 1}, arm={"d": 2}, seed=5,
                              node="n1")
        store.record_measurements(t.id, 1, "min", [(1, *loss(0.5)), (2, *loss(0.4))])
        assert store.interrupt_running_trials(study.id) == 1
        interrupted = store.get_trials("s")[0]
        assert interrupted.state == TrialState.INTERRUPTED and interrupted.finished_at is not None
        again = store.start_trial(study.id, number=1, config={"lr": 2}, arm={"d": 9}, seed=6,
                                  node="n2")
        assert (again.id, again.attempts, again.state) == (t.id, 2, TrialState.RUNNING)
        # A new attempt: new config and node, no best yet; the arm and seed stay the first's.
        assert (again.config, again.arm, again.seed, again.node) == ({"lr": 2}, {"d": 2}, 5, "n2")
        assert (again.best_value, again.best_step, again.last_step, again.finished_at,
                again.error) == (None, None, None, None, None)
        store.record_measurements(t.id, 2, "min", [(1, *loss(0.6))])
        [trial] = store.get_trials("s", measurements=True)
        assert [(m.attempt, m.step, m.value) for m in trial.measurements] == [
            (1, 1, 0.5), (1, 2, 0.4), (2, 1, 0.6)]
        assert list(trial.curve("loss")) == [(1, 0.6)]
        assert list(trial.curve("loss", attempt=1)) == [(1, 0.5), (2, 0.4)]
        assert (trial.best_value, trial.last_step) == (0.6, 1)  # the latest attempt's

    def test_only_the_studys_running_trials_are_interrupted(self, store: Store) -> None:
        study, other = new_study(store), new_study(store, "other")
        done = store.start_trial(study.id, number=0, config={}, arm={}, seed=0)
        store.finish_trial(done.id, TrialState.COMPLETED)
        for number in (1, 2):
            store.start_trial(study.id, number=number, config={}, arm={}, seed=0)
        store.start_trial(other.id, number=0, config={}, arm={}, seed=0)
        assert store.interrupt_running_trials(study.id) == 2
        assert [t.state for t in store.get_trials("s")] == [
            TrialState.COMPLETED, TrialState.INTERRUPTED, TrialState.INTERRUPTED]
        assert [t.state for t in store.get_trials("other")] == [TrialState.RUNNING]
        assert store.interrupt_running_trials(study.id) == 0

    def test_counts_and_listing(self, store: Store) -> None:
        study = new_study(store)
        for n in range(3):
            t = store.start_trial(study.id, number=n, config={}, arm={}, seed=n)
            if n < 2:
                store.finish_trial(t.id, TrialState.COMPLETED)
        [listed] = store.list_studies()
        assert listed.trial_counts == {TrialState.COMPLETED: 2, TrialState.RUNNING: 1}
        assert listed.provenance == {"seed": 3}
        assert store.get_study("s").trial_counts == listed.trial_counts

    def test_trials_are_listed_by_number(self, store: Store) -> None:
        study = new_study(store)
        for number in (2, 0, 1):
            store.start_trial(study.id, number=number, config={"n": number}, arm={}, seed=0)
        assert [(t.number, t.config["n"]) for t in store.get_trials("s")] == [
            (0, 0), (1, 1), (2, 2)]

    def test_delete_study_removes_its_trials_measurements_and_events(self,
                                                                    store: Store) -> None:
        study, other = new_study(store), new_study(store, "other")
        t = store.start_trial(study.id, number=0, config={}, arm={}, seed=0)
        kept = store.start_trial(other.id, number=0, config={}, arm={}, seed=0)
        store.record_measurements(t.id, 1, "min", [(1, *loss(1.0))])
        store.record_measurements(kept.id, 1, "min", [(1, *loss(2.0))])
        store.record_event(study.id, 0, EventKind.STOPPED_EARLY, step=1)
        store.delete_study("s")
        with pytest.raises(NotFoundError):
            store.get_trials("s")
        with pytest.raises(NotFoundError, match=f"no trial with id {t.id}"):
            store.record_measurements(t.id, 1, "min", [(2, *loss(0.5))])
        with pytest.raises(NotFoundError):
            store.finish_trial(t.id, TrialState.COMPLETED)
        again = new_study(store)
        assert store.get_trials("s") == [] and store.get_events("s") == []
        assert again.trial_counts == {} and again.best_value is None
        [survivor] = store.get_trials("other", measurements=True)
        assert [m.value for m in survivor.measurements] == [2.0]

    def test_measurements_can_be_loaded_for_chosen_trials_only(self, store: Store) -> None:
        study = new_study(store)
        for number in range(3):
            t = store.start_trial(study.id, number=number, config={}, arm={}, seed=number)
            store.record_measurements(t.id, 1, "min", [(1, *loss(1.0 + number)),
                                                       (2, *loss(0.5 + number))])
        trials = store.get_trials("s", measurements=[0, 2])
        assert [len(t.measurements) for t in trials] == [2, 0, 2]
        assert list(trials[2].curve("loss")) == [(1, 3.0), (2, 2.5)]
        assert all(not t.measurements for t in store.get_trials("s"))
        assert all(not t.measurements for t in store.get_trials("s", measurements=[]))
        assert all(t.best_value is not None for t in store.get_trials("s"))

    @pytest.mark.parametrize(("mode", "values", "best", "best_step"), [
        ("min", [0.9, 0.4, float("nan"), 0.6, 0.4], 0.4, 2),
        ("max", [0.2, 0.7, float("inf"), 0.5, 0.8], 0.8, 5),
        ("max", [float("-inf"), float("nan"), 0.1, 0.1, -3.0], 0.1, 3),
    ])
    def test_best_and_last_step_hold_when_steps_arrive_one_write_at_a_time(
            self, store: Store, mode: str, values: list[float], best: float,
            best_step: int) -> None:
        study = new_study(store, mode=mode)
        t = store.start_trial(study.id, number=0, config={}, arm={}, seed=0)
        for step, value in enumerate(values, start=1):
            store.record_measurements(t.id, 1, mode, [(step, *loss(value))])
        [trial] = store.get_trials("s", measurements=True)
        assert (trial.best_value, trial.best_step, trial.last_step) == (best, best_step, 5)
        assert len(trial.measurements) == 5

    def test_a_trial_without_a_finite_value_has_no_best(self, store: Store) -> None:
        study = new_study(store)
        t = store.start_trial(study.id, number=0, config={}, arm={}, seed=0)
        store.record_measurements(t.id, 1, "min", [(1, *loss(float("nan"))),
                                                   (2, None, {"acc": 0.5})])
        [trial] = store.get_trials("s", measurements=True)
        assert (trial.best_value, trial.best_step, trial.last_step) == (None, None, 2)
        assert [m.value for m in trial.measurements] == [None, None]
        assert store.get_study("s").best_value is None

    def test_the_last_step_is_the_largest_step_whatever_the_order(self, store: Store) -> None:
        study = new_study(store)
        t = store.start_trial(study.id, number=0, config={}, arm={}, seed=0)
        store.record_measurements(t.id, 1, "min", [(5, *loss(0.5)), (3, *loss(0.6))])
        store.record_measurements(t.id, 1, "min", [(4, *loss(0.4))])
        [trial] = store.get_trials("s", measurements=True)
        assert (trial.last_step, trial.best_value, trial.best_step) == (5, 0.4, 4)
        assert [m.step for m in trial.measurements] == [3, 4, 5]  # by step, not arrival

    def test_measurements_of_an_unknown_trial_are_refused(self, store: Store) -> None:
        with pytest.raises(NotFoundError, match="no trial with id 999"):
            store.record_measurements(999, 1, "min", [(1, *loss(0.5))])
        store.record_measurements(999, 1, "min", [])  # nothing to write: nothing to refuse

    def test_discarding_recomputes_best_and_last_step_from_the_rest(self, store: Store) -> None:
        study = new_study(store)
        t = store.start_trial(study.id, number=0, config={}, arm={}, seed=0)
        store.record_measurements(t.id, 1, "min", [(s, *loss(v)) for s, v in
                                                   [(1, 0.9), (2, 0.5), (3, 0.7), (4, 0.2)]])
        store.interrupt_running_trials(study.id)
        store.start_trial(study.id, number=0, config={}, arm={}, seed=0)
        store.record_measurements(t.id, 2, "min", [(s, *loss(v)) for s, v in
                                                   [(1, 0.8), (2, 0.3), (3, 0.6), (4, 0.1)]])
        store.discard_measurements(t.id, 2, 3, "min")
        [trial] = store.get_trials("s", measurements=True)
        assert (trial.best_value, trial.best_step, trial.last_step) == (0.3, 2, 2)
        assert [(m.attempt, m.step) for m in trial.measurements] == [
            (1, 1), (1, 2), (1, 3), (1, 4), (2, 1), (2, 2)]  # the other attempt is untouched
        store.discard_measurements(t.id, 2, 0, "min")
        [trial] = store.get_trials("s", measurements=True)
        assert (trial.best_value, trial.best_step, trial.last_step) == (None, None, None)
        assert len(trial.measurements) == 4
        with pytest.raises(NotFoundError, match="no trial with id 999"):
            store.discard_measurements(999, 1, 0, "min")

    def test_discarding_in_max_mode_keeps_the_largest(self, store: Store) -> None:
        study = new_study(store, mode="max")
        t = store.start_trial(study.id, number=0, config={}, arm={}, seed=0)
        store.record_measurements(t.id, 1, "max", [(s, *loss(v)) for s, v in
                                                   [(1, 0.2), (2, float("nan")), (3, 0.6),
                                                    (4, 0.4), (5, 0.9)]])
        store.discard_measurements(t.id, 1, 5, "max")
        [trial] = store.get_trials("s")
        assert (trial.best_value, trial.best_step, trial.last_step) == (0.6, 3, 4)

    def test_discarding_copes_with_a_step_reported_twice(self, store: Store) -> None:
        study = new_study(store)
        t = store.start_trial(study.id, number=0, config={}, arm={}, seed=0)
        store.record_measurements(t.id, 1, "min", [(1, *loss(0.5)), (1, *loss(math.nan)),
                                                   (1, *loss(0.4)), (2, *loss(0.3))])
        store.discard_measurements(t.id, 1, 2, "min")
        [trial] = store.get_trials("s", measurements=True)
        assert (trial.best_value, trial.best_step, trial.last_step) == (0.4, 1, 1)
        assert len(trial.measurements) == 3

    def test_finishing_records_state_error_and_checkpoints(self, store: Store) -> None:
        study = new_study(store)
        t = store.start_trial(study.id, number=0, config={}, arm={}, seed=0)
        store.finish_trial(t.id, TrialState.FAILED, error="x" * 20_000 + "the last line",
                           checkpoints=["/c/1", "/c/2"])
        [trial] = store.get_trials("s")
        assert trial.state == TrialState.FAILED and trial.finished_at is not None
        assert trial.error is not None and len(trial.error) == 20_000
        assert trial.error.endswith("the last line")
        assert trial.checkpoints == ("/c/1", "/c/2")
        u = store.start_trial(study.id, number=1, config={}, arm={}, seed=0)
        store.finish_trial(u.id, TrialState.COMPLETED)
        assert store.get_trials("s")[1].error is None and store.get_trials("s")[1].checkpoints == ()

    def test_finishing_refuses_unknown_states_and_trials(self, store: Store) -> None:
        study = new_study(store)
        t = store.start_trial(study.id, number=0, config={}, arm={}, seed=0)
        with pytest.raises(ValueError, match="unknown trial state 'done' \\(valid: running, "
                                             "completed, "):
            store.finish_trial(t.id, "done")
        assert store.get_trials("s")[0].state == TrialState.RUNNING
        with pytest.raises(NotFoundError, match="no trial with id 999"):
            store.finish_trial(999, TrialState.COMPLETED)

    def test_the_node_is_recorded_and_cut_to_255_characters(self, store: Store) -> None:
        study = new_study(store)
        t = store.start_trial(study.id, number=0, config={}, arm={}, seed=0)
        assert store.get_trials("s")[0].node is None
        store.set_trial_node(t.id, "host-a node 1")
        assert store.get_trials("s")[0].node == "host-a node 1"
        store.set_trial_node(t.id, "n" * 300)
        assert store.get_trials("s")[0].node == "n" * 255

    def test_records_are_plain_json_data_and_never_alias_the_store(self, store: Store) -> None:
        study = new_study(store)
        config: dict[str, Any] = {"layers": (16, 32), "units": np.int64(8), "lr": np.float64(0.5)}
        t = store.start_trial(study.id, number=0, config=config, arm={"d": 1}, seed=0)
        config["layers"] = "changed by the caller"
        [trial] = store.get_trials("s")
        assert trial.config == {"layers": [16, 32], "units": 8, "lr": 0.5}
        assert type(trial.config["units"]) is int and t.config == trial.config
        trial.config["lr"] = 99  # type: ignore[index]
        store.get_study("s").provenance["seed"] = 99  # type: ignore[index]
        assert store.get_trials("s")[0].config["lr"] == 0.5
        assert store.get_study("s").provenance == {"seed": 3}

    # -- events --------------------------------------------------------------------------------

    def test_events_come_back_in_order_by_kind(self, store: Store) -> None:
        study, other = new_study(store), new_study(store, "other")
        store.record_event(study.id, 3, EventKind.STOPPED_EARLY, step=2,
                           data={"rung": 0, "cutoff": 0.5})
        store.record_event(study.id, 1, EventKind.EXPLOIT, step=4,
                           data={"parent": 3, "new_config": {"lr": 0.1}})
        store.record_event(study.id, 0, EventKind.STOPPED_EARLY)
        store.record_event(other.id, 0, EventKind.EXPLOIT, step=1)
        events = store.get_events("s")
        assert [(e.number, e.kind, e.step) for e in events] == [
            (3, EventKind.STOPPED_EARLY, 2), (1, EventKind.EXPLOIT, 4),
            (0, EventKind.STOPPED_EARLY, None)]
        assert events[0].data == {"rung": 0, "cutoff": 0.5} and events[2].data == {}
        assert events[1].data == {"parent": 3, "new_config": {"lr": 0.1}}
        assert all(e.recorded_at > 0 for e in events)
        assert [e.number for e in store.get_events("s", kind=EventKind.STOPPED_EARLY)] == [3, 0]
        assert [e.number for e in store.get_events("other")] == [0]

    # -- transactions --------------------------------------------------------------------------

    def test_a_transaction_block_is_written_whole_or_not_at_all(self, store: Store) -> None:
        study = new_study(store)
        t = store.start_trial(study.id, number=0, config={}, arm={}, seed=0)
        with store.transaction():
            store.record_measurements(t.id, 1, "min", [(1, *loss(0.5))])
            store.finish_trial(t.id, TrialState.INFEASIBLE, error="x")
        [trial] = store.get_trials("s", measurements=True)
        assert trial.state == TrialState.INFEASIBLE and len(trial.measurements) == 1
        u = store.start_trial(study.id, number=1, config={}, arm={}, seed=0)
        with pytest.raises(NotFoundError), store.transaction():
            store.record_measurements(u.id, 1, "min", [(1, *loss(0.1))])
            store.record_measurements(999, 1, "min", [(1, *loss(0.2))])
        second = store.get_trials("s", measurements=True)[1]
        assert second.measurements == () and second.best_value is None

    def test_a_failed_block_undoes_every_kind_of_write(self, store: Store) -> None:
        study = new_study(store)
        t = store.start_trial(study.id, number=0, config={"a": 1}, arm={}, seed=0)
        store.record_measurements(t.id, 1, "min", [(1, *loss(0.5)), (2, *loss(0.4))])
        store.record_event(study.id, 0, EventKind.STOPPED_EARLY, step=1)
        before = (store.get_study("s"), store.get_trials("s", measurements=True),
                  store.get_events("s"))
        with pytest.raises(RuntimeError, match="boom"), store.transaction():
            new_study(store, "other")
            store.update_study("s", state=StudyState.RUNNING, driver={"pid": 1})
            store.discard_measurements(t.id, 1, 2, "min")
            store.record_measurements(t.id, 1, "min", [(3, *loss(0.1))])
            store.set_trial_node(t.id, "elsewhere")
            store.finish_trial(t.id, TrialState.COMPLETED, checkpoints=["/c"])
            u = store.start_trial(study.id, number=1, config={}, arm={}, seed=0)
            store.record_measurements(u.id, 1, "min", [(1, *loss(0.05))])
            store.record_event(study.id, 1, EventKind.EXPLOIT, step=1)
            raise RuntimeError("boom")
        assert [s.name for s in store.list_studies()] == ["s"]
        assert (store.get_study("s"), store.get_trials("s", measurements=True),
                store.get_events("s")) == before
        with pytest.raises(RuntimeError), store.transaction():
            store.delete_study("s")
            raise RuntimeError("changed my mind")
        assert (store.get_study("s"), store.get_trials("s", measurements=True),
                store.get_events("s")) == before
        store.start_trial(study.id, number=1, config={}, arm={}, seed=0)  # number 1 is free

    def test_a_block_sees_its_own_writes_and_nested_blocks_join_the_outer_one(
            self, store: Store) -> None:
        study = new_study(store)
        with pytest.raises(RuntimeError), store.transaction():
            with store.transaction():
                t = store.start_trial(study.id, number=0, config={}, arm={}, seed=0)
                store.record_measurements(t.id, 1, "min", [(1, *loss(0.5))])
            assert store.get_trials("s")[0].best_value == 0.5
            raise RuntimeError("the outer block fails after the inner one ended")
        assert store.get_trials("s") == []

    def test_another_thread_sees_a_block_whole_or_not_at_all(self, store: Store) -> None:
        study = new_study(store)
        seen: list[list[int]] = []

        def read() -> None:
            seen.append([t.number for t in store.get_trials("s")])

        with store.transaction():
            store.start_trial(study.id, number=0, config={}, arm={}, seed=0)
            reader = threading.Thread(target=read)
            reader.start()
            reader.join(timeout=0.5)  # a store may make the reader wait for the block's end
            store.start_trial(study.id, number=1, config={}, arm={}, seed=0)
        reader.join(timeout=30)
        assert seen in ([[]], [[0, 1]])

    def test_concurrent_writers_lose_nothing(self, store: Store) -> None:
        """Many trials reporting at once, each from its own thread."""
        study = new_study(store)
        trials = [store.start_trial(study.id, number=n, config={}, arm={}, seed=n)
                  for n in range(8)]

        def report(trial_id: int) -> None:
            for step in range(1, 51):
                store.record_measurements(trial_id, 1, "min", [(step, *loss(1.0 / step))])

        with ThreadPoolExecutor(max_workers=8) as pool:
            list(pool.map(report, [t.id for t in trials]))
        stored = store.get_trials("s", measurements=True)
        assert [len(t.measurements) for t in stored] == [50] * 8
        assert all(t.best_value == pytest.approx(0.02) and t.last_step == 50 for t in stored)


__all__ = ["StoreContract", "loss", "new_study"]
