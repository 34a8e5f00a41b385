"""TensorBoard tracking: event files that TensorBoard's Scalars and HParams dashboards read.

Layout of the log folder (``tensorboard --logdir`` it):

- ``events.out.tfevents.*.searchsvc`` at the top: the HParams experiment (every parameter of
  the space with its domain, and the study's metric(s));
- ``trial_00007/``: one TensorBoard run per trial: its session start (the config as hparams),
  a scalar per numeric metric per step, its session end (status), and ``searchsvc.json``,
  which says which attempt the folder holds and that it is complete.

Written with TensorBoard's own protobuf helpers and record format, by a small synchronous event
writer: TensorBoard's ``EventFileWriter`` (and torch's ``SummaryWriter`` on top of it) imports
all of TensorFlow when it is installed, seconds of the driver's time for nothing.
Resuming never duplicates: a trial's folder is complete or rewritten whole from the store, and
a new attempt of a trial replaces the folder of the earlier one.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import socket
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import Field

from searchsvc.core import Measurement, StudyRecord, TrialRecord, TrialState
from searchsvc.spec import ChoiceParameter, FixedParameter, Parameter, RangeParameter, StudySpec
from searchsvc.tracking.base import (
    ReportFolder,
    Tracker,
    TrackerOptions,
    hparam_value,
    latest_attempt,
    step_scalars,
    study_key,
)

SUFFIX = ".searchsvc"  # the event files searchsvc writes end so (it replaces only those)
STUDY_MARKER = "searchsvc_study.json"
TRIAL_MARKER = "searchsvc.json"


def trial_folder(number: int) -> str:
    return f"trial_{number:05d}"


class TensorBoardOptions(TrackerOptions):
    """Write TensorBoard event files: a run per trial, with the HParams plugin's data."""

    dir: str | None = Field(None, min_length=1, description=(
        "Log folder (a relative one is taken inside the study's results folder). Default: "
        "<results folder>/tensorboard."))


class TensorBoardTracker(Tracker):
    """Writes a study's event files into ``logdir`` (module docstring)."""

    name = "tensorboard"
    summary = "TensorBoard event files: a run per trial, with the HParams plugin's data"
    Options = TensorBoardOptions

    @classmethod
    def for_study(cls, settings: TensorBoardOptions, spec: StudySpec,
                  results_dir: Path) -> TensorBoardTracker:
        folder = Path(settings.dir).expanduser() if settings.dir else Path("tensorboard")
        return cls(folder if folder.is_absolute() else results_dir / folder)

    def __init__(self, logdir: Path):
        self.logdir = logdir
        self.writers: dict[int, EventWriter] = {}  # trial number -> the writer of its attempt
        self.attempts: dict[int, int] = {}

    def study_started(self, study: StudyRecord, spec: StudySpec,
                      trials: Sequence[TrialRecord]) -> None:
        self.logdir.mkdir(parents=True, exist_ok=True)
        marker = self.logdir / STUDY_MARKER
        key = study_key(study)
        previous = _read_json(marker).get("key")
        if previous is not None and previous != key:  # an older study of this name (--overwrite)
            for folder in self.logdir.glob("trial_[0-9]*"):
                if folder.is_dir():
                    _remove(folder)
        for old in self.logdir.glob(f"events.out.tfevents.*{SUFFIX}"):
            old.unlink()  # the experiment is written again, whole
        self._write_experiment(study, spec)
        marker.write_text(json.dumps({"study": study.name, "key": key}))
        self.sync(trials)

    def sync(self, trials: Sequence[TrialRecord]) -> None:
        """Rewrite, from the store, each trial whose folder does not hold its record whole."""
        for trial in trials:
            if trial.number not in self.writers and not self._complete(trial):
                self._rewrite(trial)

    def _write_experiment(self, study: StudyRecord, spec: StudySpec) -> None:
        from tensorboard.plugins.hparams import summary_v2 as hp

        names = [o.name for o in spec.objectives] or [spec.metric]
        config = hp.hparams_config_pb(
            hparams=[hp.HParam(p.name, _domain(p), description=p.role)
                     for p in spec.parameters.values()],
            metrics=[hp.Metric(name, display_name=name) for name in names],
            time_created_secs=study.created_at,
        )
        writer = EventWriter(self.logdir)
        writer.add_event(_event(config, study.created_at, 0))
        writer.close()

    def _complete(self, trial: TrialRecord) -> bool:
        marker = _read_json(self.logdir / trial_folder(trial.number) / TRIAL_MARKER)
        return marker.get("attempt") == trial.attempts and marker.get("state") == trial.state

    def _rewrite(self, trial: TrialRecord) -> None:
        """The trial's folder from scratch, from its record in the store."""
        self.trial_started(trial)
        self.measurements(trial, latest_attempt(trial))
        if trial.finished or trial.state == TrialState.INTERRUPTED:
            self.trial_finished(trial)
        else:
            self._close(trial.number)

    def trial_started(self, trial: TrialRecord) -> None:
        from tensorboard.plugins.hparams import summary_v2 as hp

        self._close(trial.number)
        folder = self.logdir / trial_folder(trial.number)
        if folder.exists():  # an earlier attempt's, or a partial one: replaced whole
            _remove(folder)
        writer = self.writers[trial.number] = EventWriter(folder)
        self.attempts[trial.number] = trial.attempts
        started = trial.started_at or time.time()
        hparams = {k: hparam_value(v) for k, v in trial.config.items()}
        writer.add_event(_event(hp.hparams_pb(hparams, start_time_secs=started), started, 0))
        writer.flush()

    def measurements(self, trial: TrialRecord, items: Sequence[Measurement]) -> None:
        from tensorboard.plugins.scalar.summary_v2 import scalar_pb

        writer = self._writer_of(trial)
        for m in items:
            wall = m.recorded_at or time.time()
            for tag, value in step_scalars(m).items():
                writer.add_event(_event(scalar_pb(tag, value), wall, m.step))
        writer.flush()

    def trial_finished(self, trial: TrialRecord) -> None:
        from tensorboard.plugins.hparams import api_pb2

        writer = self._writer_of(trial)
        status = {TrialState.COMPLETED: api_pb2.STATUS_SUCCESS,
                  TrialState.PRUNED: api_pb2.STATUS_SUCCESS,
                  TrialState.FAILED: api_pb2.STATUS_FAILURE,
                  TrialState.INFEASIBLE: api_pb2.STATUS_FAILURE,
                  }.get(trial.state, api_pb2.STATUS_UNKNOWN)
        ended = trial.finished_at or time.time()
        writer.add_event(_event(_session_end(status, ended), ended, trial.last_step or 0))
        self._close(trial.number)
        (self.logdir / trial_folder(trial.number) / TRIAL_MARKER).write_text(json.dumps(
            {"number": trial.number, "attempt": trial.attempts, "state": str(trial.state)}))

    def study_finished(self, study: StudyRecord, report: ReportFolder | None) -> None:
        self.close()

    def close(self) -> None:
        for number in list(self.writers):
            self._close(number)

    def _writer_of(self, trial: TrialRecord) -> EventWriter:
        if trial.number not in self.writers or self.attempts.get(trial.number) != trial.attempts:
            self.trial_started(trial)
        return self.writers[trial.number]

    def _close(self, number: int) -> None:
        writer = self.writers.pop(number, None)
        if writer is not None:
            writer.close()


