"""One Ray Tune run of a study's trials: the Tuner a searcher, its pending trials and the
study's rules make (search algorithm, scheduler, stopper, store callback, checkpoints, retries),
run to its end."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from searchsvc.backends import backend_class
from searchsvc.core import StudyRecord
from searchsvc.core.judging import USABLE_STATES
from searchsvc.driver.head import node_environment
from searchsvc.driver.progress import Progress
from searchsvc.driver.study import results_dir_of
from searchsvc.options import RunOptions
from searchsvc.provenance import launch_of
from searchsvc.searchers import Observation, PopulationSchedule, Searcher
from searchsvc.searchers.repeats import RepeatSearcher
from searchsvc.spec import StudySpec
from searchsvc.store import Store
from searchsvc.tracking import Tracker
from searchsvc.worker.context import META_KEY, RESTORE_KEY
from searchsvc.worker.shadowing import named_shadowing
from searchsvc.worker.workdir import NO_TRIAL_DIR_CHANGE

COMMAND_CHECKPOINTS_KEPT = 2  # per trial of a command objective without checkpoints.keep_best

if TYPE_CHECKING:
    from searchsvc.driver.tune_search import Stage

# Quiet Ray Tune's own console output (searchsvc shows its own progress) and its per-trial
# CSV/JSON/TensorBoard loggers (the store has every result). Set before Ray Tune runs.
os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "0")
os.environ.setdefault("TUNE_DISABLE_AUTO_CALLBACK_LOGGERS", "1")
os.environ.setdefault("TUNE_DISABLE_STRICT_METRIC_CHECKING", "1")
os.environ.setdefault("RAY_DEDUP_LOGS", "0")
# searchsvc handles Ctrl-C itself (see _graceful_ctrl_c) so it can tell the user what happened.
os.environ.setdefault("TUNE_DISABLE_SIGINT_HANDLER", "1")
# Trials run in the folder the study was launched from, not in Tune's trial folder
# (worker/workdir.py); Tune hands this on to each trial's process.
os.environ.update(NO_TRIAL_DIR_CHANGE)

TRAINING_RUNS_WAIT_S = 120.0  # the most a study waits, at its end, for runs to stop workers


def fit(spec: StudySpec, study: StudyRecord, store: Store, searcher: Searcher,
         pending: list[int], history: list[Observation], progress: Progress,
         options: RunOptions, time_limit_s: float | None, trackers: Tracker | None = None, *,
         search_paths: Sequence[str], oom_retries: list[int] | None = None,
         then: Callable[[Any], Stage | None] | None = None,
         restore_points: Mapping[int, tuple[str, int]] | None = None) -> Any:
    """One Ray Tune run of ``searcher``'s ``pending`` trials (and of the stage ``then`` gives,
    asked with the run's store callback, after them: see
    :class:`~searchsvc.driver.tune_search.StudySearch`); returns its store callback once the
    run has ended. ``restore_points``: the interrupted trials that start from a checkpoint
    (driver/restore.py)."""
    with named_shadowing(search_paths):
        from ray import tune

        from searchsvc.driver import raycompat
        from searchsvc.driver.allowance import allowance_gate
        from searchsvc.driver.callbacks import StoreCallback
        from searchsvc.driver.preemption import Preemption, preempting
        from searchsvc.driver.schedulers import StudyStopping, create_scheduler
        from searchsvc.driver.settings import trial_settings
        from searchsvc.driver.tune_search import StudySearch

    schedule = searcher.schedule()
    population = isinstance(schedule, PopulationSchedule)
    settings = trial_settings(
        spec, search_paths=search_paths, launch=launch_of(study),
        # PBT copies checkpoints between trials, so its objectives must save them.
        keep_checkpoints=spec.checkpoints.keep_best is not None or population)
    results_dir = results_dir_of(study)
    run_name = f"run-{time.strftime('%Y%m%d-%H%M%S')}"
    storage = (results_dir / "ray").resolve()
    callback = StoreCallback(
        store, study, searcher, progress, trial_timeout_s=spec.budget.trial_timeout_s,
        trackers=trackers, fail_fast=spec.budget.fail_fast,
        produced=any(t.state in USABLE_STATES for t in store.get_trials(study.name)),
        oom_retries=oom_retries, resources=spec.resources)
    scheduler = create_scheduler(schedule, spec, callback)
    gate = allowance_gate(progress)
    concurrency = _concurrent_trials(spec)
    if gate is not None:  # on a shared cluster: trials may pause for a higher priority
        scheduler = preempting(scheduler, Preemption(gate, callback, concurrency))
    search = StudySearch(searcher, pending, spec.metric, spec.mode,
                         then=_next_stage(then, callback, progress),
                         allowance=gate, concurrency=concurrency,
                         restore_points=restore_points)
    if isinstance(scheduler, StudyStopping):  # earlier runs' results fill each arm's state
        for observation in history:
            scheduler.restore_trial(observation.number, dict(observation.config),
                              list(observation.curve))
    tuner = tune.Tuner(
        _trainable(spec, settings, storage / run_name),
        tune_config=tune.TuneConfig(
            search_alg=search,
            scheduler=scheduler,
            num_samples=-1,  # StudySearch says when the study's trials are all done
            max_concurrent_trials=concurrency,
            # A data-parallel trial's launcher holds nothing worth reusing; it must exit cleanly.
            reuse_actors=not spec.resources.data_parallel,
            time_budget_s=time_limit_s,
            trial_dirname_creator=_trial_dirname,
            trial_name_creator=_trial_dirname,
        ),
        run_config=_run_config(spec, run_name, storage, callback, population=population),
    )
    progress.start(repeats_note(len(pending)) if isinstance(searcher, RepeatSearcher) else None)
    raycompat.tag_callbacks_without_integrations()
    raycompat.start_unresettable_trials_afresh()
    raycompat.trainables_inherit_node_environment(node_environment)
    raycompat.release_cached_workers_while(search.holds_back if search.allowance else None)
    raycompat.trials_restore_from_their_checkpoint(_restore_point)
    # Not for PBT: its paused trials' workers, reused at once, would sync a paused trial's
    # folder while its objective may still write a checkpoint there (raycompat.workers)
    raycompat.keep_workers_for(0 if population else concurrency or 0)
    tuner.fit()
    if spec.resources.data_parallel:
        _wait_for_training_runs(spec.name, progress)
    return callback


def _run_config(spec: StudySpec, run_name: str, storage: Path, callback: Any, *,
                population: bool = False) -> Any:
    """Ray Tune's run settings: where it keeps the run, the study's stop rule, its callback,
    checkpoints kept and retries."""
    from ray import tune

    from searchsvc.driver.callbacks import StudyStopper

    keep = spec.checkpoints.keep_best
    if keep is None and backend_class(spec.backend).runs_commands and not population:
        # a script's checkpoint folder goes with every report after it changed: keep the
        # latest two (retries need only the latest), not every epoch's. PBT keeps them all:
        # its exploits restore checkpoints a later one would have deleted
        keep = COMMAND_CHECKPOINTS_KEPT
    return tune.RunConfig(
        name=run_name,
        storage_path=str(storage),
        stop=StudyStopper(tuple(o.name for o in spec.objectives), spec.budget.max_steps,
                          callback),
        callbacks=[callback, quiet_progress_callback()],
        verbose=0,
        log_to_file=True,
        # What a trial writes to sdk.trial_dir() is copied into the study's results
        # (from whichever node ran it) as it reports and when it ends.
        sync_config=tune.SyncConfig(sync_artifacts=True),
        checkpoint_config=tune.CheckpointConfig(
            num_to_keep=keep,
            checkpoint_score_attribute=spec.metric if spec.checkpoints.keep_best else None,
            checkpoint_score_order=spec.mode,
        ),
        failure_config=tune.FailureConfig(max_failures=spec.budget.max_failures),
    )


def _next_stage(then: Callable[[Any], Stage | None] | None, callback: Any, progress: Progress
                ) -> Callable[[], Stage | None] | None:
    """``then``, asked with ``callback``; the stage it gives is the one the store callback
    tells its trials' results to, and the display says it started."""
    if then is None:
        return None

    def next_stage() -> Stage | None:
        stage = then(callback)
        if stage is not None:
            callback.searcher = stage[0]
            progress.note(repeats_note(len(stage[1])))
        return stage
    return next_stage


