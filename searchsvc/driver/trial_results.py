"""What the driver keeps of each running trial, and how its results reach the store and the
trackers: the pure parts under :class:`~searchsvc.driver.callbacks.StoreCallback`, which only
adapts Ray Tune's hooks and trial objects to them. Nothing here imports Ray.

- :func:`user_metrics`, :func:`step_telemetry`: a Ray result dict read as the objective's
  metrics and the worker's telemetry.
- :class:`RunningTrial`: one trial's results so far (its curve, final metrics, the first
  objective that went NaN/inf, why a scheduler stopped it) and what of them is not yet stored;
  :meth:`RunningTrial.end` and :meth:`RunningTrial.observation` give the core outcome rule and
  the searcher what they judge.
- :class:`ResultWriter`: writes pending results in batches, one transaction a batch, so a store
  riding through an outage runs a batch again whole; hands what is stored to the trackers,
  in order, and only then forgets it.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, TypeGuard

from searchsvc.core import Constraint, Curve, Measurement, TrialRecord, TrialState
from searchsvc.core.judging import Candidate, TrialEnd, searcher_value
from searchsvc.core.objectives import update_final
from searchsvc.searchers import Observation
from searchsvc.store import Store
from searchsvc.tracking import Tracker
from searchsvc.worker.context import DIMENSIONALITY_KEY, TELEMETRY_KEY, TRIAL_KEY

# Keys Ray adds to every result; everything else is the objective's own metrics.
RAY_RESULT_KEYS = frozenset({
    "config", "trial_id", "date", "timestamp", "time_this_iter_s", "time_total_s", "pid",
    "hostname", "node_ip", "time_since_restore", "iterations_since_restore", "training_iteration",
    "done", "experiment_tag", "checkpoint_dir_name", "should_checkpoint", "timesteps_total",
    "episodes_total", "timesteps_since_restore", "warmup_time", "experiment_id",
    TELEMETRY_KEY,  # the worker's telemetry of the step (Measurement.telemetry), not a metric
    DIMENSIONALITY_KEY,  # what sdk.watch measured (Measurement.dimensionality), not a metric
    TRIAL_KEY,  # the number of the trial whose objective reported it
})

# Results are written in groups, one transaction per group (per trial end, or at most this many
# seconds after a result arrived): a write per result took a quarter of the driver's time on
# short trials and held up Ray Tune's loop.
WRITE_DELAY_S = 0.1

INTERRUPTED_ERROR = "the study was stopped while this trial ran"


def user_metrics(result: Mapping[str, Any]) -> dict[str, Any]:
    """The objective's own scalar metrics from a Ray result (plus elapsed seconds as time_s)."""
    metrics = {k: v for k, v in result.items() if k not in RAY_RESULT_KEYS
               and isinstance(v, int | float | str | bool)}
    if isinstance(result.get("time_total_s"), int | float):
        metrics["time_s"] = result["time_total_s"]
    return metrics


def step_telemetry(result: Mapping[str, Any]) -> dict[str, Any]:
    """The worker's telemetry of the step a Ray result reports (worker/telemetry.py). An
    objective that called ``ray.tune.report`` itself sends none: then only the step's time is
    known, from Ray, and ``source`` says so."""
    telemetry = result.get(TELEMETRY_KEY)
    if isinstance(telemetry, dict):
        return dict(telemetry)
    seconds = result.get("time_this_iter_s")
    if not is_number(seconds):
        return {}
    return {"step_time_s": float(seconds),
            "source": "ray.tune.report (report through searchsvc.sdk for CPU, memory, GPU and "
                      "data-wait telemetry)"}


def step_dimensionality(result: Mapping[str, Any]) -> dict[str, Any]:
    """What ``sdk.watch`` measured since the previous report (worker/dimensionality.py); empty
    when nothing was."""
    measured = result.get(DIMENSIONALITY_KEY)
    return dict(measured) if isinstance(measured, dict) else {}


def foreign_sender(result: Mapping[str, Any], number: int) -> int | None:
    """The trial whose objective sent ``result`` when that is not trial ``number`` (None: its
    own, or an objective that reported through Ray Tune before searchsvc's wrapper could mark
    it). Such a result never counts for trial ``number``."""
    sender = result.get(TRIAL_KEY)
    if isinstance(sender, int) and not isinstance(sender, bool) and sender != number:
        return sender
    return None


