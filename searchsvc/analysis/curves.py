"""Training-curve diagnostics (Playbook: "examine the training curves") for the best trials of
each scientific arm: overfitting, late step-to-step variance, still improving at the end,
saturated early, training loss rising, divergence; and where the retrospectively chosen best
step falls."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from searchsvc.analysis.trials import arm_label
from searchsvc.core import TrialRecord, TrialState
from searchsvc.core.direction import direction
from searchsvc.core.judging import by_value

OVERFITTING = "overfitting"
HIGH_VARIANCE = "high_variance"
STILL_IMPROVING = "still_improving"
SATURATED = "saturated"
TRAIN_LOSS_INCREASING = "train_loss_increasing"
DIVERGED = "diverged"

TRAIN_LOSS_NAMES = ("train_loss", "training_loss", "loss")
MIN_STEPS = 4  # shorter curves are not diagnosed


@dataclass(frozen=True)
class CurveDiagnosis:
    number: int  # the trial's study-local number (report.json: trial_id)
    arm: str
    issues: tuple[str, ...]
    best_step: int | None
    last_step: int | None
    best_step_position: str  # first_10pct | middle | last_25pct | unknown
    details: tuple[str, ...]  # details[i] explains issues[i] in plain language


PER_ARM = 2  # best trials diagnosed per scientific arm


def curve_candidates(trials: Sequence[TrialRecord], mode: str,
                     per_arm: int = PER_ARM) -> list[TrialRecord]:
    """The ``per_arm`` best trials of every scientific arm, arm by arm: those whose curves are
    diagnosed (and the only ones whose measurements a report needs)."""
    arms: dict[str, list[TrialRecord]] = {}
    for t in by_value(trials, mode):
        arms.setdefault(arm_label(t), []).append(t)
    return [t for label in sorted(arms) for t in arms[label][:per_arm]]


def diagnose_best(trials: Sequence[TrialRecord], metric: str, mode: str,
                  per_arm: int = PER_ARM) -> list[CurveDiagnosis]:
    """Diagnose the ``per_arm`` best trials of every scientific arm."""
    return [diagnose(t, metric, mode) for t in curve_candidates(trials, mode, per_arm)]


def diagnose(trial: TrialRecord, metric: str, mode: str) -> CurveDiagnosis:
    raw = [(m.step, m.metrics.get(metric)) for m in trial.measurements
           if m.attempt == trial.attempts]
    issues: list[str] = []
    details: list[str] = []
    if trial.state == TrialState.INFEASIBLE or any(
            isinstance(v, float) and not math.isfinite(v) for _, v in raw):
        issues.append(DIVERGED)
        details.append(f"{metric} became NaN/inf: training diverged")
    curve = [(s, float(v)) for s, v in raw if isinstance(v, int | float) and math.isfinite(v)]
    # Orient so that lower is better throughout.
    ys = [direction(mode).loss(v) for _, v in curve]
    steps = [s for s, _ in curve]
    position = "unknown"
    best_step = last_step = None
    if ys:
        i_best = min(range(len(ys)), key=lambda i: (ys[i], i))
        best_step, last_step = steps[i_best], steps[-1]
        position = _position(steps[0], best_step, last_step)
    if len(ys) >= MIN_STEPS:
        _diagnose_metric(ys, steps, metric, issues, details)
    train = _train_loss(trial)
    if len(train) >= MIN_STEPS and _rising(train):
        issues.append(TRAIN_LOSS_INCREASING)
        details.append("training loss ends well above its minimum: the learning rate may be "
                       "too high, or training unstable")
    return CurveDiagnosis(trial.number, arm_label(trial), tuple(issues), best_step, last_step,
                          position, tuple(details))


def _diagnose_metric(ys: list[float], steps: list[int], metric: str, issues: list[str],
                     details: list[str]) -> None:
    n = len(ys)
    best = min(ys)
    i_best = ys.index(best)
    improvement = ys[0] - best
    scale = max(improvement, abs(best) * 1e-3, 1e-12)
    late = ys[n - max(2, n // 4):]
    jitter = _jitter(ys)
    # Worse at the end than at its best, by more than the curve's own jitter.
    worsening = ys[-1] - best
    if i_best < n - 1 and worsening > max(0.1 * scale, 3 * jitter):
        issues.append(OVERFITTING)
        details.append(f"{metric} was best at step {steps[i_best]} and ends "
                       f"{worsening:.3g} worse: overfitting (or a too-long schedule); "
                       "use the best step's checkpoint, add regularisation or stop earlier")
    late_jitter = _jitter(late)
    if len(late) >= 3 and late_jitter > 0.1 * scale:
        issues.append(HIGH_VARIANCE)
        details.append(f"{metric} jumps by {late_jitter:.3g} step to step late in training "
                       "(over 10% of its total improvement): results are noisy; consider a "
                       "lower learning rate late (decay) or a larger batch")
    last_quarter_gain = ys[n - 1 - max(1, n // 4)] - ys[-1]
    if i_best >= n - max(1, math.ceil(n / 10)) and last_quarter_gain > 0.05 * scale:
        issues.append(STILL_IMPROVING)
        details.append(f"{metric} still improved by {last_quarter_gain:.3g} over the last "
                       "quarter of training: train longer (raise max_steps)")
    settled = next(i for i, y in enumerate(ys) if y - best <= 0.01 * scale)
    if OVERFITTING not in issues and settled <= 0.4 * (n - 1) and improvement > 0:
        issues.append(SATURATED)
        details.append(f"{metric} was within 1% of its best by step {steps[settled]} of "
                       f"{steps[-1]}: training could be shortened")


def _jitter(ys: list[float]) -> float:
    """Typical step-to-step change around the trend: the median absolute second difference
    (a smooth curve, however steep, has next to none)."""
    if len(ys) < 3:
        return 0.0
    second = [abs(ys[i + 1] - 2 * ys[i] + ys[i - 1]) / 2 for i in range(1, len(ys) - 1)]
    return statistics.median(second)


def _train_loss(trial: TrialRecord) -> list[float]:
    for name in TRAIN_LOSS_NAMES:
        curve = trial.curve(name)
        if curve:
            return [v for _, v in curve if math.isfinite(v)]
    return []


def _rising(losses: list[float]) -> bool:
    low = min(losses)
    spread = max(losses) - low
    tail = losses[len(losses) - max(2, len(losses) // 4):]
    return spread > 0 and min(tail) - low > 0.2 * spread and tail[-1] >= tail[0]


def _position(first: int, best: int, last: int) -> str:
    if last <= first:
        return "unknown"
    share = (best - first) / (last - first)
    if share <= 0.1:
        return "first_10pct"
    if share >= 0.75:
        return "last_25pct"
    return "middle"
