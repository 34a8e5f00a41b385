"""MLflow tracking: a parent run per study and a nested run per trial, through
:class:`mlflow.tracking.MlflowClient` with explicit run ids (never the fluent API's
process-global active run).

What lands where:

- the **parent run** (named after the study, tagged ``searchsvc.kind=study`` and
  ``searchsvc.study_key``): the study's searcher, metric, mode, seed and objective as params,
  each parameter's role as a ``searchsvc.role.<name>`` tag, and at the end the best value, the
  trial counts, and the report files as artifacts under ``report/``;
- a **run per trial** (nested: ``mlflow.parentRunId``): the trial's config as params; tags
  ``searchsvc.trial_number``, ``searchsvc.attempt``, ``searchsvc.seed``, ``searchsvc.state``,
  ``searchsvc.repeat_of``, ``searchsvc.arm.<name>`` for each scientific value; every numeric
  metric of every step with ``step=``; its end state (completed and pruned: FINISHED, failed and
  infeasible: FAILED, interrupted: KILLED).

Resuming never duplicates: the runs are found again by their tags (``MlflowClient.search_runs``)
and ``searchsvc.logged_step``, written in the same batch as the metrics, says how far a run got
(for a run left unfinished, its metrics' own last step, should the tag have been left behind).
A trial that runs again as a new attempt (it was interrupted) gets a new run and its earlier
attempt's run is deleted (MLflow keeps deleted runs restorable until ``mlflow gc``), so the
experiment holds one live run per trial whose history is that of the attempt the store kept.
"""

from __future__ import annotations

import logging
import os
import posixpath
import re
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import Field

from searchsvc.core import Measurement, StudyRecord, StudyState, TrialRecord, TrialState
from searchsvc.core.urls import dialect, sqlite_file
from searchsvc.spec import StudySpec
from searchsvc.tracking.base import (
    ReportFolder,
    Tracker,
    TrackerOptions,
    latest_attempt,
    step_scalars,
    study_key,
)

if TYPE_CHECKING:
    from mlflow.tracking import MlflowClient

# MLflow retries an unreachable server for minutes by default (7 retries with exponential
# backoff, 120 s timeouts). A tracker must not hold the study up: these bound each request to
# about 3 s when the server refuses connections, about 30 s when it never answers; the tracker
# is then disabled. Set only for the tracker's own calls, and only where the user has not set
# them.
HTTP_LIMITS = {
    "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "2",
    "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1",
    "MLFLOW_HTTP_REQUEST_TIMEOUT": "10",
}

# MLflow's limits on one log_batch call and on values.
MAX_METRICS_PER_BATCH = 1000
MAX_PARAMS_TAGS_PER_BATCH = 100
MAX_PARAM_LENGTH = 6000
MAX_TAG_LENGTH = 5000
MAX_KEY_LENGTH = 250

TAG = "searchsvc."
RUN_STATUS = {
    TrialState.COMPLETED: "FINISHED", TrialState.PRUNED: "FINISHED", TrialState.FAILED: "FAILED",
    TrialState.INFEASIBLE: "FAILED", TrialState.INTERRUPTED: "KILLED",
}
TERMINATED = frozenset({"FINISHED", "FAILED", "KILLED"})


def default_tracking_uri(results_dir: Path) -> str:
    """A SQLite store in the study's results folder (MLflow's recommended local store; its
    file store is deprecated)."""
    return f"sqlite:///{(results_dir / 'mlflow.db').resolve()}"


@contextmanager
def bounded_http() -> Iterator[None]:
    """Bound MLflow's HTTP retries and timeouts (:data:`HTTP_LIMITS`) for the calls inside."""
    added = [k for k in HTTP_LIMITS if k not in os.environ]
    for key in added:
        os.environ[key] = HTTP_LIMITS[key]
    try:
        yield
    finally:
        for key in added:
            os.environ.pop(key, None)


