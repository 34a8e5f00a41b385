"""Data-parallel trials (``resources.workers``), the way Ray's documentation combines
Tune and Train: the trial Tune runs is a launcher that trains the objective on N Ray Train
workers with a ``TorchTrainer`` (DDP over gloo or NCCL), each worker with the study's ``cpu``
and ``gpu``.

Ray's own bridge forwards only rank 0's metrics and a checkpoint's *path*; ``checkpoints:
keep_best`` and the report need the checkpoint itself in the Tune trial. So after each step a
Train callback (on Train's controller) passes rank 0's metrics, every rank's telemetry and the
persisted checkpoint's folder to the launcher, which reports them to Tune with the checkpoint.
Each trial's training run keeps its state in the trial's own folder, the same for every try,
so a try after a failure resumes every worker from the last checkpoint there
(``ray.train.get_checkpoint`` and ``sdk.restore`` on every rank).

The training run is an actor of its own (:class:`TrainRun`) that aborts training the way Ray
Train does on Ctrl-C once its launcher is gone, so stopping the trial (a scheduler's decision,
a timeout, a failure, the end of the study) stops every worker and returns their resources.
Killing the run instead would leave its workers' placement group reserved: Ray Train's own
cleaner of it needs the state API, which a cluster without the dashboard lacks.
"""

from __future__ import annotations

import _thread
import functools
import shutil
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ray.train.v2.api.callback import UserCallback

from searchsvc.worker.context import META_KEY, TELEMETRY_KEY
from searchsvc.worker.trainable import TrialSettings, run_trial

REPORTED = "reported_checkpoint"  # in a trial's folder: the last checkpoint Tune has
POLL_S = 0.5  # how often the launcher looks for a finished training run between steps
WATCH_S = 1.0  # how often a training run checks that its launcher is still there
ABORT_WAIT_S = 30.0  # how long a stopping launcher waits for its workers to stop
NAMESPACE = "searchsvc"  # the Ray namespace of the training runs (detached actors)


@dataclass(frozen=True)
class Workers:
    """A data-parallel trial's workers: how many, each one's resources, and the folder of the
    Tune run whose trials they train (each trial's training run keeps its state there)."""

    count: int
    cpu: float
    gpu: float
    run_dir: str

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
    launcher (a queue of one: training waits while Tune has not taken the last step). The put
    blocks the controller's loop meanwhile; a queue that died (the launcher stopped) makes it
    raise, which ends the run, and TrainRun's watch then ends the actor."""

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

    # The trial's own folder: each try's training run keeps its checkpoints there, and the
    # last one Tune received (REPORTED) is where a later try resumes every rank from.
    number = int((config.get(META_KEY) or {}).get("number", 0))
    storage = Path(workers.run_dir) / f"trial_{number:05d}"
    config = with_resume(config, resume_point(storage, tune.get_checkpoint()))
    config = {**config, META_KEY: {**(config.get(META_KEY) or {}), "trial_dir": str(storage)}}
    steps, run, done = _start_run(config, settings, workers, storage, "")
    try:
        _forward(steps, done, storage / REPORTED)
        ray.get(done)  # the workers' error, if training failed
    finally:
        _stop_run(steps, run, done)


def _start_run(config: dict[str, Any], settings: TrialSettings, workers: Workers,
               storage: Path, tag: str) -> tuple[Any, Any, Any]:
    """A training run of ``config`` on ``workers`` in ``storage``: its step queue (of one),
    its actor and the reference its end resolves."""
    import ray
    from ray.util.queue import Queue

    steps = Queue(maxsize=1, actor_options={"num_cpus": 0})
    # Detached and outside the trial's placement group (which Tune removes, killing what is in
    # it, as the trial ends): the run outlives its launcher just long enough to abort its
    # workers cleanly (TrainRun's watch), which returns their placement group.
    run: Any = ray.remote(num_cpus=0)(TrainRun).options(
        lifetime="detached", name=f"{run_prefix(settings.study)}{tag}{uuid.uuid4().hex}",
        namespace=NAMESPACE, scheduling_strategy="DEFAULT").remote()
    return steps, run, run.train.remote(config, settings, workers, steps, str(storage))


