"""Runs a study on Ray Tune: create or resume it in the store, start/attach Ray, run the
pending trials, and leave the store telling exactly what happened."""

from __future__ import annotations

import logging
import os
import signal
import socket
import sys
import time
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from searchsvc import provenance
from searchsvc.backends import Backend, backend_class
from searchsvc.codebundle import CodeBundle, module_in_bundle
from searchsvc.core import Constraint, StudyRecord, StudyState, TrialRecord
from searchsvc.core.callables import CallableRef
from searchsvc.core.judging import (
    FAILURE_KEY,
    USABLE_STATES,
    count_line,
    is_search_trial,
    searcher_value,
    study_counts,
    study_end,
)
from searchsvc.driver.outages import watch_outages
from searchsvc.driver.progress import Progress
from searchsvc.errors import ConflictError, NotFoundError, RunnerError
from searchsvc.provenance import code_path, launch_of
from searchsvc.searchers import Observation, PopulationSchedule, Searcher
from searchsvc.searchers.base import Proposal
from searchsvc.searchers.repeats import (
    RepeatSearcher,
    plan_repeats,
    planned_repeats,
    repeat_settings,
)
from searchsvc.searchers.space import fits_space
from searchsvc.spec import Noise, StudySpec, spec_of
from searchsvc.store import Store, searchsvc_home
from searchsvc.tracking import Tracker, Trackers, open_trackers
from searchsvc.worker.context import META_KEY
from searchsvc.worker.objective import (
    locate_objective,
    module_root,
    resolve_objective,
    search_paths_for,
)
from searchsvc.worker.shadowing import named_shadowing
from searchsvc.worker.workdir import NO_TRIAL_DIR_CHANGE

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

@dataclass(frozen=True)
class RunOptions:
    """How to run: where Ray is, where results go, how to show progress."""

    address: str | None = None  # None: start an embedded Ray; else auto | host:port
    results_root: Path | None = None  # default $SEARCHSVC_HOME/results
    num_cpus: int | None = None  # embedded Ray only
    num_gpus: int | None = None  # embedded Ray only (logical GPUs are fine for tests)
    verbose: bool = False  # show the objectives' own output
    progress_stream: TextIO | None = None
    live_progress: bool | None = None


@dataclass(frozen=True)
class RunOutcome:
    """How a run ended: the study as stored, its search trials finished of the search's
    total, its seed repeats finished of those planned (counted apart), and why it stopped."""

    study: StudyRecord
    finished: int
    total: int
    reason: str
    repeats_finished: int = 0
    repeats_total: int = 0

    def counts(self) -> str:
        """The counts as live progress showed them (core.judging.count_line)."""
        return count_line(self.finished, self.total, self.repeats_finished, self.repeats_total)


def create_study(spec: StudySpec, store: Store, options: RunOptions, *, searcher: Searcher,
                 overwrite: bool = False, owner: str | None = None,
                 code: CodeBundle | None = None, import_objective: bool = True,
                 extra_provenance: Mapping[str, Any] | None = None) -> StudyRecord:
    """Record a new study (``overwrite`` deletes an existing one of the same name first;
    ``extra_provenance``: more to record, e.g. its place in a campaign;
    ``owner``: the service user it belongs to; ``code``: the uploaded code its objective comes
    from). The objective is imported to check it when ``import_objective`` (the CLI, which runs
    it next anyway); otherwise, and always for uploaded code, its module is only located: the
    service's API process never runs user code. ``searcher``: the study's (the use case made
    it from ``spec``, once): its trial count is recorded."""
    in_bundle = code is not None and module_in_bundle(code.path,
                                                      CallableRef.parse(spec.objective).module)
    if not in_bundle:
        paths = search_paths_for(spec.source.file)
        if import_objective:
            resolve_objective(spec.objective, paths)
        else:
            locate_objective(spec.objective, paths)
    if spec.warm_start:
        _warm_start_trials(spec, store, owner)  # refuse a missing study before creating this
    found = provenance.collect(spec.source.file, spec.seed)
    found.update(extra_provenance or {})
    if code is not None:
        found["code"] = code.provenance()
    if overwrite:
        with suppress(NotFoundError):  # nothing to replace is fine
            store.delete_study(spec.name)
    try:
        return store.create_study(
            name=spec.name, metric=spec.metric, mode=spec.mode, searcher=spec.searcher,
            spec_text=spec.source.text, spec_file=str(Path(spec.source.file).resolve())
            if not spec.source.file.startswith("<") else spec.source.file,
            total_trials=searcher.total_trials + planned_repeats(
                repeat_settings(spec, searcher, backend_class(spec.backend).runs_own_search),
                len(searcher.arms)),
            results_dir=str((options.results_root or searchsvc_home() / "results") / spec.name),
            provenance=found, owner=owner, constraints=spec.constraints,
        )
    except ConflictError:
        existing = store.get_study(spec.name)
        raise ConflictError(
            f"a study named {spec.name!r} already exists ({existing.state}, "
            f"{sum(existing.trial_counts.values())} trials). Continue it with `searchsvc resume "
            f"{spec.name}`, or replace it with `searchsvc run --overwrite`."
        ) from None


