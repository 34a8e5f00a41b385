"""The function Ray runs for every trial: sets the trial's context and seeds, and hands the
config to the study's backend on the worker (which imports the objective and reports)."""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Any

from searchsvc.backends import backend_class
from searchsvc.runner.context import TrialContext, set_current, split_config
from searchsvc.runner.sdk import seed_everything


@dataclass(frozen=True)
class TrialSettings:
    """What every trial of a study shares; shipped once to the workers."""

    study: str
    objective: str
    search_paths: tuple[str, ...]
    metric: str
    mode: str
    max_steps: int | None
    keep_checkpoints: bool
    backend: str = "ray"
    backend_options: tuple[tuple[str, Any], ...] = ()


def run_trial(config: dict[str, Any], settings: TrialSettings) -> None:
    user_config, meta = split_config(config)
    set_current(TrialContext(
        study=settings.study, number=int(meta.get("number", 0)), seed=int(meta.get("seed", 0)),
        max_steps=settings.max_steps, metric=settings.metric, mode=settings.mode,
        keep_checkpoints=settings.keep_checkpoints,
    ))
    try:
        backend = backend_class(settings.backend)(
            settings.objective, settings.search_paths, settings.metric, settings.max_steps,
            dict(settings.backend_options))
        seed_everything()
        backend.run(user_config)
    finally:
        set_current(None)


def is_finite_number(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)