def _stop_run(steps: Any, run: Any, done: Any) -> None:
    """End a training run: its queue gone tells a run still going to abort its workers; a run
    that has ended is killed, else it ends itself once aborted."""
    import ray

    ray.kill(steps.actor)
    if ray.wait([done], timeout=ABORT_WAIT_S)[0]:
        ray.kill(run)


def probe_data_parallel(config: dict[str, Any], settings: TrialSettings, workers: Workers,
                        steps: int, timeout_s: float) -> dict[str, Any]:
    """Preflight of a data-parallel study, from the driver: the objective on its ``workers``
    (a training run as a trial's, in a scratch folder) until rank 0's ``steps``-th report,
    then aborted as a stopped trial's run is. Plain data as :func:`worker.preflight.probe`
    returns: rank 0's reports, each one's seconds since the start (the first includes placing
    and starting the workers: a data-parallel trial pays it every time), the crash if any."""
    import ray
    from ray.util.queue import Empty

    from searchsvc.worker.preflight import describe_exception, plain_metrics

    scratch = tempfile.mkdtemp(prefix="searchsvc-preflight-")
    t0 = time.perf_counter()
    queue, run, done = _start_run(config, settings, workers, Path(scratch), "preflight-")
    reports: list[dict[str, Any]] = []
    times: list[float] = []
    crash, returned = None, False
    try:
        while len(reports) < steps and time.perf_counter() - t0 < timeout_s:
            ended = bool(ray.wait([done], timeout=0)[0])
            try:
                step: Step = queue.get(timeout=POLL_S)
            except Empty:
                if ended:
                    returned = True
                    break
                continue
            times.append(time.perf_counter() - t0)
            reports.append(plain_metrics(step.metrics))
        if returned:
            try:
                ray.get(done)
            except Exception as exc:
                cause = getattr(exc, "cause", None) or exc
                crash, returned = describe_exception(cause, settings.search_paths), False
    finally:
        _stop_run(queue, run, done)
        shutil.rmtree(scratch, ignore_errors=True)
    return {"reports": reports, "times_s": times, "crash": crash, "returned": returned,
            "timed_out": not returned and crash is None and len(reports) < steps}


def run_prefix(study: str) -> str:
    """The start of the name of every training run of ``study`` (Ray actors in
    :data:`NAMESPACE`)."""
    return f"train-{study}-"


def runs_left(study: str) -> list[str]:
    """The training runs of ``study`` still alive (aborting, or not yet ended)."""
    import ray

    return [a["name"] for a in ray.util.list_named_actors(all_namespaces=True)
            if a["namespace"] == NAMESPACE and a["name"].startswith(run_prefix(study))]


def resume_point(storage: Path, given: Any) -> str | None:
    """The checkpoint a trial's workers resume from: the one Tune restores the trial from
    (a PBT exploit), else the last one this trial reported to Tune on an earlier try."""
    if given is not None:
        return str(given.path)
    reported = storage / REPORTED
    return reported.read_text().strip() or None if reported.is_file() else None


def with_resume(config: dict[str, Any], checkpoint: str | None) -> dict[str, Any]:
    """``config`` telling its workers where to resume from (searchsvc's entry of it)."""
    if checkpoint is None:
        return config
    return {**config, META_KEY: {**(config.get(META_KEY) or {}), "resume": checkpoint}}


def _forward(steps: Any, run: Any, reported: Path) -> None:
    """Report every step to Tune, with its checkpoint, until the training run has ended and
    its last step was taken; ``reported`` keeps the last checkpoint Tune has, for a retry."""
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
        if step.checkpoint is not None:
            reported.parent.mkdir(parents=True, exist_ok=True)
            reported.write_text(step.checkpoint)