def metric_key(name: str) -> str:
    """``name`` as a valid MLflow metric or param key (letters, digits, ``_ - . / : space``)."""
    key = re.sub(r"[^/\w.\- :]", "_", name)[:MAX_KEY_LENGTH] or "_"
    norm = posixpath.normpath(key)
    if norm != key or norm in (".", "..") or norm.startswith(("..", "/")):
        key = key.replace("/", "_")
        key = "_" + key if key.startswith(".") else key
    return key


class MlflowOptions(TrackerOptions):
    """Log the study to MLflow: a parent run per study, a nested run per trial."""

    tracking_uri: str | None = Field(None, min_length=1, description=(
        "MLflow tracking URI: a server (http://host:5000) or a database "
        "(sqlite:///path/mlflow.db). Default: sqlite:///<results folder>/mlflow.db."))
    experiment: str | None = Field(None, min_length=1,
                                   description="MLflow experiment. Default: the study name.")


DATABASES = ("sqlite", "postgresql", "mysql", "mssql")  # MLflow's SQLAlchemy stores


@dataclass
class _Run:
    run_id: str
    attempt: int
    logged_step: int = -1  # steps up to here are in MLflow
    status: str = "RUNNING"


class MlflowTracker(Tracker):
    """Logs a study to MLflow (module docstring). ``tracking_uri``: where (a database URI or a
    server); ``experiment``: the experiment's name; ``artifact_root``: where a new experiment
    keeps its artifacts when the store is a local database (None: the server decides)."""

    name = "mlflow"
    summary = "MLflow runs: a parent run per study, a nested run per trial"
    Options = MlflowOptions

    @classmethod
    def for_study(cls, settings: MlflowOptions, spec: StudySpec,
                  results_dir: Path) -> MlflowTracker:
        uri = settings.tracking_uri or default_tracking_uri(results_dir)
        # A new experiment in a database keeps its artifacts beside the SQLite file or in the
        # results folder (MLflow's default is ./mlruns under the current folder); a server (or
        # any other store) decides for itself.
        artifacts = None
        if dialect(uri) in DATABASES:
            artifacts = (sqlite_folder(uri) or results_dir) / "mlartifacts"
        return cls(uri, settings.experiment or spec.name, artifacts)

    def __init__(self, tracking_uri: str, experiment: str, artifact_root: Path | None = None):
        self.tracking_uri, self.experiment, self.artifact_root = (tracking_uri, experiment,
                                                                  artifact_root)
        self._client: MlflowClient | None = None
        self.experiment_id: str | None = None
        self.parent_id: str | None = None
        self.key = ""
        self.study_name = ""
        self.scientific: tuple[str, ...] = ()
        self.runs: dict[int, _Run] = {}

    @property
    def client(self) -> MlflowClient:
        if self._client is None:
            raise RuntimeError("the MLflow tracker was used before study_started")
        return self._client

    # -- study ---------------------------------------------------------------------------------

    def study_started(self, study: StudyRecord, spec: StudySpec,
                      trials: Sequence[TrialRecord]) -> None:
        from mlflow.tracking import MlflowClient

        # MLflow announces each database migration and each ended run at INFO level (its
        # import sets its logger's level: quieted after it).
        logging.getLogger("mlflow").setLevel(logging.WARNING)
        logging.getLogger("alembic").setLevel(logging.WARNING)

        self.key, self.study_name = study_key(study), study.name
        self.scientific = tuple(p.name for p in spec.scientific)
        create_sqlite_whole(self.tracking_uri, self.artifact_root)
        with bounded_http():
            self._client = MlflowClient(tracking_uri=self.tracking_uri)
            self.experiment_id = self._experiment()
            self.parent_id = self._parent(study, spec)
            self.runs = self._trial_runs()
        self.sync(trials)

    def _experiment(self) -> str:
        client = self.client
        found = client.get_experiment_by_name(self.experiment)
        if found is None:
            location = self.artifact_root.resolve().as_uri() if self.artifact_root else None
            return str(client.create_experiment(self.experiment, artifact_location=location))
        if found.lifecycle_stage == "deleted":
            client.restore_experiment(found.experiment_id)
        return str(found.experiment_id)

    def _search(self, filter_string: str) -> list[Any]:
        runs: list[Any] = []
        token = None
        while True:
            page = self.client.search_runs([self.experiment_id or ""], filter_string,
                                           max_results=1000, page_token=token)
            runs.extend(page)
            token = page.token
            if not token:
                return runs

    def _parent(self, study: StudyRecord, spec: StudySpec) -> str:
        """The study's parent run: the one a previous run of this study made, else a new one."""
        found = self._search(f"tags.`{TAG}study_key` = '{self.key}' and "
                             f"tags.`{TAG}kind` = 'study'")
        if found:
            found.sort(key=lambda r: r.info.start_time or 0)
            run_id = str(found[0].info.run_id)
            if found[0].info.status != "RUNNING":
                self.client.update_run(run_id, status="RUNNING")
            return run_id
        tags = {f"{TAG}kind": "study", f"{TAG}study": study.name, f"{TAG}study_key": self.key,
                **{_tag(f"role.{p.name}"): p.role for p in spec.parameters.values()}}
        if spec.description:
            tags["mlflow.note.content"] = spec.description[:MAX_TAG_LENGTH]
        run = self.client.create_run(self.experiment_id or "", run_name=study.name, tags=tags,
                                     start_time=_ms(study.started_at or time.time()))
        params = {"searcher": spec.searcher, "metric": spec.metric, "mode": spec.mode,
                  "seed": spec.seed, "objective": spec.objective, "backend": spec.backend}
        self._log(run.info.run_id, params=params)
        return str(run.info.run_id)

    def _trial_runs(self) -> dict[int, _Run]:
        """The trial runs already under the parent run, one per trial number (a leftover
        duplicate, which only a crash between two calls could leave, is deleted)."""
        found: dict[int, list[Any]] = {}
        for run in self._search(f"tags.`mlflow.parentRunId` = '{self.parent_id}'"):
            tags = run.data.tags
            if tags.get(f"{TAG}kind") != "trial" or f"{TAG}trial_number" not in tags:
                continue
            found.setdefault(int(tags[f"{TAG}trial_number"]), []).append(run)
        runs = {}
        for number, candidates in found.items():
            candidates.sort(key=lambda r: (int(r.data.tags.get(f"{TAG}attempt", 1)),
                                           r.info.start_time or 0))
            *stale, kept = candidates
            for run in stale:
                self.client.delete_run(run.info.run_id)
            tags = kept.data.tags
            logged = int(tags.get(f"{TAG}logged_step", -1))
            if kept.info.status not in TERMINATED:
                logged = max(logged, self._last_step(kept))
            runs[number] = _Run(kept.info.run_id, int(tags.get(f"{TAG}attempt", 1)), logged,
                                kept.info.status)
        return runs

    def _last_step(self, run: Any) -> int:
        """The last step a live run's metrics reached. MLflow's SQL store commits a batch's
        metrics before its tags, so a driver killed between the two leaves
        ``searchsvc.logged_step`` behind the metrics; going by the tag alone, the resume would
        log those steps again."""
        steps = [m.step for key in run.data.metrics
                 for m in self.client.get_metric_history(run.info.run_id, key)]
        return max(steps, default=-1)

    def sync(self, trials: Sequence[TrialRecord]) -> None:
        """Each trial's run level with the store: made if missing (or of an earlier attempt),
        given the steps it misses, ended if the trial ended."""
        with bounded_http():
            for trial in sorted(trials, key=lambda t: t.number):
                run = self._run_for(trial)
                self._log_steps(trial.number, run, latest_attempt(trial))
                if ((trial.finished or trial.state == TrialState.INTERRUPTED)
                        and run.status not in TERMINATED):
                    self._end(trial, run)

    def study_finished(self, study: StudyRecord, report: ReportFolder | None) -> None:
        if self.parent_id is None:
            return
        with bounded_http():
            # The study's counts and best by core.judging, as the store gives them: search
            # trials by state, seed repeats apart.
            metrics = {f"trials_{state}": float(count)
                       for state, count in study.trial_counts.items()}
            if study.repeat_counts:
                metrics["seed_repeats"] = float(study.counts.repeats_total)
            if study.best_value is not None:
                metrics[f"best_{study.metric}"] = study.best_value
            self._log(self.parent_id, metrics=[_metric(k, v, _ms(time.time()), 0)
                                               for k, v in metrics.items()])
            for path in report.paths if report else ():
                if path.is_dir():
                    self.client.log_artifacts(self.parent_id, str(path), f"report/{path.name}")
                elif path.is_file():
                    self.client.log_artifact(self.parent_id, str(path), "report")
            self.client.set_terminated(
                self.parent_id, {StudyState.COMPLETED: "FINISHED", StudyState.FAILED: "FAILED"}.get(
                    study.state, "KILLED"),
                end_time=_ms(study.finished_at or time.time()))

    # -- trials --------------------------------------------------------------------------------

    def trial_started(self, trial: TrialRecord) -> None:
        with bounded_http():
            self._run_for(trial)

    def measurements(self, trial: TrialRecord, items: Sequence[Measurement]) -> None:
        with bounded_http():
            self._log_steps(trial.number, self._run_for(trial), items, redo=True)

    def trial_finished(self, trial: TrialRecord) -> None:
        with bounded_http():
            self._end(trial, self._run_for(trial))

    def _run_for(self, trial: TrialRecord) -> _Run:
        """The run of the trial's current attempt: the one known, or a new one (replacing an
        earlier attempt's)."""
        run = self.runs.get(trial.number)
        if run is not None and run.attempt == trial.attempts:
            return run
        if run is not None:
            self.client.delete_run(run.run_id)
        tags = {
            "mlflow.parentRunId": self.parent_id or "", f"{TAG}kind": "trial",
            f"{TAG}study": self.study_name, f"{TAG}study_key": self.key,
            f"{TAG}trial_number": str(trial.number), f"{TAG}attempt": str(trial.attempts),
            f"{TAG}seed": str(trial.seed), f"{TAG}state": str(trial.state),
            f"{TAG}logged_step": "-1",
        }
        if trial.repeat_of is not None:
            tags[f"{TAG}repeat_of"] = str(trial.repeat_of)
        arm = {k: trial.arm[k] for k in self.scientific if k in trial.arm} or dict(trial.arm)
        if arm:
            tags[f"{TAG}arm"] = ", ".join(f"{k}={v}" for k, v in arm.items())[:MAX_TAG_LENGTH]
            tags.update({_tag(f"arm.{k}"): str(v)[:MAX_TAG_LENGTH] for k, v in arm.items()})
        created = self.client.create_run(
            self.experiment_id or "", run_name=f"trial {trial.number}", tags=tags,
            start_time=_ms(trial.started_at or time.time()))
        run = _Run(created.info.run_id, trial.attempts)
        self._log(run.run_id, params=dict(trial.config))
        self.runs[trial.number] = run
        return run

    def _log_steps(self, number: int, run: _Run, items: Sequence[Measurement],
                   redo: bool = False) -> None:
        """Log the steps the run does not have yet (``redo``: also steps it has, which a retry
        from an earlier checkpoint sent again)."""
        todo = [m for m in items if redo or m.step > run.logged_step]
        if not todo:
            return
        metrics = [_metric(k, v, _ms(m.recorded_at or time.time()), m.step)
                   for m in todo for k, v in step_scalars(m).items()]
        last = max(run.logged_step, *(m.step for m in todo))
        self._log(run.run_id, metrics=metrics, tags={f"{TAG}logged_step": str(last)})
        run.logged_step = last

    def _end(self, trial: TrialRecord, run: _Run) -> None:
        status = RUN_STATUS.get(trial.state, "KILLED")
        tags = {f"{TAG}state": str(trial.state)}
        if trial.error:
            tags[f"{TAG}error"] = trial.error[-MAX_TAG_LENGTH:]
        self._log(run.run_id, tags=tags)
        self.client.set_terminated(run.run_id, status,
                                   end_time=_ms(trial.finished_at or time.time()))
        run.status = status

    # -- writing ---------------------------------------------------------------------------------

    def _log(self, run_id: str, *, metrics: Sequence[Any] = (),
             params: dict[str, Any] | None = None, tags: dict[str, str] | None = None) -> None:
        """``MlflowClient.log_batch`` in chunks within MLflow's limits: the params first, then
        the metrics, the last tags in the same call as the last metrics (so a tag saying how
        far the metrics got is written with them, in one transaction)."""
        from mlflow.entities import Param, RunTag

        param_list = [Param(metric_key(k), str(v)[:MAX_PARAM_LENGTH])
                      for k, v in (params or {}).items()]
        tag_list = [RunTag(k, v) for k, v in (tags or {}).items()]
        size = MAX_PARAMS_TAGS_PER_BATCH
        tag_chunks = [tag_list[i:i + size] for i in range(0, len(tag_list), size)] or [[]]
        metric_size = MAX_METRICS_PER_BATCH - size  # room for the tags beside them
        metric_chunks = [list(metrics[i:i + metric_size])
                         for i in range(0, len(metrics), metric_size)] or [[]]
        calls: list[tuple[list[Any], list[Any], list[Any]]] = [
            ([], param_list[i:i + size], []) for i in range(0, len(param_list), size)]
        calls += [([], [], chunk) for chunk in tag_chunks[:-1]]
        calls += [(chunk, [], []) for chunk in metric_chunks[:-1]]
        calls.append((metric_chunks[-1], [], tag_chunks[-1]))
        for chunk_metrics, chunk_params, chunk_tags in calls:
            if chunk_metrics or chunk_params or chunk_tags:
                self.client.log_batch(run_id, metrics=chunk_metrics, params=chunk_params,
                                      tags=chunk_tags, synchronous=True)


