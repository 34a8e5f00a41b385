"""What PBT and PB2 share as a study's schedulers: exploitation within the trial's scientific
arm, the trial's own identity kept when it copies another's weights, each exploit reported."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from searchsvc.driver.schedule_base import SchedulerEvents, trial_number
from searchsvc.spec import RangeParameter, StudySpec
from searchsvc.worker.context import META_KEY


class ArmPopulation:
    """PBT glue shared by the PBT and PB2 schedulers: exploitation stays within the trial's
    scientific arm (its population), a trial keeps its own identity when it copies another's
    weights, and each exploit is reported with parent and child."""

    events: SchedulerEvents
    spec: StudySpec

    def on_trial_add(self, tune_controller: Any, trial: Any) -> None:
        # Ray refuses any search algorithm beside PBT, because a model-based one would learn
        # from configs PBT changed behind its back. searchsvc's only hands out the study's
        # initial population (and pbt's searcher learns nothing), so it is hidden from the check.
        super().on_trial_add(_WithoutSearchAlg(tune_controller), trial)  # type: ignore[misc]

    def population_of(self, trial: Any) -> Callable[[Any], bool]:
        arm = _arm_key(trial)
        return lambda other: _arm_key(other) == arm

    def adjust_config(self, trial: Any, new_config: dict[str, Any]) -> dict[str, Any]:
        new_config[META_KEY] = trial.config[META_KEY]
        for name, value in list(new_config.items()):
            param = self.spec.parameters.get(name)
            if isinstance(param, RangeParameter) and isinstance(value, int | float):
                value = min(max(value, param.low), param.high)
                new_config[name] = round(value) if param.kind == "int" else float(value)
        return new_config

    def after_exploit(self, trial: Any, parent: Any, step: int, parent_step: int,
                      old_config: dict[str, Any]) -> None:
        self.events.exploited(trial, step, {
            "parent": trial_number(parent), "parent_step": parent_step,
            "old_config": _user_config(old_config), "new_config": _user_config(trial.config),
            "parent_config": _user_config(parent.config),
        })


class _WithoutSearchAlg:
    def __init__(self, controller: Any):
        self._controller = controller

    search_alg = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._controller, name)


def _arm_key(trial: Any) -> tuple:
    arm = trial.config.get(META_KEY, {}).get("arm") or {}
    return tuple(sorted((k, repr(v)) for k, v in arm.items()))


def _user_config(config: dict) -> dict:
    return {k: v for k, v in config.items() if k != META_KEY}
