"""Data-parallel trials (``resources.workers`` above 1), the way Ray's documentation combines
Tune and Train: the trial Tune runs is a launcher that trains the objective on N Ray Train
workers with a ``TorchTrainer`` (DDP over gloo or NCCL), each worker with the study's ``cpu``
and ``gpu``.

Ray's own bridge forwards only rank 0's metrics and a checkpoint's *path*; PBT's exploits,
trial restarts and ``checkpoints.keep_best`` need the checkpoint itself in the Tune trial. So
after each step a Train callback (on Train's controller) passes rank 0's metrics, every rank's
telemetry and the persisted checkpoint's folder to the launcher, which reports them to Tune
with the checkpoint. A trial Tune restarts (a failure, an exploit) resumes every worker from
that checkpoint (``resume_from_checkpoint``, read by ``ray.train.get_checkpoint`` and
``sdk.restore`` on every rank).

The training run is an actor of its own (:class:`TrainRun`) that aborts training the way Ray
Train does on Ctrl-C once its launcher is gone, so stopping the trial (a scheduler's decision,
a timeout, a failure, the end of the study) stops every worker and returns their resources.
Killing the run instead would leave its workers' placement group reserved: Ray Train's own
cleaner of it needs the state API, which a cluster without the dashboard lacks.
"""

from __future__ import annotations

import _thread
import functools
import threading
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ray.train.v2.api.callback import UserCallback

from searchsvc.worker.context import TELEMETRY_KEY
from searchsvc.worker.trainable import TrialSettings, run_trial

POLL_S = 0.5  # how often the launcher looks for a finished training run between steps
WATCH_S = 1.0  # how often a training run checks that its launcher is still there
ABORT_WAIT_S = 30.0  # how long a stopping launcher waits for its workers to stop


@dataclass(frozen=True)
class Workers:
    """A data-parallel trial's workers: how many, and each one's resources."""

    count: int
    cpu: float
    gpu: float

    def bundle(self) -> dict[str, float]:
        """One worker's Ray resources."""
        return {key: amount for key, amount in (("CPU", self.cpu), ("GPU", self.gpu))
                if amount}


@dataclass(frozen=True)
class Step:
    """One step of a data-parallel trial, as the launcher reports it to Tune."""

    metrics: dict[str, Any]  # rank 0's, with every rank's telemetry under TELEMETRY_KEY
    checkpoint: str | None  # the persisted checkpoint's folder, if the step saved one


def merged_step(metrics: list[dict[str, Any]], checkpoint: str | None) -> Step:
    """The trial's step from each rank's report: rank 0's metrics, and its telemetry with the
    list of every rank's (``ranks``, by rank) for the straggler check."""
    first = dict(metrics[0]) if metrics else {}
    ranks = [m.get(TELEMETRY_KEY) for m in metrics]
    if any(isinstance(r, dict) for r in ranks):
        own = ranks[0] if isinstance(ranks[0], dict) else {}
        first[TELEMETRY_KEY] = {**own, "ranks": [r if isinstance(r, dict) else {}
                                                 for r in ranks]}
    return Step(first, checkpoint)


class ForwardToLauncher(UserCallback):
    """On Train's controller: after every step all workers reported, hand the step to the
    launcher (a queue of one: training waits while Tune has not taken the last step)."""

    def __init__(self, queue: Any):
        self.queue = queue

    def after_report(self, run_context: Any, metrics: list[dict[str, Any]],
                     checkpoint: Any) -> None:
        self.queue.put(merged_step(metrics, None if checkpoint is None else checkpoint.path))