def run_study(name: str, store: Store, options: RunOptions, *, searcher: Searcher,
              spec: StudySpec | None = None, trackers: Tracker | None = None) -> RunOutcome:
    """Run every trial of study ``name`` that has not finished (a new study, or a resume).
    ``searcher``: a fresh searcher of the study's spec, not yet fed any observation (the use
    case makes it); ``spec``: the study's parsed file when the caller has it (else parsed
    from the store); ``trackers``: the study's experiment trackers, which the caller ends
    after its report (else made here from the spec's ``tracking:``, and ended here without a
    report)."""
    run = _plan(name, store, options, spec, searcher, trackers)
    _execute(run)
    return _finish(run)


@dataclass
class _Run:
    """One run of a study, as its steps (plan, search, repeats, finish) share it."""

    store: Store
    options: RunOptions
    spec: StudySpec
    searcher: Searcher
    study: StudyRecord
    trials: list[TrialRecord]  # as stored when the run began
    finished: set[int]  # numbers of the trials that had ended before it
    backend: type[Backend]
    noise: Noise | None
    history: list[Observation]  # what the searcher was told of the finished trials
    progress: Progress
    trackers: Tracker
    own_trackers: bool
    search_paths: tuple[str, ...]  # where the objective is imported from (worker/objective.py)
    started: float = field(default_factory=time.monotonic)
    ctrl_c: _CtrlC = field(default_factory=lambda: _CtrlC())
    callback: Any = None
    searched_all: bool = False  # a backend running its own search decides its trial count
    _repeats: list[Proposal] | None = None

    @property
    def name(self) -> str:
        return self.study.name

    @property
    def searched(self) -> int:
        """The search's trials; seed repeats are numbered after them."""
        return self.searcher.total_trials

    @property
    def pending(self) -> list[int]:
        return [n for n in range(self.searched) if n not in self.finished]

    def repeats(self) -> list[Proposal]:
        """The seed repeats to run: planned once, when the search has run (none before it
        finished: they rerun its best configurations)."""
        if self._repeats is None:
            self._repeats = _repeat_plan(self.spec, self.store, self.name, self.searcher,
                                         self.noise)
        return self._repeats

    def time_left(self) -> float | None:
        limit = self.spec.budget.time_limit_s
        return None if limit is None else limit - (time.monotonic() - self.started)

    def repeats_due(self, callback: Any) -> list[int]:
        """The numbers of the planned repeats still to run, once the search (whose store
        callback is ``callback``) has ended; none when Ctrl-C, a fail-fast stop or the time
        limit ended it."""
        failed_fast = callback is not None and callback.failed_fast is not None
        left = self.time_left()
        if self.ctrl_c.pressed or failed_fast or (left is not None and left <= 0):
            return []
        return [p.number for p in self.repeats() if p.number not in self.finished]


