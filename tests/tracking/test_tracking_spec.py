"""The study file's ``tracking:`` section, what trackers it makes with which defaults, and the
fan-out that keeps a failing tracker from failing the study."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from searchsvc.core import Measurement, StudyRecord, TrialRecord
from searchsvc.errors import SpecError
from searchsvc.spec import StudySpec, Tracking, json_schema, parse_spec
from searchsvc.tracking import (
    MlflowTracker,
    ReportFolder,
    TensorBoardTracker,
    Tracker,
    Trackers,
    open_trackers,
)
from searchsvc.tracking.mlflow_tracker import MlflowOptions as MlflowTracking
from searchsvc.tracking.tensorboard_tracker import TensorBoardOptions as TensorBoardTracking
from tests.tracking.records import run_trial, spec, study

BASE = """
study: tracked
objective: objectives.synthetic:branin
metric: loss
mode: min
parameters:
  x: {low: 0, high: 1}
"""


@pytest.mark.parametrize("section, expected", [
    ("", Tracking()),
    ("tracking: {}", Tracking()),
    ("tracking: {mlflow: {}}", Tracking(mlflow=MlflowTracking())),
    ("tracking:\n  mlflow:\n  tensorboard:\n",
     Tracking(mlflow=MlflowTracking(), tensorboard=TensorBoardTracking())),
    ("tracking: {mlflow: true, tensorboard: off}", Tracking(mlflow=MlflowTracking())),
    ("tracking: {mlflow: false, tensorboard: {dir: /tmp/tb}}",
     Tracking(tensorboard=TensorBoardTracking(dir="/tmp/tb"))),
    ("tracking: {mlflow: {tracking_uri: 'http://mlflow:5000', experiment: team}}",
     Tracking(mlflow=MlflowTracking(tracking_uri="http://mlflow:5000", experiment="team"))),
])
def test_the_tracking_section(section: str, expected: Tracking) -> None:
    tracking = parse_spec(BASE + section).tracking
    assert tracking == expected
    assert tracking.enabled == (expected != Tracking())


@pytest.mark.parametrize("section, message", [
    ("tracking: {mlflow: {tracking_url: x}}",
     "tracking.mlflow.tracking_url: unknown field (did you mean 'tracking_uri'?); allowed: "
     "tracking_uri, experiment"),
    ("tracking: {tensorboard: 3}",
     "tracking.tensorboard: must be a mapping of options, `true` or `off` (got 3)"),
    ("tracking: {mlflow: {experiment: ''}}", "tracking.mlflow.experiment: "),
    ("tracking: {neptune: {}}",
     "tracking.neptune: unknown field; allowed: mlflow, tensorboard, wandb"),
])
def test_a_bad_tracking_section_is_located(section: str, message: str) -> None:
    with pytest.raises(SpecError) as caught:
        parse_spec(BASE + section)
    assert message in str(caught.value)
    assert "<spec>:8:" in str(caught.value)  # the line of `tracking:`


def test_the_json_schema_shows_the_tracking_section() -> None:
    schema = json_schema()
    assert schema["properties"]["tracking"]["$ref"] == "#/$defs/TrackingFile"
    section = schema["$defs"]["TrackingFile"]["properties"]
    [mlflow] = [s for s in section["mlflow"]["oneOf"] if s.get("type") == "object"]
    assert set(mlflow["properties"]) == {"tracking_uri", "experiment"}
    [tensorboard] = [s for s in section["tensorboard"]["oneOf"] if s.get("type") == "object"]
    assert set(tensorboard["properties"]) == {"dir"}


def tracked(section: str) -> StudySpec:
    return parse_spec(BASE + section)


def test_defaults_live_in_the_results_folder(tmp_path: Path) -> None:
    trackers = open_trackers(tracked("tracking: {mlflow: {}, tensorboard: {}}"), tmp_path)
    mlf, tb = trackers.trackers
    assert isinstance(mlf, MlflowTracker) and isinstance(tb, TensorBoardTracker)
    assert mlf.tracking_uri == f"sqlite:///{tmp_path.resolve() / 'mlflow.db'}"
    assert mlf.experiment == "tracked" and mlf.artifact_root == tmp_path.resolve() / "mlartifacts"
    assert tb.logdir == tmp_path / "tensorboard"
    assert not open_trackers(tracked(""), tmp_path)  # nothing asked for: an empty fan-out


def test_given_places_are_kept(tmp_path: Path) -> None:
    mlf, tb = open_trackers(tracked(
        "tracking: {mlflow: {tracking_uri: 'http://127.0.0.1:5000', experiment: team}, "
        "tensorboard: {dir: runs/tb}}"), tmp_path).trackers
    assert isinstance(mlf, MlflowTracker) and isinstance(tb, TensorBoardTracker)
    assert (mlf.tracking_uri, mlf.experiment, mlf.artifact_root) == (
        "http://127.0.0.1:5000", "team", None)  # the server keeps its artifacts
    assert tb.logdir == tmp_path / "runs" / "tb"  # relative: inside the results folder
    [mlf] = open_trackers(tracked(
        f"tracking: {{mlflow: {{tracking_uri: 'sqlite:///{tmp_path}/db/m.db'}}}}"),
        tmp_path / "results").trackers
    assert isinstance(mlf, MlflowTracker)
    assert mlf.artifact_root == tmp_path / "db" / "mlartifacts"  # beside the database
    [tb] = open_trackers(tracked(f"tracking: {{tensorboard: {{dir: {tmp_path}/abs}}}}"),
                         tmp_path / "results").trackers
    assert isinstance(tb, TensorBoardTracker) and tb.logdir == tmp_path / "abs"


class Recorder(Tracker):
    """Records calls; raises in ``fail_in`` (every time it is called)."""

    name = "recorder"

    def __init__(self, name: str, fail_in: str | None = None):
        self.name, self.fail_in = name, fail_in  # type: ignore[misc]
        self.calls: list[str] = []

    def _call(self, what: str) -> None:
        self.calls.append(what)
        if what == self.fail_in:
            raise ConnectionError(f"{self.name} is down")

    def study_started(self, study: StudyRecord, spec: StudySpec,
                      trials: list[TrialRecord]) -> None:  # type: ignore[override]
        self._call("study_started")

    def sync(self, trials: list[TrialRecord]) -> None:  # type: ignore[override]
        self._call("sync")

    def trial_started(self, trial: TrialRecord) -> None:
        self._call("trial_started")

    def measurements(self, trial: TrialRecord,
                     items: list[Measurement]) -> None:  # type: ignore[override]
        self._call("measurements")

    def trial_finished(self, trial: TrialRecord) -> None:
        self._call("trial_finished")

    def study_finished(self, study: StudyRecord, report: ReportFolder | None) -> None:
        self._call("study_finished")

    def close(self) -> None:
        self._call("close")


def test_the_fan_out_disables_a_failing_tracker_with_one_warning(
        caplog: pytest.LogCaptureFixture) -> None:
    broken, good = Recorder("broken", fail_in="measurements"), Recorder("good")
    shown: list[str] = []
    trackers = Trackers([broken, good], notify=shown.append)
    with caplog.at_level(logging.WARNING, logger="searchsvc.tracking"):
        trackers.study_started(study(), spec(), [])
        for number in range(3):
            run_trial(trackers, number)
        trackers.study_finished(study(), None)
        trackers.close()
    assert broken.calls == ["study_started", "trial_started", "measurements", "close"]
    assert good.calls == ["study_started", *["trial_started", "measurements", "measurements",
                                             "trial_finished"] * 3, "study_finished", "close"]
    [warning] = [r.getMessage() for r in caplog.records if r.name == "searchsvc.tracking"]
    assert shown == [warning]
    assert warning == ("tracking: broken failed (measurements: ConnectionError: broken is down);"
                       " the study goes on without broken tracking")
    assert trackers.failed == {"broken": warning}
