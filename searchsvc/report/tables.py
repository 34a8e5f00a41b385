"""Trials as rows: the CSV export and the parameter columns shared by every renderer."""

from __future__ import annotations

import csv
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from searchsvc.store import TrialRecord


def parameter_names(trials: Sequence[TrialRecord]) -> list[str]:
    names: dict[str, None] = {}
    for t in trials:
        names.update(dict.fromkeys(t.config))
    return list(names)


def write_trials_csv(trials: Sequence[TrialRecord], path: Path) -> None:
    params = parameter_names(trials)
    header = ["number", "state", "best_value", "best_step", "last_step", "seed", "attempts",
              "duration_s", "node", *params, "error"]
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        for t in trials:
            duration: Any = ""
            if t.started_at and t.finished_at:
                duration = round(t.finished_at - t.started_at, 3)
            error = (t.error or "").strip().splitlines()
            writer.writerow([
                t.number, t.state, "" if t.best_value is None else t.best_value,
                t.best_step or "", t.last_step or "", t.seed, t.attempts, duration, t.node or "",
                *(t.config.get(p, "") for p in params), error[-1] if error else "",
            ])
