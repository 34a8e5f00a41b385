"""Experiment tracking: the study file's ``tracking:`` section, written from the driver as
trials run (MLflow runs, TensorBoard event files with the HParams plugin, W&B runs).

Pure of Ray: trackers receive searchsvc's own records (:mod:`searchsvc.core`). The contract is
:class:`Tracker`'s docstring; :func:`open_trackers` makes a study's trackers from its spec,
behind a :class:`Trackers` fan-out that a failing tracker cannot fail the study through.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from searchsvc.plugins import TRACKERS
from searchsvc.spec import StudySpec
from searchsvc.tracking.base import ReportFolder, Tracker
from searchsvc.tracking.fanout import Trackers

if TYPE_CHECKING:
    from searchsvc.tracking.mlflow_tracker import MlflowTracker
    from searchsvc.tracking.tensorboard_tracker import TensorBoardTracker
    from searchsvc.tracking.wandb_tracker import WandbTracker

# Each tracker's module is imported when first asked for (a study that tracks nothing loads
# none of them), by name here or through the TRACKERS registry.
_LAZY = {"MlflowTracker": "searchsvc.tracking.mlflow_tracker",
         "TensorBoardTracker": "searchsvc.tracking.tensorboard_tracker",
         "WandbTracker": "searchsvc.tracking.wandb_tracker"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def open_trackers(spec: StudySpec, results_dir: Path,
                  notify: Callable[[str], None] | None = None) -> Trackers:
    """The trackers ``spec`` asks for, writing beside the study's ``results_dir`` by default,
    behind one fan-out (empty, and falsy, when the study tracks nothing). Nothing is opened
    until ``study_started``."""
    made = []
    for name in TRACKERS.names():
        settings = getattr(spec.tracking, name)
        if settings is not None:
            cls: type[Tracker] = TRACKERS.get(name)
            made.append(cls.for_study(settings, spec, results_dir))
    return Trackers(made, notify)


__all__ = ["TRACKERS", "MlflowTracker", "ReportFolder", "TensorBoardTracker", "Tracker",
           "Trackers", "WandbTracker", "open_trackers"]
