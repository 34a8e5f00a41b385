"""Tracking a real study on Ray: the study file turns MLflow, TensorBoard and W&B (offline) on,
the driver is killed mid-study and the study resumed (the real command line, as a user would),
and every trial ends up as one MLflow run and one TensorBoard run holding the history the store
kept, and as W&B runs (a second one where W&B could not resume) holding each step once. A study
pointed at a dead MLflow server completes with one warning."""

from __future__ import annotations

import io
import logging
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path

import mlflow
import pytest
from mlflow.entities import ViewType
from mlflow.tracking import MlflowClient

from searchsvc import usecases
from searchsvc.core import EventKind, TrialRecord, TrialState
from searchsvc.driver import RunOptions
from searchsvc.store import SqlStore
from searchsvc.tracking.wandb_records import RunFile, run_files
from searchsvc.usecases import validate as validate_file
from tests.killed import kill_and_resume
from tests.tracking.test_tensorboard_tracker import Logs

pytestmark = pytest.mark.slow

TRIALS, STEPS = 6, 5

# Each step saves a checkpoint, and a trial restored from one goes on after its step; every
# step run is written to trace/<trial number>.log.
OBJECTIVE = """
import json, tempfile, time
from pathlib import Path
from ray import tune
from searchsvc import sdk

def train(config):
    start = 1
    checkpoint = tune.get_checkpoint()
    if checkpoint is not None:
        with checkpoint.as_directory() as folder:
            start = json.loads((Path(folder) / "state.json").read_text())["step"] + 1
    trace = Path("trace") / f"{sdk.trial_context().number}.log"
    trace.parent.mkdir(exist_ok=True)
    for step in range(start, 6):
        time.sleep(0.3)
        with trace.open("a") as f:
            f.write(f"{step}\\n")
        with tempfile.TemporaryDirectory() as folder:
            (Path(folder) / "state.json").write_text(json.dumps({"step": step}))
            tune.report({"loss": config["x"] / step + config["y"], "note": "text",
                         "step_x": step}, checkpoint=tune.Checkpoint.from_directory(folder))
"""

SPEC = f"""
study: tracked-on-ray
objective: tracked_objective:train
metric: loss
mode: min
budget: {{trials: {TRIALS}, max_concurrent: 2, max_steps: {STEPS}}}
noise: off
parameters:
  x: {{role: scientific, values: [0.5, 1.0]}}
  y: {{role: nuisance, low: 0.0, high: 1.0}}
  act: {{role: fixed, value: relu}}
tracking:
  mlflow: {{}}
  tensorboard: {{}}
  wandb: {{mode: offline}}
"""


@dataclass(frozen=True)
class Resumed:
    results: Path
    trials: dict[int, TrialRecord]  # the store's, with their measurements
    folder: Path  # the study's own, where its trials ran
    store: SqlStore


def checkpointed_while_running(store: SqlStore) -> bool:
    """Two trials completed, and a running one saved a checkpoint in this attempt."""
    trials = {t.number: t for t in store.get_trials("tracked-on-ray")}
    saved = {(e.number, e.data.get("attempt"))
             for e in store.get_events("tracked-on-ray", kind=EventKind.CHECKPOINT)}
    return sum(t.state == TrialState.COMPLETED for t in trials.values()) >= 2 and any(
        t.state == TrialState.RUNNING and (t.number, t.attempts) in saved
        for t in trials.values())


