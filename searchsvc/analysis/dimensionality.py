"""What the trials' representation dimensionality (``Measurement.dimensionality``, measured by
``sdk.watch`` in the trial's worker) says: each watched layer's curve per trial, the layers that
collapsed, whether early dimensionality predicted the result, and the transitions a detector
finds once it is shown valid at this study's noise.

Definitions (each counts the **latest attempt** of a trial only):

- **Values** are the participation ratio (:data:`MEASURE`) of each layer at each measured
  step, as the worker computed it: ``(Σλ)² / Σλ²`` of the eigenvalues ``λ`` of the covariance
  of the layer's centred activations (about 1 for a layer whose outputs vary along one
  direction, up to its width when they spread evenly). The stable rank stored beside it is not
  analysed here.
- **early**: the largest value measured within the first :data:`EARLY_FRACTION` (10%) of the
  trial's reported steps (every step its latest attempt reported; the window is the first
  ``ceil(0.10 x number of reported steps)`` of them, at least one); when no measurement falls
  inside the window, the first measured value. **last**: the value at the last measured step;
  **min** and **max** over every measured step.
- **Collapsed**, one entry per (trial, layer, reason), every trial with measurements counted
  (search trials and seed repeats); a layer can be both:

  - ``low``: its last value is below :data:`LOW` (2): its outputs vary along about one
    direction. The entry's step is its last measured step, its value the last value.
  - ``fell``: the first measured step after its early value's where the value is below
    :data:`FELL` (25%) of the early value, while the training loss still falls: the loss at the
    trial's last report of it is lower than at that step (its value at the last report at or
    before the step; its first when it was first reported later). The loss is ``loss_metric``
    (the report passes :func:`training_loss_metric`: ``loss`` or ``train_loss`` when reported)
    when given and the trial reported it, else the study's metric when its mode is ``min``;
    with neither, the fall alone flags it (no loss condition).

- **Early signal**: over the *search* trials (seed repeats excluded) with a result (judging's
  ``has_result``: completed or pruned with a finite value; the value is the trial's best
  step's, as everywhere in the report) and an early value for the layer, per watched layer: the
  Spearman rank correlation rho of early value and result value (raw metric values, so for
  mode ``max`` a positive rho means higher early dimensionality went with better results, for
  ``min`` a negative rho does), its p-value adjusted for the number of layers tested (Holm), a
  percentile bootstrap 95% interval of rho (:data:`RESAMPLES` resamples of the trials with
  replacement, numpy's generator seeded with ``seed`` for each layer; resamples with constant
  input are skipped) and n. The headline layer is the one with the largest ``|rho|``. It
  **predicts** only when n >= :data:`MIN_TRIALS` (6), its interval excludes 0 *and* its
  Holm-adjusted p is below 0.05: the interval alone speaks for one layer, and picking the
  strongest of several would make a chance correlation likelier to pass; the Holm adjustment
  keeps the chance of any false "predicts", across all the layers tested, at most 5%.
- **Transitions**: ndtracker's ``JumpDetector`` (a rolling z-score), run on every curve only
  once ``ndt.validity.validate_detector`` finds it valid on a battery sized to this study: the
  curves' measurement noise sigma (the median over curves of 3+ points of the robust standard
  deviation of first differences, ``1.4826 x MAD / √2``), their median length L and median
  value ``level``: a planted step from ``level`` to ``1.25 x level`` at ``L // 2``, ndtracker's
  three-step fixture (at 40+ measurements) stretched to L and scaled to ``level``, pure noise
  and a drift from ``level`` to ``1.25 x level``, all at noise sigma. Its window is
  ``min(50, L // 3)`` measurements (at least 2), its warm-up ``min(20, L // 4)`` (at least 1),
  and its z threshold is sized to L: a point of pure noise exceeds it with chance 5% / (the
  points it tests), so a whole curve of noise fires with chance about 5% (never below
  ndtracker's 3: a fixed 3 fires 3 or more times in 1000 points of noise, so a curve of a few
  hundred points would pass the harness's bar of 2 in 1000 only by luck). With curves shorter
  than :data:`MIN_CURVE` (12) measurements, or no noise to estimate, it is not run. A run of
  detections within the fixtures' tolerance of each other is one transition (the detector
  keeps firing while its window still holds the old level); its step is the first.

Pure: core records in, typed results out (no store, no plotting). ndtracker is imported only
when transitions are looked for: its package imports torch and its plotting libraries.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from searchsvc.core import Curve, TrialRecord, is_finite_number
from searchsvc.core.direction import Direction, direction
from searchsvc.core.judging import has_result, search_trials

MEASURE = "participation_ratio"  # the headline measure; stable_rank stored beside it
LOW = 2.0  # a layer ending below this is collapsed: "low"
FELL = 0.25  # falling below this fraction of its early value: "fell"
EARLY_FRACTION = 0.10  # of the trial's reported steps: the early window
MIN_TRIALS = 6  # search trials with a result the early signal needs
CONFIDENCE = 0.95
ALPHA = 0.05  # the Holm-adjusted p the early signal must be below
RESAMPLES = 2000  # bootstrap resamples of the trials
MIN_CURVE = 12  # median measurements a curve needs before transitions are looked for
STEP_UP = 1.25  # the planted transition and the drift: a quarter of the level
MULTI_FROM = 40  # measurements from which the three-step fixture is in the battery
# ndtracker's default three-step fixture (600 steps, levels around 10), stretched and scaled.
MULTI_CHANGES = (150 / 600, 350 / 600, 450 / 600)
MULTI_LEVELS = (1.0, 1.6, 1.3, 2.2)
FAMILY_ALPHA = 0.05  # the chance a curve of pure noise shows any detection
MIN_Z = 3.0  # ndtracker's default z threshold: never below it
FIXTURE_TOLERANCE = 5  # ndtracker's Fixture.tolerance, in measurements
MAD_TO_SIGMA = 1.4826  # MAD x this estimates a normal distribution's standard deviation

Point = tuple[int, float]
RHO = "\N{GREEK SMALL LETTER RHO}"  # in the findings' text (spelt out: ruff's RUF001)
SIGMA = "\N{GREEK SMALL LETTER SIGMA}"


# -- one trial's curves ------------------------------------------------------------------------

@dataclass(frozen=True)
class LayerCurve:
    """One layer of one trial: its value at each measured step (step order) and its early
    value (module docstring)."""

    points: tuple[Point, ...]  # never empty
    early: float
    early_step: int

    @property
    def last(self) -> float:
        return self.points[-1][1]

    @property
    def last_step(self) -> int:
        return self.points[-1][0]

    @property
    def min(self) -> float:
        return min(v for _, v in self.points)

    @property
    def max(self) -> float:
        return max(v for _, v in self.points)

    def as_dict(self) -> dict[str, Any]:
        return {"early": self.early, "last": self.last, "min": self.min, "max": self.max}


@dataclass(frozen=True)
class TrialDimensionality:
    number: int
    source: str  # "probe" (a fixed batch) or "train" (the training batches)
    layers: Mapping[str, LayerCurve]

    def as_dict(self) -> dict[str, Any]:
        return {"number": self.number, "source": self.source,
                "layers": {name: c.as_dict() for name, c in self.layers.items()}}


def reported_steps(trial: TrialRecord) -> list[int]:
    """Every step the latest attempt reported, measured or not, in order."""
    return sorted({m.step for m in trial.measurements if m.attempt == trial.attempts})


def layer_points(trial: TrialRecord) -> dict[str, list[Point]]:
    """Each layer's (step, value) of :data:`MEASURE` over the latest attempt, step order;
    steps with nothing measured and non-finite values are left out."""
    out: dict[str, list[Point]] = {}
    for m in sorted(trial.measurements, key=lambda m: m.step):
        layers = m.dimensionality.get("layers") if m.attempt == trial.attempts else None
        if not isinstance(layers, Mapping):
            continue
        for name, row in layers.items():
            value: Any = row.get(MEASURE) if isinstance(row, Mapping) else None
            if is_finite_number(value):
                out.setdefault(str(name), []).append((m.step, float(value)))
    return dict(sorted(out.items()))


def early_window_end(steps: Sequence[int]) -> int | None:
    """The last step of the early window of ``steps`` (the trial's reported steps, in order)."""
    if not steps:
        return None
    # round(): a fraction times a count can land a hair above a whole number in floating point
    # (0.07 x 100 is 7.000000000000001), whose ceiling would take one step too many.
    size = max(1, math.ceil(round(len(steps) * EARLY_FRACTION, 9)))
    return steps[min(size, len(steps)) - 1]


def layer_curve(points: Sequence[Point], window_end: int | None) -> LayerCurve:
    """A layer's curve and early value from its (non-empty) points."""
    inside = [p for p in points if window_end is not None and p[0] <= window_end]
    # max() keeps the first of equal values: the earliest step of the largest value.
    step, early = max(inside, key=lambda p: p[1]) if inside else points[0]
    return LayerCurve(tuple(points), early, step)


def _source(trial: TrialRecord) -> str:
    sources = [m.dimensionality.get("source") for m in trial.measurements
               if m.attempt == trial.attempts and m.dimensionality]
    found = [s for s in sources if s in ("probe", "train")]
    # The worker always names it; "train" (the batches it trained on) is what it measures
    # without a probe, the likelier reading of a record that lost the name.
    return found[-1] if found else "train"


def trial_dimensionality(trial: TrialRecord) -> TrialDimensionality | None:
    """``trial``'s layer curves; None when its latest attempt measured nothing."""
    points = layer_points(trial)
    if not points:
        return None
    end = early_window_end(reported_steps(trial))
    return TrialDimensionality(trial.number, _source(trial),
                               {name: layer_curve(p, end) for name, p in points.items()})


# -- collapse ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Collapse:
    """A layer of a trial that collapsed, ``reason`` "low" or "fell" (module docstring)."""

    number: int
    layer: str
    step: int
    value: float
    reason: str
    early: float
    loss_checked: bool  # "fell": whether a training loss was there to confirm it still fell

    def as_dict(self) -> dict[str, Any]:
        return {"number": self.number, "layer": self.layer, "step": self.step,
                "value": self.value, "reason": self.reason}


def loss_curve(trial: TrialRecord, metric: str, mode: str, loss_metric: str | None
               ) -> Curve | None:
    """The training loss the "fell" rule checks (module docstring); None: no loss condition."""
    if loss_metric is not None and (curve := trial.curve(loss_metric)):
        return curve
    if direction(mode) is Direction.MIN and (curve := trial.curve(metric)):
        return curve
    return None


def loss_still_falls(loss: Curve, step: int) -> bool:
    """Whether the loss at the last step that reported it is lower than at ``step`` (its value
    at the last report at or before ``step``; its first when it was first reported later)."""
    at = loss.value_at(step)
    return loss[-1][1] < (loss[0][1] if at is None else at)


def fell_at(curve: LayerCurve) -> Point | None:
    """The first point after the early value's step below :data:`FELL` of the early value."""
    return next(((s, v) for s, v in curve.points
                 if s > curve.early_step and v < FELL * curve.early), None)


def collapses(summary: TrialDimensionality, loss: Curve | None) -> list[Collapse]:
    """The collapsed layers of one trial, per layer "fell" before "low"."""
    out = []
    for name, curve in summary.layers.items():
        fell = fell_at(curve)
        if fell is not None and (loss is None or loss_still_falls(loss, fell[0])):
            out.append(Collapse(summary.number, name, fell[0], fell[1], "fell", curve.early,
                                loss is not None))
        if curve.last < LOW:
            out.append(Collapse(summary.number, name, curve.last_step, curve.last, "low",
                                curve.early, False))
    return out


# -- the early signal --------------------------------------------------------------------------

@dataclass(frozen=True)
class LayerSignal:
    """One layer's rank correlation of early value and result over ``n`` search trials."""

    layer: str
    n: int
    spearman: float | None  # None: fewer than 3 trials, or constant early values or results
    p: float | None  # unadjusted
    ci: tuple[float, float] | None
    p_adjusted: float | None  # Holm, over the layers with a p-value

    def as_dict(self) -> dict[str, Any]:
        return {"layer": self.layer, "spearman": self.spearman,
                "ci": None if self.ci is None else list(self.ci),
                "p_adjusted": self.p_adjusted}


@dataclass(frozen=True)
class EarlySignal:
    layer: str | None  # the layer with the largest |spearman| (None: no layer measured)
    spearman: float | None
    ci: tuple[float, float] | None
    n: int
    predicts: bool
    per_layer: tuple[LayerSignal, ...]
    reason: str

    @property
    def tested(self) -> int:
        """Layers the Holm adjustment counted."""
        return sum(1 for s in self.per_layer if s.p is not None)

    @property
    def headline(self) -> LayerSignal | None:
        return next((s for s in self.per_layer if s.layer == self.layer), None)

    def as_dict(self) -> dict[str, Any]:
        return {"layer": self.layer, "spearman": self.spearman,
                "ci": None if self.ci is None else list(self.ci), "n": self.n,
                "predicts": self.predicts, "per_layer": [s.as_dict() for s in self.per_layer],
                "reason": self.reason}


def _constant(values: Sequence[float]) -> bool:
    return max(values) == min(values)


def spearman(x: Sequence[float], y: Sequence[float]) -> tuple[float, float] | None:
    """(rho, two-sided p) of ``x`` and ``y``; None with fewer than 3 pairs or a constant side
    (ranks that do not vary have no correlation)."""
    if len(x) < 3 or _constant(x) or _constant(y):
        return None
    result = stats.spearmanr(x, y)
    return float(result.statistic), float(result.pvalue)


def bootstrap_interval(x: Sequence[float], y: Sequence[float], seed: int,
                       resamples: int = RESAMPLES) -> tuple[float, float] | None:
    """The percentile bootstrap :data:`CONFIDENCE` interval of Spearman's rho, resampling the
    pairs with replacement; resamples with a constant side are skipped (None: all were)."""
    if len(x) < 3:
        return None
    rng = np.random.default_rng(seed)
    rows = rng.integers(0, len(x), size=(resamples, len(x)))
    xs, ys = np.asarray(x, dtype=float)[rows], np.asarray(y, dtype=float)[rows]
    varied = (np.ptp(xs, axis=1) > 0) & (np.ptp(ys, axis=1) > 0)
    if not varied.any():
        return None
    # Spearman's rho is Pearson's r of the average ranks (what scipy.stats.spearmanr computes),
    # done for every resample at once.
    rx = stats.rankdata(xs[varied], axis=1)
    ry = stats.rankdata(ys[varied], axis=1)
    rx -= rx.mean(axis=1, keepdims=True)
    ry -= ry.mean(axis=1, keepdims=True)
    rho = (rx * ry).sum(axis=1) / np.sqrt((rx**2).sum(axis=1) * (ry**2).sum(axis=1))
    tail = (1 - CONFIDENCE) / 2 * 100
    low, high = np.percentile(rho, [tail, 100 - tail])
    return float(low), float(high)


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm's step-down adjustment of ``pvalues`` (same order): the k-th smallest of m is
    multiplied by m - k + 1, kept monotone, capped at 1."""
    order = sorted(range(len(pvalues)), key=lambda i: pvalues[i])
    adjusted = [0.0] * len(pvalues)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(pvalues) - rank) * pvalues[i]))
        adjusted[i] = running
    return adjusted


def early_pairs(summaries: Iterable[TrialDimensionality],
                values: Mapping[int, float]) -> dict[str, tuple[list[float], list[float]]]:
    """Per layer, (early values, result values) of the trials in ``values``."""
    out: dict[str, tuple[list[float], list[float]]] = {}
    for s in summaries:
        if s.number not in values:
            continue
        for name, curve in s.layers.items():
            xs, ys = out.setdefault(name, ([], []))
            xs.append(curve.early)
            ys.append(values[s.number])
    return out


def layer_signals(pairs: Mapping[str, tuple[Sequence[float], Sequence[float]]],
                  layers: Iterable[str], seed: int) -> list[LayerSignal]:
    """Each of ``layers``' correlation, interval and Holm-adjusted p (the adjustment counts
    the layers with a p-value)."""
    rows = []
    for name in sorted(layers):
        xs, ys = pairs.get(name, ([], []))
        rho = spearman(xs, ys)
        ci = bootstrap_interval(xs, ys, seed) if rho is not None else None
        rows.append((name, len(xs), rho, ci))
    tested = [r[2][1] for r in rows if r[2] is not None]
    adjusted = iter(holm(tested))
    return [LayerSignal(name, n, None, None, ci, None) if rho is None
            else LayerSignal(name, n, rho[0], rho[1], ci, next(adjusted))
            for name, n, rho, ci in rows]


def _headline(signals: Sequence[LayerSignal]) -> LayerSignal | None:
    computed = [s for s in signals if s.spearman is not None]
    if computed:  # sorted by name: ties go to the first name
        return max(computed, key=lambda s: abs(s.spearman or 0.0))
    return max(signals, key=lambda s: s.n) if signals else None


def _p(value: float) -> str:
    return "p < 0.001" if value < 0.001 else f"p = {value:.2g}"


def _excludes_zero(ci: tuple[float, float] | None) -> bool:
    return ci is not None and (ci[0] > 0 or ci[1] < 0)


def _verdict(top: LayerSignal | None, tested: int) -> tuple[bool, str]:
    """Whether ``top`` predicts, and why (or why not)."""
    n = top.n if top else 0
    if n < MIN_TRIALS:
        return False, (f"too few search trials with a result (n={n}; at least {MIN_TRIALS} "
                       "needed)")
    assert top is not None
    if top.spearman is None or top.p_adjusted is None:
        return False, "the early values or the results do not vary, so they have no ranks"
    adjusted = (f"Holm-adjusted {_p(top.p_adjusted)} over {tested} "
                f"layer{'s' if tested != 1 else ''} tested")
    excludes = _excludes_zero(top.ci)
    significant = top.p_adjusted < ALPHA
    if excludes and significant:
        return True, (f"n = {n} >= {MIN_TRIALS}, the 95% interval excludes 0 and the "
                      f"{adjusted} is below {ALPHA:g}")
    why = [] if excludes else ["the 95% interval includes 0"]
    if not significant:
        why.append(f"the {adjusted} is not below {ALPHA:g}")
    return False, " and ".join(why)


def early_signal(summaries: Sequence[TrialDimensionality], trials: Sequence[TrialRecord],
                 seed: int) -> EarlySignal:
    """The early signal over ``trials``' search trials with a result (module docstring)."""
    values = {t.number: float(t.best_value) for t in search_trials(trials)  # type: ignore[arg-type]
              if has_result(t)}
    pairs = early_pairs(summaries, values)
    layers = {name for s in summaries for name in s.layers}
    signals = layer_signals(pairs, layers, seed)
    top = _headline(signals)
    tested = sum(1 for s in signals if s.p is not None)
    predicts, reason = _verdict(top, tested)
    return EarlySignal(top.layer if top else None, top.spearman if top else None,
                       top.ci if top else None, top.n if top else 0, predicts, tuple(signals),
                       reason)