def _plan(name: str, store: Store, options: RunOptions, spec: StudySpec | None,
          searcher: Searcher, trackers: Tracker | None) -> _Run:
    """Claim the study, replay its finished trials into the searcher (after the warm start's),
    and start its progress display and trackers; its objective's search paths are worked out
    here, once, for every step of the run."""
    study = store.get_study(name)
    _claim(study, store)
    spec = spec or spec_of(study)
    store.interrupt_running_trials(study.id)  # left over from a driver that died
    trials = store.get_trials(name, measurements=True)
    backend = backend_class(spec.backend)
    noise = repeat_settings(spec, searcher, backend.runs_own_search)
    # As the live study told its searcher: a value only for trials that ended with one.
    # Repeats are not the searcher's proposals: it never sees them.
    history = [_observation(t, t.number, study.metric, spec.constraints) for t in trials
               if t.finished and is_search_trial(t)]
    if spec.warm_start:
        study = _warm_start(spec, study, store, searcher)
    for observation in history:
        searcher.observe(observation)
    progress = Progress(study.name, searcher.total_trials, study.metric, study.mode,
                        repeats=planned_repeats(noise, len(searcher.arms)), history=trials,
                        constraints=spec.constraints, stream=options.progress_stream,
                        live=options.live_progress)
    study = store.update_study(name, state=StudyState.RUNNING, started_at=study.started_at or
                               time.time(), driver=_driver_info())
    return _Run(store, options, spec, searcher, study, trials,
                {t.number for t in trials if t.finished}, backend, noise, history, progress,
                _start_tracking(spec, study, trials, progress, trackers), trackers is None,
                tuple(search_paths_for(study.spec_file, code_path(study), launch_of(study))))


def _execute(run: _Run) -> None:
    """Run the trials left (the search's, then the seed repeats), on Ray only when some are
    left; whatever stops it, trials still running are recorded as interrupted."""
    pending = run.pending
    needs_ray = bool(pending) or any(p.number not in run.finished for p in run.repeats())
    stop_watching = watch_outages(run.store, run.study.id, run.progress)
    try:
        if pending and run.backend.runs_own_search:
            from searchsvc.driver.own_search import run_own_search

            with _ray_session(run.spec, run.options, code_path(run.study), run.search_paths):
                run.searched_all = run_own_search(run.backend, run.spec, run.study, run.store,
                                                  run.progress, run.finished, run.search_paths)
            # no per-trial calls: the trackers catch up from the store
            run.trackers.sync(run.store.get_trials(run.name, measurements=True))
        elif needs_ray:
            with _ray_session(run.spec, run.options, code_path(run.study), run.search_paths), \
                    run.ctrl_c.graceful():
                _search_then_repeat(run, pending)
    except KeyboardInterrupt:
        run.ctrl_c.pressed = True
    finally:
        try:  # with the store gone past its window these fail too: the display still ends
            if run.callback is not None:
                run.callback.interrupt_all()
            run.store.interrupt_running_trials(run.study.id)
        finally:
            stop_watching()
            if needs_ray:
                run.progress.stop()


def _search_then_repeat(run: _Run, pending: list[int]) -> None:
    """The search's pending trials on Ray Tune, then the seed repeats of its best configs
    (unless Ctrl-C, a fail-fast stop or the time limit stopped the search): in the search's
    own Tune run where they can be (:func:`_repeats_after_search`), else in a second one."""
    spec = run.spec
    if pending and spec.resources.gpu_auto:
        run.callback, spec = _fit_auto(run, pending)
    elif pending:
        then = _repeats_after_search(run)
        run.callback = _fit(run.spec, run.study, run.store, run.searcher, pending, run.history,
                            run.progress, run.options, run.spec.budget.time_limit_s,
                            run.trackers, search_paths=run.search_paths, then=then)
        if then is not None:
            return  # the repeats, if any were due, ran as the search's next stage
    todo = run.repeats_due(run.callback)
    if todo:
        run.callback = _fit(spec, run.study, run.store, RepeatSearcher(spec, run.repeats()),
                            todo, [], run.progress, run.options, run.time_left(),
                            run.trackers, search_paths=run.search_paths)


def _repeats_after_search(run: _Run) -> Callable[[Any], Stage | None] | None:
    """The seed repeats as the next stage of the search's own Tune run, so that its workers
    carry over (no second start of every worker: imports, CUDA context, data); only where no
    scheduler stops or perturbs trials, since a repeat runs its whole budget. Given the run's
    store callback once every search trial has ended (:meth:`_Run.repeats_due`)."""
    if run.noise is None or run.searcher.schedule() is not None:
        return None

    def then(callback: Any) -> Stage | None:
        todo = run.repeats_due(callback)
        return (RepeatSearcher(run.spec, run.repeats()), todo) if todo else None
    return then


