"""The store's immutable data model: study, trial, measurement (as in OSS Vizier).

Analysis and reports consume these records; they never see database rows.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

# Study lifecycle.
STUDY_CREATED = "created"
STUDY_RUNNING = "running"
STUDY_INTERRUPTED = "interrupted"  # stopped before its budget was spent: resumable
STUDY_COMPLETED = "completed"
STUDY_FAILED = "failed"
STUDY_STATES = (STUDY_CREATED, STUDY_RUNNING, STUDY_INTERRUPTED, STUDY_COMPLETED, STUDY_FAILED)

# Trial lifecycle.
TRIAL_RUNNING = "running"
TRIAL_COMPLETED = "completed"
TRIAL_PRUNED = "pruned"  # stopped early by a scheduler; its measurements are kept
TRIAL_FAILED = "failed"  # the objective raised, timed out or its worker died
TRIAL_INFEASIBLE = "infeasible"  # the metric went NaN/inf (divergence)
TRIAL_INTERRUPTED = "interrupted"  # the study stopped while it ran; it is re-run on resume
TRIAL_STATES = (TRIAL_RUNNING, TRIAL_COMPLETED, TRIAL_PRUNED, TRIAL_FAILED, TRIAL_INFEASIBLE,
                TRIAL_INTERRUPTED)
FINISHED_TRIAL_STATES = frozenset({TRIAL_COMPLETED, TRIAL_PRUNED, TRIAL_FAILED, TRIAL_INFEASIBLE})


def improves(value: float | None, best: float | None, mode: str) -> bool:
    """Whether ``value`` is finite and beats ``best`` (None: nothing yet) in ``mode``."""
    if value is None or not math.isfinite(value):
        return False
    return best is None or (value < best if mode == "min" else value > best)


@dataclass(frozen=True)
class Measurement:
    """Metrics an objective reported at one step of one attempt of a trial."""

    step: int
    value: float | None  # the study's metric at this step; None when missing or not finite
    metrics: Mapping[str, Any]
    attempt: int = 1
    recorded_at: float = 0.0


@dataclass(frozen=True)
class TrialRecord:
    id: int
    study_id: int
    number: int
    state: str
    config: Mapping[str, Any]
    arm: Mapping[str, Any]
    seed: int
    attempts: int = 1
    error: str | None = None
    started_at: float | None = None
    finished_at: float | None = None
    best_value: float | None = None
    best_step: int | None = None
    last_step: int | None = None
    node: str | None = None
    checkpoints: tuple[str, ...] = ()
    measurements: tuple[Measurement, ...] = ()

    @property
    def finished(self) -> bool:
        return self.state in FINISHED_TRIAL_STATES

    def curve(self, metric: str, attempt: int | None = None) -> list[tuple[int, float]]:
        """(step, value) of ``metric`` over the latest attempt (or ``attempt``)."""
        attempt = attempt or self.attempts
        return [
            (m.step, float(m.metrics[metric]))
            for m in self.measurements
            if m.attempt == attempt and isinstance(m.metrics.get(metric), int | float)
        ]


# Trial events (what schedulers did).
EVENT_STOPPED_EARLY = "stopped_early"  # data: rung, cutoff, value
EVENT_EXPLOIT = "exploit"  # data: parent (trial number), parent_step, old_config, new_config
EVENT_RETRIED = "retried"  # data: error (its last lines), failures, timed_out


@dataclass(frozen=True)
class TrialEvent:
    trial_number: int
    kind: str
    step: int | None
    data: Mapping[str, Any]
    recorded_at: float = 0.0


@dataclass(frozen=True)
class StudyRecord:
    id: int
    name: str
    state: str
    metric: str
    mode: str
    searcher: str
    spec_text: str
    spec_file: str
    created_at: float
    total_trials: int | None = None
    results_dir: str | None = None
    started_at: float | None = None
    finished_at: float | None = None
    provenance: Mapping[str, Any] = field(default_factory=dict)
    driver: Mapping[str, Any] = field(default_factory=dict)
    trial_counts: Mapping[str, int] = field(default_factory=dict)
    best_value: float | None = None
    owner: str | None = None  # the service user it belongs to (None: made from the CLI)


@dataclass(frozen=True)
class TokenGrant:
    """What an API token allows: the user it acts as, and whether it may upload code."""

    user: str
    allow_code: bool = False
