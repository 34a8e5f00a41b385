"""Experiment tracking: the study file's ``tracking:`` section, written from the driver as
trials run (MLflow runs, TensorBoard event files with the HParams plugin, W&B runs).

Pure of Ray: trackers receive searchsvc's own records (:mod:`searchsvc.core`). The contract is
:class:`Tracker`'s docstring; :func:`open_trackers` makes a study's trackers from its spec,
behind a :class:`Trackers` fan-out that a failing tracker cannot fail the study through.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from searchsvc.registry import Registry
from searchsvc.spec import StudySpec
from searchsvc.tracking.base import ReportFolder, Tracker
from searchsvc.tracking.fanout import Trackers
from searchsvc.tracking.mlflow_tracker import MlflowTracker, default_tracking_uri, sqlite_folder
from searchsvc.tracking.tensorboard_tracker import TensorBoardTracker
from searchsvc.tracking.wandb_tracker import WandbTracker

DATABASES = ("sqlite", "postgresql", "mysql", "mssql")  # MLflow's SQLAlchemy stores


def _mlflow(spec: StudySpec, results_dir: Path) -> Tracker | None:
    settings = spec.tracking.mlflow
    if settings is None:
        return None
    uri = settings.tracking_uri or default_tracking_uri(results_dir)
    # A new experiment in a database keeps its artifacts beside the SQLite file or in the
    # results folder (MLflow's default is ./mlruns under the current folder); a server (or any
    # other store) decides for itself.
    artifacts = None
    if uri.partition(":")[0].partition("+")[0].lower() in DATABASES:
        artifacts = (sqlite_folder(uri) or results_dir) / "mlartifacts"
    return MlflowTracker(uri, settings.experiment or spec.name, artifacts)


def _tensorboard(spec: StudySpec, results_dir: Path) -> Tracker | None:
    settings = spec.tracking.tensorboard
    if settings is None:
        return None
    folder = Path(settings.dir).expanduser() if settings.dir else Path("tensorboard")
    return TensorBoardTracker(folder if folder.is_absolute() else results_dir / folder)


def _wandb(spec: StudySpec, results_dir: Path) -> Tracker | None:
    settings = spec.tracking.wandb
    if settings is None:
        return None
    folder = Path(settings.dir).expanduser() if settings.dir else Path(".")
    return WandbTracker(folder if folder.is_absolute() else results_dir / folder,
                        project=settings.project or spec.name, entity=settings.entity,
                        group=settings.group, mode=settings.mode)


# The study file's `tracking:` keys -> what makes that tracker from a spec (None: not asked for).
TrackerFactory = Callable[[StudySpec, Path], "Tracker | None"]
TRACKERS: Registry[TrackerFactory] = Registry("tracker", {
    "mlflow": _mlflow,
    "tensorboard": _tensorboard,
    "wandb": _wandb,
})


def open_trackers(spec: StudySpec, results_dir: Path,
                  notify: Callable[[str], None] | None = None) -> Trackers:
    """The trackers ``spec`` asks for, writing beside the study's ``results_dir`` by default,
    behind one fan-out (empty, and falsy, when the study tracks nothing). Nothing is opened
    until ``study_started``."""
    made = (TRACKERS.get(name)(spec, results_dir) for name in TRACKERS.names())
    return Trackers([t for t in made if t is not None], notify)


__all__ = ["TRACKERS", "MlflowTracker", "ReportFolder", "TensorBoardTracker", "Tracker",
           "Trackers", "WandbTracker", "open_trackers"]