def _fit_auto(run: _Run, pending: list[int]) -> tuple[Any, StudySpec]:
    """A ``gpu: auto`` search (driver/gpu_auto.py): its Tune runs, one after the other, each
    with the time the study has left; returns the last callback and the packed spec."""
    import ray

    from searchsvc.driver.gpu_auto import run_auto

    def fit(spec: StudySpec, numbers: list[int], searcher: Searcher,
            oom_retries: list[int] | None) -> Any:
        return _fit(spec, run.study, run.store, searcher, numbers, run.history, run.progress,
                    run.options, run.time_left(), run.trackers, search_paths=run.search_paths,
                    oom_retries=oom_retries)

    gpus = float(ray.cluster_resources().get("GPU", 1.0))
    return run_auto(run.spec, run.study, run.store, run.searcher, pending, fit, gpus)


def _finish(run: _Run) -> RunOutcome:
    """The study's end state and why (core.judging's rule), recorded; the trackers closed
    when the run made them."""
    trials = run.store.get_trials(run.name)
    done = {t.number for t in trials if t.finished}
    search_done = all(n in done for n in range(run.searched))
    repeats = planned_repeats(run.noise, len(run.searcher.arms))
    if run.noise is not None and search_done:
        repeats = len(run.repeats())  # an arm with too few trials gets fewer
    total = run.searched + repeats
    complete = run.searched_all or (search_done and all(p.number in done
                                                        for p in run.repeats()))
    limit = run.spec.budget.time_limit_s
    reason = "all trials finished"
    if not complete and run.ctrl_c.pressed:
        reason = STOPPED_BY_CTRL_C
    elif not complete:
        reason = ("time limit reached"
                  if limit and time.monotonic() - run.started >= 0.98 * limit
                  else "stopped before all trials ran")
    counts = study_counts(trials)
    state, failure = study_end(counts, stopped=not complete, failed_fast=None
                               if run.callback is None else run.callback.failed_fast)
    if failure is not None:
        reason = failure
    study = run.store.update_study(
        run.name, state=state, finished_at=time.time() if complete else None, driver={},
        **({} if run.backend.runs_own_search else {"total_trials": total}),
        **({} if failure is None else {"provenance": {**run.study.provenance,
                                                      FAILURE_KEY: failure}}),
    )
    if run.own_trackers:
        run.trackers.study_finished(study, None)
        run.trackers.close()
    return RunOutcome(study, counts.finished, run.searched, reason, counts.repeats_finished,
                      repeats)


def results_dir_of(study: StudyRecord) -> Path:
    """The study's results folder (its report, Ray's files, local tracking stores)."""
    return Path(study.results_dir or searchsvc_home() / "results" / study.name)


def _start_tracking(spec: StudySpec, study: StudyRecord, trials: list[TrialRecord],
                    progress: Progress, trackers: Tracker | None) -> Tracker:
    """The study's trackers (made from its spec unless given; their warnings shown with the
    progress), brought level with the stored ``trials``."""
    if trackers is None:
        trackers = open_trackers(spec, results_dir_of(study))
    if isinstance(trackers, Trackers) and trackers.notify is None:
        trackers.notify = progress.warn
    trackers.study_started(study, spec, trials)
    return trackers


def _warm_start_trials(spec: StudySpec, store: Store, owner: str | None = None,
                       only: Collection[int] | None = None
                       ) -> tuple[int, list[int], list[Observation]]:
    """(finished trials of ``spec.warm_start``, the numbers of those that fit ``spec``'s space,
    and those as observations numbered -1, -2, ...). ``owner``: the service user this study
    belongs to, who may only warm-start from their own studies (another's is "not found");
    ``only``: the numbers chosen when the study first ran (a resume feeds the same ones)."""
    assert spec.warm_start is not None
    missing = NotFoundError(f"warm_start.study: no study named {spec.warm_start!r} in this "
                            "store (searchsvc list shows the studies)")
    try:
        parent = store.get_study(spec.warm_start)
        trials = store.get_trials(spec.warm_start, measurements=True)
    except NotFoundError:
        raise missing from None
    if parent.owner != owner:
        raise missing
    if (parent.metric, parent.mode) != (spec.metric, spec.mode):
        raise ConflictError(
            f"warm_start.study: study {spec.warm_start!r} optimised {parent.metric} "
            f"({parent.mode}), this one {spec.metric} ({spec.mode}): its values would mislead "
            "the model")
    finished = [t for t in trials if t.finished and is_search_trial(t)]
    fitting = [t for t in finished if fits_space(spec, t.config)
               and (only is None or t.number in only)]
    return len(finished), [t.number for t in fitting], [
        _observation(t, -1 - i, parent.metric, parent.constraints)
        for i, t in enumerate(fitting)]