@pytest.fixture(scope="module")
def resumed(tmp_path_factory: pytest.TempPathFactory) -> Resumed:
    """The study run from the command line, killed (SIGKILL, driver and Ray) once two trials
    have completed and another has reported, and resumed to the end."""
    folder = tmp_path_factory.mktemp("tracked")
    (folder / "tracked_objective.py").write_text(textwrap.dedent(OBJECTIVE))
    (folder / "study.yaml").write_text(textwrap.dedent(SPEC))
    store, output = kill_and_resume(folder, "tracked-on-ray", until=checkpointed_while_running)
    # No tracker warned (a trial that waited a minute for a CPU on a busy machine is told of,
    # and is not the trackers' doing).
    warned = [line for line in output.lower().splitlines() if "warning" in line
              and "for resources" not in line and "reported no step" not in line]
    assert not warned, output
    study = store.get_study("tracked-on-ray")
    assert study.state == "completed"
    trials = {t.number: t for t in store.get_trials("tracked-on-ray", measurements=True)}
    assert sorted(trials) == list(range(TRIALS))
    assert any(t.attempts == 2 for t in trials.values())  # the one the kill interrupted
    return Resumed(Path(study.results_dir or ""), trials, folder, store)


def losses(trial: TrialRecord) -> list[tuple[int, float]]:
    return [(m.step, pytest.approx(m.metrics["loss"], rel=1e-6)) for m in trial.measurements
            if m.attempt == trial.attempts]


