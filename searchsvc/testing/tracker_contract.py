"""The contract every experiment tracker keeps (:class:`~searchsvc.tracking.Tracker`), as a
reusable pytest suite: subclass :class:`TrackerContract` in a test module and say how to open
the tracker on a folder and how to read back what it wrote there::

    class TestMyTracker(TrackerContract):
        def open_tracker(self, folder):
            return MyTracker(folder)

        def logged_steps(self, folder):
            return {trial_number: [(step, loss), ...], ...}  # as the tool itself reads them

The suite feeds the tracker searchsvc's own records the way the driver does (no Ray, no
store) and checks, on the tool's own files or database:

- every step of every trial is logged once, with its value;
- a resume writes nothing twice: a new tracker on the same destination, started with what the
  store holds (a trial the killed driver left half-logged, a trial it never logged, an
  interrupted trial that then runs again as a new attempt), brings the tool level with the
  store, and a further resume and ``sync`` of finished trials add nothing;
- a slow tracker never blocks the study: behind :class:`~searchsvc.tracking.Trackers` (as the
  driver holds it), every call returns at once while the tracker is slowed down, and once the
  study ends every step has reached the tool, once.
"""

from __future__ import annotations

import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from searchsvc.core import Measurement, StudyRecord, StudyState, TrialRecord, TrialState
from searchsvc.spec import StudySpec, parse_spec
from searchsvc.tracking import ReportFolder, Tracker, Trackers

METRIC = "loss"
STEPS = 4
SPEC = """
study: contract
objective: objectives.synthetic:branin
metric: loss
mode: min
budget: {trials: 3, max_steps: 4}
parameters:
  depth: {role: scientific, type: int, values: [1, 2]}
  lr: {role: nuisance, low: 1.0e-4, high: 1.0e-1, scale: log}
  act: {role: nuisance, values: [relu, tanh]}
"""
Logged = dict[int, list[tuple[int, float]]]