def _observation(trial: TrialRecord, number: int, metric: str,
                 constraints: Sequence[Constraint]) -> Observation:
    """A finished trial as its searcher saw it live (core.judging.searcher_value)."""
    return Observation(number, trial.config, searcher_value(trial, constraints), trial.state,
                       curve=trial.curve(metric), final_metrics=trial.final_metrics)


def _warm_start(spec: StudySpec, study: StudyRecord, store: Store, searcher: Searcher
                ) -> StudyRecord:
    """Feed the warm-start study's trials to ``searcher`` and record which were used. A resume
    feeds the trials chosen the first time, so the searcher proposes as it would have; if that
    study is gone by then, the resume goes on without it (a warning says so)."""
    recorded = study.provenance.get("warm_start")
    only = recorded.get("numbers") if recorded else None
    try:
        finished, numbers, observations = _warm_start_trials(spec, store, study.owner, only)
    except NotFoundError:
        if recorded is None:
            raise
        logging.getLogger(__name__).warning(
            "warm_start.study %r is no longer in the store: resuming without it",
            spec.warm_start)
        record = {**recorded, "used_on_resume": 0}
        return store.update_study(study.name,
                                  provenance={**study.provenance, "warm_start": record})
    used = searcher.warm_start(observations)
    record = {"study": spec.warm_start, "finished_trials": finished,
              "fitting_trials": len(observations), "used": used, "numbers": numbers}
    return store.update_study(study.name, provenance={**study.provenance, "warm_start": record})


def _repeat_plan(spec: StudySpec, store: Store, name: str, searcher: Searcher,
                 noise: Noise | None) -> list[Proposal]:
    """The seed repeats to run, once every search trial has finished (none before)."""
    if noise is None:
        return []
    trials = store.get_trials(name)
    done = {t.number for t in trials if t.finished}
    if not all(n in done for n in range(searcher.total_trials)):
        return []
    return plan_repeats(spec, noise, searcher.arms, trials, searcher.total_trials)


def _fit(spec: StudySpec, study: StudyRecord, store: Store, searcher: Searcher,
         pending: list[int], history: list[Observation], progress: Progress,
         options: RunOptions, time_limit_s: float | None, trackers: Tracker | None = None, *,
         search_paths: Sequence[str], oom_retries: list[int] | None = None,
         then: Callable[[Any], Stage | None] | None = None) -> Any:
    """One Ray Tune run of ``searcher``'s ``pending`` trials (and of the stage ``then`` gives,
    asked with the run's store callback, after them: see
    :class:`~searchsvc.driver.tune_search.StudySearch`); returns its store callback once the
    run has ended."""
    with named_shadowing(search_paths):
        from ray import tune

        from searchsvc.driver import raycompat
        from searchsvc.driver.callbacks import StoreCallback
        from searchsvc.driver.schedulers import StudyStopping, create_scheduler
        from searchsvc.driver.settings import trial_settings
        from searchsvc.driver.tune_search import StudySearch

    schedule = searcher.schedule()
    settings = trial_settings(
        spec, search_paths=search_paths, launch=launch_of(study),
        # PBT copies checkpoints between trials, so its objectives must save them.
        keep_checkpoints=spec.checkpoints.keep_best is not None
        or isinstance(schedule, PopulationSchedule))
    results_dir = Path(study.results_dir or searchsvc_home() / "results" / spec.name)
    run_name = f"run-{time.strftime('%Y%m%d-%H%M%S')}"
    storage = (results_dir / "ray").resolve()
    callback = StoreCallback(
        store, study, searcher, progress, trial_timeout_s=spec.budget.trial_timeout_s,
        trackers=trackers, fail_fast=spec.budget.fail_fast,
        produced=any(t.state in USABLE_STATES for t in store.get_trials(study.name)),
        oom_retries=oom_retries, resources=spec.resources)
    scheduler = create_scheduler(schedule, spec, callback)
    if isinstance(scheduler, StudyStopping):  # earlier runs' results fill each arm's state
        for observation in history:
            scheduler.restore_trial(observation.number, dict(observation.config),
                              list(observation.curve))
    tuner = tune.Tuner(
        _trainable(spec, settings, storage / run_name),
        tune_config=tune.TuneConfig(
            search_alg=StudySearch(searcher, pending, spec.metric, spec.mode,
                                   then=_next_stage(then, callback, progress)),
            scheduler=scheduler,
            num_samples=-1,  # StudySearch says when the study's trials are all done
            max_concurrent_trials=_concurrent_trials(spec),
            # A data-parallel trial's launcher holds nothing worth reusing; it must exit cleanly.
            reuse_actors=not spec.resources.data_parallel,
            time_budget_s=time_limit_s,
            trial_dirname_creator=_trial_dirname,
            trial_name_creator=_trial_dirname,
        ),
        run_config=_run_config(spec, run_name, storage, callback),
    )
    progress.start(_repeats_note(len(pending)) if isinstance(searcher, RepeatSearcher) else None)
    raycompat.tag_callbacks_without_integrations()
    raycompat.start_unresettable_trials_afresh()
    tuner.fit()
    if spec.resources.data_parallel:
        _wait_for_training_runs(spec.name, progress)
    return callback


