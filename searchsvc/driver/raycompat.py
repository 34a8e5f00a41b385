"""Every use of Ray's private names, in one module, behind public names the rest of searchsvc
uses. Ray Tune offers no public hooks for what searchsvc's schedulers need (PBT exploiting within a
scientific arm, each exploit reported; early stopping is searchsvc's own scheduler and needs
none), so these adapters reach into its internals, and this is the one place to check when
Ray changes.

Checked against Ray ``RAY_VERSIONS`` (pyproject pins the same range); ``tests/driver/
test_raycompat.py`` checks that every private name below still exists in the installed Ray, and
``tests/test_architecture.py`` that no other module touches a Ray private name.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from ray.tune.schedulers import PopulationBasedTraining
from ray.tune.schedulers.pb2 import PB2

RAY_VERSIONS = ">=2.60,<2.61"

# (owner, private attribute) pairs this module relies on; checked by the tests.
PRIVATE_NAMES: tuple[tuple[str, str], ...] = (
    ("PopulationBasedTraining", "_trial_state"), ("PopulationBasedTraining", "_quantiles"),
    ("PopulationBasedTraining", "_checkpoint_or_exploit"),
    ("PopulationBasedTraining", "_get_new_config"), ("PopulationBasedTraining", "_exploit"),
    ("TrialRunnerWrapper", "_tune_controller"),
    ("TuneController", "_cached_trial_decisions"), ("TuneController", "_on_trial_reset"),
    ("TuneController", "_resetting_trials"), ("TuneController", "_trial_to_actor"),
    ("TuneController", "_actor_to_trial"), ("TuneController", "_remove_actor"),
    ("TuneController", "_schedule_trial_actor"), ("TuneController", "_trials"),
    ("TuneController", "_stopped_trials"), ("TuneController", "_failed_trials"),
    ("TuneController", "_trial_metadata"), ("TuneController", "_trials_to_cache"),
    ("TuneController", "_class_cache"), ("TuneController", "_cleanup_cached_actors"),
    ("TuneController", "_maybe_update_trial_queue"), ("TuneController", "_update_trial_queue"),
    ("TuneController", "_search_alg"),
    ("ray.util.debug", "_logged"),
    ("Trial", "_restore_checkpoint_result"),
    ("ray.train._internal.session", "_TrainingResult"),
    ("ray.tune.execution.class_cache", "_ActorClassCache"),
    ("_ActorClassCache", "_cache"),
    ("ActorHandle", "_actor_id"),
    ("ray._private", "state"), ("ray.air._internal.usage", "tag_callbacks"),
    ("ray.air._internal.usage", "record_extra_usage_tag"), ("ray.air._internal.usage", "TagKey"),
    ("ray._private.parameter", "RayParams"),
    ("RayParams", "no_monitor"), ("RayParams", "include_log_monitor"),
)

class PopulationHooks:
    """Mixin over Ray's PBT and PB2 that turns three private steps into public hooks:
    :meth:`population_of` (the trials a trial is ranked against), :meth:`adjust_config` (the
    config an exploiting trial gets) and :meth:`after_exploit` (told once it happened)."""

    _trial_state: dict[Any, Any]  # PopulationBasedTraining's: {trial: its state}

    def population_of(self, trial: Any) -> Callable[[Any], bool] | None:
        """A filter of the trials ``trial`` is ranked against (None: all of them)."""
        return None

    def adjust_config(self, trial: Any, new_config: dict[str, Any]) -> dict[str, Any]:
        return new_config

    def after_exploit(self, trial: Any, parent: Any, step: int, parent_step: int,
                      old_config: dict[str, Any]) -> None:
        """``trial`` (at ``step``) copied ``parent``'s checkpoint (from ``parent_step``)."""

    def _checkpoint_or_exploit(self, trial: Any, tune_controller: Any,
                               upper_quantile: list, lower_quantile: list) -> None:
        keep = self.population_of(trial)
        if keep is not None:
            everyone = self._trial_state
            self._trial_state = {t: s for t, s in everyone.items() if keep(t)}
            try:
                lower_quantile, upper_quantile = self._quantiles()  # type: ignore[attr-defined]
            finally:
                self._trial_state = everyone
        super()._checkpoint_or_exploit(  # type: ignore[misc]
            trial, tune_controller, upper_quantile, lower_quantile)

    def _get_new_config(self, trial: Any, trial_to_clone: Any) -> tuple[dict, dict]:
        new_config, operations = super()._get_new_config(  # type: ignore[misc]
            trial, trial_to_clone)
        return self.adjust_config(trial, dict(new_config)), operations

    def _exploit(self, tune_controller: Any, trial: Any, trial_to_clone: Any) -> None:
        old_config = dict(trial.config)
        parent_step = self._trial_state[trial_to_clone].last_train_time
        step = self._trial_state[trial].last_train_time
        saving = trial.is_saving
        super()._exploit(tune_controller, trial, trial_to_clone)  # type: ignore[misc]
        if saving:
            _drop_stale_stop(tune_controller, trial)
        self.after_exploit(trial, trial_to_clone, int(step or 0), int(parent_step or 0),
                           old_config)