class EventWriter:
    """Appends events to a new TensorBoard event file in ``folder`` (TFRecord framing)."""

    _files = itertools.count()

    def __init__(self, folder: Path):
        from tensorboard.summary.writer.record_writer import RecordWriter

        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / (f"events.out.tfevents.{int(time.time()):010d}."
                              f"{socket.gethostname()}.{os.getpid()}.{next(self._files)}{SUFFIX}")
        self._records = RecordWriter(open(self.path, "wb"))  # noqa: SIM115 - closed in close()
        from tensorboard.compat.proto import event_pb2

        self.add_event(event_pb2.Event(wall_time=time.time(), file_version="brain.Event:2"))

    def add_event(self, event: Any) -> None:
        self._records.write(event.SerializeToString())

    def flush(self) -> None:
        self._records.flush()

    def close(self) -> None:
        if not self._records.closed:
            self._records.close()


def _event(summary: Any, wall_time: float, step: int) -> Any:
    from tensorboard.compat.proto import event_pb2

    return event_pb2.Event(wall_time=wall_time, step=step, summary=summary)


def _session_end(status: int, end_time_secs: float) -> Any:
    """The HParams plugin's session-end summary (TensorBoard's own helper for it needs
    TensorFlow)."""
    from tensorboard.compat.proto import summary_pb2
    from tensorboard.plugins.hparams import metadata, plugin_data_pb2

    data = plugin_data_pb2.HParamsPluginData(session_end_info=plugin_data_pb2.SessionEndInfo(
        status=status, end_time_secs=end_time_secs))
    summary = summary_pb2.Summary()
    summary.value.add(tag=metadata.SESSION_END_INFO_TAG,
                      metadata=metadata.create_summary_metadata(data),
                      tensor=metadata.NULL_TENSOR)
    return summary


def _domain(param: Parameter) -> Any:
    """The HParams domain of a parameter of the space (None when its values mix types)."""
    from tensorboard.plugins.hparams import summary_v2 as hp

    if isinstance(param, RangeParameter):
        if param.kind == "int":
            return hp.IntInterval(int(param.low), int(param.high))
        return hp.RealInterval(float(param.low), float(param.high))
    values = (param.values if isinstance(param, ChoiceParameter)
              else (param.value,) if isinstance(param, FixedParameter) else ())
    converted = [hparam_value(v) for v in values]
    kinds = {bool if isinstance(v, bool) else str if isinstance(v, str) else float
             for v in converted}
    if len(kinds) != 1:
        return None
    if kinds == {float}:
        converted = [float(v) for v in converted]
    return hp.Discrete(converted)


def _remove(folder: Path) -> None:
    """Delete a trial folder this tracker wrote; refuse one holding anything else (``dir`` may
    name a folder that is not only this study's)."""
    for path in folder.rglob("*"):
        if path.is_dir() or path.name == TRIAL_MARKER or path.name.endswith(SUFFIX):
            continue
        raise FileExistsError(f"{folder} holds files searchsvc did not write ({path.name}): "
                              "not replacing it")
    shutil.rmtree(folder)


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
