"""The wire format of studies and trials: how the REST API writes a record as JSON and how
the Python client reads it back. Both sides call this module, so a field added or renamed
here changes the server and the client together.

JSON has no NaN or infinity: a non-finite float travels (and is stored, see
``store/jsonutil.py``) as one of the markers ``"NaN"``, ``"Infinity"`` and ``"-Infinity"``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from searchsvc.core.objectives import Constraint
from searchsvc.core.records import Measurement, StudyRecord, TrialRecord
from searchsvc.core.states import StudyState, TrialState

NON_FINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def encode(value: Any) -> Any:
    """``value`` with NaN and infinities as their markers, at any depth, and numpy scalars as
    Python's."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dict):
        return {str(k): encode(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [encode(v) for v in value]
    if hasattr(value, "item") and callable(value.item):  # numpy scalars
        return encode(value.item())
    return value


def decode_floats(metrics: Mapping[str, Any]) -> dict[str, Any]:
    """A metrics mapping with the markers turned back into floats."""
    return {k: NON_FINITE.get(v, v) if isinstance(v, str) else v for k, v in metrics.items()}


def study_json(s: StudyRecord, detail: bool = False) -> dict[str, Any]:
    """A study as the API sends it; ``detail`` adds its owner, study file and provenance."""
    out = {"name": s.name, "state": s.state, "metric": s.metric, "mode": s.mode,
           "searcher": s.searcher, "total_trials": s.total_trials,
           # core.judging's counts (search trials by state, seed repeats apart) and best
           "trial_counts": dict(s.trial_counts), "repeat_counts": dict(s.repeat_counts),
           "best_value": s.best_value,
           "constraints": [c.to_dict() for c in s.constraints],
           "created_at": s.created_at, "started_at": s.started_at,
           "finished_at": s.finished_at}
    if detail:
        out.update(owner=s.owner, spec_file=s.spec_file, spec_text=s.spec_text,
                   provenance=dict(s.provenance))
    return out


def study_record(data: Mapping[str, Any]) -> StudyRecord:
    """What :func:`study_json` wrote, read back (without ``detail``, the study file and
    provenance are empty)."""
    return StudyRecord(
        id=0, name=data["name"], state=StudyState(data["state"]), metric=data["metric"],
        mode=data["mode"], searcher=data["searcher"], spec_text=data.get("spec_text", ""),
        spec_file=data.get("spec_file", ""), created_at=data["created_at"],
        total_trials=data["total_trials"], started_at=data["started_at"],
        finished_at=data["finished_at"], provenance=data.get("provenance", {}),
        trial_counts=dict(data["trial_counts"]), best_value=data["best_value"],
        owner=data.get("owner"), repeat_counts=dict(data.get("repeat_counts") or {}),
        constraints=tuple(Constraint.from_dict(c) for c in data.get("constraints") or ()))


def trial_json(t: TrialRecord, curves: bool) -> dict[str, Any]:
    """A trial as the API sends it; ``curves`` adds every measurement."""
    out: dict[str, Any] = {
        "number": t.number, "state": t.state, "config": dict(t.config), "arm": dict(t.arm),
        "best_value": t.best_value, "best_step": t.best_step, "last_step": t.last_step,
        "attempts": t.attempts, "error": t.error, "node": t.node, "seed": t.seed,
        "repeat_of": t.repeat_of, "started_at": t.started_at, "finished_at": t.finished_at,
        "checkpoints": list(t.checkpoints), "final_metrics": encode(dict(t.final_metrics))}
    if curves:
        out["measurements"] = [{"step": m.step, "attempt": m.attempt, "value": m.value,
                                "metrics": encode(dict(m.metrics)),
                                "telemetry": encode(dict(m.telemetry)),
                                "recorded_at": m.recorded_at} for m in t.measurements]
    return out


def trial_record(data: Mapping[str, Any]) -> TrialRecord:
    """What :func:`trial_json` wrote, read back (its measurements when it has them)."""
    return TrialRecord(
        id=0, study_id=0, number=data["number"], state=TrialState(data["state"]),
        config=data["config"], arm=data["arm"], seed=data["seed"], attempts=data["attempts"],
        error=data["error"], started_at=data.get("started_at"),
        finished_at=data.get("finished_at"), best_value=data["best_value"],
        best_step=data["best_step"], last_step=data["last_step"], node=data["node"],
        checkpoints=tuple(data.get("checkpoints", ())), repeat_of=data["repeat_of"],
        final_metrics=decode_floats(data.get("final_metrics", {})),
        measurements=tuple(
            Measurement(step=m["step"], value=m["value"], attempt=m["attempt"],
                        recorded_at=m.get("recorded_at", 0.0),
                        metrics=decode_floats(m["metrics"]),
                        telemetry=decode_floats(m.get("telemetry") or {}))
            for m in data.get("measurements", ())))
