"""The MLflow tracker against a real SQLite tracking store, fed records built directly (no
Ray): one run per trial with its params, tags and every step's metric history, one parent run
per study, resumes without duplicates, and a dead tracking server that only costs a warning."""

from __future__ import annotations

import logging
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import mlflow
import pytest
from mlflow.entities import ViewType
from mlflow.tracking import MlflowClient

from searchsvc.core import StudyState, TrialState
from searchsvc.tracking import ReportFolder, TensorBoardTracker, Trackers
from searchsvc.tracking.mlflow_tracker import MlflowTracker, metric_key
from tests.tracking.records import (
    STEPS,
    config,
    finished,
    loss,
    measurement,
    run_trial,
    spec,
    study,
    trial,
)


def tracker(tmp_path: Path) -> MlflowTracker:
    return MlflowTracker(f"sqlite:///{tmp_path / 'mlflow.db'}", "exp", tmp_path / "artifacts")


def trial_runs(tmp_path: Path, view: int = ViewType.ACTIVE_ONLY) -> dict[int, mlflow.entities.Run]:
    """The trial runs in the store, by trial number; fails on a duplicate."""
    runs = mlflow.search_runs(experiment_names=["exp"], output_format="list", run_view_type=view,
                              filter_string="tags.`searchsvc.kind` = 'trial'")
    numbers = [int(r.data.tags["searchsvc.trial_number"]) for r in runs]
    assert len(numbers) == len(set(numbers)), f"duplicate runs: {sorted(numbers)}"
    return dict(zip(numbers, runs, strict=True))


def history(run_id: str, key: str = "loss") -> list[tuple[int, float]]:
    return [(m.step, m.value) for m in sorted(MlflowClient().get_metric_history(run_id, key),
                                              key=lambda m: (m.step, m.timestamp))]


