"""The store's contract, written once and run against every database: SQLite and a real
PostgreSQL server (a fresh database per test; see tests/conftest.py)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from searchsvc.errors import ConflictError, NotFoundError
from searchsvc.store import (
    TRIAL_COMPLETED,
    TRIAL_INFEASIBLE,
    TRIAL_INTERRUPTED,
    TRIAL_RUNNING,
    Store,
)


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request, tmp_path: Path) -> Store:
    url = (f"sqlite:///{tmp_path / 'store.db'}" if request.param == "sqlite"
           else request.getfixturevalue("postgres_url"))
    s = Store(url)
    yield s
    s.close()


def new_study(store: Store, name: str = "s", mode: str = "min"):
    return store.create_study(name=name, metric="loss", mode=mode, searcher="random",
                              spec_text="study: s", spec_file="/x/s.yaml", total_trials=4,
                              results_dir="/tmp/r", provenance={"seed": 3})


def test_duplicate_study_name_conflicts(store: Store) -> None:
    new_study(store)
    with pytest.raises(ConflictError):
        new_study(store)


def test_unknown_study_is_not_found(store: Store) -> None:
    with pytest.raises(NotFoundError, match="no study named 'nope'"):
        store.get_study("nope")


def test_measurements_round_trip_including_nan(store: Store) -> None:
    study = new_study(store)
    t = store.start_trial(study.id, number=0, config={"lr": 0.1}, arm={"d": 1}, seed=7)
    store.record_measurements(t.id, 1, "min", [
        (1, 0.9, {"loss": 0.9, "acc": 0.1}),
        (2, 0.4, {"loss": 0.4, "acc": 0.5}),
        (3, float("nan"), {"loss": float("nan"), "acc": float("inf")}),
    ])
    store.finish_trial(t.id, TRIAL_INFEASIBLE, error="diverged")
    [trial] = store.get_trials("s", measurements=True)
    assert (trial.state, trial.best_value, trial.best_step, trial.last_step) == (
        TRIAL_INFEASIBLE, 0.4, 2, 3)
    assert [m.step for m in trial.measurements] == [1, 2, 3]
    assert math.isnan(trial.measurements[2].metrics["loss"])
    assert trial.measurements[2].metrics["acc"] == math.inf
    assert trial.measurements[2].value is None
    assert trial.config == {"lr": 0.1} and trial.arm == {"d": 1} and trial.seed == 7


def test_best_value_follows_mode(store: Store) -> None:
    study = new_study(store, mode="max")
    t = store.start_trial(study.id, number=0, config={}, arm={}, seed=0)
    store.record_measurements(t.id, 1, "max", [(1, 0.2, {"loss": 0.2}), (2, 0.7, {"loss": 0.7}),
                                               (3, 0.5, {"loss": 0.5})])
    assert store.get_trials("s")[0].best_value == 0.7
    assert store.get_study("s").best_value == 0.7


def test_finished_trial_is_never_started_again(store: Store) -> None:
    study = new_study(store)
    t = store.start_trial(study.id, number=0, config={}, arm={}, seed=0)
    store.finish_trial(t.id, TRIAL_COMPLETED)
    with pytest.raises(ConflictError, match="never run twice"):
        store.start_trial(study.id, number=0, config={}, arm={}, seed=0)


def test_interrupted_trial_restarts_as_new_attempt_keeping_old_measurements(store: Store) -> None:
    study = new_study(store)
    t = store.start_trial(study.id, number=1, config={}, arm={}, seed=0)
    store.record_measurements(t.id, 1, "min", [(1, 0.5, {"loss": 0.5})])
    assert store.interrupt_running_trials(study.id) == 1
    assert store.get_trials("s")[0].state == TRIAL_INTERRUPTED
    again = store.start_trial(study.id, number=1, config={}, arm={}, seed=0)
    assert (again.id, again.attempts, again.state) == (t.id, 2, TRIAL_RUNNING)
    store.record_measurements(t.id, 2, "min", [(1, 0.6, {"loss": 0.6})])
    [trial] = store.get_trials("s", measurements=True)
    assert [(m.attempt, m.value) for m in trial.measurements] == [(1, 0.5), (2, 0.6)]
    assert trial.curve("loss") == [(1, 0.6)]
    assert trial.best_value == 0.6  # the summary describes the latest attempt


def test_counts_and_listing(store: Store) -> None:
    study = new_study(store)
    for n in range(3):
        t = store.start_trial(study.id, number=n, config={}, arm={}, seed=n)
        if n < 2:
            store.finish_trial(t.id, TRIAL_COMPLETED)
    [listed] = store.list_studies()
    assert listed.trial_counts == {TRIAL_COMPLETED: 2, TRIAL_RUNNING: 1}
    assert listed.provenance == {"seed": 3}


def test_delete_study_removes_its_trials(store: Store) -> None:
    study = new_study(store)
    t = store.start_trial(study.id, number=0, config={}, arm={}, seed=0)
    store.record_measurements(t.id, 1, "min", [(1, 1.0, {"loss": 1.0})])
    store.delete_study("s")
    with pytest.raises(NotFoundError):
        store.get_trials("s")
    new_study(store)
    assert store.get_trials("s") == []


def test_measurements_can_be_loaded_for_chosen_trials_only(store: Store) -> None:
    study = new_study(store)
    for number in range(3):
        t = store.start_trial(study.id, number=number, config={}, arm={}, seed=number)
        store.record_measurements(t.id, 1, "min", [(1, 1.0 + number, {"loss": 1.0 + number}),
                                                   (2, 0.5 + number, {"loss": 0.5 + number})])
    trials = store.get_trials("s", measurements=[0, 2])
    assert [len(t.measurements) for t in trials] == [2, 0, 2]
    assert trials[2].curve("loss") == [(1, 3.0), (2, 2.5)]
    assert all(not t.measurements for t in store.get_trials("s"))


@pytest.mark.parametrize(("mode", "values", "best", "best_step"), [
    ("min", [0.9, 0.4, float("nan"), 0.6, 0.4], 0.4, 2),
    ("max", [0.2, 0.7, float("inf"), 0.5, 0.8], 0.8, 5),
])
def test_best_and_last_step_hold_when_steps_arrive_one_write_at_a_time(
        store: Store, mode: str, values: list[float], best: float, best_step: int) -> None:
    study = new_study(store, mode=mode)
    t = store.start_trial(study.id, number=0, config={}, arm={}, seed=0)
    for step, value in enumerate(values, start=1):
        store.record_measurements(t.id, 1, mode, [(step, value, {"loss": value})])
    [trial] = store.get_trials("s", measurements=True)
    assert (trial.best_value, trial.best_step, trial.last_step) == (best, best_step, 5)
    assert len(trial.measurements) == 5


def test_measurements_of_an_unknown_trial_are_refused(store: Store) -> None:
    with pytest.raises(NotFoundError, match="no trial with id 999"):
        store.record_measurements(999, 1, "min", [(1, 0.5, {"loss": 0.5})])


def test_a_transaction_block_is_written_whole_or_not_at_all(store: Store) -> None:
    study = new_study(store)
    t = store.start_trial(study.id, number=0, config={}, arm={}, seed=0)
    with store.transaction():
        store.record_measurements(t.id, 1, "min", [(1, 0.5, {"loss": 0.5})])
        store.finish_trial(t.id, TRIAL_INFEASIBLE, error="x")
    [trial] = store.get_trials("s", measurements=True)
    assert trial.state == TRIAL_INFEASIBLE and len(trial.measurements) == 1
    u = store.start_trial(study.id, number=1, config={}, arm={}, seed=0)
    with pytest.raises(NotFoundError), store.transaction():
        store.record_measurements(u.id, 1, "min", [(1, 0.1, {"loss": 0.1})])
        store.record_measurements(999, 1, "min", [(1, 0.2, {"loss": 0.2})])
    second = store.get_trials("s", measurements=True)[1]
    assert second.measurements == () and second.best_value is None


def test_concurrent_writers_lose_nothing(store: Store) -> None:
    """Many trials reporting at once, each from its own thread and its own connection."""
    from concurrent.futures import ThreadPoolExecutor

    study = new_study(store)
    trials = [store.start_trial(study.id, number=n, config={}, arm={}, seed=n)
              for n in range(8)]

    def report(trial_id: int) -> None:
        for step in range(1, 51):
            store.record_measurements(trial_id, 1, "min", [(step, 1.0 / step, {"loss": 1 / step})])

    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(report, [t.id for t in trials]))
    stored = store.get_trials("s", measurements=True)
    assert [len(t.measurements) for t in stored] == [50] * 8
    assert all(t.best_value == pytest.approx(0.02) and t.last_step == 50 for t in stored)


def test_a_database_made_before_migrations_is_adopted_not_recreated(tmp_path: Path) -> None:
    from alembic import command
    from alembic.config import Config
    from sqlalchemy import create_engine, inspect, text

    from searchsvc.store.sql import MIGRATIONS

    url = f"sqlite:///{tmp_path / 'old.db'}"
    engine = create_engine(url)
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    with engine.begin() as connection:  # the 0.1 schema, made without migrations: no version
        config.attributes["connection"] = connection
        command.upgrade(config, "0001")
        connection.execute(text("DROP TABLE alembic_version"))
    with engine.begin() as connection:
        connection.execute(text(
            "INSERT INTO studies (name, state, metric, mode, searcher, spec_text, spec_file, "
            "created_at, provenance, driver) VALUES ('old', 'completed', 'loss', 'min', "
            "'random', 'study: old', '/x.yaml', 0, '{}', '{}')"))
    store = Store(url)
    assert store.get_study("old").state == "completed"  # kept
    with engine.connect() as connection:
        assert "alembic_version" in inspect(connection).get_table_names()
        assert connection.execute(text("SELECT version_num FROM alembic_version")).scalar() == (
            "0004")
        assert "owner" in {c["name"] for c in inspect(connection).get_columns("studies")}


@pytest.mark.parametrize("database", ["sqlite", "postgresql"])
def test_the_migrations_build_exactly_the_schema_the_code_uses(request, tmp_path: Path,
                                                               database: str) -> None:
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext

    from searchsvc.store.schema import Base

    url = (f"sqlite:///{tmp_path / 'm.db'}" if database == "sqlite"
           else request.getfixturevalue("postgres_url"))
    store = Store(url)  # migrates
    with store.engine.connect() as connection:
        assert compare_metadata(MigrationContext.configure(connection), Base.metadata) == []
    store.close()


def test_tokens_are_stored_hashed_and_name_their_user(store: Store) -> None:
    from sqlalchemy import text

    token = store.create_token("ada")
    assert store.user_for_token(token) == "ada"
    assert store.user_for_token(token + "x") is None
    with store.engine.connect() as connection:
        stored = connection.execute(text("SELECT token_hash FROM tokens")).scalars().all()
    assert token not in stored and len(stored) == 1


def test_studies_can_be_listed_by_owner(store: Store) -> None:
    for name, owner in [("a", "ada"), ("b", "bob"), ("c", "ada")]:
        store.create_study(name=name, metric="loss", mode="min", searcher="random",
                           spec_text="", spec_file="-", total_trials=1, results_dir=None,
                           provenance={}, owner=owner)
    assert [s.name for s in store.list_studies(owner="ada")] == ["a", "c"]
    assert [s.owner for s in store.list_studies()] == ["ada", "bob", "ada"]