def run_data_parallel_trial(config: dict[str, Any], settings: TrialSettings,
                            workers: Workers) -> None:
    """The launcher Tune runs for a data-parallel trial (see the module's docstring)."""
    import ray
    from ray import tune
    from ray.util.queue import Queue

    steps = Queue(maxsize=1, actor_options={"num_cpus": 0})
    storage = str(Path(tune.get_context().get_trial_dir()) / "train")
    # Detached and outside the trial's placement group (which Tune removes, killing what is in
    # it, as the trial ends): the run outlives this launcher just long enough to abort its
    # workers cleanly (TrainRun's watch), which returns their placement group.
    run: Any = ray.remote(num_cpus=0)(TrainRun).options(
        lifetime="detached", name=f"train-{uuid.uuid4().hex}", namespace="searchsvc",
        scheduling_strategy="DEFAULT").remote()
    done = run.train.remote(config, settings, workers, steps, storage, tune.get_checkpoint())
    try:
        _forward(steps, done)
        ray.get(done)  # the workers' error, if training failed
    finally:
        ray.kill(steps.actor)  # type: ignore[arg-type]  # tells a run still going to abort
        if ray.wait([done], timeout=ABORT_WAIT_S)[0]:
            ray.kill(run)  # else it ends itself once aborted


def _forward(steps: Any, run: Any) -> None:
    """Report every step to Tune, with its checkpoint, until the training run has ended and
    its last step was taken."""
    import ray
    from ray import tune
    from ray.util.queue import Empty

    while True:
        ended = bool(ray.wait([run], timeout=0)[0])
        try:
            step: Step = steps.get(timeout=POLL_S)
        except Empty:
            if ended:  # the controller puts each step before training goes on: none is left
                return
            continue
        checkpoint = (None if step.checkpoint is None
                      else tune.Checkpoint.from_directory(step.checkpoint))
        tune.report(step.metrics, checkpoint=checkpoint)


class TrainRun:
    """One training run of a data-parallel trial, as a Ray actor. ``train`` runs a
    TorchTrainer on ``workers`` (every step to ``steps``) in the actor's main thread, where
    Ray Train aborts the run cleanly on an interrupt: workers stopped, their placement group
    removed. A thread watches the launcher's queue and interrupts training once the queue is
    gone (the launcher stopped or died), so no worker outlives its trial."""

    def train(self, config: dict[str, Any], settings: TrialSettings, workers: Workers,
              steps: Any, storage: str, checkpoint: Any) -> None:
        from ray.train import FailureConfig, RunConfig, ScalingConfig
        from ray.train.torch import TorchTrainer

        trainer = TorchTrainer(
            functools.partial(run_worker, settings=settings),
            train_loop_config=config,
            scaling_config=ScalingConfig(num_workers=workers.count, use_gpu=workers.gpu > 0,
                                         resources_per_worker=workers.bundle()),
            # Not retried here: Tune restarts the whole trial from its last checkpoint.
            run_config=RunConfig(name="train", storage_path=storage,
                                 # Train V2's RunConfig at run time; the stubs are V1's
                                 callbacks=[ForwardToLauncher(steps)],  # type: ignore[list-item]
                                 failure_config=FailureConfig(max_failures=0)),
            resume_from_checkpoint=checkpoint,
        )
        finished, gone = threading.Event(), threading.Event()
        threading.Thread(target=_abort_when_gone, args=(steps, finished, gone),
                         daemon=True).start()
        try:
            trainer.fit()
        finally:
            finished.set()
            if gone.is_set():  # nobody is left to end this actor
                import ray

                ray.actor.exit_actor()


def _abort_when_gone(steps: Any, finished: threading.Event, gone: threading.Event) -> None:
    """Interrupt the run's main thread (Ray Train's graceful abort) once ``steps``' actor is
    gone."""
    import ray

    while not finished.wait(WATCH_S):
        try:
            ray.get(steps.actor.qsize.remote(), timeout=WATCH_S * 10)
        except ray.exceptions.GetTimeoutError:
            continue
        except ray.exceptions.RayActorError:
            gone.set()
            if not finished.is_set():
                _thread.interrupt_main()
            return


def run_worker(config: dict[str, Any], settings: TrialSettings) -> None:
    """One Ray Train worker of a data-parallel trial: the objective, as a single-process trial
    runs it, with its rank (``ray.train.get_context()`` works here, as Ray's docs use it)."""
    import ray.train

    context = ray.train.get_context()
    run_trial(config, settings, rank=context.get_world_rank(),
              world_size=context.get_world_size())
