"""Ray Tune hooks that stream every trial event into the store as it happens, so a crash of
the driver loses nothing already reported."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeGuard

from ray import tune

from searchsvc.analysis.telemetry import is_out_of_memory, oom_error
from searchsvc.core import (
    EVENT_EXPLOIT,
    EVENT_RETRIED,
    EVENT_STOPPED_EARLY,
    TRIAL_INTERRUPTED,
    Curve,
    Measurement,
    StudyRecord,
    TrialRecord,
    TrialState,
    is_finite_number,
)
from searchsvc.core.judging import Candidate, Outcome, TrialEnd, searcher_value, trial_outcome
from searchsvc.core.objectives import update_final
from searchsvc.driver.detach import PicklesDetached
from searchsvc.driver.progress import Progress
from searchsvc.driver.raycompat import actor_key, actor_node_id
from searchsvc.searchers import Observation, Searcher
from searchsvc.store import Store
from searchsvc.tracking import Tracker, Trackers
from searchsvc.worker.context import META_KEY, TELEMETRY_KEY

# Keys Ray adds to every result; everything else is the objective's own metrics.
RAY_RESULT_KEYS = frozenset({
    "config", "trial_id", "date", "timestamp", "time_this_iter_s", "time_total_s", "pid",
    "hostname", "node_ip", "time_since_restore", "iterations_since_restore", "training_iteration",
    "done", "experiment_tag", "checkpoint_dir_name", "should_checkpoint", "timesteps_total",
    "episodes_total", "timesteps_since_restore", "warmup_time", "experiment_id",
    TELEMETRY_KEY,  # the worker's telemetry of the step (Measurement.telemetry), not a metric
})


@dataclass
class _Running:
    trial_id: int
    number: int
    attempt: int
    trial: Any = None  # Ray Tune's trial object
    non_finite_step: int | None = None
    node_recorded: bool = False
    metric_names: set[str] = field(default_factory=set)
    # Every report of the study's metric, as reported; the curve (finite values only) and the
    # best value come from core.Curve, the same rule a resumed study's replay follows.
    reports: list[tuple[int, float]] = field(default_factory=list)
    final: dict[str, float] = field(default_factory=dict)  # last finite value of each metric
    non_finite: str | None = None  # the first objective that became NaN/inf
    stopped_early: str | None = None  # why a scheduler stopped it
    # (step, value, metrics, telemetry) rows not yet in the store
    unwritten: list[tuple[int, float | None, dict[str, Any], dict[str, Any]]] = field(
        default_factory=list)
    node: str | None = None  # where it runs, once known and not yet written
    started: float = field(default_factory=time.monotonic)  # this try (retries restart it)
    last_step: int = 0
    failures: int = 0  # tries that failed and were retried
    retried: bool = False  # its next results may redo steps from an earlier checkpoint
    timed_out: bool = False
    record: TrialRecord | None = None  # as the store started it (what trackers are given)


# Results are written in groups, one transaction per group (per trial end, or at most this many
# seconds after a result arrived): a write per result took a quarter of the driver's time on
# short trials and held up Ray Tune's loop.
WRITE_DELAY_S = 0.1


def user_metrics(result: dict[str, Any]) -> dict[str, Any]:
    """The objective's own scalar metrics from a Ray result (plus elapsed seconds as time_s)."""
    metrics = {k: v for k, v in result.items() if k not in RAY_RESULT_KEYS
               and isinstance(v, int | float | str | bool)}
    if isinstance(result.get("time_total_s"), int | float):
        metrics["time_s"] = result["time_total_s"]
    return metrics


def step_telemetry(result: dict[str, Any]) -> dict[str, Any]:
    """The worker's telemetry of the step a Ray result reports (worker/telemetry.py). An
    objective that called ``ray.tune.report`` itself sends none: then only the step's time is
    known, from Ray, and ``source`` says so."""
    telemetry = result.get(TELEMETRY_KEY)
    if isinstance(telemetry, dict):
        return dict(telemetry)
    seconds = result.get("time_this_iter_s")
    if not _is_number(seconds):
        return {}
    return {"step_time_s": float(seconds),
            "source": "ray.tune.report (report through searchsvc.sdk for CPU, memory, GPU and "
                      "data-wait telemetry)"}