@pytest.fixture(autouse=True)
def tracking_uri(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the assertions read (the process-global URI is only the test's)."""
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'mlflow.db'}")


def test_a_run_per_trial_with_params_tags_and_each_steps_metrics(tmp_path: Path) -> None:
    mlf = tracker(tmp_path)
    mlf.study_started(study(), spec(), [])
    for number in range(3):
        run_trial(mlf, number, state=TrialState.FAILED if number == 2 else TrialState.COMPLETED)
    run_trial(mlf, 3, steps=2)  # a seed repeat of trial 0
    (tmp_path / "report").mkdir()
    (tmp_path / "report" / "report.html").write_text("<html></html>")
    (tmp_path / "report" / "plots").mkdir()
    (tmp_path / "report" / "plots" / "axis_lr.png").write_bytes(b"png")
    mlf.study_finished(finished(), ReportFolder(tmp_path / "report", (
        tmp_path / "report" / "report.html", tmp_path / "report" / "plots")))

    runs = trial_runs(tmp_path)
    assert sorted(runs) == [0, 1, 2, 3]
    [parent] = mlflow.search_runs(experiment_names=["exp"], output_format="list",
                                  filter_string="tags.`searchsvc.kind` = 'study'")
    for number, run in runs.items():
        assert run.data.params == {k: str(v) for k, v in config(number).items()}
        tags = run.data.tags
        assert tags["mlflow.parentRunId"] == parent.info.run_id
        assert tags["searchsvc.study"] == "tracked"
        assert tags["searchsvc.attempt"] == "1"
        assert tags["searchsvc.seed"] == str(1000 + number)
        assert tags["searchsvc.arm.depth"] == str(config(number)["depth"])
        assert tags["searchsvc.arm"] == f"depth={config(number)['depth']}"
        assert tags.get("searchsvc.repeat_of") == ("0" if number == 3 else None)
        steps = 2 if number == 3 else STEPS
        assert history(run.info.run_id) == [(s, pytest.approx(loss(number, s)))
                                            for s in range(1, steps + 1)]
        assert history(run.info.run_id, "acc") == [(s, pytest.approx(1 - loss(number, s)))
                                                   for s in range(1, steps + 1)]
        assert history(run.info.run_id, "time_s")[-1][0] == steps
        # Only numbers are metrics: the string and the boolean the objective reported are not.
        assert set(run.data.metrics) == {"loss", "acc", "time_s"}
    assert runs[2].info.status == "FAILED" and runs[2].data.tags["searchsvc.state"] == "failed"
    assert runs[2].data.tags["searchsvc.error"] == "it broke"
    assert runs[0].info.status == "FINISHED"
    assert runs[0].data.tags["searchsvc.state"] == "completed"

    assert parent.info.status == "FINISHED" and parent.info.run_name == "tracked"
    assert parent.data.params["metric"] == "loss" and parent.data.params["mode"] == "min"
    assert parent.data.tags["searchsvc.role.depth"] == "scientific"
    assert parent.data.tags["searchsvc.role.batch"] == "fixed"
    assert parent.data.metrics["best_loss"] == pytest.approx(loss(2, STEPS))
    assert parent.data.metrics["trials_completed"] == 3
    client = MlflowClient()
    attached = {a.path for a in client.list_artifacts(parent.info.run_id, "report")}
    assert attached == {"report/report.html", "report/plots"}
    assert [a.path for a in client.list_artifacts(parent.info.run_id, "report/plots")] == [
        "report/plots/axis_lr.png"]
    assert (tmp_path / "artifacts").is_dir()  # beside the store, not in the current folder


def test_a_resume_duplicates_no_run_and_no_step(tmp_path: Path) -> None:
    first = tracker(tmp_path)
    first.study_started(study(), spec(), [])
    done = run_trial(first, 0)
    # Trial 1 reports 2 steps to the tracker; the store got a third before the driver was
    # killed (the store is written first), and no end.
    first.trial_started(trial(1))
    first.measurements(trial(1), [measurement(1, 1), measurement(1, 2)])

    # The resume: the driver marks trial 1 interrupted and passes what the store holds.
    stored = [done, trial(1, state=TrialState.INTERRUPTED, steps=3)]
    second = tracker(tmp_path)
    second.study_started(study(), spec(), stored)
    runs = trial_runs(tmp_path)
    assert sorted(runs) == [0, 1]
    assert history(runs[1].info.run_id) == [(s, pytest.approx(loss(1, s))) for s in (1, 2, 3)]
    assert runs[1].info.status == "KILLED"
    assert history(runs[0].info.run_id) == [(s, pytest.approx(loss(0, s)))
                                            for s in range(1, STEPS + 1)]
    stale = runs[1].info.run_id

    # Trial 1 runs again, as attempt 2: it replaces attempt 1's run.
    rerun = run_trial(second, 1, attempt=2)
    second.study_finished(replace(finished(), state=StudyState.INTERRUPTED), None)
    runs = trial_runs(tmp_path)
    assert sorted(runs) == [0, 1]
    assert runs[1].data.tags["searchsvc.attempt"] == "2"
    assert history(runs[1].info.run_id) == [(s, pytest.approx(loss(1, s)))
                                            for s in range(1, STEPS + 1)]
    assert [r.info.run_id for r in trial_runs(tmp_path, ViewType.DELETED_ONLY).values()] == [
        stale]

    # Another resume with everything finished: nothing new anywhere.
    third = tracker(tmp_path)
    third.study_started(study(), spec(), [done, rerun])
    third.study_finished(finished(), None)
    again = trial_runs(tmp_path)
    assert {n: r.info.run_id for n, r in again.items()} == {n: r.info.run_id
                                                           for n, r in runs.items()}
    for number in (0, 1):
        assert len(history(again[number].info.run_id)) == STEPS
    parents = mlflow.search_runs(experiment_names=["exp"], output_format="list",
                                 filter_string="tags.`searchsvc.kind` = 'study'")
    assert len(parents) == 1 and parents[0].info.status == "FINISHED"


def test_a_resume_after_a_kill_between_metrics_and_their_tag_duplicates_no_step(
        tmp_path: Path) -> None:
    # MLflow's SQL store commits a batch's metrics, then its tags: a kill in between leaves
    # searchsvc.logged_step one batch behind the metrics.
    first = tracker(tmp_path)
    first.study_started(study(), spec(), [])
    first.trial_started(trial(1))
    first.measurements(trial(1), [measurement(1, 1)])
    # As the driver passes them on: stamped when written, a moment apart from the store's own
    # stamp, which the resume reads back (so MLflow would keep both as two points).
    live = measurement(1, 2)
    first.measurements(trial(1), [replace(live, recorded_at=live.recorded_at + 0.05)])
    run_id = trial_runs(tmp_path)[1].info.run_id
    MlflowClient().set_tag(run_id, "searchsvc.logged_step", "1")  # step 2's tag never landed

    second = tracker(tmp_path)
    second.study_started(study(), spec(), [trial(1, state=TrialState.INTERRUPTED, steps=3)])
    assert history(run_id) == [(s, pytest.approx(loss(1, s))) for s in (1, 2, 3)]


# A process killed during MLflow's migrations of a new database, as the last one is about to
# record its revision: SQLite has kept that migration's new tables (pysqlite commits each DDL
# statement), not the revision.
KILLED_MID_MIGRATION = """
import os, signal, sys
from alembic.script import ScriptDirectory
from mlflow.store.db.utils import _get_alembic_config
from sqlalchemy import event
from sqlalchemy.engine import Engine

head = ScriptDirectory.from_config(_get_alembic_config("")).get_current_head()

@event.listens_for(Engine, "before_cursor_execute")
def kill_at_last_stamp(conn, cursor, statement, parameters, context, executemany):
    if "alembic_version" in statement and head in (statement + str(parameters)):
        os.kill(os.getpid(), signal.SIGKILL)

uri = sys.argv[2]
if sys.argv[1] == "mlflow":
    from mlflow.tracking import MlflowClient
    MlflowClient(tracking_uri=uri).search_experiments()
else:
    from searchsvc.tracking.mlflow_tracker import create_sqlite_whole
    create_sqlite_whole(uri, None)
"""


def killed_mid_migration(how: str, uri: str) -> None:
    child = subprocess.run([sys.executable, "-c", KILLED_MID_MIGRATION, how, uri],
                           capture_output=True, text=True, timeout=120)
    assert child.returncode == -signal.SIGKILL, child.stderr


def test_a_kill_while_mlflow_creates_its_database_leaves_none_to_refuse(tmp_path: Path) -> None:
    # MLflow's own creation, killed there, leaves a file it refuses from then on.
    theirs = f"sqlite:///{tmp_path / 'theirs' / 'mlflow.db'}"
    (tmp_path / "theirs").mkdir()
    killed_mid_migration("mlflow", theirs)
    with pytest.raises(mlflow.exceptions.MlflowException, match="out-of-date database schema"):
        MlflowClient(tracking_uri=theirs).search_experiments()

    # The tracker's creation, killed the same way, leaves no database; the resumed study
    # creates it whole and tracks.
    killed_mid_migration("searchsvc", f"sqlite:///{tmp_path / 'mlflow.db'}")
    assert not (tmp_path / "mlflow.db").exists()
    assert (tmp_path / ".mlflow.db.partial").exists()
    resumed = tracker(tmp_path)
    resumed.study_started(study(), spec(), [])
    run_trial(resumed, 0)
    assert sorted(trial_runs(tmp_path)) == [0]
    assert not (tmp_path / ".mlflow.db.partial").exists()


def test_an_overwritten_study_gets_a_parent_run_of_its_own(tmp_path: Path) -> None:
    old = tracker(tmp_path)
    old.study_started(study(created_at=1000.0), spec(), [])
    run_trial(old, 0)
    new = tracker(tmp_path)
    new.study_started(study(created_at=2000.0), spec(), [])
    run_trial(new, 0)
    parents = mlflow.search_runs(experiment_names=["exp"], output_format="list",
                                 filter_string="tags.`searchsvc.kind` = 'study'")
    assert len(parents) == 2
    for parent in parents:
        children = mlflow.search_runs(
            experiment_names=["exp"], output_format="list",
            filter_string=f"tags.`mlflow.parentRunId` = '{parent.info.run_id}'")
        assert len(children) == 1


def test_metric_names_are_made_valid_mlflow_keys() -> None:
    assert metric_key("val/loss") == "val/loss"
    assert metric_key("acc@1 (top)") == "acc_1 _top_"
    assert metric_key("../x") == "_.._x"
    assert metric_key("/abs") == "_abs"
    assert metric_key("") == "_"


def test_a_dead_tracking_server_warns_once_and_the_other_trackers_go_on(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    shown: list[str] = []
    trackers = Trackers([MlflowTracker("http://127.0.0.1:9", "exp"),
                         TensorBoardTracker(tmp_path / "tb")], notify=shown.append)
    started = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="searchsvc.tracking"):
        trackers.study_started(study(), spec(), [])
        for number in range(3):
            run_trial(trackers, number)
        trackers.study_finished(finished(), None)
        trackers.close()
    assert time.monotonic() - started < 90  # MLflow alone would retry for minutes
    warnings = [r for r in caplog.records if r.name == "searchsvc.tracking"]
    assert len(warnings) == 1 and len(shown) == 1
    assert "mlflow" in warnings[0].getMessage() and "127.0.0.1:9" in warnings[0].getMessage()
    assert [t.name for t in trackers.trackers] == ["tensorboard"]
    assert sorted(p.name for p in (tmp_path / "tb").glob("trial_*")) == [
        "trial_00000", "trial_00001", "trial_00002"]