def test_each_trial_is_one_mlflow_run_with_its_whole_history(
        resumed: Resumed, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{resumed.results / 'mlflow.db'}")
    runs = mlflow.search_runs(experiment_names=["tracked-on-ray"], output_format="list",
                              filter_string="tags.`searchsvc.kind` = 'trial'")
    numbers = sorted(int(r.data.tags["searchsvc.trial_number"]) for r in runs)
    assert numbers == list(range(TRIALS))  # one run per trial: the resume duplicated none
    [parent] = mlflow.search_runs(experiment_names=["tracked-on-ray"], output_format="list",
                                  filter_string="tags.`searchsvc.kind` = 'study'")
    assert parent.info.status == "FINISHED"
    client = MlflowClient()
    for run in runs:
        trial = resumed.trials[int(run.data.tags["searchsvc.trial_number"])]
        assert run.data.tags["mlflow.parentRunId"] == parent.info.run_id
        assert run.data.params == {k: str(v) for k, v in trial.config.items()}
        assert run.data.tags["searchsvc.attempt"] == str(trial.attempts)
        assert run.data.tags["searchsvc.arm.x"] == str(trial.arm["x"])
        assert run.info.status == "FINISHED"
        history = sorted((m.step, m.value) for m in client.get_metric_history(run.info.run_id,
                                                                              "loss"))
        assert history == losses(trial)
        assert [m.step for m in client.get_metric_history(run.info.run_id, "step_x")] == list(
            range(1, STEPS + 1))
        # Every step's telemetry too, under system/.
        assert [m.step for m in client.get_metric_history(run.info.run_id,
                                                          "system/rss_mb")] == list(
            range(1, STEPS + 1))
        assert "note" not in run.data.metrics
    # A trial the kill interrupted ran again as attempt 2: its first run was replaced.
    deleted = mlflow.search_runs(experiment_names=["tracked-on-ray"], output_format="list",
                                 run_view_type=ViewType.DELETED_ONLY)
    assert len(deleted) == sum(t.attempts - 1 for t in resumed.trials.values()) > 0
    attached = {a.path for a in client.list_artifacts(parent.info.run_id, "report")}
    assert {"report/report.html", "report/report.json", "report/trials.csv"} <= attached


def test_the_interrupted_trials_went_on_from_their_checkpoints_with_every_step_once(
        resumed: Resumed) -> None:
    saved: dict[int, int] = {}
    for event in resumed.store.get_events("tracked-on-ray", kind=EventKind.CHECKPOINT):
        if event.data["attempt"] == 1:
            saved[event.number] = max(saved.get(event.number, 0), event.step or 0)
    interrupted = [t for t in resumed.trials.values() if t.attempts == 2]
    assert any(t.number in saved for t in interrupted)  # the kill came after a checkpoint
    for trial in interrupted:
        ran = [int(line) for line in
               (resumed.folder / "trace" / f"{trial.number}.log").read_text().split()]
        # The first attempt ran to its last checkpoint's step and perhaps past it (steps the
        # kill lost); the second from the step after that checkpoint, not from the start.
        restored = saved.get(trial.number, 0)
        lost = len(ran) - STEPS
        assert lost >= 0 and ran == [*range(1, restored + lost + 1),
                                     *range(restored + 1, STEPS + 1)], (restored, ran)
        # Its record: every step once, those up to the checkpoint kept from the first attempt.
        kept = [(m.step, m.value) for m in trial.measurements if m.attempt == 2]
        assert kept == [(step, pytest.approx(trial.config["x"] / step + trial.config["y"]))
                        for step in range(1, STEPS + 1)]


def test_each_trial_is_one_tensorboard_run_with_its_hparams_and_scalars(
        resumed: Resumed) -> None:
    logs = Logs(resumed.results / "tensorboard")
    assert logs.runs() == [".", *(f"trial_{n:05d}" for n in range(TRIALS))]
    assert [h.name for h in logs.experiment().hparam_infos] == ["x", "y", "act"]
    assert [m.name.tag for m in logs.experiment().metric_infos] == ["loss"]
    for number, trial in resumed.trials.items():
        run = f"trial_{number:05d}"
        assert logs.session(run) == trial.config
        assert logs.scalars(run, "loss") == losses(trial)
        assert [step for step, _ in logs.scalars(run, "system/step_time_s")] == list(
            range(1, STEPS + 1))


def test_each_trial_is_in_wandb_with_every_step_once_and_its_telemetry(
        resumed: Resumed) -> None:
    runs: dict[int, list[RunFile]] = {}
    studies = []
    for run in run_files(resumed.results):
        meta = run.config.get("searchsvc") or {}
        if meta.get("kind") == "trial":
            runs.setdefault(meta["trial_number"], []).append(run)
        elif meta.get("kind") == "study":
            studies.append(run)
    assert sorted(runs) == list(range(TRIALS))
    for number, trial in resumed.trials.items():
        # The kill and resume wrote no step twice across the trial's runs, and lost none.
        written = [(int(row["_step"]), row["loss"]) for r in runs[number] for row in r.history]
        assert written == losses(trial)
        assert {r.config["searchsvc"]["attempt"] for r in runs[number]} == {trial.attempts}
        assert all(row["system/step_time_s"] > 0 and row["system/rss_mb"] > 0
                   for r in runs[number] for row in r.history)
        assert runs[number][-1].exit_code == 0
        assert runs[number][-1].summary["state"] == "completed"
    assert studies[-1].exit_code == 0 and studies[-1].summary["trials_completed"] == TRIALS


def test_a_dead_tracking_server_costs_one_warning(
        ray_local, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    (tmp_path / "dead_server_objective.py").write_text(textwrap.dedent(OBJECTIVE).replace(
        "time.sleep(0.3)", "pass"))
    spec_file = tmp_path / "dead.yaml"
    spec_file.write_text(textwrap.dedent(SPEC).replace("tracked-on-ray", "dead-server").replace(
        "tracked_objective:", "dead_server_objective:").replace(
        "mlflow: {}", "mlflow: {tracking_uri: 'http://127.0.0.1:9'}").replace(
        "wandb: {mode: offline}", "wandb: off").replace(
        f"trials: {TRIALS}", "trials: 4"))
    store = SqlStore(f"sqlite:///{tmp_path / 'db.sqlite'}")
    progress = io.StringIO()
    started = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="searchsvc.tracking"):
        run = usecases.run(validate_file(spec_file), store,
                           RunOptions(live_progress=False, progress_stream=progress),
                           preflight=False)
    assert time.monotonic() - started < 240
    assert run.outcome.study.state == "completed" and run.outcome.finished == 4
    [warning] = [r.getMessage() for r in caplog.records if r.name == "searchsvc.tracking"]
    assert "tracking: mlflow failed" in warning and "127.0.0.1:9" in warning
    assert progress.getvalue().count("warning: tracking:") == 1
    logs = Logs(Path(run.outcome.study.results_dir or "") / "tensorboard")
    assert logs.runs() == [".", *(f"trial_{n:05d}" for n in range(4))]  # TensorBoard went on
