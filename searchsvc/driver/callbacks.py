"""Ray Tune hooks that stream every trial event into the store as it happens, so a crash of
the driver loses nothing already reported. The hooks adapt Ray Tune's trial objects to the pure
parts in :mod:`searchsvc.driver.trial_results`."""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

from ray import tune

from searchsvc.analysis.telemetry import oom_error
from searchsvc.core import EventKind, StudyRecord, TrialState, is_finite_number
from searchsvc.core.failures import Failure, fail_fast, failure_of, is_out_of_memory
from searchsvc.core.judging import USABLE_STATES, Outcome, trial_outcome
from searchsvc.driver import waiting
from searchsvc.driver.detach import PicklesDetached
from searchsvc.driver.progress import Progress
from searchsvc.driver.raycompat import actor_key, actor_node_id
from searchsvc.driver.trial_results import (
    ResultWriter,
    RunningTrial,
    foreign_sender,
    is_number,
    step_dimensionality,
    step_telemetry,
    user_metrics,
)
from searchsvc.driver.waiting import Waits, resource_request, wait_message
from searchsvc.searchers import Searcher
from searchsvc.spec import Resources
from searchsvc.store import Store
from searchsvc.tracking import Tracker, Trackers
from searchsvc.worker.context import META_KEY, RESTORE_KEY