class TrackerContract(ABC):
    """The suite; a subclass says how to open its tracker and read back what it wrote."""

    SLOW_CALL_S = 0.2  # how long each call of the slowed tracker takes
    NOW = 1_700_000_000.0

    @abstractmethod
    def open_tracker(self, folder: Path) -> Tracker:
        """A new tracker writing to the destination kept in ``folder`` (the same destination
        each time it is called with the same folder: a resume opens a new tracker)."""

    @abstractmethod
    def logged_steps(self, folder: Path) -> Logged:
        """Every (step, value of ``loss``) the destination in ``folder`` holds for each trial
        (by trial number), as the tool itself reads them back, in the order written; a step
        written twice appears twice. Called after the tracker was closed."""

    # -- the study fed to the tracker ------------------------------------------------------

    def spec(self) -> StudySpec:
        return parse_spec(SPEC)

    def study(self, state: StudyState = StudyState.RUNNING) -> StudyRecord:
        return StudyRecord(id=1, name="contract", state=state, metric=METRIC, mode="min",
                           searcher="quasi_random", spec_text=SPEC, spec_file="<spec>",
                           created_at=self.NOW - 100, started_at=self.NOW - 90,
                           finished_at=self.NOW + 100 if state != StudyState.RUNNING else None)

    @staticmethod
    def loss(number: int, step: int) -> float:
        return 1.0 / (number + step)

    def measurement(self, number: int, step: int, attempt: int = 1) -> Measurement:
        value = self.loss(number, step)
        return Measurement(step, value, {METRIC: value, "acc": 1 - value}, attempt=attempt,
                           recorded_at=self.NOW + step)

    def trial(self, number: int, *, attempt: int = 1, state: str = TrialState.RUNNING,
              steps: int = 0) -> TrialRecord:
        return TrialRecord(
            id=100 + number, study_id=1, number=number, state=state,  # type: ignore[arg-type]
            config={"depth": 1 + number % 2, "lr": 10 ** -(1 + number),
                    "act": "relu" if number % 2 else "tanh"},
            arm={"depth": 1 + number % 2}, seed=1000 + number, attempts=attempt,
            started_at=self.NOW + number,
            finished_at=None if state == TrialState.RUNNING else self.NOW + 50,
            measurements=tuple(self.measurement(number, s, attempt)
                               for s in range(1, steps + 1)),
            last_step=steps or None, best_value=self.loss(number, steps) if steps else None,
            best_step=steps or None)

    def run_trial(self, tracker: Tracker, number: int, *, attempt: int = 1) -> TrialRecord:
        """Feed one trial as the driver does: its start, its steps in two batches, its end."""
        record = self.trial(number, attempt=attempt)
        tracker.trial_started(record)
        items = [self.measurement(number, s, attempt) for s in range(1, STEPS + 1)]
        tracker.measurements(record, items[:2])
        tracker.measurements(record, items[2:])
        ended = self.trial(number, attempt=attempt, state=TrialState.COMPLETED, steps=STEPS)
        tracker.trial_finished(ended)
        return ended

    def every_step(self, numbers: Sequence[int]) -> dict[int, list[tuple[int, Any]]]:
        return {n: [(s, pytest.approx(self.loss(n, s), rel=1e-6))  # float32 in some tools
                    for s in range(1, STEPS + 1)] for n in numbers}

    def finish(self, tracker: Tracker) -> None:
        tracker.study_finished(replace(self.study(StudyState.COMPLETED),
                                       trial_counts={"completed": 3}), None)
        tracker.close()

    # -- the contract ----------------------------------------------------------------------

    def test_every_step_is_logged_once(self, tmp_path: Path) -> None:
        tracker = self.open_tracker(tmp_path)
        tracker.study_started(self.study(), self.spec(), [])
        for number in range(3):
            self.run_trial(tracker, number)
        self.finish(tracker)
        assert self.logged_steps(tmp_path) == self.every_step(range(3))

    def test_a_resume_writes_nothing_twice(self, tmp_path: Path) -> None:
        first = self.open_tracker(tmp_path)
        first.study_started(self.study(), self.spec(), [])
        done = self.run_trial(first, 0)
        # Trial 1 reached the tracker with 2 steps, the store with 3, when the driver died;
        # trial 2 reached the store only.
        first.trial_started(self.trial(1))
        first.measurements(self.trial(1), [self.measurement(1, 1), self.measurement(1, 2)])
        first.close()
        stored = [done, self.trial(1, state=TrialState.INTERRUPTED, steps=3),
                  self.trial(2, state=TrialState.COMPLETED, steps=STEPS)]

        second = self.open_tracker(tmp_path)
        second.study_started(self.study(), self.spec(), stored)
        rerun = self.run_trial(second, 1, attempt=2)  # the interrupted trial runs again
        self.finish(second)

        finished = [done, rerun, stored[2]]
        third = self.open_tracker(tmp_path)  # a resume with nothing left to do
        third.study_started(self.study(), self.spec(), finished)
        third.sync(finished)
        self.finish(third)
        assert self.logged_steps(tmp_path) == self.every_step(range(3))

    def test_a_slow_tracker_never_blocks_the_study(self, tmp_path: Path) -> None:
        slow = _Slow(self.open_tracker(tmp_path), self.SLOW_CALL_S)
        trackers = Trackers([slow])
        started = time.monotonic()
        trackers.study_started(self.study(), self.spec(), [])
        for number in range(3):
            self.run_trial(trackers, number)
        waited = time.monotonic() - started
        calls = 1 + 3 * 4  # the study's start; each trial's start, two batches and end
        # Every call returned while the slowed tracker was still on its first few.
        assert waited < calls * self.SLOW_CALL_S / 4, waited
        assert threading.current_thread().name not in slow.threads
        self.finish(trackers)  # waits for every call
        assert slow.calls >= calls
        assert self.logged_steps(tmp_path) == self.every_step(range(3))


class _Slow(Tracker):
    """``tracker``, each call of it taking ``delay`` seconds longer (a slow server)."""

    name = "slow"

    def __init__(self, tracker: Tracker, delay: float):
        self.tracker, self.delay = tracker, delay
        self.calls = 0
        self.threads: set[str] = set()

    def _slowly(self, call: str, *args: Any) -> None:
        self.threads.add(threading.current_thread().name)
        self.calls += 1
        time.sleep(self.delay)
        getattr(self.tracker, call)(*args)

    def study_started(self, study: StudyRecord, spec: StudySpec,
                      trials: Sequence[TrialRecord]) -> None:
        self._slowly("study_started", study, spec, trials)

    def sync(self, trials: Sequence[TrialRecord]) -> None:
        self._slowly("sync", trials)

    def trial_started(self, trial: TrialRecord) -> None:
        self._slowly("trial_started", trial)

    def measurements(self, trial: TrialRecord, items: Sequence[Measurement]) -> None:
        self._slowly("measurements", trial, items)

    def trial_finished(self, trial: TrialRecord) -> None:
        self._slowly("trial_finished", trial)

    def study_finished(self, study: StudyRecord, report: ReportFolder | None) -> None:
        self._slowly("study_finished", study, report)

    def close(self) -> None:
        self.tracker.close()
