"""Rules over a step's telemetry that the worker (which measures it) and the analysis (which
judges it) must read the same way."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from searchsvc.core.curve import is_finite_number


def working_time(row: Mapping[str, Any]) -> float | None:
    """A step's ``step_time_s`` less its ``report_wait_s`` (when measured): the time blocked
    handing the previous report over (a rank's wait at Ray Train's barrier, or a process's
    wait for the driver to take its result) is not the loop's own. ``None`` without a finite
    step time; never below 0."""
    step, wait = row.get("step_time_s"), row.get("report_wait_s")
    if not isinstance(step, int | float) or not is_finite_number(step):
        return None
    waited = float(wait) if isinstance(wait, int | float) and is_finite_number(wait) else 0.0
    return max(float(step) - waited, 0.0)


INPUT_BOUND_FRACTION = 0.5  # of the loop's working time spent waiting for data


def is_input_bound(data_wait_fraction: float | None) -> bool:
    """Whether a loop that waited ``data_wait_fraction`` of its working time for its data
    loader is input-bound: over :data:`INPUT_BOUND_FRACTION`, i.e. the loader delivered
    samples more slowly than the step alone would consume them (a trial's telemetry in the
    report, preflight's timed batches before the study)."""
    return data_wait_fraction is not None and data_wait_fraction > INPUT_BOUND_FRACTION
