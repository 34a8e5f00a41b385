"""Weights & Biases tracking with the ``wandb`` library: a run per trial and one for the study,
all in one group (the study's name unless ``group`` says otherwise).

What lands where:

- a **trial's run** (named ``trial 7``, job type ``trial``): its config is the trial's
  parameters as they are, plus ``searchsvc``: the study key, trial number, attempt, seed, arm,
  the seed repeat it belongs to, and each parameter's role (``searchsvc.roles.lr =
  nuisance``); every step's numeric metrics and its telemetry (``system/step_time_s``,
  ``system/rss_mb``, ..., a data-parallel trial's other ranks under ``system/rank1/``) with
  ``step=`` the report's step; at its end the summary holds its ``state``, its final metrics
  (``final/<metric>``) and its error, and the run ends with exit code 0 (completed, pruned) or 1.
- the **study's run** (named after the study, job type ``study``): the searcher, metric, mode
  and seed in its config; at the end the trial counts and the best value in its summary and
  the report's files saved with the run.

Offline (the default) needs no network: the runs are written under ``dir``/wandb and ``wandb
sync`` uploads them later. W&B cannot resume an offline run, so a study that resumes writes a
trial that was running in a new run: the tracker reads back what its earlier runs of the study
hold (:mod:`.wandb_records`) and the new run starts after the last step written, so no step
appears twice across a trial's runs. A trial that runs again as a new attempt (it was
interrupted) replaces its earlier attempts' offline runs, which are deleted. Online, each trial's
run has an id of its own (study key, trial, attempt), resumed with ``resume="allow"``.
"""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from searchsvc.core import Measurement, StudyRecord, StudyState, TrialRecord, TrialState
from searchsvc.core.judging import USABLE_STATES
from searchsvc.spec import StudySpec
from searchsvc.tracking.base import (
    ReportFolder,
    Tracker,
    TrackerOptions,
    hparam_value,
    latest_attempt,
    numeric_metrics,
    step_scalars,
    study_key,
)
from searchsvc.tracking.wandb_records import RunFile, run_files

INIT_TIMEOUT_S = 30.0  # an unreachable server fails the tracker, which turns itself off


@dataclass
class _Run:
    handle: Any  # a wandb Run
    attempt: int
    logged_step: int  # steps up to here are in W&B (this run or an earlier one of the trial)
    folder: Path  # the run's own folder (offline-run-*)
    ended: bool = False


class WandbOptions(TrackerOptions):
    """Log the study to Weights & Biases: a run per trial and one for the study, grouped."""

    project: str | None = Field(None, min_length=1,
                                description="W&B project. Default: the study name.")
    entity: str | None = Field(None, min_length=1, description=(
        "W&B entity (user or team). Default: the logged-in user's."))
    group: str | None = Field(None, min_length=1, description=(
        "The runs' group. Default: the study name."))
    mode: Literal["online", "offline"] = Field("offline", description=(
        "offline (the default): runs are written to `dir` and need no network; `wandb sync "
        "DIR/wandb/offline-run-*` uploads them later. online: to the W&B server "
        "(WANDB_API_KEY, WANDB_BASE_URL)."))
    dir: str | None = Field(None, min_length=1, description=(
        "Where W&B writes its runs (its `wandb/` folder inside; a relative folder is taken "
        "inside the study's results folder). Default: the results folder."))


