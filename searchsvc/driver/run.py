"""Runs a study on Ray Tune: create or resume it in the store, start/attach Ray, run the
pending trials (the search's, then its seed repeats), and leave the store telling exactly what
happened.

The steps live beside it: the study's record and claim (:mod:`.study`), the warm start
(:mod:`.warm_start`), the Ray session (:mod:`.session`), one Ray Tune run (:mod:`.tune_run`)
and Ctrl-C (:mod:`.interrupts`). The names the rest of searchsvc imports from here
(``RunOptions``, ``RunOutcome``, ``create_study``, ``run_study``, ``results_dir_of``,
``STOPPED_BY_CTRL_C``, ``embedded_node_settings``) stay importable from this module."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from searchsvc.backends import Backend, backend_class
from searchsvc.core import StudyRecord, StudyState, TrialRecord
from searchsvc.core.judging import (
    FAILURE_KEY,
    count_line,
    is_search_trial,
    study_counts,
    study_end,
)
from searchsvc.driver.interrupts import STOPPED_BY_CTRL_C, CtrlC
from searchsvc.driver.outages import watch_outages
from searchsvc.driver.progress import Progress
from searchsvc.driver.restore import restore_points
from searchsvc.driver.session import embedded_node_settings, ray_session
from searchsvc.driver.study import claim, create_study, driver_info, results_dir_of
from searchsvc.driver.tune_run import fit
from searchsvc.driver.warm_start import observation, warm_start
from searchsvc.options import RunOptions
from searchsvc.provenance import code_path, objective_paths_of
from searchsvc.searchers import Observation, Searcher
from searchsvc.searchers.base import Proposal
from searchsvc.searchers.repeats import (
    RepeatSearcher,
    plan_repeats,
    planned_repeats,
    repeat_settings,
)
from searchsvc.spec import Noise, StudySpec, spec_of
from searchsvc.store import Store
from searchsvc.tracking import Tracker, Trackers, open_trackers

if TYPE_CHECKING:
    from searchsvc.driver.tune_search import Stage


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
    ctrl_c: CtrlC = field(default_factory=CtrlC)
    callback: Any = None
    searched_all: bool = False  # a backend running its own search decides its trial count
    # interrupted trials that restart from their checkpoint: number -> (folder, step)
    restore_points: dict[int, tuple[str, int]] = field(default_factory=dict)
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
    claim(study, store)
    spec = spec or spec_of(study)
    store.interrupt_running_trials(study.id)  # left over from a driver that died
    trials = store.get_trials(name, measurements=True)
    backend = backend_class(spec.backend)
    noise = repeat_settings(spec, searcher, backend.runs_own_search)
    # As the live study told its searcher: a value only for trials that ended with one.
    # Repeats are not the searcher's proposals: it never sees them.
    history = [observation(t, t.number, study.metric, spec.constraints) for t in trials
               if t.finished and is_search_trial(t)]
    if spec.warm_start:
        study = warm_start(spec, study, store, searcher)
    for told in history:
        searcher.observe(told)
    progress = Progress(study.name, searcher.total_trials, study.metric, study.mode,
                        repeats=planned_repeats(noise, len(searcher.arms)), history=trials,
                        constraints=spec.constraints, stream=options.progress_stream,
                        live=options.live_progress)
    study = store.update_study(name, state=StudyState.RUNNING, started_at=study.started_at or
                               time.time(), driver=driver_info())
    return _Run(store, options, spec, searcher, study, trials,
                {t.number for t in trials if t.finished}, backend, noise, history, progress,
                _start_tracking(spec, study, trials, progress, trackers), trackers is None,
                objective_paths_of(study), restore_points=restore_points(store, name, trials))


def _execute(run: _Run) -> None:
    """Run the trials left (the search's, then the seed repeats), on Ray only when some are
    left; whatever stops it, trials still running are recorded as interrupted."""
    pending = run.pending
    needs_ray = bool(pending) or any(p.number not in run.finished for p in run.repeats())
    stop_watching = watch_outages(run.store, run.study.id, run.progress)
    try:
        if pending and run.backend.runs_own_search:
            from searchsvc.driver.own_search import run_own_search

            with ray_session(run.spec, run.options, code=code_path(run.study),
                             search_paths=run.search_paths):
                run.searched_all = run_own_search(run.backend, run.spec, run.study, run.store,
                                                  run.progress, run.finished, run.search_paths)
            # no per-trial calls: the trackers catch up from the store
            run.trackers.sync(run.store.get_trials(run.name, measurements=True))
        elif needs_ray:
            with ray_session(run.spec, run.options, code=code_path(run.study),
                             search_paths=run.search_paths), \
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
        run.callback = fit(run.spec, run.study, run.store, run.searcher, pending, run.history,
                            run.progress, run.options, run.spec.budget.time_limit_s,
                            run.trackers, search_paths=run.search_paths, then=then,
                            restore_points=run.restore_points)
        if then is not None:
            return  # the repeats, if any were due, ran as the search's next stage
    todo = run.repeats_due(run.callback)
    if todo:
        run.callback = fit(spec, run.study, run.store, RepeatSearcher(spec, run.repeats()),
                            todo, [], run.progress, run.options, run.time_left(),
                            run.trackers, search_paths=run.search_paths,
                            restore_points=run.restore_points)


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

    def fit_one(spec: StudySpec, numbers: list[int], searcher: Searcher,
                oom_retries: list[int] | None) -> Any:
        return fit(spec, run.study, run.store, searcher, numbers, run.history, run.progress,
                    run.options, run.time_left(), run.trackers, search_paths=run.search_paths,
                    oom_retries=oom_retries)

    gpus = float(ray.cluster_resources().get("GPU", 1.0))
    return run_auto(run.spec, run.study, run.store, run.searcher, pending, fit_one, gpus)


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




__all__ = ["STOPPED_BY_CTRL_C", "RunOptions", "RunOutcome", "create_study",
           "embedded_node_settings", "results_dir_of", "run_study"]