def _metric(key: str, value: float, timestamp: int, step: int) -> Any:
    from mlflow.entities import Metric

    return Metric(metric_key(key), value, timestamp, step)


def _tag(name: str) -> str:
    return metric_key(f"{TAG}{name}")


def _ms(seconds: float) -> int:
    return int(seconds * 1000)


def create_sqlite_whole(tracking_uri: str, artifact_root: Path | None) -> None:
    """Create a ``sqlite:///`` store's database, with all of MLflow's migrations, if it does not
    exist yet: in a file beside it that is renamed into place once complete.

    MLflow creates a new database by running its migrations one after another, several seconds
    of them, from the tracker's thread while trials already run. A process killed among them
    left a half-migrated file that MLflow then refuses for good ("out-of-date database
    schema"), so the resumed study could not track. The rename makes the database appear whole
    or not at all; a partial file a kill left behind is overwritten by the next creation."""
    found = sqlite_file(tracking_uri)
    if found is None:
        return
    target = found.resolve()
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.exists():
        return
    from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

    partial = target.with_name(f".{target.name}.partial")
    partial.unlink(missing_ok=True)
    root = (artifact_root or target.parent / "mlartifacts").resolve().as_uri()
    store = SqlAlchemyStore(f"sqlite:///{partial}", root)
    store.engine.dispose()
    os.replace(partial, target)


def sqlite_folder(tracking_uri: str) -> Path | None:
    """The folder of a ``sqlite:///`` store's database file (None for other stores and
    in-memory databases)."""
    found = sqlite_file(tracking_uri)
    return None if found is None else found.resolve().parent