class WandbTracker(Tracker):
    """Logs a study to W&B (module docstring): ``dir`` holds W&B's ``wandb/`` folder."""

    name = "wandb"
    summary = "Weights & Biases runs: a run per trial and one for the study, grouped"
    Options = WandbOptions

    @classmethod
    def for_study(cls, settings: WandbOptions, spec: StudySpec, results_dir: Path) -> WandbTracker:
        folder = Path(settings.dir).expanduser() if settings.dir else Path(".")
        return cls(folder if folder.is_absolute() else results_dir / folder,
                   project=settings.project or spec.name, entity=settings.entity,
                   group=settings.group, mode=settings.mode)

    def __init__(self, dir: Path, *, project: str, entity: str | None = None,
                 group: str | None = None, mode: str = "offline"):
        self.dir, self.project, self.entity = dir, project, entity
        self.group, self.mode = group, mode
        self.key = ""
        self.roles: dict[str, str] = {}
        self.study_run: Any = None
        self.runs: dict[int, _Run] = {}
        self.earlier: dict[int, list[RunFile]] = {}  # offline runs of earlier drivers, by trial

    # -- study ---------------------------------------------------------------------------------

    def study_started(self, study: StudyRecord, spec: StudySpec,
                      trials: Sequence[TrialRecord]) -> None:
        self.key, self.group = study_key(study), self.group or study.name
        self.roles = {p.name: p.role for p in spec.parameters.values()}
        self.dir.mkdir(parents=True, exist_ok=True)
        self.earlier = self._earlier_runs() if self.mode == "offline" else {}
        self.study_run = self._init(
            name=study.name, job_type="study", run_id=self._id("study"),
            config={"searcher": spec.searcher, "metric": spec.metric, "mode": spec.mode,
                    "seed": spec.seed, "objective": spec.objective,
                    "searchsvc": {"kind": "study", "study_key": self.key,
                                  "roles": self.roles}})
        self.sync(trials)

    def _earlier_runs(self) -> dict[int, list[RunFile]]:
        """This study's trial runs already under ``dir`` (a resumed study's), by trial."""
        found: dict[int, list[RunFile]] = {}
        for run in run_files(self.dir):
            meta = run.config.get("searchsvc") or {}
            if meta.get("kind") == "trial" and meta.get("study_key") == self.key:
                found.setdefault(int(meta["trial_number"]), []).append(run)
        return found

    def sync(self, trials: Sequence[TrialRecord]) -> None:
        """Each trial level with the store: the steps W&B misses written (a run opened for
        them), and an ended trial's run ended."""
        for trial in sorted(trials, key=lambda t: t.number):
            done = trial.finished or trial.state == TrialState.INTERRUPTED
            known = self.runs.get(trial.number)
            if known is not None and known.attempt == trial.attempts and known.ended:
                continue
            missing = [m for m in latest_attempt(trial) if m.step > self._logged(trial)]
            if missing or not done:
                self._log_steps(self._run_for(trial), missing)
            if done and (missing or not self._ended_before(trial)):
                self._end(trial, self._run_for(trial))

    def study_finished(self, study: StudyRecord, report: ReportFolder | None) -> None:
        run = self.study_run
        if run is None:
            return
        counts = {f"trials_{state}": count for state, count in study.trial_counts.items()}
        if study.repeat_counts:
            counts["seed_repeats"] = study.counts.repeats_total
        run.summary.update({**counts, "state": str(study.state)})
        if study.best_value is not None:
            run.summary[f"best_{study.metric}"] = study.best_value
        # Files in the run's own folder are the run's files (uploaded by `wandb sync`).
        for path in report.paths if report else ():
            if path.is_file():
                shutil.copy2(path, Path(run.dir) / path.name)
            elif path.is_dir():
                shutil.copytree(path, Path(run.dir) / path.name, dirs_exist_ok=True)
        run.finish(exit_code=0 if study.state == StudyState.COMPLETED else 1)
        self.study_run = None

    # -- trials --------------------------------------------------------------------------------

    def trial_started(self, trial: TrialRecord) -> None:
        self._run_for(trial)

    def measurements(self, trial: TrialRecord, items: Sequence[Measurement]) -> None:
        run = self._run_for(trial)
        # W&B keeps one value a step: a retry redoing steps from an earlier checkpoint has
        # already been logged up to its last step, and those steps are not logged again.
        self._log_steps(run, [m for m in items if m.step > run.logged_step])

    def trial_finished(self, trial: TrialRecord) -> None:
        self._end(trial, self._run_for(trial))

    def close(self) -> None:
        for run in self.runs.values():
            if not run.ended:
                run.handle.finish(exit_code=1)
                run.ended = True
        if self.study_run is not None:
            self.study_run.finish(exit_code=1)
            self.study_run = None

    def _logged(self, trial: TrialRecord) -> int:
        known = self.runs.get(trial.number)
        if known is not None and known.attempt == trial.attempts:
            return known.logged_step
        steps = [s for r in self._earlier_of(trial) for s in r.steps]
        return max(steps, default=0)

    def _earlier_of(self, trial: TrialRecord) -> list[RunFile]:
        return [r for r in self.earlier.get(trial.number, ())
                if int((r.config.get("searchsvc") or {}).get("attempt", 1)) == trial.attempts]

    def _ended_before(self, trial: TrialRecord) -> bool:
        return any(r.exit_code is not None for r in self._earlier_of(trial))

    def _run_for(self, trial: TrialRecord) -> _Run:
        """The open run of the trial's current attempt: the one known, or a new one (going on
        after the steps earlier runs hold; replacing an earlier attempt's)."""
        known = self.runs.get(trial.number)
        if known is not None and known.attempt == trial.attempts and not known.ended:
            return known
        if known is not None and not known.ended:
            known.handle.finish(exit_code=1)
        if known is not None and known.attempt < trial.attempts and self.mode == "offline":
            shutil.rmtree(known.folder, ignore_errors=True)  # an earlier attempt's run
        logged = self._logged(trial)
        self._drop_earlier_attempts(trial)
        meta = {"kind": "trial", "study_key": self.key, "trial_number": trial.number,
                "attempt": trial.attempts, "seed": trial.seed, "arm": dict(trial.arm),
                "repeat_of": trial.repeat_of, "roles": self.roles}
        handle = self._init(name=f"trial {trial.number}", job_type="trial",
                            run_id=self._id(f"trial-{trial.number}-{trial.attempts}"),
                            config={**{k: hparam_value(v) for k, v in trial.config.items()},
                                    "searchsvc": meta})
        run = self.runs[trial.number] = _Run(handle, trial.attempts, logged,
                                             Path(handle.dir).parent)
        return run

    def _drop_earlier_attempts(self, trial: TrialRecord) -> None:
        """Delete the offline runs of the trial's earlier attempts: the store keeps only the
        latest attempt's steps, and so does W&B."""
        kept = []
        for run in self.earlier.get(trial.number, ()):
            attempt = int((run.config.get("searchsvc") or {}).get("attempt", 1))
            if attempt < trial.attempts:
                shutil.rmtree(run.path.parent, ignore_errors=True)
            else:
                kept.append(run)
        self.earlier[trial.number] = kept

    def _log_steps(self, run: _Run, items: Sequence[Measurement]) -> None:
        for m in sorted(items, key=lambda m: m.step):
            run.handle.log(step_scalars(m), step=m.step)
            run.logged_step = max(run.logged_step, m.step)

    def _end(self, trial: TrialRecord, run: _Run) -> None:
        summary: dict[str, Any] = {"state": str(trial.state), "attempt": trial.attempts,
                                   **{f"final/{k}": v for k, v in
                                      numeric_metrics(trial.final_metrics).items()}}
        if trial.error:
            summary["error"] = trial.error[-4000:]
        run.handle.summary.update(summary)
        succeeded = trial.state in USABLE_STATES
        run.handle.finish(exit_code=0 if succeeded else 1)
        run.ended = True

    # -- W&B -----------------------------------------------------------------------------------

    def _id(self, what: str) -> str | None:
        """Online, a run's stable id (a resumed study goes on in it); offline, W&B's own."""
        if self.mode != "online":
            return None
        return hashlib.sha256(f"{self.key}/{what}".encode()).hexdigest()[:16]

    def _init(self, *, name: str, job_type: str, run_id: str | None,
              config: dict[str, Any]) -> Any:
        import wandb

        return wandb.init(
            dir=str(self.dir), project=self.project, entity=self.entity, group=self.group,
            name=name, job_type=job_type, config=config, id=run_id,
            mode="online" if self.mode == "online" else "offline",
            resume="allow" if run_id else None, reinit="create_new",
            settings=wandb.Settings(console="off", silent=True, init_timeout=INIT_TIMEOUT_S,
                                    x_disable_stats=True, x_disable_machine_info=True))