def _run_config(spec: StudySpec, run_name: str, storage: Path, callback: Any) -> Any:
    """Ray Tune's run settings: where it keeps the run, the study's stop rule, its callback,
    checkpoints kept and retries."""
    from ray import tune

    from searchsvc.driver.callbacks import StudyStopper

    keep = spec.checkpoints.keep_best
    return tune.RunConfig(
        name=run_name,
        storage_path=str(storage),
        stop=StudyStopper(tuple(o.name for o in spec.objectives), spec.budget.max_steps,
                          callback),
        callbacks=[callback],
        verbose=0,
        log_to_file=True,
        # What a trial writes to sdk.trial_dir() is copied into the study's results
        # (from whichever node ran it) as it reports and when it ends.
        sync_config=tune.SyncConfig(sync_artifacts=True),
        checkpoint_config=tune.CheckpointConfig(
            num_to_keep=keep, checkpoint_score_attribute=spec.metric if keep else None,
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
            progress.note(_repeats_note(len(stage[1])))
        return stage
    return next_stage


def _repeats_note(count: int) -> str:
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


def _trial_dirname(trial: Any) -> str:
    return f"trial_{int(trial.config[META_KEY]['number']):05d}"


STOPPED_BY_CTRL_C = "stopped by Ctrl-C"


class _CtrlC:
    """First Ctrl-C: stop gracefully (running trials are marked interrupted, the study stays
    resumable). Second Ctrl-C: abort at once."""

    def __init__(self) -> None:
        self.pressed = False

    @contextmanager
    def graceful(self) -> Iterator[None]:
        import threading

        if threading.current_thread() is not threading.main_thread():
            yield
            return
        previous = signal.getsignal(signal.SIGINT)

        def handler(signum: int, frame: Any) -> None:
            if self.pressed:
                raise KeyboardInterrupt
            self.pressed = True
            # Ray Tune ends a run gracefully on SIGUSR1 (its own SIGINT handler is disabled).
            os.kill(os.getpid(), signal.SIGUSR1)

        signal.signal(signal.SIGINT, handler)
        try:
            yield
        finally:
            signal.signal(signal.SIGINT, previous)


@contextmanager
def _ray_session(spec: StudySpec, options: RunOptions, code: str | None,
                 search_paths: Sequence[str]) -> Iterator[None]:
    """Use the Ray already initialised in this process, else start or attach one for the run.
    ``code``: the study's code bundle, every worker's working directory (and import path);
    ``search_paths``: where its objective is imported from (attached to a cluster without
    ``code``, the objective's top-level package is shipped to the workers from there)."""
    import ray

    from searchsvc.driver.capacity import check_capacity

    if options.address and options.address.strip().lower().startswith("ray://"):
        raise RunnerError(
            f"--address {options.address}: Ray Client (ray://) is not supported: Tune would run "
            "away from the process that records the trials. Run the driver on a node of the "
            "cluster (the head, `ray job submit`, or after `ray start --address=HOST:PORT`) "
            "and give --address HOST:PORT or auto")
    if ray.is_initialized():
        check_capacity(spec)
        yield
        return
    kwargs: dict[str, Any] = {"logging_level": logging.ERROR,
                              "log_to_driver": options.verbose}
    runtime_env: dict[str, Any] = {"working_dir": code} if code else {}
    if options.address:
        root = module_root(spec.objective, search_paths)
        if root is not None and code is None:
            runtime_env["py_modules"] = [str(root)]
        kwargs["address"] = options.address
    if runtime_env:
        kwargs["runtime_env"] = runtime_env
    if not options.address:
        # "local": embedded even when `ray start` left a cluster's address on this machine.
        kwargs.update(address="local", num_cpus=options.num_cpus, num_gpus=options.num_gpus,
                      include_dashboard=False)
    try:
        _init_ray(kwargs, embedded=not options.address)
    except Exception as exc:
        where = f"at {options.address}" if options.address else "locally"
        hint = (" If the cluster uses token authentication (Ray's default since 2.60), give "
                "this process its token: RAY_AUTH_MODE=token and RAY_AUTH_TOKEN (or "
                "RAY_AUTH_TOKEN_PATH, default ~/.ray/auth_token)." if options.address else "")
        raise RunnerError(
            f"could not start Ray {where}: {type(exc).__name__}: {exc}.{hint}") from None
    try:
        check_capacity(spec)  # before any task waits for resources that never come
        yield
    finally:
        from searchsvc.driver.shutdown import shutdown_ray

        shutdown_ray()


# What Ray raises when a node it started did not register within its fixed 30 s: on a machine
# whose cores are all busy (other studies, a test suite), a start that would succeed a moment
# later.
_SLOW_NODE_START = "timed out during startup"


def _init_ray(kwargs: dict[str, Any], *, embedded: bool) -> None:
    """``ray.init(**kwargs)``; an embedded Ray that timed out starting is stopped and started
    once more, with a line saying why (an attached cluster's failure is reported at once)."""
    import ray

    with embedded_node_settings(embedded):
        try:
            ray.init(**kwargs)
        except Exception as exc:
            if not embedded or _SLOW_NODE_START not in str(exc):
                raise
            from searchsvc.driver.shutdown import shutdown_ray

            shutdown_ray()  # the half-started node's processes
            print(f"searchsvc: Ray's node did not start in time ({exc}); the machine may be "
                  "busy, starting it once more", file=sys.stderr)
            ray.init(**kwargs)


# Ray starts a worker process per CPU as soon as a driver connects, in the job's default
# environment: a study with a code folder (a service's uploaded code, a cluster's working
# directory) never uses them, and one without starts its trials' workers as fast on demand.
# Each is a Python process importing Ray (about 2 CPU-seconds) on a machine the study needs.
EMBEDDED_NODE_ENV = {"RAY_prestart_worker_first_driver": "0"}


@contextmanager
def embedded_node_settings(embedded: bool) -> Iterator[None]:
    """Within: the environment an embedded Ray node starts with (EMBEDDED_NODE_ENV, where the
    user has not set the variable); the caller's own environment is left as it was."""
    added = {k: v for k, v in EMBEDDED_NODE_ENV.items() if embedded and k not in os.environ}
    os.environ.update(added)
    try:
        yield
    finally:
        for key in added:
            os.environ.pop(key, None)


def _driver_info() -> dict[str, Any]:
    return {"host": socket.gethostname(), "pid": os.getpid(), "since": time.time()}


def _claim(study: StudyRecord, store: Store) -> None:
    """Refuse to drive a study another live process is driving; a dead driver's claim lapses."""
    driver = study.driver or {}
    if study.state != StudyState.RUNNING or not driver:
        return
    if driver.get("host") == socket.gethostname() and driver.get("pid") != os.getpid():
        try:
            os.kill(int(driver["pid"]), 0)
        except (ProcessLookupError, ValueError, TypeError):
            return
        except PermissionError:
            pass
        raise ConflictError(f"study {study.name!r} is being run by process {driver['pid']} on "
                            f"this host; wait for it or stop it first")
    if driver.get("host") != socket.gethostname():
        raise ConflictError(f"study {study.name!r} is marked as running on host "
                            f"{driver.get('host')} (pid {driver.get('pid')}); resume it there")
