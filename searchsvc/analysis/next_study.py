"""The suggested next study: the same study file with the ranges the boundary checks suggest,
parameters that did not matter fixed at their best value, and the step budget adjusted to what
the curves showed. The result is a study file ``searchsvc validate`` accepts."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from searchsvc.analysis.boundary import STATUS_OK, BoundaryCheck
from searchsvc.analysis.curves import SATURATED, STILL_IMPROVING, CurveDiagnosis
from searchsvc.spec import RangeParameter, StudySpec, parse_spec
from searchsvc.store import TrialRecord

NEGLIGIBLE_IMPORTANCE = 0.02  # a nuisance parameter explaining less than this gets fixed...
MIN_TRIALS_TO_FIX = 30  # ...once there are enough trials to trust the importance
MIN_TRIALS_TO_NARROW = 20  # ranges are narrowed around the top trials only past this many


@dataclass(frozen=True)
class NextStudy:
    text: str  # the study file, YAML
    changes: tuple[str, ...]  # what was changed and why, one line each


def suggest_next_study(spec: StudySpec, spec_text: str, boundaries: Sequence[BoundaryCheck],
                       importance: Mapping[str, float], curves: Sequence[CurveDiagnosis],
                       best: TrialRecord | None, usable_trials: int) -> NextStudy:
    data: dict[str, Any] = yaml.safe_load(spec_text)
    changes: list[str] = []
    data["study"] = _next_name(spec.name)
    params: dict[str, Any] = data["parameters"]
    for check in boundaries:
        entry = params.get(check.parameter)
        if not isinstance(entry, dict):
            continue
        if check.status == STATUS_OK and usable_trials < MIN_TRIALS_TO_NARROW:
            continue
        low, high = check.suggested_low, check.suggested_high
        param = spec.parameters[check.parameter]
        if isinstance(param, RangeParameter) and param.kind == "int":
            low, high = int(low), int(high)
        if (low, high) == (entry.get("low"), entry.get("high")) or low >= high:
            continue
        entry["low"], entry["high"] = low, high
        why = {"near_low": "the best trials crowded the low edge",
               "near_high": "the best trials crowded the high edge",
               "divergence_edge": "trials past the edge diverged",
               "ok": "narrowed around the top trials"}[check.status]
        changes.append(f"{check.parameter}: [{_fmt(check.low)}, {_fmt(check.high)}] -> "
                       f"[{_fmt(low)}, {_fmt(high)}] ({why})")
    if best is not None and usable_trials >= MIN_TRIALS_TO_FIX:
        parents = {c.parent for p in spec.parameters.values() for c in p.when}
        for name, share in importance.items():
            param = spec.parameters.get(name)
            if (param is None or param.role != "nuisance" or param.when or name in parents
                    or share >= NEGLIGIBLE_IMPORTANCE or name not in best.config):
                continue
            params[name] = {"role": "fixed", "value": best.config[name]}
            changes.append(f"{name}: fixed at {_fmt(best.config[name])} (the best trial's "
                           f"value; it explained {share:.1%} of the variance)")
    _adjust_steps(data, curves, changes)
    if "seed" in data:
        data["seed"] = int(data["seed"]) + 1
    text = yaml.safe_dump(data, sort_keys=False, default_flow_style=None, width=100)
    header = (f"# Suggested by searchsvc from study {spec.name!r}.\n"
              + "".join(f"# - {c}\n" for c in changes or ["no change needed"]))
    text = header + text
    parse_spec(text, file=f"{data['study']}.yaml")  # a suggestion must be a valid study file
    return NextStudy(text, tuple(changes))


def _adjust_steps(data: dict[str, Any], curves: Sequence[CurveDiagnosis],
                  changes: list[str]) -> None:
    budget = data.get("budget")
    if not curves or not isinstance(budget, dict) or not budget.get("max_steps"):
        return
    counts = Counter(issue for c in curves for issue in c.issues)
    steps = int(budget["max_steps"])
    if counts[STILL_IMPROVING] * 2 > len(curves):
        budget["max_steps"] = steps * 2
        changes.append(f"budget.max_steps: {steps} -> {steps * 2} (most best trials were "
                       "still improving at the end)")
    elif counts[SATURATED] * 2 > len(curves) and steps >= 4:
        budget["max_steps"] = max(2, round(steps * 0.6))
        changes.append(f"budget.max_steps: {steps} -> {budget['max_steps']} (most best trials "
                       "had saturated early)")


def _next_name(name: str) -> str:
    match = re.fullmatch(r"(.*)-next(\d*)", name)
    if match:
        return f"{match.group(1)}-next{int(match.group(2) or 1) + 1}"
    return f"{name}-next"


def _fmt(value: Any) -> str:
    return f"{value:.3g}" if isinstance(value, float) else str(value)
