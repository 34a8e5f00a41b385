"""The immutable records every layer shares: study, trial, measurement, event (as in OSS
Vizier). The store builds them from its rows, searchers and analysis read them, and tests build
them directly, without a database.

A trial's ``number`` is its study-local number (0, 1, ...), the one name for it in every layer;
``id`` is the store's own key. report.json and trials.csv also call the number ``trial_id``,
kept as a documented alias for users' scripts (docs/DESIGN.md, "Reports").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from searchsvc.core.curve import Curve
from searchsvc.core.judging import FAILURE_KEY, StudyCounts
from searchsvc.core.objectives import Constraint
from searchsvc.core.states import FINISHED_TRIAL_STATES, EventKind, StudyState, TrialState


class _NoValues(dict[str, Any]):
    """An empty mapping that refuses to be filled. One instance stands for the empty telemetry
    and dimensionality of every measurement read from a store: a dict each costs 64 bytes, 25
    MB over a 10,000-trial study's 200,000 measurements. A dict (not a mapping proxy), so that
    it encodes, pickles and compares equal to ``{}`` as the dicts it stands for did."""

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("a measurement's mappings are read-only")

    __setitem__ = __delitem__ = __ior__ = _refuse
    update = setdefault = pop = popitem = clear = _refuse


NO_VALUES: Mapping[str, Any] = _NoValues()


@dataclass(frozen=True, slots=True)
class Measurement:
    """Metrics an objective reported at one step of one attempt of a trial."""

    step: int
    value: float | None  # the study's metric at this step; None when missing or not finite
    metrics: Mapping[str, Any]
    attempt: int = 1
    recorded_at: float = 0.0
    # What the trial's worker measured over this step (step time, samples/s, CPU, RSS, GPU
    # utilisation and memory, data wait; worker/telemetry.py), kept apart from the metrics.
    # Empty when none was recorded; a field that could not be measured is absent.
    telemetry: Mapping[str, Any] = field(default_factory=dict)
    # The representation dimensionality ``sdk.watch`` measured since the previous step
    # (worker/dimensionality.py): ``{"source": "probe" | "train", "layers": {layer:
    # {"participation_ratio": float, "stable_rank": float}}}``; empty when none was measured.
    dimensionality: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class TrialRecord:
    """One trial: its config, what became of it, and (when asked for) its measurements."""

    id: int
    study_id: int
    number: int
    state: TrialState
    config: Mapping[str, Any]
    arm: Mapping[str, Any]
    seed: int
    attempts: int = 1
    error: str | None = None
    started_at: float | None = None
    finished_at: float | None = None
    best_value: float | None = None  # best finite value of the study's metric
    best_step: int | None = None
    last_step: int | None = None
    node: str | None = None
    checkpoints: tuple[str, ...] = ()
    measurements: tuple[Measurement, ...] = ()
    repeat_of: int | None = None  # a seed repeat: the number of the trial whose config it reruns
    # The last finite value of every metric the trial reported (its final measurement):
    # what multi-objective studies and constraints judge it on. Recorded when it finishes.
    final_metrics: Mapping[str, float] = field(default_factory=dict)

    @property
    def finished(self) -> bool:
        return self.state in FINISHED_TRIAL_STATES

    @property
    def duration_s(self) -> float | None:
        """Seconds from its start to its end (a trial that has not ended: to its last
        measurement, when they were read); None when it never started."""
        end = self.finished_at or max((m.recorded_at for m in self.measurements), default=None)
        return end - self.started_at if end and self.started_at else None

    def curve(self, metric: str, attempt: int | None = None) -> Curve:
        """``metric`` over the latest attempt (or ``attempt``): finite values only."""
        attempt = attempt or self.attempts
        return Curve((m.step, m.metrics.get(metric)) for m in self.measurements
                     if m.attempt == attempt)


@dataclass(frozen=True)
class TrialEvent:
    """What a scheduler did to trial ``number`` at ``step``."""

    number: int
    kind: EventKind
    step: int | None
    data: Mapping[str, Any]
    recorded_at: float = 0.0


@dataclass(frozen=True)
class StudyRecord:
    id: int
    name: str
    state: StudyState
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
    # Search trials by state, and seed repeats by state apart; the study's best value
    # (searchsvc.core.judging: the one rule of both, which the store applies).
    trial_counts: Mapping[str, int] = field(default_factory=dict)
    best_value: float | None = None
    owner: str | None = None  # the service user it belongs to (None: made from the CLI)
    repeat_counts: Mapping[str, int] = field(default_factory=dict)
    constraints: tuple[Constraint, ...] = ()  # the study file's bounds (judge the best)

    @property
    def counts(self) -> StudyCounts:
        return StudyCounts(self.trial_counts, self.repeat_counts)

    @property
    def failure(self) -> str | None:
        """Why the study failed, as recorded when it did (provenance's ``failure``); None when
        it did not fail or no reason was recorded."""
        if self.state != StudyState.FAILED:
            return None
        why = self.provenance.get(FAILURE_KEY)
        return str(why) if why else None


MAX_PRIORITY = 100  # a study's priority on a shared cluster: 0 (the default) to this


@dataclass(frozen=True)
class TokenGrant:
    """What an API token allows: the user it acts as, whether it may upload code, and the
    highest priority its studies may ask for on a shared cluster."""

    user: str
    allow_code: bool = False
    max_priority: int = 0
