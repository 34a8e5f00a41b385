"""What searchsvc reads and changes in Ray Tune's controller: its waiting and ended trials,
where a trial restores from, and where an actor lives."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def actor_key(actor: Any) -> str:
    """A stable key of a Ray actor handle (its actor id in hex)."""
    return str(actor._actor_id.hex())


def actor_node_id(key: str) -> str | None:
    """The Ray node an actor (by :func:`actor_key`) lives on, or None when unknown."""
    try:
        from ray._private import state

        return str(state.actors(actor_id=key)["Address"]["NodeID"])
    except Exception:  # an actor already gone, or another Ray: the host is recorded anyway
        return None


def trials_restore_from_their_checkpoint(restore_of: Callable[[Any], tuple[str, int] | None]
                                         ) -> None:
    """Make Ray Tune start each new trial for which ``restore_of(trial)`` gives a checkpoint
    folder and a step from that checkpoint, as the step after it.

    A resumed study's interrupted trial is a new Tune trial of a new run. Tune can seed a
    trial's first start with a checkpoint (``tune.run(restore=...)``) but counts its steps
    from 1 again; here the checkpoint is given with its step, so the trial's worker restores
    it (``tune.get_checkpoint()``) and its first report is that step's next. Idempotent."""
    from ray.train._internal.session import _TrainingResult
    from ray.tune import Checkpoint
    from ray.tune.execution.tune_controller import TuneController

    _restore_of[:] = [restore_of]
    original = TuneController.add_trial
    if getattr(original, "searchsvc", False):
        return

    def add_trial(self: Any, trial: Any) -> None:
        found = _restore_of[0](trial) if _restore_of else None
        if found is not None:
            path, step = found
            trial._restore_checkpoint_result = _TrainingResult(
                checkpoint=Checkpoint.from_directory(path),
                metrics={"training_iteration": step})
        original(self, trial)

    add_trial.searchsvc = True  # type: ignore[attr-defined]
    TuneController.add_trial = add_trial  # type: ignore[method-assign]


_restore_of: list[Callable[[Any], tuple[str, int] | None]] = []


def waiting_trials(tune_controller: Any) -> tuple[Any, Any] | None:
    """The controller's own sets of its PENDING and PAUSED trials (private: ``_pending_trials``
    and ``_paused_trials``), which it keeps as trials change status; None where a Ray version
    lacks them (the caller then scans every trial, as Tune's FIFO does)."""
    pending = getattr(tune_controller, "_pending_trials", None)
    paused = getattr(tune_controller, "_paused_trials", None)
    if isinstance(pending, set) and isinstance(paused, set):
        return pending, paused
    return None


def forget_ended_trials(tune_controller: Any, trials: Any) -> int:
    """Drop ``trials`` that have ended (TERMINATED or ERROR) from the controller ``tune_
    controller`` wraps (private: ``_trials``, ``_stopped_trials``, ``_failed_trials``, and the
    JSON state of every trial its experiment snapshot keeps, ``_trial_metadata`` and
    ``_trials_to_cache``); returns how many it dropped. Tune keeps every trial of its run, with
    its config, last result and metric history, to the run's end: 60 KB or more a trial, the
    driver's memory growing with every trial of a long study. Nothing of searchsvc reads an
    ended trial from Tune (the store holds it, and a study resumes from the store, not from
    Tune's snapshot). Not for PBT, which ranks trials against ended ones. Also forgets Ray's
    notes of the values its JSON encoder could not encode (see ``_forget_encoder_notes``)."""
    from ray.tune.experiment import Trial

    controller = getattr(tune_controller, "_tune_controller", tune_controller)
    finished = [t for t in trials if t.status in (Trial.TERMINATED, Trial.ERROR)]
    if len(finished) >= len(controller._trials):
        # One stays: at the run's end Tune builds its analysis from the trials it holds, and
        # from none it reads every trial of the run back from storage (all their results).
        finished = finished[:-1]
    ended = set(finished)
    _forget_encoder_notes()  # live trials' snapshots add them too, whether any trial went
    if not ended:
        return 0
    controller._trials[:] = [t for t in controller._trials if t not in ended]
    controller._stopped_trials.difference_update(ended)
    controller._failed_trials.difference_update(ended)
    controller._trials_to_cache.difference_update(ended)
    for trial in ended:
        controller._trial_metadata.pop(trial.trial_id, None)
    return len(ended)


ENCODER_NOTE = "tune_func_encode:"


def _forget_encoder_notes() -> None:
    """Forget the keys Ray's ``log_once`` keeps, for the process's life, for each value Tune's
    JSON encoder pickled (named by its ``str``: a dozen a trial's snapshot)."""
    from ray.util import debug

    debug._logged.difference_update([k for k in debug._logged if k.startswith(ENCODER_NOTE)])