def is_number(value: Any) -> TypeGuard[float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


# step, value, metrics, telemetry, dimensionality
Row = tuple[int, float | None, dict[str, Any], dict[str, Any], dict[str, Any]]


@dataclass
class RunningTrial:
    """One running trial's results so far, and what of them the store does not hold yet.

    ``handle`` is whatever the runner knows the trial by (Ray Tune's trial object); nothing
    here reads it."""

    trial_id: int
    number: int
    attempt: int
    handle: Any = None
    record: TrialRecord | None = None  # as the store started it (what trackers are given)
    metric_names: set[str] = field(default_factory=set)
    # Every report of the study's metric, as reported; the curve (finite values only) and the
    # best value come from core.Curve, the same rule a resumed study's replay follows.
    reports: list[tuple[int, float]] = field(default_factory=list)
    final: dict[str, float] = field(default_factory=dict)  # last finite value of each metric
    non_finite: tuple[str, int] | None = None  # the first objective that became NaN/inf, when
    stopped_early: str | None = None  # why a scheduler stopped it
    unwritten: list[Row] = field(default_factory=list)  # rows not yet in the store
    node: str | None = None  # where it runs, once known and not yet written
    node_recorded: bool = False
    started: float = field(default_factory=time.monotonic)  # this try (retries restart it)
    last_step: int = 0
    failures: int = 0  # tries that failed and were retried
    retried: bool = False  # its next results may redo steps from an earlier checkpoint
    timed_out: bool = False
    reported: bool = False  # this try has reported a step
    foreign: set[int] = field(default_factory=set)  # trials whose results reached this one

    def waiting(self) -> bool:
        """Whether this try has reported nothing yet (for a data-parallel trial: its workers
        may not be placed)."""
        return not self.reported

    def take(self, step: int, metrics: Mapping[str, Any], telemetry: dict[str, Any],
             metric: str, objectives: Iterable[str],
             dimensionality: dict[str, Any] | None = None) -> float | None:
        """Keep one reported step; its value of ``metric`` (None: not a number)."""
        self.metric_names.update(metrics)
        self.last_step, self.retried, self.reported = step, False, True
        update_final(self.final, metrics)
        for name in objectives:
            reported = metrics.get(name)
            if is_number(reported) and not math.isfinite(reported) and self.non_finite is None:
                self.non_finite = (name, step)
        value = metrics.get(metric)
        if is_number(value):
            self.reports.append((step, float(value)))
        self.unwritten.append((step, float(value) if is_number(value) else None, dict(metrics),
                               telemetry, dict(dimensionality or {})))
        return float(value) if is_number(value) else None

    def redoes(self, step: int) -> bool:
        """Whether a result at ``step`` repeats steps already kept (a retry that restarted
        from an earlier checkpoint)."""
        return self.retried and step <= self.last_step

    def forget_from(self, step: int) -> None:
        """Drop the reports from ``step`` on (a retry redoes them)."""
        self.reports = [(s, v) for s, v in self.reports if s < step]

    def retry(self) -> None:
        """The trial failed and runs again: a new try, possibly on another node."""
        self.failures += 1
        self.retried, self.timed_out, self.started = True, False, time.monotonic()
        self.node_recorded, self.reported = False, False

    def placed(self, now: float | None = None) -> None:
        """A retried try got its worker: its ``budget.trial_timeout_s`` counts from now, not
        from the failure that queued it (it may have waited long for a free slot)."""
        if self.retried and not self.reported:
            self.started = time.monotonic() if now is None else now

    def overdue(self, timeout_s: float, now: float | None = None) -> bool:
        """Whether this try has run longer than ``timeout_s`` (and was not stopped yet)."""
        now = time.monotonic() if now is None else now
        return not self.timed_out and now - self.started >= timeout_s

    def end(self, objectives: tuple[str, ...], constraints: tuple[Constraint, ...],
            error: str | None = None, out_of_memory: bool = False) -> TrialEnd:
        """What the core outcome rule (``core.judging.trial_outcome``) judges."""
        return TrialEnd(objectives, self.final, self.metric_names, error=error,
                        out_of_memory=out_of_memory, non_finite=self.non_finite,
                        stopped_early=self.stopped_early, constraints=constraints)

    def observation(self, config: Mapping[str, Any], outcome: TrialState, mode: str,
                    constraints: tuple[Constraint, ...]) -> Observation:
        """The ended trial as the searcher is told it (constraints judged as core says)."""
        curve = Curve(self.reports)
        best = curve.best(mode)
        ended = Candidate(self.number, outcome, best[1] if best else None, None,
                          dict(self.final))
        return Observation(number=self.number, config=dict(config), state=outcome,
                           value=searcher_value(ended, constraints), curve=curve,
                           final_metrics=dict(self.final))


class ResultWriter:
    """Writes running trials' results to the store, then hands them to the trackers.

    Results wait in their :class:`RunningTrial` until :meth:`commit` (or :meth:`flush`, due
    :data:`WRITE_DELAY_S` after the oldest unwritten one) stores them in one transaction; the
    trackers get each batch only after the store holds it, so a crash loses nothing there."""

    def __init__(self, store: Store, mode: str, trackers: Tracker,
                 delay_s: float = WRITE_DELAY_S):
        self.store, self.mode, self.trackers, self.delay_s = store, mode, trackers, delay_s
        self.unwritten_since: float | None = None  # oldest result not yet in the store
        self._stored: list[tuple[TrialRecord, list[Measurement]]] = []  # not yet tracked

    def received(self, now: float | None = None) -> None:
        """A result arrived (it is pending in its trial)."""
        if self.unwritten_since is None:
            self.unwritten_since = time.monotonic() if now is None else now

    def due(self, now: float | None = None) -> bool:
        """Whether the oldest pending result has waited its delay."""
        return (self.unwritten_since is not None
                and (time.monotonic() if now is None else now) - self.unwritten_since
                >= self.delay_s)

    def flush(self, trials: Iterable[RunningTrial]) -> None:
        """Store every pending result of ``trials`` (one transaction), then track them."""
        self.unwritten_since = None
        self.commit(list(trials))

    def commit(self, trials: list[RunningTrial],
               end: Callable[[RunningTrial], None] | None = None) -> None:
        """Store each trial's pending results, and ``end`` each (its outcome), in one
        transaction that a store riding through an outage runs again whole; only then are the
        results handed to the trackers and forgotten."""
        def write() -> None:
            for trial in trials:
                self._store_pending(trial)
                if end is not None:
                    end(trial)

        self.store.atomically(write)
        for trial in trials:
            self._written(trial)
        self._track()

    def finish(self, trial: RunningTrial, outcome: TrialState, error: str | None,
               checkpoints: list[str]) -> None:
        """Store ``trial``'s last results and its end together, then tell the trackers."""
        self.commit([trial], lambda t: self.store.finish_trial(
            t.trial_id, outcome, error=error, checkpoints=checkpoints, final_metrics=t.final))
        self.track_end(trial, outcome, error)

    def interrupt(self, trials: list[RunningTrial]) -> None:
        """Store every pending result and end each of ``trials`` as interrupted."""
        self.commit(trials, lambda t: self.store.finish_trial(
            t.trial_id, TrialState.INTERRUPTED, error=INTERRUPTED_ERROR))
        for trial in trials:
            self.track_end(trial, TrialState.INTERRUPTED, INTERRUPTED_ERROR)

    def discard_from(self, trial: RunningTrial, step: int) -> None:
        """A retry redoes ``trial``'s steps from ``step``: what was kept of them goes."""
        self.commit([trial])
        self.store.discard_measurements(trial.trial_id, trial.attempt, step, self.mode)
        trial.forget_from(step)

    def track_end(self, trial: RunningTrial, outcome: TrialState, error: str | None) -> None:
        if self.trackers and trial.record is not None:
            self.trackers.trial_finished(replace(
                trial.record, state=TrialState(outcome), error=error, finished_at=time.time(),
                last_step=trial.last_step or None))

    def _store_pending(self, trial: RunningTrial) -> None:
        """The store calls that write ``trial``'s unwritten results; nothing else, so that a
        store riding through an outage may run them again."""
        if trial.unwritten:
            self.store.record_measurements(trial.trial_id, trial.attempt, self.mode,
                                           trial.unwritten)
        if trial.node is not None:
            self.store.set_trial_node(trial.trial_id, trial.node)

    def _written(self, trial: RunningTrial) -> None:
        """``trial``'s pending results are in the store: keep them for the trackers, forget
        them."""
        if trial.unwritten and self.trackers and trial.record is not None:
            now = time.time()
            self._stored.append((trial.record, [
                Measurement(step, value, metrics, trial.attempt, now, telemetry, measured)
                for step, value, metrics, telemetry, measured in trial.unwritten]))
        trial.unwritten, trial.node = [], None

    def _track(self) -> None:
        """Give the trackers the measurements just committed to the store."""
        stored, self._stored = self._stored, []
        for record, items in stored:
            self.trackers.measurements(record, items)