class StoreCallback(PicklesDetached, tune.Callback):
    """Writes trial starts, every reported step, and trial ends into the store; feeds finished
    trials back to the searcher; drives the progress display. ``trackers`` (MLflow,
    TensorBoard) get each of those after the store has it, so a crash loses nothing there."""

    def __init__(self, store: Store, study: StudyRecord, searcher: Searcher, progress: Progress,
                 trial_timeout_s: float | None = None, trackers: Tracker | None = None):
        self.store, self.study, self.searcher, self.progress = store, study, searcher, progress
        self.trackers = trackers or Trackers()
        self.tracked: list[tuple[TrialRecord, list[Measurement]]] = []  # stored, not tracked
        self.metric, self.mode = study.metric, study.mode
        # Every objective must be reported and finite (the first is ``metric``).
        self.objectives = tuple(o.name for o in searcher.spec.objectives)
        self.constraints = tuple(searcher.spec.constraints)
        self.trial_timeout_s = trial_timeout_s
        self.running: dict[str, _Running] = {}
        self.unwritten_since: float | None = None  # oldest result not yet in the store
        self.node_ids: dict[str, str | None] = {}  # actor id -> Ray node id

    def on_trial_start(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        if trial.trial_id in self.running:
            return  # restarted after a pause (PBT): the same attempt goes on
        meta = trial.config.get(META_KEY) or {}
        config = {k: v for k, v in trial.config.items() if k != META_KEY}
        record = self.store.start_trial(
            self.study.id, number=int(meta["number"]), config=config,
            arm=meta.get("arm") or {}, seed=int(meta.get("seed", 0)),
            repeat_of=meta.get("repeat_of"),
        )
        self.running[trial.trial_id] = _Running(record.id, record.number, record.attempts, trial,
                                                record=record)
        self.progress.trial_started(record.number)
        self.trackers.trial_started(record)

    def on_trial_result(self, iteration: int, trials: list, trial: Any, result: dict,
                        **info: Any) -> None:
        state = self.running.get(trial.trial_id)
        if state is None:
            return
        metrics = user_metrics(result)
        state.metric_names.update(metrics)
        step = int(result.get("training_iteration") or 0)
        if state.retried and step <= state.last_step:
            self._redo_from(state, step)
        state.retried, state.last_step = False, step
        update_final(state.final, metrics)
        for name in self.objectives:
            reported = metrics.get(name)
            if (_is_number(reported) and not math.isfinite(reported)
                    and state.non_finite_step is None):
                state.non_finite_step, state.non_finite = step, name
        value = metrics.get(self.metric)
        if _is_number(value):
            state.reports.append((step, float(value)))
        else:
            value = None
        state.unwritten.append((step, value, metrics, step_telemetry(result)))
        if not state.node_recorded and result.get("hostname"):
            state.node = self._node_of(trial, result)
            state.node_recorded = True
        if self.unwritten_since is None:
            self.unwritten_since = time.monotonic()
        self.progress.trial_result(state.number, value if is_finite_number(value) else None)

    def on_step_end(self, iteration: int, trials: list, **info: Any) -> None:
        if (self.unwritten_since is not None
                and time.monotonic() - self.unwritten_since >= WRITE_DELAY_S):
            self.write_results()
        if self.trial_timeout_s is not None:
            self._stop_overdue_trials(self.trial_timeout_s)

    def on_trial_recover(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        """The trial failed and Ray Tune retries it (from its last checkpoint, if any)."""
        state = self.running.get(trial.trial_id)
        if state is None:
            return
        state.failures += 1
        error = self._failure_text(trial, state)
        self.store.record_event(self.study.id, state.number, EVENT_RETRIED,
                                step=state.last_step or None,
                                data={"error": error[-2000:], "failures": state.failures,
                                      "timed_out": state.timed_out})
        state.retried, state.timed_out, state.started = True, False, time.monotonic()
        state.node_recorded = False  # the retry may land on another node: record it again

    def _stop_overdue_trials(self, timeout_s: float) -> None:
        """Kill the actor of each trial running longer than ``trial_timeout_s``: Ray Tune then
        handles it as a failed trial (retried up to ``max_failures``)."""
        import ray

        for state in self.running.values():
            if state.timed_out or time.monotonic() - state.started < timeout_s:
                continue
            actor = getattr(state.trial.temporary_state, "ray_actor", None)
            if actor is not None:
                state.timed_out = True
                ray.kill(actor)

    def _failure_text(self, trial: Any, state: _Running) -> str:
        if state.timed_out:
            return (f"timed out: the trial ran longer than budget.trial_timeout_s "
                    f"({self.trial_timeout_s:g} s) and was stopped")
        return _error_text(trial)

    def _redo_from(self, state: _Running, step: int) -> None:
        """A retry restarted from an earlier checkpoint: its steps replace the ones recorded
        since then."""
        self._write(state)
        self._track()
        self.store.discard_measurements(state.trial_id, state.attempt, step, self.mode)
        state.reports = [(s, v) for s, v in state.reports if s < step]

    def _node_of(self, trial: Any, result: dict[str, Any]) -> str:
        """Where the trial runs: host, address and Ray node id (hosts on one machine share a
        name and address)."""
        where = f"{result['hostname']} ({result.get('node_ip', '?')})"
        actor = getattr(getattr(trial, "temporary_state", None), "ray_actor", None)
        if actor is None:
            return where
        key = actor_key(actor)
        if key not in self.node_ids:
            self.node_ids[key] = actor_node_id(key)
        node_id = self.node_ids[key]
        return f"{where} node {node_id}" if node_id else where

    def on_experiment_end(self, trials: list, **info: Any) -> None:
        self.write_results()

    def write_results(self) -> None:
        """Write every result received and not yet stored (one transaction)."""
        self._commit(list(self.running.values()))
        self.unwritten_since = None
        self._track()

    def _write(self, state: _Running) -> None:
        """Store the results ``state`` received since its last write."""
        self._commit([state])

    def _commit(self, states: list[_Running],
                end: Callable[[_Running], None] | None = None) -> None:
        """Store each state's pending results, and ``end`` each (its outcome), in one
        transaction that a store riding through an outage runs again whole; only then are the
        results handed to the trackers and forgotten."""
        def write() -> None:
            for state in states:
                self._store_pending(state)
                if end is not None:
                    end(state)

        self.store.atomically(write)
        for state in states:
            self._written(state)

    def _store_pending(self, state: _Running) -> None:
        """The store calls that write ``state``'s unwritten results; nothing else, so that a
        store riding through an outage may run them again."""
        if state.unwritten:
            self.store.record_measurements(state.trial_id, state.attempt, self.mode,
                                           state.unwritten)
        if state.node is not None:
            self.store.set_trial_node(state.trial_id, state.node)

    def _written(self, state: _Running) -> None:
        """``state``'s pending results are in the store: hand them to the trackers, forget
        them."""
        if state.unwritten and self.trackers and state.record is not None:
            now = time.time()
            self.tracked.append((state.record, [
                Measurement(step, value, metrics, state.attempt, now, telemetry)
                for step, value, metrics, telemetry in state.unwritten]))
        state.unwritten, state.node = [], None

    def on_trial_complete(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        state = self.running.pop(trial.trial_id, None)
        if state is None:
            return
        self._finish(trial, state, trial_outcome(self._end(state)))

    def on_trial_error(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        state = self.running.pop(trial.trial_id, None)
        if state is None:
            return
        error = self._failure_text(trial, state)
        out_of_memory = not state.timed_out and is_out_of_memory(error)
        if out_of_memory:
            # Infeasible, not failed: the searcher learns this region of the space is out of
            # reach, and the error names the values most likely responsible.
            config = {k: v for k, v in trial.config.items() if k != META_KEY}
            error = oom_error(error, config, self.searcher.spec.parameters.values())
        if state.failures and out_of_memory:
            error = f"{error} (after {state.failures} retries)"
        elif state.failures:
            error = f"failed after {state.failures} retries: {error}"
        self._finish(trial, state, trial_outcome(self._end(state, error, out_of_memory)))

    def _end(self, state: _Running, error: str | None = None, out_of_memory: bool = False
             ) -> TrialEnd:
        non_finite = (None if state.non_finite is None or state.non_finite_step is None
                      else (state.non_finite, state.non_finite_step))
        return TrialEnd(self.objectives, state.final, state.metric_names, error=error,
                        out_of_memory=out_of_memory, non_finite=non_finite,
                        stopped_early=state.stopped_early, constraints=self.constraints)

    def stopped_early(self, trial: Any, step: int, data: dict[str, Any]) -> None:
        """A scheduler stopped ``trial`` at ``step`` (it will complete as pruned)."""
        state = self.running.get(trial.trial_id)
        if state is None:
            return
        cutoff, rf = data.get("cutoff"), _short(data.get("reduction_factor"))
        why = (f"rung {data.get('rung')} had already let its quota of 1/{rf} of its trials go on"
               if data.get("reason") == "rung_quota_full" else
               f"{self.metric}={_short(data.get('value'))} was not in the top 1/{rf} at rung "
               f"{data.get('rung')}" + ("" if cutoff is None else f" (cutoff {_short(cutoff)})"))
        state.stopped_early = (
            f"stopped early by {data.get('scheduler', 'the scheduler')} at step {step}: {why}")
        self.store.record_event(self.study.id, state.number, EVENT_STOPPED_EARLY, step=step,
                                data=data)

    def exploited(self, trial: Any, step: int, data: dict[str, Any]) -> None:
        """PBT replaced ``trial``'s weights and config with a perturbed copy of another's."""
        state = self.running.get(trial.trial_id)
        if state is None:
            return
        self.store.record_event(self.study.id, state.number, EVENT_EXPLOIT, step=step,
                                data=data)

    def interrupt_all(self) -> None:
        """Mark every trial still running as interrupted (the run is being stopped)."""
        self._commit(list(self.running.values()), lambda state: self.store.finish_trial(
            state.trial_id, TRIAL_INTERRUPTED, error="the study was stopped while this trial ran"))
        self._track()
        for state in self.running.values():
            self.progress.trial_finished(state.number, TRIAL_INTERRUPTED)
            self._track_end(state, TRIAL_INTERRUPTED,
                            "the study was stopped while this trial ran")
        self.running.clear()

    def _finish(self, trial: Any, state: _Running, end: Outcome) -> None:
        outcome, error = end.state, end.error
        checkpoints = _checkpoint_dirs(trial)
        self._commit([state], lambda state: self.store.finish_trial(  # results and end together
            state.trial_id, outcome, error=error, checkpoints=checkpoints,
            final_metrics=state.final))
        self._track()
        self._track_end(state, outcome, error)
        self.progress.trial_finished(
            state.number, outcome, final_metrics=state.final,
            repeat_of=None if state.record is None else state.record.repeat_of)
        config = {k: v for k, v in trial.config.items() if k != META_KEY}
        curve = Curve(state.reports)
        best = curve.best(self.mode)
        ended = Candidate(state.number, outcome, best[1] if best else None, None,
                          dict(state.final))
        self.searcher.observe(Observation(
            number=state.number, config=config, state=outcome,
            value=searcher_value(ended, self.constraints), curve=curve,
            final_metrics=dict(state.final),
        ))

    def _track(self) -> None:
        """Give the trackers the measurements just committed to the store."""
        tracked, self.tracked = self.tracked, []
        for record, items in tracked:
            self.trackers.measurements(record, items)

    def _track_end(self, state: _Running, outcome: str, error: str | None) -> None:
        if self.trackers and state.record is not None:
            self.trackers.trial_finished(replace(
                state.record, state=TrialState(outcome), error=error, finished_at=time.time(),
                last_step=state.last_step or None))


def _is_number(value: Any) -> TypeGuard[float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _short(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def _error_text(trial: Any) -> str:
    """The traceback Ray wrote for a failed trial (its local error file, read before Ray syncs
    it to storage), or a plain statement when there is none."""
    try:
        path = trial.error_file
        if path and Path(path).is_file():
            return Path(path).read_text(errors="replace")
        text = trial.get_error()
    except Exception:  # an unreadable error file must not lose the trial's state
        text = None
    return str(text or "the trial failed (Ray recorded no traceback)")


def _checkpoint_dirs(trial: Any) -> list[str]:
    # trial.path is the trial's folder in the run's storage (where checkpoints are persisted);
    # local_path is only Ray's driver-side staging folder.
    path = getattr(trial, "path", None)
    if not path or not Path(path).is_dir():
        return []
    return sorted(str(p) for p in Path(path).glob("checkpoint_*") if p.is_dir())


class StudyStopper(PicklesDetached, tune.Stopper):
    """Stops a trial after ``budget.max_steps`` reports, or as soon as one of its objectives
    is NaN/inf (a diverged run only wastes compute)."""

    def __init__(self, metrics: tuple[str, ...], max_steps: int | None):
        self.metrics, self.max_steps = metrics, max_steps

    def __call__(self, trial_id: str, result: dict) -> bool:
        if any(_is_number(value := result.get(m)) and not math.isfinite(value)
               for m in self.metrics):
            return True
        return bool(self.max_steps and result.get("training_iteration", 0) >= self.max_steps)

    def stop_all(self) -> bool:
        return False