def _drop_stale_stop(tune_controller: Any, trial: Any) -> None:
    """Undo the STOP Ray leaves behind when PBT exploits a trial that is still saving.

    Synchronous PBT decides once the last trial reaches the perturbation step; a trial that
    got there shortly before may still be RUNNING with its pause's save in flight (the longer
    saves take, as on a loaded machine, the likelier). Ray's ``_exploit`` then pauses it with
    ``pause_trial(should_checkpoint=False)``, which stops it: the stop caches a STOP decision
    for "after the save" and drops the save's future, so that STOP outlives the pause and is
    carried out after the trial's next save once it resumes, ending it one step after the
    perturbation (e.g. 7 of 12 steps) while the rest of the population waits for it at the
    next perturbation step until the run times out. The trial is paused, not stopped."""
    from ray.tune.experiment import Trial
    from ray.tune.schedulers import TrialScheduler

    controller = getattr(tune_controller, "_tune_controller", tune_controller)
    decisions = controller._cached_trial_decisions
    if trial.status == Trial.PAUSED and decisions.get(trial.trial_id) == TrialScheduler.STOP:
        del decisions[trial.trial_id]


class PBT(PopulationHooks, PopulationBasedTraining):
    """Ray's Population Based Training with :class:`PopulationHooks`."""


class PB2Hooks(PopulationHooks, PB2):
    """Ray's PB2 with :class:`PopulationHooks`."""


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


def tag_callbacks_without_integrations() -> None:
    """Make Ray Tune's callback usage tag skip its integrations' imports.

    ``tune.run`` tags which callbacks a run uses by comparing them with the classes of its
    MLflow, W&B, Comet and Aim integrations, which it imports for that (MLflow and W&B
    themselves: about a second of CPU and 50 MB in every driver, tracked or not). searchsvc
    passes only its own callbacks, so the tag Ray records for them, "CustomCallback" or
    "CustomLoggerCallback" counts, is recorded here without those imports. Idempotent."""
    from ray.air._internal import usage

    if getattr(usage.tag_callbacks, "searchsvc", False):
        return

    def tag_callbacks(callbacks: list[Any] | None) -> bool:
        from ray.tune import Callback
        from ray.tune.logger import LoggerCallback

        counts: dict[str, int] = {}
        for callback in callbacks or []:
            if isinstance(callback, Callback):
                kind = ("CustomLoggerCallback" if isinstance(callback, LoggerCallback)
                        else "CustomCallback")
                counts[kind] = counts.get(kind, 0) + 1
        if counts:
            usage.record_extra_usage_tag(usage.TagKey.AIR_CALLBACKS, json.dumps(counts))
        return bool(counts)

    tag_callbacks.searchsvc = True  # type: ignore[attr-defined]
    usage.tag_callbacks = tag_callbacks



def start_unresettable_trials_afresh() -> None:
    """Make Ray Tune start a trial on a new worker when the worker it meant to reuse cannot
    be reset, instead of leaving the trial in an error nobody is told of.

    With ``reuse_actors``, a trial goes to the worker of one that ended, whose objective's
    thread gets 2 s (``TUNE_FUNCTION_THREAD_TIMEOUT_S``) to finish. An objective still in its
    clean-up after a stop (a final save, a data loader's workers joining, Keras unwinding
    on a busy machine) outlasts that, and Ray then marks the new trial ERROR without calling
    any callback, searcher or scheduler: the study waited for it forever. Here that worker is
    stopped (its objective finishes on its own) and the trial is scheduled as any pending
    trial. Idempotent."""
    from ray.tune.execution.tune_controller import TuneController
    from ray.tune.experiment import Trial

    original = TuneController._on_trial_reset
    if getattr(original, "searchsvc", False):
        return

    def _on_trial_reset(self: Any, trial: Any, success: bool) -> None:
        if success or trial.status != Trial.PENDING or trial not in self._trial_to_actor:
            original(self, trial, success)
            return
        self._resetting_trials.discard(trial)
        logging.getLogger(__name__).warning(
            "%s: the worker it was to reuse was still ending its previous trial's objective; "
            "it starts on a new worker", trial)
        worker = self._trial_to_actor.pop(trial)
        self._actor_to_trial.pop(worker, None)
        trial.set_ray_actor(None)
        self._remove_actor(tracked_actor=worker)
        self._schedule_trial_actor(trial)

    _on_trial_reset.searchsvc = True  # type: ignore[attr-defined]
    TuneController._on_trial_reset = _on_trial_reset  # type: ignore[method-assign]


