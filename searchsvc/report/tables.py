"""Trials as rows: the CSV export and the parameter columns shared by every renderer."""

from __future__ import annotations

import csv
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from searchsvc.analysis.dimensionality import columns_of, trial_dimensionality
from searchsvc.analysis.telemetry import trial_telemetry
from searchsvc.core import TrialRecord
from searchsvc.core.failures import error_tail


def parameter_names(trials: Sequence[TrialRecord]) -> list[str]:
    names: dict[str, None] = {}
    for t in trials:
        names.update(dict.fromkeys(t.config))
    return list(names)


TELEMETRY_COLUMNS = ("step_time_mean_s", "samples_per_s_mean", "data_wait_fraction",
                     "time_to_first_batch_s",
                     "cpu_percent_mean", "rss_mb_peak", "gpu_util_mean", "gpu_mem_peak_mb",
                     "gpu_mem_total_mb", "gpu_name", "gpu_uuid", "gpu_absent")


def _rounded(value: Any) -> Any:
    return round(value, 4) if isinstance(value, float) else value


def trial_table(trials: Sequence[TrialRecord]) -> tuple[list[str], list[list[Any]]]:
    """trials.csv as (header, rows), one row per trial, its config flattened into columns;
    None where a trial has no value (written as an empty cell). ``repeat_of``: for a seed
    repeat, the number of the trial it reruns."""
    params = parameter_names(trials)
    fixed = ["number", "state", "best_value", "best_step", "last_step", "seed", "attempts",
             "duration_s", "node", "repeat_of"]
    # Every metric's final value, as ``final_<metric>`` (a metric may share a parameter's name).
    metrics = list(dict.fromkeys(m for t in trials for m in t.final_metrics))
    # The trial's telemetry summary (analysis/telemetry.py), when any trial has telemetry.
    measured = any(m.telemetry for t in trials for m in t.measurements)
    summaries = {t.number: trial_telemetry(t) for t in trials} if measured else {}
    telemetry = list(TELEMETRY_COLUMNS) if measured else []
    # Each watched layer's early and last dimensionality (analysis/dimensionality.py).
    dims = {t.number: columns_of(trial_dimensionality(t)) for t in trials}
    dim_columns = list(dict.fromkeys(c for d in dims.values() for c in d))
    header = [*fixed, *(f"final_{m}" for m in metrics), *telemetry, *dim_columns, *params,
              "error"]
    rows = []
    for t in trials:
        summary = summaries.get(t.number)
        duration = None if t.duration_s is None else round(t.duration_s, 3)
        error = error_tail(t.error, 1)
        rows.append([
            t.number, str(t.state), t.best_value, t.best_step or None, t.last_step or None,
            t.seed, t.attempts, duration, t.node or None, t.repeat_of,
            *(t.final_metrics.get(m) for m in metrics),
            *(_rounded(getattr(summary, c)) if summary and summary.steps else None
              for c in telemetry),
            *(dims[t.number].get(c) for c in dim_columns),
            *(t.config.get(p) for p in params),
            error[-1] if error else None,
        ])
    return header, rows


def write_trials_csv(trials: Sequence[TrialRecord], path: Path) -> None:
    header, rows = trial_table(trials)
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        for row in rows:
            writer.writerow(["" if v is None else v for v in row])
