"""The contract every experiment tracker keeps (MLflow, TensorBoard, ...).

A tracker mirrors a study into an outside tool as the driver runs it. It receives searchsvc's
own records (:mod:`searchsvc.core`), never Ray's objects, and lives in the driver process only:
it is never pickled to a Ray worker.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict

from searchsvc.core import Measurement, StudyRecord, TrialRecord, is_finite_number
from searchsvc.spec import StudySpec


@dataclass(frozen=True)
class ReportFolder:
    """The report written after a run: its folder and the files and folders to attach."""

    folder: Path
    paths: tuple[Path, ...]


class TrackerOptions(BaseModel):
    """A tracker's sub-section of the study file's ``tracking:`` (a tracker's ``Options``
    subclasses it with its own fields): unknown keys and wrong types are refused."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class Tracker(ABC):
    """Writes one study to an experiment tracker. The driver calls, from one thread:

    1. ``study_started(study, spec, trials)`` once per run of the study: a new study, or each
       resume. ``trials`` are the trials the store already holds, with their measurements: the
       tracker brings itself level with them (``sync``), because a driver that was killed may have
       stopped between writing the store and the tracker (the store is written first).
    2. For each trial that runs: ``trial_started(trial)`` (attempt ``trial.attempts`` of trial
       ``trial.number``; a new attempt replaces what an earlier attempt of that trial left),
       then ``measurements(trial, items)`` with the steps just written to the store, in order,
       then ``trial_finished(trial)`` with its final state (``interrupted`` when the study was
       stopped while it ran: it runs again as a new attempt on resume).
    3. ``sync(trials)``, at any time after ``study_started``: the trials as stored (a backend
       that runs its own search writes the store without the per-trial calls).
    4. ``study_finished(study, report)`` when the run ended (``study.state`` says how:
       ``completed``, or ``interrupted`` and resumable), with the report's files once written.
    5. ``close()``: releases what the tracker holds; also called after a failure, and safe to
       call twice.

    A tracker logs each (trial number, attempt, step) once: a resume never duplicates a trial
    or a step. A retry that redoes steps from an earlier checkpoint within the same attempt
    sends those steps again, as new data. Any exception a tracker raises disables that tracker
    for the rest of the run with one warning (:class:`~searchsvc.tracking.fanout.Trackers`):
    a tracking failure never fails a study.
    """

    name: ClassVar[str]  # its key in the study file's `tracking:` section
    summary: ClassVar[str]
    Options: ClassVar[type[TrackerOptions]] = TrackerOptions  # the schema of that sub-section

    @classmethod
    def for_study(cls, settings: Any, spec: StudySpec, results_dir: Path) -> Tracker:
        """The tracker of a study whose file turns it on with ``settings`` (its ``Options``:
        its sub-section of ``tracking:``), writing beside the study's ``results_dir`` by
        default. A registered tracker (:data:`searchsvc.plugins.TRACKERS`) defines it."""
        raise NotImplementedError(f"tracker {cls.name!r} is made by its caller")

    @abstractmethod
    def study_started(self, study: StudyRecord, spec: StudySpec,
                      trials: Sequence[TrialRecord]) -> None: ...

    @abstractmethod
    def sync(self, trials: Sequence[TrialRecord]) -> None:
        """Bring the tracker level with these stored trials (with their measurements): write
        what it misses of them, and nothing it has."""

    @abstractmethod
    def trial_started(self, trial: TrialRecord) -> None: ...

    @abstractmethod
    def measurements(self, trial: TrialRecord, items: Sequence[Measurement]) -> None: ...

    @abstractmethod
    def trial_finished(self, trial: TrialRecord) -> None: ...

    @abstractmethod
    def study_finished(self, study: StudyRecord, report: ReportFolder | None) -> None: ...

    def close(self) -> None:  # noqa: B027 - nothing to release by default
        """Release files, writers and connections."""


def study_key(study: StudyRecord) -> str:
    """What tells this study from an older one of the same name (``run --overwrite``)."""
    return f"{study.name}@{study.created_at:.3f}"


def numeric_metrics(metrics: Any) -> dict[str, float]:
    """The numbers among a step's metrics (booleans and strings left out; NaN/inf kept: a
    tracker shows a diverged step as it was reported)."""
    return {str(k): float(v) for k, v in dict(metrics).items()
            if isinstance(v, int | float) and not isinstance(v, bool)}


SYSTEM = "system/"  # the prefix of telemetry among a step's scalars


def telemetry_scalars(telemetry: Any) -> dict[str, float]:
    """A step's telemetry as scalars under ``system/`` (``system/step_time_s``); a
    data-parallel trial's other ranks under ``system/rank<N>/`` (rank 0's are the trial's)."""
    found = {f"{SYSTEM}{k}": v for k, v in numeric_metrics(telemetry or {}).items()}
    ranks = (telemetry or {}).get("ranks")
    for rank, row in enumerate(ranks if isinstance(ranks, list) else []):
        if rank and isinstance(row, dict):
            found.update({f"{SYSTEM}rank{rank}/{k}": v for k, v in numeric_metrics(row).items()
                          if k != "rank"})
    return found


def step_scalars(measurement: Measurement) -> dict[str, float]:
    """What a tracker logs of one step: the objective's numeric metrics, then its telemetry
    (:func:`telemetry_scalars`)."""
    return {**numeric_metrics(measurement.metrics), **telemetry_scalars(measurement.telemetry)}


def latest_attempt(trial: TrialRecord) -> list[Measurement]:
    """The measurements of the trial's latest attempt, by step."""
    return sorted((m for m in trial.measurements if m.attempt == trial.attempts),
                  key=lambda m: m.step)


def hparam_value(value: Any) -> bool | float | str:
    """A config value as a tracker's scalar: numbers and booleans as they are, the rest as
    text."""
    if isinstance(value, bool | str):
        return value
    if isinstance(value, int | float):
        return value if is_finite_number(value) else str(value)
    return str(value)