# What says, during one Tune run, that the study holds back its trials (see below).
_holding_back: list[Callable[[], bool]] = []


def release_cached_workers_while(holds_back: Callable[[], bool] | None) -> None:
    """Make Ray Tune end the idle workers it keeps for reuse while ``holds_back()`` says the
    study may start no trial (None: as Tune does).

    With ``reuse_actors``, Tune keeps one ended trial's worker, with the CPUs and GPUs it
    holds, for the next trial even when no trial waits. A study held at its allowance of a
    shared cluster starts no next trial until one of its own ends, so that worker would hold
    resources the study may not use while another study's trial waits for them. At the end of
    each of Tune's steps, while the study holds back, every cached worker is ended (the next
    trial it starts starts a worker of its own).

    With no trial running or waiting, Tune asks its search for the next trial once a second
    for up to 10 minutes without taking a step, so the worker it keeps would never be ended:
    while the study holds back, Tune asks once a step instead. Idempotent; one study per
    process at a time."""
    from ray.tune.execution.tune_controller import TuneController

    _holding_back[:] = [holds_back] if holds_back is not None else []
    cleanup = TuneController._cleanup_cached_actors
    if getattr(cleanup, "searchsvc", False):
        return
    ask = TuneController._maybe_update_trial_queue

    def _cleanup_cached_actors(self: Any, force_all: bool = False) -> None:
        cleanup(self, force_all=force_all or _held_back())

    def _maybe_update_trial_queue(self: Any) -> None:
        if not _held_back():
            ask(self)
        elif not self._search_alg.is_finished():
            self._update_trial_queue(blocking=False)

    _cleanup_cached_actors.searchsvc = True  # type: ignore[attr-defined]
    TuneController._cleanup_cached_actors = _cleanup_cached_actors  # type: ignore[method-assign]
    TuneController._maybe_update_trial_queue = (  # type: ignore[method-assign]
        _maybe_update_trial_queue)


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


def _held_back() -> bool:
    return any(held() for held in _holding_back)


def trainables_inherit_node_environment(
        node_environment: Callable[[], Mapping[str, str] | None]) -> None:
    """Make Ray Tune start its trial workers without a runtime environment of their own where
    the node's environment already holds it.

    Tune gives every trainable a runtime environment of environment variables (always
    ``PL_DISABLE_FORK=1``, and some of the driver's). Ray starts a worker with any runtime
    environment through a Python process that sets it up and then starts the worker's own
    interpreter: about 0.4 CPU-seconds and 0.4 s more for every trial worker
    (benchmarks/worker_start.py). On a node whose every worker inherits those variables with
    those values already (``node_environment()``: the environment of the node this process
    started, or None), the trainable is registered without it; anywhere else, as Tune does.
    Idempotent."""
    import ray
    from ray.tune.execution import class_cache

    original = class_cache._ActorClassCache.get
    if getattr(original, "searchsvc", False):
        return

    def get(self: Any, trainable_cls: type) -> Any:
        inherited = node_environment()
        wanted = dict(class_cache.DEFAULT_ENV_VARS)
        wanted.update({name: os.environ[name] for name in class_cache.ENV_VARS_TO_PROPAGATE
                       if name in os.environ})
        if inherited is None or any(inherited.get(k) != v for k, v in wanted.items()):
            return original(self, trainable_cls)
        if trainable_cls not in self._cache:
            self._cache[trainable_cls] = ray.remote(trainable_cls)
        return self._cache[trainable_cls]

    get.searchsvc = True  # type: ignore[attr-defined]
    class_cache._ActorClassCache.get = get  # type: ignore[method-assign]


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


@contextmanager
def lean_node(*, show_worker_output: bool) -> Iterator[None]:
    """Within: a node ``ray.init`` starts has no autoscaler monitor (one machine never
    autoscales) and, unless the driver shows its workers' output, no log monitor (its only
    reader): two processes that poll while the node runs, 1.3 CPU-s a minute on an idle node.
    ``ray.init`` has no argument for either; its node parameters do."""
    from ray._private.parameter import RayParams

    original = RayParams.__init__

    def lean_init(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        self.no_monitor = True
        if not show_worker_output:
            self.include_log_monitor = False

    RayParams.__init__ = lean_init  # type: ignore[method-assign]
    try:
        yield
    finally:
        RayParams.__init__ = original  # type: ignore[method-assign]