# -- transitions -------------------------------------------------------------------------------

@dataclass(frozen=True)
class Transition:
    """A jump the detector found: ``before`` is the value at the measurement before ``step``,
    ``after`` the value at ``step``."""

    number: int
    layer: str
    step: int
    before: float
    after: float

    def as_dict(self) -> dict[str, Any]:
        return {"number": self.number, "layer": self.layer, "step": self.step,
                "before": self.before, "after": self.after}


@dataclass(frozen=True)
class Transitions:
    valid: bool  # the validity harness's verdict (False when it was not run)
    reason: str
    noise: float | None  # sigma, the estimated measurement noise
    found: tuple[Transition, ...]
    length: int  # the median measurements per curve
    level: float | None  # the median value
    recall: float | None = None  # the harness's mean recall on the planted fixtures
    false_positives: int | None = None  # ... and its detections on the null fixtures

    def as_dict(self) -> dict[str, Any]:
        return {"valid": self.valid, "reason": self.reason, "noise": self.noise,
                "found": [f.as_dict() for f in self.found]}


def curve_noise(curves: Iterable[Sequence[float]]) -> float | None:
    """The measurement noise sigma: the median over curves of 3+ values of ``1.4826 x MAD`` of
    their first differences over √2 (differencing removes a slow trend and doubles the
    variance). The median absolute deviation, unlike the standard deviation, does not count a
    curve's own jumps or its fast early change as noise. None: no curve of 3+ values."""
    sigmas = []
    for values in curves:
        if len(values) < 3:
            continue
        diffs = np.diff(np.asarray(values, dtype=float))
        mad = float(np.median(np.abs(diffs - np.median(diffs))))
        sigmas.append(MAD_TO_SIGMA * mad / math.sqrt(2))
    return statistics.median(sigmas) if sigmas else None


