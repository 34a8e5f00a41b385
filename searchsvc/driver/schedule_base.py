"""What every scheduler of a study shares: the step Ray Tune counts results by, where a
scheduler reports what it did to a trial, and a trial's number in the study."""

from __future__ import annotations

from typing import Any, Protocol

from searchsvc.worker.context import META_KEY

STEP = "training_iteration"


class SchedulerEvents(Protocol):
    """Where schedulers report what they did to a trial (the store callback)."""

    def stopped_early(self, trial: Any, step: int, data: dict[str, Any]) -> None: ...

    def exploited(self, trial: Any, step: int, data: dict[str, Any]) -> None: ...


def trial_number(trial: Any) -> int:
    return int(trial.config[META_KEY]["number"])
