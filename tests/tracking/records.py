"""A small study built directly from searchsvc's records (no Ray, no store), fed to trackers
the way the driver feeds them."""

from __future__ import annotations

import math
import time
from dataclasses import replace

from searchsvc.core import Measurement, StudyRecord, StudyState, TrialRecord, TrialState
from searchsvc.spec import StudySpec, parse_spec
from searchsvc.tracking import Tracker

SPEC = """
study: tracked
description: Does depth help?
objective: objectives.synthetic:branin
metric: loss
mode: min
budget: {trials: 4, max_steps: 4}
parameters:
  depth: {role: scientific, type: int, values: [1, 2]}
  lr: {role: nuisance, low: 1.0e-4, high: 1.0e-1, scale: log}
  units: {role: nuisance, type: int, low: 8, high: 64}
  act: {role: nuisance, values: [relu, tanh]}
  batch: {role: fixed, value: 32}
tracking: {mlflow: {}, tensorboard: {}}
"""
STEPS = 4
NOW = time.time()


def spec(text: str = SPEC) -> StudySpec:
    return parse_spec(text)


def study(state: str = StudyState.RUNNING, created_at: float = NOW - 100) -> StudyRecord:
    return StudyRecord(id=1, name="tracked", state=state, metric="loss", mode="min",
                       searcher="quasi_random", spec_text=SPEC, spec_file="<spec>",
                       created_at=created_at, started_at=NOW - 90)


def config(number: int) -> dict:
    return {"depth": 1 + number % 2, "lr": 10 ** -(1 + number), "units": 8 * (number + 1),
            "act": "relu" if number % 2 else "tanh", "batch": 32}


def loss(number: int, step: int) -> float:
    return 1.0 / (number + step)


def measurement(number: int, step: int, attempt: int = 1) -> Measurement:
    value = loss(number, step)
    return Measurement(step, value, {"loss": value, "acc": 1 - value, "phase": "train",
                                     "done": False, "time_s": 0.1 * step},
                       attempt=attempt, recorded_at=NOW + step)


def trial(number: int, attempt: int = 1, state: str = TrialState.RUNNING,
          steps: int = 0) -> TrialRecord:
    return TrialRecord(
        id=100 + number, study_id=1, number=number, state=state, config=config(number),
        arm={"depth": config(number)["depth"]}, seed=1000 + number, attempts=attempt,
        started_at=NOW + number, finished_at=NOW + 50 if state != TrialState.RUNNING else None,
        measurements=tuple(measurement(number, s, attempt) for s in range(1, steps + 1)),
        last_step=steps or None,
        repeat_of=0 if number == 3 else None,
    )


def run_trial(tracker: Tracker, number: int, *, attempt: int = 1, steps: int = STEPS,
              state: str = TrialState.COMPLETED, batches: int = 2) -> TrialRecord:
    """Feed one trial as the driver does: start, its steps in ``batches``, its end."""
    record = trial(number, attempt)
    tracker.trial_started(record)
    items = [measurement(number, s, attempt) for s in range(1, steps + 1)]
    size = math.ceil(len(items) / batches) if items else 1
    for i in range(0, len(items), size):
        tracker.measurements(record, items[i:i + size])
    ended = replace(record, state=state, finished_at=NOW + 60, last_step=steps or None,
                    error="it broke" if state == TrialState.FAILED else None,
                    measurements=tuple(items))
    tracker.trial_finished(ended)
    return ended


def finished(state: str = StudyState.COMPLETED) -> StudyRecord:
    return replace(study(state), trial_counts={"completed": 3}, best_value=loss(2, STEPS),
                   finished_at=NOW + 100)