def repeats_note(count: int) -> str:
    return f"seed repeats: {count} trials rerun the best configurations with new seeds"


def _wait_for_training_runs(study: str, progress: Progress,
                            timeout_s: float = TRAINING_RUNS_WAIT_S) -> None:
    """Return once every data-parallel training run of ``study`` has ended (its workers
    stopped and their resources given back), saying so while it waits; give up, saying so,
    after ``timeout_s``."""
    from searchsvc.worker.data_parallel import runs_left

    deadline, said = time.monotonic() + timeout_s, False
    while left := runs_left(study):
        if time.monotonic() > deadline:
            progress.note(f"{len(left)} training run(s) still stopping after {timeout_s:.0f} s; "
                          "each ends itself once its workers have stopped")
            return
        if not said:
            progress.note(f"waiting for {len(left)} training run(s) to stop their workers")
            said = True
        time.sleep(0.2)


LAUNCHER_MEMORY_BYTES = 64 * 1024 * 1024  # a data-parallel trial's launcher (it only forwards)


def _trainable(spec: StudySpec, settings: Any, run_dir: Path) -> Any:
    """What Tune runs for each trial: the objective in the trial's process, or, for a
    data-parallel trial, a launcher that takes no CPU and trains on ``workers`` Ray Train
    workers (worker/data_parallel.py), whose training runs keep their checkpoints beside the
    trial's in ``run_dir`` (Tune's folder of this run)."""
    from ray import tune

    resources = spec.resources
    if not resources.data_parallel:
        from searchsvc.worker.trainable import run_trial

        return tune.with_resources(tune.with_parameters(run_trial, settings=settings),
                                   {"cpu": resources.cpu, "gpu": resources.gpu})
    from searchsvc.worker.data_parallel import Workers, run_data_parallel_trial

    workers = Workers(resources.worker_count, resources.cpu, resources.gpu, str(run_dir))
    # No CPU for the launcher, so the workers can have every one; Ray needs a bundle to place
    # it with, so it asks for a little memory instead.
    return tune.with_resources(tune.with_parameters(run_data_parallel_trial, settings=settings,
                                                    workers=workers),
                               {"cpu": 0, "memory": LAUNCHER_MEMORY_BYTES})


