"""The TensorBoard tracker's event files, read back with TensorBoard's own reader and its
HParams plugin's parsers: the experiment (the space and the study's metric), each trial's
hparams and session end, every step's scalars; resumes rewrite without duplicates."""

from __future__ import annotations

from pathlib import Path

import pytest
from tensorboard.backend.event_processing import plugin_event_multiplexer
from tensorboard.plugins.hparams import api_pb2, metadata
from tensorboard.util import tensor_util

from searchsvc.core import TrialState
from searchsvc.tracking import TensorBoardTracker
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


class Logs:
    """What TensorBoard reads from a log folder."""

    def __init__(self, logdir: Path):
        self.mux = plugin_event_multiplexer.EventMultiplexer()
        self.mux.AddRunsFromDirectory(str(logdir))
        self.mux.Reload()
        self.hparams = self.mux.PluginRunToTagToContent(metadata.PLUGIN_NAME)

    def experiment(self) -> api_pb2.Experiment:
        [content] = [tags[metadata.EXPERIMENT_TAG] for tags in self.hparams.values()
                     if metadata.EXPERIMENT_TAG in tags]
        return metadata.parse_experiment_plugin_data(content)

    def session(self, run: str) -> dict:
        start = metadata.parse_session_start_info_plugin_data(
            self.hparams[run][metadata.SESSION_START_INFO_TAG])
        values = {}
        for name, value in start.hparams.items():
            kind = value.WhichOneof("kind")
            values[name] = getattr(value, kind)
        return values

    def status(self, run: str) -> int | None:
        content = self.hparams[run].get(metadata.SESSION_END_INFO_TAG)
        return None if content is None else metadata.parse_session_end_info_plugin_data(
            content).status

    def scalars(self, run: str, tag: str) -> list[tuple[int, float]]:
        events = self.mux.Tensors(run, tag)
        assert self.mux.SummaryMetadata(run, tag).plugin_data.plugin_name == "scalars"
        return [(e.step, float(tensor_util.make_ndarray(e.tensor_proto))) for e in events]

    def runs(self) -> list[str]:
        return sorted(self.mux.Runs())


def curve(number: int, steps: range) -> list[tuple[int, float]]:
    return [(s, pytest.approx(loss(number, s), rel=1e-6)) for s in steps]


def test_event_files_hold_the_experiment_each_trials_hparams_and_every_steps_scalars(
        tmp_path: Path) -> None:
    tb = TensorBoardTracker(tmp_path / "tb")
    tb.study_started(study(), spec(), [])
    run_trial(tb, 0)
    run_trial(tb, 1, state=TrialState.FAILED, steps=2)
    run_trial(tb, 2, batches=4)
    tb.study_finished(finished(), None)

    logs = Logs(tmp_path / "tb")
    assert logs.runs() == [".", "trial_00000", "trial_00001", "trial_00002"]
    experiment = logs.experiment()
    infos = {h.name: h for h in experiment.hparam_infos}
    assert list(infos) == ["depth", "lr", "units", "act", "batch"]
    assert [v.number_value for v in infos["depth"].domain_discrete.values] == [1, 2]
    assert (infos["lr"].domain_interval.min_value,
            infos["lr"].domain_interval.max_value) == (1e-4, 1e-1)
    assert [v.string_value for v in infos["act"].domain_discrete.values] == ["relu", "tanh"]
    assert infos["depth"].description == "scientific"
    assert [m.name.tag for m in experiment.metric_infos] == ["loss"]

    for number, steps in ((0, STEPS), (1, 2), (2, STEPS)):
        run = f"trial_{number:05d}"
        assert logs.session(run) == config(number)
        assert logs.scalars(run, "loss") == curve(number, range(1, steps + 1))
        assert logs.scalars(run, "acc") == [
            (s, pytest.approx(1 - loss(number, s), rel=1e-6)) for s in range(1, steps + 1)]
        tags = set(logs.mux.GetAccumulator(run).Tags()["tensors"])
        assert "phase" not in tags and "done" not in tags  # a string and a boolean
    assert logs.status("trial_00000") == api_pb2.STATUS_SUCCESS
    assert logs.status("trial_00001") == api_pb2.STATUS_FAILURE


def test_a_resume_rewrites_what_the_kill_left_and_duplicates_nothing(tmp_path: Path) -> None:
    first = TensorBoardTracker(tmp_path / "tb")
    first.study_started(study(), spec(), [])
    done = run_trial(first, 0)
    first.trial_started(trial(1))
    first.measurements(trial(1), [measurement(1, 1), measurement(1, 2)])  # then killed
    kept = sorted((tmp_path / "tb" / "trial_00000").iterdir())

    second = TensorBoardTracker(tmp_path / "tb")
    second.study_started(study(), spec(), [done, trial(1, state=TrialState.INTERRUPTED, steps=3)])
    logs = Logs(tmp_path / "tb")
    assert logs.scalars("trial_00001", "loss") == curve(1, range(1, 4))
    assert logs.status("trial_00001") == api_pb2.STATUS_UNKNOWN
    assert sorted((tmp_path / "tb" / "trial_00000").iterdir()) == kept  # complete: untouched

    rerun = run_trial(second, 1, attempt=2)  # the interrupted trial runs again
    second.study_finished(finished(), None)
    third = TensorBoardTracker(tmp_path / "tb")
    third.study_started(study(), spec(), [done, rerun])  # nothing left to do
    third.close()

    logs = Logs(tmp_path / "tb")
    assert logs.runs() == [".", "trial_00000", "trial_00001"]
    assert logs.scalars("trial_00000", "loss") == curve(0, range(1, STEPS + 1))
    assert logs.scalars("trial_00001", "loss") == curve(1, range(1, STEPS + 1))
    assert logs.status("trial_00001") == api_pb2.STATUS_SUCCESS
    assert len(list((tmp_path / "tb").glob("events.out.tfevents.*"))) == 1  # one experiment
    assert sorted((tmp_path / "tb" / "trial_00000").iterdir()) == kept


def test_an_overwritten_study_replaces_the_old_ones_trials(tmp_path: Path) -> None:
    old = TensorBoardTracker(tmp_path / "tb")
    old.study_started(study(created_at=1000.0), spec(), [])
    run_trial(old, 0)
    run_trial(old, 1)
    new = TensorBoardTracker(tmp_path / "tb")
    new.study_started(study(created_at=2000.0), spec(), [])
    run_trial(new, 0, state=TrialState.COMPLETED, steps=1)
    logs = Logs(tmp_path / "tb")
    assert logs.runs() == [".", "trial_00000"]
    assert logs.scalars("trial_00000", "loss") == curve(0, range(1, 2))


def test_a_folder_holding_other_files_is_never_deleted(tmp_path: Path) -> None:
    theirs = tmp_path / "tb" / "trial_00000"
    theirs.mkdir(parents=True)
    (theirs / "notes.txt").write_text("not searchsvc's")
    tb = TensorBoardTracker(tmp_path / "tb")
    tb.study_started(study(), spec(), [])
    with pytest.raises(FileExistsError, match=r"notes\.txt"):
        tb.trial_started(trial(0))
    assert (theirs / "notes.txt").read_text() == "not searchsvc's"