class TrainRun:
    """One training run of a data-parallel trial, as a Ray actor. ``train`` runs a
    TorchTrainer on ``workers`` (every step to ``steps``) in the actor's main thread, where
    Ray Train aborts the run cleanly on an interrupt: workers stopped, their placement group
    removed. A thread watches the launcher's queue and interrupts training once the queue is
    gone (the launcher stopped or died), so no worker outlives its trial."""

    def train(self, config: dict[str, Any], settings: TrialSettings, workers: Workers,
              steps: Any, storage: str) -> None:
        from ray.train import CheckpointConfig, FailureConfig, RunConfig, ScalingConfig
        from ray.train.torch import TorchTrainer

        trainer = TorchTrainer(
            functools.partial(run_worker, settings=settings),
            train_loop_config=config,
            scaling_config=ScalingConfig(num_workers=workers.count, use_gpu=workers.gpu > 0,
                                         resources_per_worker=workers.bundle()),
            # Not retried here: Tune restarts the whole trial from its last checkpoint. A new
            # run name for each try: Ray Train would otherwise restore the folder's own latest
            # checkpoint, which may be a step Tune never received, or not the one a PBT exploit
            # hands over (the launcher passes the right one, see resume_point).
            run_config=RunConfig(name=f"try-{uuid.uuid4().hex[:12]}", storage_path=storage,
                                 # Train V2's RunConfig at run time; the stubs are V1's
                                 callbacks=[ForwardToLauncher(steps)],  # type: ignore[list-item]
                                 failure_config=FailureConfig(max_failures=0),
                                 # Tune keeps its own copy of each (checkpoints.keep_best);
                                 # a later try needs only the latest.
                                 checkpoint_config=CheckpointConfig(num_to_keep=2)),
        )
        finished, gone = threading.Event(), threading.Event()
        threading.Thread(target=_abort_when_gone, args=(steps, finished, gone),
                         daemon=True).start()
        try:
            trainer.fit()
        finally:
            finished.set()
            # Training may end (its controller failing to hand a step to a queue that died)
            # before the watch noticed: ask the queue once more.
            if gone.is_set() or not _alive(steps):  # nobody is left to end this actor
                import ray

                ray.actor.exit_actor()


def _abort_when_gone(steps: Any, finished: threading.Event, gone: threading.Event) -> None:
    """Interrupt the run's main thread (Ray Train's graceful abort) once ``steps``' actor is
    gone."""
    while not finished.wait(WATCH_S):
        if not _alive(steps):
            gone.set()
            if not finished.is_set():
                _thread.interrupt_main()
            return


def _alive(steps: Any) -> bool:
    """Whether the launcher's queue still answers (a slow or briefly unreachable one counts as
    alive: only a dead actor ends a training run)."""
    import ray

    try:
        ray.get(steps.actor.qsize.remote(), timeout=WATCH_S * 10)
    except (ray.exceptions.GetTimeoutError, ray.exceptions.ActorUnavailableError):
        return True
    except ray.exceptions.RayActorError:
        return False
    except Exception:  # anything else is not proof the launcher is gone
        return True
    return True


def run_worker(config: dict[str, Any], settings: TrialSettings) -> None:
    """One Ray Train worker of a data-parallel trial: the objective, as a single-process trial
    runs it, with its rank (``ray.train.get_context()`` works here, as Ray's docs use it)."""
    import ray.train

    resume = (config.get(META_KEY) or {}).get("resume")
    if resume is not None:
        _resume_from(resume)
    context = ray.train.get_context()
    run_trial(config, settings, rank=context.get_world_rank(),
              world_size=context.get_world_size())


def _resume_from(path: str) -> None:
    """Make ``ray.train.get_checkpoint()`` on this worker return the checkpoint at ``path``
    until the run reports one of its own (Ray Train 2's trainers take no checkpoint to start
    from; its documentation passes one in the config instead, which a training function
    written for ``get_checkpoint`` would not read)."""
    import ray.train

    original = getattr(ray.train.get_checkpoint, "__wrapped__", ray.train.get_checkpoint)

    def get_checkpoint() -> Any:
        return original() or ray.train.Checkpoint.from_directory(path)

    get_checkpoint.__wrapped__ = original  # type: ignore[attr-defined]
    get_checkpoint.__doc__ = original.__doc__
    ray.train.get_checkpoint = get_checkpoint
