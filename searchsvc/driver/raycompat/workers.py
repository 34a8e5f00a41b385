"""Ray Tune's trial workers: which it keeps for reuse, and what environment they start with."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Generator, Mapping
from typing import Any


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


def _held_back() -> bool:
    return any(held() for held in _holding_back)


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


def keep_workers_for(concurrency: int) -> None:
    """Make Ray Tune keep up to ``concurrency`` ended trials' workers for the study's next
    trials while its search goes on, instead of the one Tune keeps when no trial waits.

    Tune caches an ended trial's worker only for a trial already waiting, and at most one
    more. Between a study's stages, or whenever its search briefly has no next trial (it waits
    for results), every other worker is ended; from then on each next trial asks for a new
    worker, and when its trials are shorter than a worker's start (about a second), the one
    kept worker frees first, is reused, and the new worker is ended as it starts: the study
    runs one trial at a time and starts a worker process per trial for nothing. Kept workers
    hold only what the study may use (``release_cached_workers_while`` ends them when it may
    not), and a waiting trial needing other resources still gets them (Tune's own rule then
    applies). Idempotent; one study per process at a time.

    Not meant for population schedules (the caller passes 0): a reused worker's reset first
    copies the folder of the trial it ran to the run's storage, and a paused PBT trial's
    objective may still be writing its checkpoint there (a script's), so that a file vanishing
    mid-copy fails the reset, and the trial it was for."""
    from ray.tune.execution.tune_controller import TuneController
    from ray.tune.utils.object_cache import _ObjectCache

    _keep[:] = [concurrency]
    original = TuneController._maybe_cache_trial_actor
    if getattr(original, "searchsvc", False):
        return

    class _KeepingCache(_ObjectCache):
        def cache_object(self, key: Any, obj: Any) -> bool:
            if self._num_cached_objects < _keep[0] and not self._others_wait(key):
                self._cached_objects[key].append(obj)
                self._num_cached_objects += 1
                return True
            return super().cache_object(key, obj)

        def flush_cached_objects(self, force_all: bool = False) -> Generator[Any, None, None]:
            if force_all or self._num_cached_objects > _keep[0] or self._others_wait(None):
                yield from super().flush_cached_objects(force_all=force_all)

        def _others_wait(self, key: Any) -> bool:
            # a trial waits for resources no cached worker of its own has
            return any(n > len(self._cached_objects[k]) for k, n in self._max_num_objects.items()
                       if n > 0 and k != key)

    def _maybe_cache_trial_actor(self: Any, trial: Any) -> bool:
        if type(self._actor_cache) is _ObjectCache:
            self._actor_cache.__class__ = _KeepingCache
        return original(self, trial)

    _maybe_cache_trial_actor.searchsvc = True  # type: ignore[attr-defined]
    TuneController._maybe_cache_trial_actor = _maybe_cache_trial_actor  # type: ignore[method-assign]


_keep: list[int] = [0]


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