@dataclass(frozen=True)
class DetectorSize:
    window: int
    min_samples: int
    z_threshold: float


def detector_size(length: int) -> DetectorSize:
    """The rolling window, warm-up and z threshold for curves of ``length`` measurements."""
    window = max(2, min(50, length // 3))
    min_samples = max(1, min(20, length // 4))
    return DetectorSize(window, min_samples, z_threshold(window, length - min_samples))


def z_threshold(window: int, tested: int) -> float:
    """The z a point of pure noise exceeds with chance :data:`FAMILY_ALPHA` / ``tested``
    (Bonferroni over the points a curve tests), at least :data:`MIN_Z`."""
    # A new point's distance from the mean of `window` earlier ones, over their population
    # standard deviation (what JumpDetector computes), is Student's t with window - 1 degrees
    # of freedom times sqrt((window + 1) / (window - 1)).
    t = stats.t.ppf(1 - FAMILY_ALPHA / (2 * max(tested, 1)), window - 1)
    return max(MIN_Z, float(t) * math.sqrt((window + 1) / (window - 1)))


def battery(length: int, level: float, noise: float, seed: int) -> list[Any]:
    """ndtracker's validity fixtures at this study's length, level and noise."""
    from ndt.validity import (  # type: ignore[import-untyped, unused-ignore]
        drift_no_jump,
        planted_multi,
        planted_transition,
        pure_noise,
    )
    out = [planted_transition(n_steps=length, change_at=length // 2, before=level,
                              after=level * STEP_UP, noise=noise, seed=seed)]
    if length >= MULTI_FROM:
        out.append(planted_multi(n_steps=length,
                                 changes=tuple(int(f * length) for f in MULTI_CHANGES),
                                 levels=tuple(level * v for v in MULTI_LEVELS), noise=noise,
                                 seed=seed))
    out += [pure_noise(n_steps=length, noise=noise, seed=seed),
            drift_no_jump(n_steps=length, start=level, end=level * STEP_UP, noise=noise,
                          seed=seed)]
    return out


def merge_runs(indices: Iterable[int], tolerance: int = FIXTURE_TOLERANCE) -> list[int]:
    """The first index of each run of detections no more than ``tolerance`` apart."""
    out: list[int] = []
    previous: int | None = None
    for i in sorted(indices):
        if previous is None or i - previous > tolerance:
            out.append(i)
        previous = i
    return out


def _not_run(reason: str, noise: float | None, length: int, level: float | None
             ) -> Transitions:
    return Transitions(False, reason, noise, (), length, level)


def transitions(curves: Mapping[tuple[int, str], Sequence[Point]], seed: int) -> Transitions:
    """The validated detector's transitions on ``curves`` (by (trial number, layer))."""
    lengths = [len(p) for p in curves.values()]
    values = [v for p in curves.values() for _, v in p]
    length = int(statistics.median(lengths)) if lengths else 0
    level = statistics.median(values) if values else None
    noise = curve_noise([v for _, v in p] for p in curves.values())
    if length < MIN_CURVE or noise is None or level is None:
        return _not_run(f"curves too short (median {length} measurements)", noise, length,
                        level)
    if noise <= 0:
        return _not_run("noise not estimable: the curves do not vary from one measurement "
                        "to the next", noise, length, level)
    from ndt import JumpDetector  # type: ignore[import-untyped, unused-ignore]
    from ndt.validity import (  # type: ignore[import-untyped, unused-ignore]
        jump_detector_as_callable,
        validate_detector,
    )
    size = detector_size(length)
    detector = JumpDetector(window_size=size.window, z_threshold=size.z_threshold,
                            min_samples=size.min_samples)
    # The harness judges the detector as it fires (every detection); merging runs is only how
    # the found ones are reported.
    report = validate_detector(jump_detector_as_callable(detector),
                               battery(length, level, noise, seed),
                               name=f"JumpDetector(window={size.window}, "
                                    f"z={size.z_threshold:.2f}, "
                                    f"min_samples={size.min_samples})")
    counts = (f"recall {report.mean_recall:.2f} on planted transitions, "
              f"{report.false_positives_on_null} false positives on the null controls; "
              f"noise {SIGMA} = {noise:.3g}, median {length} measurements")
    if not report.valid:
        return Transitions(False, f"{report.message} ({counts})", noise, (), length, level,
                           report.mean_recall, report.false_positives_on_null)
    found = []
    for (number, layer), points in sorted(curves.items()):
        raw = [j.step for j in detector.detect_jumps([v for _, v in points])]
        found += [Transition(number, layer, points[i][0], points[i - 1][1], points[i][1])
                  for i in merge_runs(raw)]
    return Transitions(True, f"valid at this study's noise and length ({counts})", noise,
                       tuple(found), length, level, report.mean_recall,
                       report.false_positives_on_null)


# -- the study ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class DimensionalityAnalysis:
    """A study's dimensionality: its trials' curves, collapses, early signal and transitions
    (module docstring). ``as_dict`` is report.json's ``dimensionality``."""

    mode: str
    trials: tuple[TrialDimensionality, ...]
    collapsed: tuple[Collapse, ...]
    early_signal: EarlySignal
    transitions: Transitions
    measure: str = MEASURE

    def as_dict(self) -> dict[str, Any]:
        return {"measure": self.measure, "trials": [t.as_dict() for t in self.trials],
                "collapsed": [c.as_dict() for c in self.collapsed],
                "early_signal": self.early_signal.as_dict(),
                "transitions": self.transitions.as_dict()}

    def _trial(self, number: int) -> TrialDimensionality | None:
        return next((t for t in self.trials if t.number == number), None)

    def of(self, number: int) -> TrialDimensionality | None:
        """Trial ``number``'s layer curves (None: it measured nothing)."""
        return self._trial(number)

    def columns(self, number: int) -> dict[str, float]:
        """Trial ``number``'s columns for trials.csv (:func:`columns_of`)."""
        return columns_of(self._trial(number))

    def curves(self, number: int) -> dict[str, list[Point]]:
        """Trial ``number``'s (step, value) per layer, for figures (empty: none measured)."""
        found = self._trial(number)
        return {} if found is None else {n: list(c.points) for n, c in found.layers.items()}

    def collapsed_numbers(self) -> set[int]:
        return {c.number for c in self.collapsed}

    @property
    def findings(self) -> tuple[str, ...]:
        return (*collapse_findings(self.collapsed), signal_finding(self.early_signal, self.mode),
                transitions_finding(self.transitions))


def columns_of(found: TrialDimensionality | None) -> dict[str, float]:
    """A trial's columns in trials.csv and the trials DataFrame: ``dim_early.<layer>`` and
    ``dim_last.<layer>`` (empty when it measured nothing)."""
    out: dict[str, float] = {}
    for name, curve in (found.layers.items() if found is not None else ()):
        out[f"dim_early.{name}"] = curve.early
        out[f"dim_last.{name}"] = curve.last
    return out


LOSS_NAMES = ("loss", "train_loss", "training_loss")


def training_loss_metric(trials: Iterable[TrialRecord]) -> str | None:
    """The metric the "fell" rule reads as the training loss: the first of
    :data:`LOSS_NAMES` some trial reported (None: the study's metric when minimised)."""
    reported = {name for t in trials for name in t.final_metrics}
    return next((name for name in LOSS_NAMES if name in reported), None)


def study_dimensionality(trials: Sequence[TrialRecord], metric: str, mode: str, *,
                         seed: int = 0, loss_metric: str | None = None
                         ) -> DimensionalityAnalysis | None:
    """The dimensionality analysis of ``trials`` (every trial of one study, seed repeats
    included) for the study's ``metric`` and ``mode``; None when no trial's latest attempt
    measured any. ``seed`` seeds the bootstrap and the detector's validity fixtures;
    ``loss_metric`` names the training loss the "fell" rule checks."""
    direction(mode)  # a bad mode fails here, not halfway through
    measured = [(t, s) for t in sorted(trials, key=lambda t: t.number)
                if (s := trial_dimensionality(t)) is not None]
    if not measured:
        return None
    summaries = tuple(s for _, s in measured)
    collapsed = tuple(c for t, s in measured
                      for c in collapses(s, loss_curve(t, metric, mode, loss_metric)))
    curves = {(s.number, name): c.points for s in summaries for name, c in s.layers.items()}
    return DimensionalityAnalysis(mode, summaries, collapsed,
                                  early_signal(summaries, trials, seed),
                                  transitions(curves, seed))


# -- findings ----------------------------------------------------------------------------------

def _g(value: float) -> str:
    """Three significant digits, a whole number below 100 with its ".0" (1.0, not 1: these
    are measured, not counted)."""
    text = f"{value:.3g}"
    return f"{text}.0" if abs(value) < 100 and text.lstrip("-").isdigit() else text


def collapse_findings(collapsed: Sequence[Collapse]) -> list[str]:
    """One sentence per collapsed (trial, layer), its reasons joined."""
    by_layer: dict[tuple[int, str], list[Collapse]] = {}
    for c in collapsed:
        by_layer.setdefault((c.number, c.layer), []).append(c)
    out = []
    for (number, layer), entries in by_layer.items():
        parts = []
        for c in entries:
            if c.reason == "fell":
                still = (", while the training loss still fell" if c.loss_checked
                         else " (no training loss to check it against)")
                parts.append(f"fell to {_g(c.value)} at step {c.step}, below {FELL:.0%} of its "
                             f"early {_g(c.early)}{still}")
            else:
                parts.append(f"ended at {_g(c.value)} (below {LOW:g})")
        out.append(f"Trial {number}: layer '{layer}' collapsed: participation ratio "
                   f"{', and '.join(parts)}.")
    return out


def _direction_words(rho: float, mode: str) -> str:
    better = direction(mode).sign * rho < 0  # min: a negative rho pairs high early, low loss
    return f"{'higher' if better else 'lower'} early dimensionality went with better results"


def _ci_text(ci: tuple[float, float] | None) -> str:
    return "95% CI not computable" if ci is None else f"95% CI {ci[0]:.2f} to {ci[1]:.2f}"


def signal_finding(signal: EarlySignal, mode: str) -> str:
    top = signal.headline
    if signal.predicts and top is not None and top.spearman is not None:
        return (f"Early dimensionality of layer '{signal.layer}' predicts the result in this "
                f"study: Spearman {RHO} = {top.spearman:.2f} ({_ci_text(top.ci)}, n = {top.n}; "
                f"{_direction_words(top.spearman, mode)}).")
    if top is None:
        return f"Early dimensionality is not shown to predict here: {signal.reason}."
    rho = "not computable" if top.spearman is None else f"{top.spearman:.2f}"
    p = "" if top.p_adjusted is None else f", Holm-adjusted {_p(top.p_adjusted)}"
    return (f"Early dimensionality is not shown to predict here: layer '{top.layer}' "
            f"Spearman {RHO} = {rho} ({_ci_text(top.ci)}, n = {top.n}{p}): {signal.reason}.")


def transitions_finding(found: Transitions, shown: int = 10) -> str:
    if not found.found:
        why = ("the detector, valid at this study's noise and length, found none" if found.valid
               else found.reason)
        return f"No dimensionality transitions are claimed: {why}."
    listed = "; ".join(f"trial {t.number} layer '{t.layer}' at step {t.step} "
                       f"({_g(t.before)} to {_g(t.after)})" for t in found.found[:shown])
    more = len(found.found) - shown
    rest = f"; and {more} more" if more > 0 else ""
    return (f"Dimensionality transitions found by a detector shown valid at this study's noise "
            f"({SIGMA} = {_g(found.noise or 0.0)}, median {found.length} measurements): "
            f"{listed}{rest}.")


# -- while a trial runs ------------------------------------------------------------------------

@dataclass
class RunningCollapse:
    """The collapse rules as a running trial can apply them (``dimensionality.stop_collapsed``):
    each layer's early value is the largest measured within the first :data:`EARLY_FRACTION` of
    ``max_steps`` (the trial's budget, as its reported steps are not all known yet); after that
    window, a layer is collapsed when a measurement is below :data:`LOW` (``low``) or below
    :data:`FELL` of its early value (``fell``). Unlike the report's ``fell``, the training
    loss's later course cannot be known yet, so it is not checked: stopping acts on the fall
    alone, which is why it is opt-in."""

    max_steps: int
    early: dict[str, float]

    @property
    def window_end(self) -> int:
        return max(1, math.ceil(round(self.max_steps * EARLY_FRACTION, 9)))

    def update(self, step: int, layers: Mapping[str, Any]) -> tuple[str, str, float] | None:
        """Take one report's measurements (``Measurement.dimensionality["layers"]``); the
        first collapsed (layer, reason, value), or None."""
        for name, row in sorted(layers.items()):
            found = row.get(MEASURE) if isinstance(row, Mapping) else None
            if found is None or not is_finite_number(found):
                continue
            value = float(found)
            if step <= self.window_end or name not in self.early:
                self.early[name] = max(self.early.get(name, value), value)
                continue
            if value < LOW:
                return name, "low", value
            if value < FELL * self.early[name]:
                return name, "fell", value
        return None
