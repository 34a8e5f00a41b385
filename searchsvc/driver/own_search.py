"""Runs a study whose backend runs its own search (``Backend.runs_own_search``, e.g.
``autokeras``): the whole search in one Ray task (with the study's per-trial resources, a GPU
when given), its trials streamed back through a Ray queue and written to the store as each one
ends. A resumed study continues the backend's own project folder, so finished trials are
neither lost nor run again."""

from __future__ import annotations

import socket
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from searchsvc.backends.base import Backend, SearchedTrial
from searchsvc.core import StudyRecord, final_metrics, is_finite_number
from searchsvc.core.failures import is_out_of_memory
from searchsvc.core.judging import TrialEnd, trial_outcome
from searchsvc.driver.progress import Progress
from searchsvc.driver.settings import trial_settings
from searchsvc.errors import ObjectiveError
from searchsvc.provenance import launch_of
from searchsvc.spec import StudySpec
from searchsvc.startup import collect_as_usual
from searchsvc.store import Store, searchsvc_home
from searchsvc.worker.objective import resolve_objective
from searchsvc.worker.workdir import working_directory


def run_own_search(backend: type[Backend], spec: StudySpec, study: StudyRecord, store: Store,
                   progress: Progress, finished: set[int], search_paths: Sequence[str]) -> bool:
    """Run the search to its end; True when the backend finished it (all its trials stored).
    ``search_paths``: where the objective is imported from (the run's)."""
    import ray
    from ray.util.queue import Empty, Queue

    folder = Path(study.results_dir or searchsvc_home() / "results" / spec.name).resolve()
    directory = folder / backend.name
    resume = (directory / "search").exists()
    queue = Queue()
    # Any: Ray's annotations type remote functions of at most 10 arguments; _search takes 11.
    remote: Any = ray.remote(num_cpus=spec.resources.cpu, num_gpus=spec.resources.gpu or 0)
    task = remote(_search)
    settings = trial_settings(spec, search_paths=search_paths, launch=launch_of(study))
    ref = task.remote(backend, spec.objective, list(settings.search_paths),
                      dict(spec.backend_options), spec.metric, spec.budget.trials,
                      spec.budget.max_steps, spec.seed, directory, resume, queue,
                      settings.workdir)
    progress.start()

    def drain() -> None:
        while True:
            try:
                trial, node = queue.get_nowait()
            except Empty:
                return
            if trial.number not in finished:
                _store_trial(spec, study, store, progress, trial, node)
                finished.add(trial.number)

    try:
        while not ray.wait([ref], timeout=0.5)[0]:
            drain()
        drain()
        try:
            best = ray.get(ref)
        except ray.exceptions.RayTaskError as exc:
            raise ObjectiveError(f"the {backend.name} search failed: {exc.cause!r}") from None
    except KeyboardInterrupt:
        ray.cancel(ref, force=True)
        raise
    store.update_study(spec.name, provenance={**study.provenance, "best_model": best})
    return True


def _search(backend: type[Backend], objective: str, search_paths: list[str],
            options: dict[str, Any], metric: str, max_trials: int, epochs: int, seed: int,
            directory: Path, resume: bool, queue: Any, workdir: str | None) -> str:
    """Inside the Ray task, in the study's working directory (worker/workdir.py): run the
    search, sending every finished trial to ``queue``."""
    import ray

    node = f"{socket.gethostname()} node {ray.get_runtime_context().get_node_id()}"
    directory.mkdir(parents=True, exist_ok=True)

    def built() -> Any:
        model = resolve_objective(objective, search_paths)()
        collect_as_usual()  # the search's imports are done: its training collects as anywhere
        return model

    with working_directory(workdir):
        path = backend.own_search(
            built, options, metric=metric,
            max_trials=max_trials, epochs=epochs, seed=seed, directory=directory,
            resume=resume, sink=lambda trial: queue.put((trial, node)))
    return str(path)


def searched_trial_end(spec: StudySpec, trial: SearchedTrial) -> TrialEnd:
    """What a backend's own search reported of one trial, as the outcome rule reads it (the
    same rule a Ray Tune trial is judged by): its final metrics, the first objective that went
    NaN/inf, its error, the study's constraints."""
    objectives = tuple(o.name for o in spec.objectives)
    non_finite = next(((name, step) for step, logs in enumerate(trial.epochs, 1)
                       for name in objectives
                       if isinstance(logs.get(name), int | float)
                       and not is_finite_number(logs.get(name))), None)
    error = None if trial.completed else (
        trial.error or f"the {spec.backend} search reported the trial as not completed")
    return TrialEnd(objectives, final_metrics(trial.epochs),
                    {name for logs in trial.epochs for name in logs}, error=error,
                    out_of_memory=error is not None and is_out_of_memory(error),
                    non_finite=non_finite, constraints=spec.constraints)


def _store_trial(spec: StudySpec, study: StudyRecord, store: Store, progress: Progress,
                 trial: SearchedTrial, node: str) -> None:
    record = store.start_trial(study.id, number=trial.number, config=trial.config, arm={},
                               seed=spec.seed, node=node)
    progress.trial_started(trial.number)
    rows = [(step, logs.get(spec.metric), logs) for step, logs in enumerate(trial.epochs, 1)]
    end = searched_trial_end(spec, trial)
    outcome = trial_outcome(end)

    def finish() -> None:  # its results and its end, together
        if rows:
            store.record_measurements(record.id, record.attempts, spec.mode, rows)
        store.finish_trial(record.id, outcome.state, error=outcome.error,
                           final_metrics=end.final_metrics)

    store.atomically(finish)
    for _, value, _ in rows:
        progress.trial_result(trial.number, value if is_finite_number(value) else None)
    progress.trial_finished(trial.number, outcome.state, final_metrics=end.final_metrics)