class StoreCallback(PicklesDetached, tune.Callback):
    """Ray Tune's hooks, adapted: each hook reads what it needs of Ray's trial object and hands
    it to the pure parts (:mod:`.trial_results`): the trial's results, written in batches and
    then tracked; the core outcome rule; the searcher's observation; the progress display.
    What is Ray's own stays here: the trial's config and error file, checkpoints, its actor's
    node, and killing an overdue actor."""

    def __init__(self, store: Store, study: StudyRecord, searcher: Searcher, progress: Progress,
                 trial_timeout_s: float | None = None, trackers: Tracker | None = None,
                 fail_fast: int = 0, produced: bool = False,
                 oom_retries: list[int] | None = None, resources: Resources | None = None):
        """``fail_fast``: the study's ``budget.fail_fast``; ``produced``: whether any of its
        trials has produced a result (core.failures.fail_fast). ``oom_retries``: a trial out
        of GPU memory is not ended infeasible but interrupted, its number appended here, for
        the driver to retry with a larger GPU share (``gpu: auto``, driver/gpu_auto.py).
        ``resources``: what each trial of this run holds (default the study file's;
        ``gpu: auto`` packs its later runs)."""
        self.store, self.study, self.searcher, self.progress = store, study, searcher, progress
        self.oom_retries = oom_retries
        self.trackers = trackers or Trackers()
        self.writer = ResultWriter(store, study.mode, self.trackers)
        self.metric, self.mode = study.metric, study.mode
        # Every objective must be reported and finite (the first is ``metric``).
        self.objectives = tuple(o.name for o in searcher.spec.objectives)
        self.constraints = tuple(searcher.spec.constraints)
        self.trial_timeout_s = trial_timeout_s
        self.running: dict[str, RunningTrial] = {}
        resources = resources or searcher.spec.resources
        self.data_parallel = resources.data_parallel
        self.request = resource_request(resources)
        self.waits, self._waits_checked = Waits(waiting.WAIT_WARN_S), 0.0
        self.node_ids: dict[str, str | None] = {}  # actor id -> Ray node id
        # Fail fast (core.failures.fail_fast): this run's ended trials, each its failure or
        # None; whether the study has a result; why the run stops itself, once it must.
        self.fail_fast, self.produced = fail_fast, produced
        self.ended: list[Failure | None] = []
        self.failed_fast: str | None = None

    def on_trial_start(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        if trial.trial_id in self.running:
            # a retry's new worker, or a restart after a pause (PBT: the same attempt goes on)
            self.running[trial.trial_id].placed()
            return
        meta = trial.config.get(META_KEY) or {}
        record = self.store.start_trial(
            self.study.id, number=int(meta["number"]), config=_config(trial),
            arm=meta.get("arm") or {}, seed=int(meta.get("seed", 0)),
            repeat_of=meta.get("repeat_of"),
        )
        state = RunningTrial(record.id, record.number, record.attempts, trial, record=record)
        self.running[trial.trial_id] = state
        self.progress.trial_started(record.number)
        self.trackers.trial_started(record)
        restored = meta.get(RESTORE_KEY)
        if restored:
            self._carry_steps(state, int(restored["step"]))

    def _carry_steps(self, state: RunningTrial, through: int) -> None:
        """A trial restored from its interrupted attempt's checkpoint at step ``through``: that
        attempt's steps up to it become this attempt's (as if reported again), and the trial
        reports from the step after it."""
        [stored] = [t for t in self.store.get_trials(self.study.name,
                                                     measurements=[state.number])
                    if t.number == state.number]
        for m in sorted(stored.measurements, key=lambda m: m.step):
            if m.attempt == state.attempt - 1 and m.step <= through:
                state.take(m.step, m.metrics, dict(m.telemetry), self.metric, self.objectives,
                           dict(m.dimensionality))
        self.writer.received()

    def on_checkpoint(self, iteration: int, trials: list, trial: Any, checkpoint: Any,
                      **info: Any) -> None:
        """Record where the trial's checkpoint of its last reported step is kept, after that
        step is in the store: a resumed study restores the trial from it."""
        state = self.running.get(trial.trial_id)
        if state is None or not state.last_step:
            return
        self.write_results()
        self.store.record_event(self.study.id, state.number, EventKind.CHECKPOINT,
                                step=state.last_step,
                                data={"path": str(checkpoint.path), "attempt": state.attempt})

    def on_trial_result(self, iteration: int, trials: list, trial: Any, result: dict,
                        **info: Any) -> None:
        state = self.running.get(trial.trial_id)
        if state is None:
            return
        step = int(result.get("training_iteration") or 0)
        sender = foreign_sender(result, state.number)
        if sender is not None:
            self._foreign_result(state, sender, step)
            return
        if state.redoes(step):
            self.writer.discard_from(state, step)
        value = state.take(step, user_metrics(result), step_telemetry(result), self.metric,
                           self.objectives, step_dimensionality(result))
        if not state.node_recorded and result.get("hostname"):
            state.node = self._node_of(trial, result)
            state.node_recorded = True
        self.writer.received()
        self.progress.trial_result(state.number, value if is_finite_number(value) else None)

    def on_step_end(self, iteration: int, trials: list, **info: Any) -> None:
        if self.writer.due():
            self.write_results()
        if self.trial_timeout_s is not None:
            self._stop_overdue_trials(self.trial_timeout_s)
        self._tell_waits(trials)

    def _tell_waits(self, trials: list) -> None:
        """Say which trials have waited long for resources (see :mod:`.waiting`)."""
        now = time.monotonic()
        if now - self._waits_checked < 1.0:  # Tune's loop steps far more often
            return
        self._waits_checked = now
        pending = {int(t.config[META_KEY]["number"]) for t in trials
                   if t.status == "PENDING" and META_KEY in t.config}
        unplaced = {s.number for s in self.running.values()
                    if self.data_parallel and s.waiting()}
        due = self.waits.overdue(pending | unplaced, now)
        if not due:
            return
        import ray

        free = ray.available_resources()
        for number, seconds in sorted(due.items()):
            self.progress.warn(wait_message(number, seconds, pending=number in pending,
                                            request=self.request, free=free))

    def on_trial_recover(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        """The trial failed and Ray Tune retries it (from its last checkpoint, if any)."""
        state = self.running.get(trial.trial_id)
        if state is None:
            return
        error = self._failure_text(trial, state)
        self.store.record_event(self.study.id, state.number, EventKind.RETRIED,
                                step=state.last_step or None,
                                data={"error": error[-2000:], "failures": state.failures + 1,
                                      "timed_out": state.timed_out})
        state.retry()

    def _foreign_result(self, state: RunningTrial, sender: int, step: int) -> None:
        """Keep trial ``sender``'s result out of ``state``'s record; say so once per trial."""
        if sender in state.foreign:
            return
        state.foreign.add(sender)
        self.store.record_event(self.study.id, state.number, EventKind.FOREIGN_RESULT,
                                step=step or None, data={"from": sender})
        self.progress.warn(f"trial {state.number}: its worker sent a result of trial {sender} "
                           f"(Ray Tune reused the worker before that trial had ended); not "
                           f"counted for trial {state.number}")

    def _stop_overdue_trials(self, timeout_s: float) -> None:
        """Kill the actor of each trial running longer than ``trial_timeout_s``: Ray Tune then
        handles it as a failed trial (retried up to ``max_failures``)."""
        import ray

        for state in self.running.values():
            if not state.overdue(timeout_s):
                continue
            actor = getattr(state.handle.temporary_state, "ray_actor", None)
            if actor is not None:
                state.timed_out = True
                ray.kill(actor)

    def _failure_text(self, trial: Any, state: RunningTrial) -> str:
        if state.timed_out:
            return (f"timed out: the trial ran longer than budget.trial_timeout_s "
                    f"({self.trial_timeout_s:g} s) and was stopped")
        return _error_text(trial)

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
        self.writer.flush(self.running.values())

    def on_trial_complete(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        state = self.running.pop(trial.trial_id, None)
        if state is None:
            return
        self._finish(trial, state, trial_outcome(state.end(self.objectives, self.constraints)))

    def on_trial_error(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        state = self.running.pop(trial.trial_id, None)
        if state is None:
            return
        error = self._failure_text(trial, state)
        out_of_memory = not state.timed_out and is_out_of_memory(error)
        if out_of_memory and self.oom_retries is not None:
            self.oom_retries.append(state.number)  # the same trial runs again: not its end
            self.writer.interrupt([state])
            self.progress.trial_finished(state.number, TrialState.INTERRUPTED)
            return
        if out_of_memory:
            # Infeasible, not failed: the searcher learns this region of the space is out of
            # reach, and the error names the values most likely responsible.
            error = oom_error(error, _config(trial), self.searcher.spec.parameters.values())
        if state.failures and out_of_memory:
            error = f"{error} (after {state.failures} retries)"
        elif state.failures:
            error = f"failed after {state.failures} retries: {error}"
        self._finish(trial, state, trial_outcome(
            state.end(self.objectives, self.constraints, error, out_of_memory)))

    def stopped_early(self, trial: Any, step: int, data: dict[str, Any]) -> None:
        """A scheduler stopped ``trial`` at ``step`` (it will complete as pruned)."""
        state = self._record_event(trial, EventKind.STOPPED_EARLY, step, data)
        if state is not None:
            why = stop_reason(data, self.metric)
            state.stopped_early = (f"stopped early by {data.get('scheduler', 'the scheduler')} "
                                   f"at step {step}: {why}")

    def exploited(self, trial: Any, step: int, data: dict[str, Any]) -> None:
        """PBT replaced ``trial``'s weights and config with a perturbed copy of another's."""
        self._record_event(trial, EventKind.EXPLOIT, step, data)

    def paused(self, trial: Any, step: int, data: dict[str, Any]) -> None:
        """``trial`` pauses at ``step``, its checkpoint, for a study of higher priority."""
        state = self._record_event(trial, EventKind.PAUSED, step, data)
        if state is not None:
            self.progress.note(f"trial {state.number} pauses at step {step} (its checkpoint) "
                               f"for {data.get('reason', 'another study')}; it resumes from "
                               "there")

    def _record_event(self, trial: Any, kind: EventKind, step: int,
                      data: dict[str, Any]) -> RunningTrial | None:
        """Store what a scheduler did to ``trial`` at ``step``; its running state, or None
        (and nothing stored) when it is not one of this run's running trials."""
        state = self.running.get(trial.trial_id)
        if state is not None:
            self.store.record_event(self.study.id, state.number, kind, step=step, data=data)
        return state

    def interrupt_all(self) -> None:
        """Mark every trial still running as interrupted (the run is being stopped)."""
        self.writer.interrupt(list(self.running.values()))
        for state in self.running.values():
            self.progress.trial_finished(state.number, TrialState.INTERRUPTED)
        self.running.clear()

    def _finish(self, trial: Any, state: RunningTrial, end: Outcome) -> None:
        self.writer.finish(state, end.state, end.error, _checkpoint_dirs(trial))
        self.progress.trial_finished(
            state.number, end.state, final_metrics=state.final,
            repeat_of=None if state.record is None else state.record.repeat_of)
        self.searcher.observe(state.observation(_config(trial), end.state, self.mode,
                                                self.constraints))
        self._judge_fail_fast(end)

    def _judge_fail_fast(self, end: Outcome) -> None:
        """Decide, as each trial ends, whether the run must stop (its stopper asks)."""
        self.produced = self.produced or end.state in USABLE_STATES
        self.ended.append(failure_of(end.error) if end.state == TrialState.FAILED else None)
        if self.failed_fast is None:
            self.failed_fast = fail_fast(self.ended, self.fail_fast, self.produced)
            if self.failed_fast is not None:
                self.progress.warn(f"stopping the study: {self.failed_fast}")


def _config(trial: Any) -> dict[str, Any]:
    """The trial's hyperparameters (its config without searchsvc's own entry)."""
    return {k: v for k, v in trial.config.items() if k != META_KEY}


def stop_reason(data: dict[str, Any], metric: str) -> str:
    """Why a scheduler stopped a trial, in words, from its stopped-early event's data."""
    if data.get("reason") == "collapsed":
        return (f"layer {data.get('layer')!r} collapsed ({data.get('rule')}: participation "
                f"ratio {_short(data.get('participation_ratio'))}, early "
                f"{_short(data.get('early'))})")
    cutoff, rf = data.get("cutoff"), _short(data.get("reduction_factor"))
    arm = ", ".join(f"{k}={v}" for k, v in (data.get("arm") or {}).items())
    within = f" of its arm ({arm})" if arm else ""
    if data.get("reason") == "below_median":
        return (f"its best {metric} so far was worse than the median {_short(cutoff)} of the "
                f"running means{within} at step {data.get('rung')}")
    if data.get("reason") == "below_percentile":
        return (f"its best {metric} so far was outside the best {data.get('keep', 0.5):.0%} "
                f"of the values{within} at step {data.get('rung')} (cutoff {_short(cutoff)})")
    if data.get("reason") == "rung_quota_full":
        return f"rung {data.get('rung')} had already let its quota of 1/{rf} of its trials go on"
    return (f"{metric}={_short(data.get('value'))} was not in the top 1/{rf}{within} at rung "
            f"{data.get('rung')}" + ("" if cutoff is None else f" (cutoff {_short(cutoff)})"))


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
    is NaN/inf (a diverged run only wastes compute); stops the whole run once ``callback``
    has found that it must fail fast."""

    def __init__(self, metrics: tuple[str, ...], max_steps: int | None,
                 callback: StoreCallback | None = None):
        self.metrics, self.max_steps, self.callback = metrics, max_steps, callback

    def __call__(self, trial_id: str, result: dict) -> bool:
        if any(is_number(value := result.get(m)) and not math.isfinite(value)
               for m in self.metrics):
            return True
        return bool(self.max_steps and result.get("training_iteration", 0) >= self.max_steps)

    def stop_all(self) -> bool:
        return self.callback is not None and self.callback.failed_fast is not None