def _concurrent_trials(spec: StudySpec) -> int | None:
    import ray

    from searchsvc.driver.capacity import concurrent_trials

    return concurrent_trials(spec, ray.nodes())


def _restore_point(trial: Any) -> tuple[str, int] | None:
    """The checkpoint folder and step a trial starts from (StudySearch's ``restore``)."""
    found = (trial.config.get(META_KEY) or {}).get(RESTORE_KEY)
    return (str(found["path"]), int(found["step"])) if found else None


def _trial_dirname(trial: Any) -> str:
    return f"trial_{int(trial.config[META_KEY]['number']):05d}"


def quiet_progress_callback() -> Any:
    """A stand-in for the progress callback Tune adds when a run has none (which prints
    nothing at ``verbose=0`` yet keeps every trial's last result to the run's end): searchsvc
    shows progress itself."""
    from ray.tune.progress_reporter import TrialProgressCallback

    class QuietProgress(TrialProgressCallback):
        def on_trial_result(self, *args: Any, **kwargs: Any) -> None:
            pass

        def on_trial_complete(self, *args: Any, **kwargs: Any) -> None:
            pass

        def on_trial_error(self, *args: Any, **kwargs: Any) -> None:
            pass

        def on_trial_start(self, *args: Any, **kwargs: Any) -> None:
            pass

    return QuietProgress()
