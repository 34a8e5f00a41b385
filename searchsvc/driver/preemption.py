"""Giving slots back to a study of higher priority on a shared cluster: a study whose
allowance asks it to (``preempt``, searchsvc.allocation.allowance) pauses its trials above the
allowance, each at its next report that carries a checkpoint, and resumes them from that
checkpoint once the allowance has room again.

Only there: Ray Tune restores a paused trial from the last checkpoint it reported, so a pause at
any other report would run the steps since that checkpoint twice. A trial that never reports a
checkpoint is never paused for another study; it finishes first.

Ray Tune takes one scheduler per run, so this is not a scheduler of its own: :func:`preempting`
gives the study's scheduler (first come first served, an early-stopping rule, Hyperband or PBT)
the two decisions, after its own: a trial it lets go on may pause here, and no waiting trial
starts or resumes while the study runs as many as its allowance."""

from __future__ import annotations

from typing import Any, Protocol

from ray.tune.experiment import Trial
from ray.tune.schedulers import TrialScheduler

from searchsvc.allocation.allowance import binding
from searchsvc.driver.detach import PicklesDetached

# Ray Tune's flag on a result whose report carried a checkpoint (ray.tune.result)
SHOULD_CHECKPOINT = "should_checkpoint"
STEP = "training_iteration"


class Gate(Protocol):
    """The study's allowance as the driver reads it (driver/allowance.py)."""

    def __call__(self) -> int | None: ...

    @property
    def preempt(self) -> bool: ...


class PauseEvents(Protocol):
    """Where a pause is recorded (the store callback)."""

    def paused(self, trial: Any, step: int, data: dict[str, Any]) -> None: ...


class Preemption(PicklesDetached):
    """The two decisions, over the trials of one Tune run (Ray Tune pickles its scheduler with
    the run: the gate and the store stay behind)."""

    def __init__(self, gate: Gate, events: PauseEvents, concurrency: int | None = None):
        self.gate, self.events, self.concurrency = gate, events, concurrency
        self.pausing: set[str] = set()  # ids of trials paused here, until they run again

    def _allowed(self) -> int | None:
        """The allowance where it binds (allocation.allowance.binding); None elsewhere."""
        return binding(self.gate(), self.concurrency)

    def running(self, tune_controller: Any, *, pausing: bool = False) -> int:
        """Trials running now; those already told to pause (still saving their checkpoint,
        their resources still held) only with ``pausing``."""
        return sum(1 for t in tune_controller.get_live_trials() if t.status == Trial.RUNNING
                   and (pausing or t.trial_id not in self.pausing))

    def pauses(self, tune_controller: Any, trial: Any, result: dict[str, Any]) -> bool:
        """Whether ``trial`` pauses at ``result``: it carries a checkpoint, the allowance asks
        for trials to be given back, and the study runs more than it allows."""
        if not result.get(SHOULD_CHECKPOINT):
            return False
        allowed = self._allowed()  # reads the allowance that `preempt` then says about
        if allowed is None or not self.gate.preempt:
            return False
        running = self.running(tune_controller)
        if running <= allowed:
            return False
        self.pausing.add(trial.trial_id)
        self.events.paused(trial, int(result.get(STEP, 0)), {
            "reason": "a study of higher priority", "allowance": allowed, "running": running})
        return True

    def holds(self, tune_controller: Any) -> bool:
        """Whether no waiting trial may start or resume now: the study runs its allowance."""
        allowed = self._allowed()
        if allowed is None:
            return False
        return self.running(tune_controller, pausing=True) >= allowed

    def resumed(self, trial: Any) -> None:
        self.pausing.discard(trial.trial_id)


class _PreemptAtCheckpoints:
    """Mixin over a Tune scheduler: its own decisions first, then :class:`Preemption`'s."""

    preemption: Preemption

    def on_trial_result(self, tune_controller: Any, trial: Any, result: dict) -> str:
        decision: str = super().on_trial_result(  # type: ignore[misc]
            tune_controller, trial, result)
        if decision == TrialScheduler.CONTINUE and self.preemption.pauses(
                tune_controller, trial, result):
            return TrialScheduler.PAUSE
        return decision

    def choose_trial_to_run(self, tune_controller: Any) -> Any:
        if self.preemption.holds(tune_controller):
            return None
        trial = super().choose_trial_to_run(tune_controller)  # type: ignore[misc]
        if trial is not None:
            self.preemption.resumed(trial)
        return trial


_CLASSES: dict[type, type] = {}  # one extended class per scheduler class


def _preempting_class(cls: type) -> type:
    if cls not in _CLASSES:
        _CLASSES[cls] = type(f"Preempting{cls.__name__}", (_PreemptAtCheckpoints, cls), {})
    return _CLASSES[cls]


def preempting(scheduler: TrialScheduler, preemption: Preemption) -> TrialScheduler:
    """``scheduler``, its class extended with ``preemption``'s decisions (it stays an instance
    of its own class, which Ray Tune checks for PBT)."""
    scheduler.__class__ = _preempting_class(type(scheduler))
    scheduler.preemption = preemption  # type: ignore[attr-defined]
    return scheduler
