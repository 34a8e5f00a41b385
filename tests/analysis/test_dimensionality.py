"""The dimensionality analysis on planted records: each layer's early/last/min/max, the
collapsed layers ("low", "fell"), whether early dimensionality predicts the result (Spearman,
Holm across layers, bootstrap interval) and the validated transitions (definitions in
searchsvc/analysis/dimensionality.py)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pytest
from scipy import stats

from searchsvc.analysis.dimensionality import (
    FIXTURE_TOLERANCE,
    MEASURE,
    DimensionalityAnalysis,
    holm,
    study_dimensionality,
)
from searchsvc.core import Measurement, TrialRecord, TrialState

Curve = Sequence[float | None] | Mapping[str, Sequence[float | None]]


def dims(values: Mapping[str, float | None], source: str = "train") -> dict[str, Any]:
    """One step's measurement as the worker records it (nothing measured: empty)."""
    layers = {name: {MEASURE: v, "stable_rank": v / 2} for name, v in values.items()
              if v is not None}
    return {"source": source, "layers": layers} if layers else {}


def measurements(curve: Curve, *, steps: Sequence[int] | None = None, attempt: int = 1,
                 value: float = 1.0, series: Mapping[str, Sequence[float]] | None = None,
                 source: str = "train") -> tuple[Measurement, ...]:
    """A step per entry of ``curve`` (a layer "fc1", or one curve per layer); None: a step
    reported with nothing measured. ``series``: metrics by step (else "accuracy" is
    ``value`` at every step)."""
    layers = curve if isinstance(curve, Mapping) else {"fc1": curve}
    length = len(next(iter(layers.values())))
    steps = steps if steps is not None else range(1, length + 1)
    return tuple(
        Measurement(step, value,
                    {"accuracy": value, **{k: v[i] for k, v in (series or {}).items()}},
                    attempt=attempt,
                    dimensionality=dims({n: c[i] for n, c in layers.items()}, source))
        for i, step in enumerate(steps))


def trial(number: int, curve: Curve, *, best: float | None = 1.0, state: str = TrialState.COMPLETED,
          repeat_of: int | None = None, attempts: int = 1,
          earlier: Sequence[Measurement] = (), **kwargs: Any) -> TrialRecord:
    return TrialRecord(
        id=number + 1, study_id=1, number=number, state=state,  # type: ignore[arg-type]
        config={}, arm={}, seed=number, attempts=attempts, best_value=best,
        repeat_of=repeat_of,
        measurements=(*earlier, *measurements(curve, attempt=attempts, value=best or 0.0,
                                              **kwargs)))


def analyse(trials: Sequence[TrialRecord], mode: str = "max", **kwargs: Any
            ) -> DimensionalityAnalysis:
    found = study_dimensionality(trials, "accuracy", mode, **kwargs)
    assert found is not None
    return found


def planted(n: int, mode: str = "max", slope: float = 0.03, shuffle: bool = False,
            layers: int = 1) -> list[TrialRecord]:
    """``n`` search trials whose result is a monotone function of their early value plus a
    little noise (``shuffle``: the results dealt out at random instead; this deal's rank
    correlation with the early values is -0.07)."""
    rng = np.random.default_rng(7)
    early = np.linspace(4.0, 15.0, n)
    results = 0.5 + slope * early + rng.normal(0.0, 0.005, n)
    if shuffle:
        results = np.random.default_rng(0).permutation(results)
    return [trial(i, {f"l{k}": [e, e - 1, e - 2] for k in range(layers)}, best=float(r))
            for i, (e, r) in enumerate(zip(early, results, strict=True))]


def summary(a: DimensionalityAnalysis, number: int) -> dict[str, Any]:
    return next(t for t in a.as_dict()["trials"] if t["number"] == number)


# -- shape -------------------------------------------------------------------------------------

def long_study() -> tuple[list[TrialRecord], int]:
    """Three trials of 240 measurements, 10 steps apart, at level 10 with noise 0.1; trial 0's
    layer jumps to 13 at measurement 120, trial 2's ends collapsed. Returns (trials, the step
    of the jump)."""
    rng = np.random.default_rng(3)
    n, at = 240, 120
    steps = [10 * (i + 1) for i in range(n)]
    jump = np.where(np.arange(n) < at, 10.0, 13.0) + rng.normal(0, 0.1, n)
    flat = 10.0 + rng.normal(0, 0.1, n)
    ending = np.concatenate([10.0 + rng.normal(0, 0.1, n - 1), [1.0]])
    return [trial(0, list(jump), steps=steps), trial(1, list(flat), steps=steps, best=0.5),
            trial(2, list(ending), steps=steps, best=0.2)], steps[at]


def test_as_dict_has_exactly_the_documented_keys() -> None:
    trials, _ = long_study()
    out = analyse(trials, loss_metric="loss").as_dict()
    assert set(out) == {"measure", "trials", "collapsed", "early_signal", "transitions"}
    assert out["measure"] == "participation_ratio"
    assert set(out["trials"][0]) == {"number", "source", "layers"}
    assert out["trials"][0]["source"] == "train"
    assert set(out["trials"][0]["layers"]["fc1"]) == {"early", "last", "min", "max"}
    assert set(out["collapsed"][0]) == {"number", "layer", "step", "value", "reason"}
    assert set(out["early_signal"]) == {"layer", "spearman", "ci", "n", "predicts",
                                        "per_layer", "reason"}
    assert set(out["early_signal"]["per_layer"][0]) == {"layer", "spearman", "ci",
                                                        "p_adjusted"}
    assert set(out["transitions"]) == {"valid", "reason", "noise", "found"}
    assert set(out["transitions"]["found"][0]) == {"number", "layer", "step", "before",
                                                   "after"}
    json.dumps(out, allow_nan=False)


def test_no_measurement_at_all_is_none() -> None:
    assert study_dimensionality([trial(0, [None, None])], "accuracy", "max") is None
    assert study_dimensionality([], "accuracy", "max") is None


# -- early, last, min, max ---------------------------------------------------------------------

def test_early_is_the_largest_value_in_the_first_tenth_of_the_reported_steps() -> None:
    # 30 reported steps: the window is the first 3 (a window of 4 would see the 20 at step 4).
    curve: list[float | None] = [5.0, 8.0, 7.0, 20.0, *[6.0] * 25, 3.0]
    a = analyse([trial(0, curve)])
    assert summary(a, 0)["layers"]["fc1"] == {"early": 8.0, "last": 3.0, "min": 3.0,
                                              "max": 20.0}
    assert a.columns(0) == {"dim_early.fc1": 8.0, "dim_last.fc1": 3.0}
    assert a.curves(0)["fc1"][:2] == [(1, 5.0), (2, 8.0)] and len(a.curves(0)["fc1"]) == 30
    assert a.columns(9) == {} and a.curves(9) == {}


def test_the_window_is_at_least_one_step_and_falls_back_to_the_first_measured_value() -> None:
    # 5 reported steps: ceil(0.5) = 1 step.
    a = analyse([trial(0, [4.0, 9.0, 9.0, 9.0, 9.0]),
                 # 30 reported steps, measured only from step 10 on: none in the window (steps
                 # 1-3), so early is the first measured value, not the largest.
                 trial(1, [None] * 9 + [6.0, 12.0] + [None] * 8 + [7.0] * 11)])
    assert summary(a, 0)["layers"]["fc1"]["early"] == 4.0
    assert summary(a, 1)["layers"]["fc1"] == {"early": 6.0, "last": 7.0, "min": 6.0,
                                              "max": 12.0}


def test_only_the_latest_attempt_counts() -> None:
    # Attempt 1 reported 30 steps (a 3-step window) and collapsed; attempt 2 reported 10 (a
    # 1-step window) and did not.
    old = measurements([50.0, 60.0, 70.0, *[1.0] * 27], attempt=1)
    a = analyse([trial(0, [4.0, 9.0, *[8.0] * 8], attempts=2, earlier=old),
                 trial(1, [None, None], attempts=2, earlier=measurements([1.0, 1.0]))])
    assert summary(a, 0)["layers"]["fc1"] == {"early": 4.0, "last": 8.0, "min": 4.0,
                                              "max": 9.0}
    assert a.collapsed == ()
    assert [t["number"] for t in a.as_dict()["trials"]] == [0]  # trial 1 measured only before


# -- collapse ----------------------------------------------------------------------------------

def test_a_layer_ending_below_2_is_low_and_one_ending_at_5_is_not() -> None:
    a = analyse([trial(0, [3.0, 3.0, 1.0]), trial(1, [6.0, 4.0, 5.0])])  # neither fell
    assert a.as_dict()["collapsed"] == [{"number": 0, "layer": "fc1", "step": 3, "value": 1.0,
                                         "reason": "low"}]
    assert a.collapsed_numbers() == {0}
    assert ("Trial 0: layer 'fc1' collapsed: participation ratio ended at 1.0 (below 2)."
            in a.findings)


FALL = [10.0, 9.0, 8.0, 6.0, 3.0, 2.4, 2.3, 2.2, 2.2, 2.2]  # below 2.5 from step 6; ends >= 2


def test_fell_is_flagged_at_the_first_step_below_a_quarter_while_the_loss_still_falls() -> None:
    falling = [2.0 - 0.1 * i for i in range(10)]
    a = analyse([trial(0, FALL, series={"loss": falling})], loss_metric="loss")
    [entry] = a.as_dict()["collapsed"]
    assert entry == {"number": 0, "layer": "fc1", "step": 6, "value": 2.4, "reason": "fell"}
    assert a.findings[0] == ("Trial 0: layer 'fc1' collapsed: participation ratio fell to 2.4 "
                             "at step 6, below 25% of its early 10.0, while the training loss "
                             "still fell.")


def test_fell_is_not_flagged_when_the_loss_rose_after_the_fall() -> None:
    rising = [2.0, 1.8, 1.6, 1.4, 1.2, 1.0, 1.1, 1.2, 1.3, 1.4]  # its last above step 6's
    a = analyse([trial(0, FALL, series={"loss": rising})], loss_metric="loss")
    assert a.collapsed == ()


def test_the_loss_is_the_study_metric_when_it_is_minimised_and_absent_otherwise() -> None:
    rising = {"accuracy": [float(i) for i in range(10)]}
    falling = {"accuracy": [10.0 - i for i in range(10)]}
    # mode min, no loss_metric: the study's metric is the loss.
    assert analyse([trial(0, FALL, series=rising)], mode="min").collapsed == ()
    assert [c.step for c in analyse([trial(0, FALL, series=falling)], mode="min").collapsed
            ] == [6]
    # a loss_metric the trial never reported: the study's metric again.
    assert analyse([trial(0, FALL, series=rising)], mode="min",
                   loss_metric="loss").collapsed == ()
    # mode max, no loss metric given: no loss condition, the fall alone flags it.
    a = analyse([trial(0, FALL, series=rising)], mode="max")
    assert [(c.reason, c.step) for c in a.collapsed] == [("fell", 6)]
    assert "no training loss to check it against" in a.findings[0]


def test_a_layer_can_be_both_fell_and_low_and_repeats_are_checked_too() -> None:
    a = analyse([trial(0, [10.0, 2.0, 1.5]), trial(1, [8.0, 8.0, 1.0], repeat_of=0)])
    assert {(c.number, c.reason, c.step) for c in a.collapsed} == {
        (0, "fell", 2), (0, "low", 3), (1, "fell", 3), (1, "low", 3)}
    assert sum(f.startswith("Trial 0:") for f in a.findings) == 1  # one sentence per layer


# -- the early signal --------------------------------------------------------------------------

def test_a_planted_relation_predicts_and_says_which_way() -> None:
    a = analyse(planted(12))
    signal = a.as_dict()["early_signal"]
    assert signal["predicts"] is True and signal["n"] == 12 and signal["layer"] == "l0"
    assert signal["spearman"] > 0.9 and signal["ci"][0] > 0
    finding = next(f for f in a.findings if "dimensionality of layer" in f)
    assert finding.startswith("Early dimensionality of layer 'l0' predicts the result in this "
                              "study: Spearman \u03c1 = ")
    assert "n = 12; higher early dimensionality went with better results)." in finding
    # mode min: a negative rho is the same good news; a positive one says lower went better.
    assert "higher early dimensionality went with better" in " ".join(
        analyse(planted(12, mode="min", slope=-0.03), mode="min").findings)
    assert "lower early dimensionality went with better" in " ".join(
        analyse(planted(12, mode="min"), mode="min").findings)


def test_independent_results_are_not_shown_to_predict() -> None:
    a = analyse(planted(12, shuffle=True))
    signal = a.as_dict()["early_signal"]
    assert signal["predicts"] is False and signal["n"] == 12
    assert abs(signal["spearman"]) < 0.2 and signal["ci"][0] < 0 < signal["ci"][1]
    finding = next(f for f in a.findings if "predict" in f)
    assert "not shown to predict here" in finding and "n = 12" in finding
    assert "the 95% interval includes 0" in finding


def test_fewer_than_six_trials_do_not_predict_and_say_why() -> None:
    a = analyse(planted(4))
    signal = a.as_dict()["early_signal"]
    reason = "too few search trials with a result (n=4; at least 6 needed)"
    assert signal["predicts"] is False and signal["n"] == 4 and signal["reason"] == reason
    assert signal["spearman"] == pytest.approx(1.0)  # computable, just not enough
    finding = next(f for f in a.findings if "predict" in f)
    assert "not shown to predict here" in finding and reason in finding
    two = analyse(planted(2)).as_dict()["early_signal"]
    assert (two["spearman"], two["ci"], two["predicts"]) == (None, None, False)


def test_seed_repeats_and_trials_without_a_result_are_left_out() -> None:
    search = planted(5)
    # Repeats and a failed trial with a perfect relation would make n = 8 and predict.
    extra = [trial(10 + i, {"l0": [20.0 + i, 1.0, 1.0]}, best=2.0 + i, repeat_of=0)
             for i in range(2)]
    failed = trial(20, {"l0": [30.0, 1.0, 1.0]}, best=5.0, state=TrialState.FAILED)
    signal = analyse([*search, *extra, failed]).as_dict()["early_signal"]
    assert signal["n"] == 5 and signal["predicts"] is False
    assert signal["reason"] == "too few search trials with a result (n=5; at least 6 needed)"


def test_holm_adjusts_across_the_layers_and_never_lowers_a_p() -> None:
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert holm([0.5]) == [0.5] and holm([0.6, 0.7]) == [1.0, 1.0]
    # Layer "l0" relates to the result (raw p about 0.015, interval above 0); four more layers
    # are noise. Alone it predicts; as the strongest of five its Holm-adjusted p is 5 x 0.015.
    rng = np.random.default_rng(75)
    n = 20
    early = rng.uniform(5, 15, size=(5, n))
    result = 0.05 * early[0] + rng.normal(0, 0.25, size=n)
    raw = [stats.spearmanr(e, result).pvalue for e in early]
    assert 0.01 < raw[0] < 0.025 and min(raw[1:]) > 0.1  # the planted data's premise

    def study(layers: int) -> list[TrialRecord]:
        return [trial(i, {f"l{k}": [float(early[k][i])] for k in range(layers)},
                      best=float(result[i])) for i in range(n)]

    alone = analyse(study(1)).early_signal
    assert alone.predicts is True and alone.per_layer[0].p_adjusted == pytest.approx(raw[0])
    five = analyse(study(5)).early_signal
    assert five.layer == "l0" and five.ci is not None and five.ci[0] > 0
    adjusted = [s.p_adjusted or 0.0 for s in five.per_layer]
    assert adjusted == pytest.approx(holm(raw))  # computed across the five layers
    assert all(p_adj >= p for p_adj, p in zip(adjusted, raw, strict=True))
    assert five.predicts is False and "Holm-adjusted p = 0.077 over 5 layers" in five.reason


def test_the_bootstrap_is_seeded() -> None:
    trials = planted(12, shuffle=True)
    first, again = analyse(trials, seed=1), analyse(trials, seed=1)
    other = analyse(trials, seed=2)
    assert first.early_signal.ci == again.early_signal.ci != other.early_signal.ci


# -- transitions -------------------------------------------------------------------------------

def test_short_curves_claim_no_transitions_and_say_why() -> None:
    a = analyse(planted(12))
    found = a.as_dict()["transitions"]
    assert found["valid"] is False and found["found"] == []
    assert found["reason"] == "curves too short (median 3 measurements)"
    assert ("No dimensionality transitions are claimed: curves too short (median 3 "
            "measurements).") in a.findings


def test_a_planted_jump_on_long_low_noise_curves_is_found_once_the_detector_validates() -> None:
    trials, jump_step = long_study()
    a = analyse(trials)
    found = a.as_dict()["transitions"]
    assert found["valid"] is True and found["noise"] == pytest.approx(0.1, rel=0.3)
    assert "recall 1.00" in found["reason"]
    hits = [t for t in found["found"] if t["number"] == 0]
    assert len(hits) == 1  # one jump, reported once (not at every point its window still sees)
    assert abs(hits[0]["step"] - jump_step) <= FIXTURE_TOLERANCE * 10  # steps are 10 apart
    assert hits[0]["before"] == pytest.approx(10.0, abs=0.5)
    assert hits[0]["after"] == pytest.approx(13.0, abs=0.5)
    assert not any(t["number"] == 1 for t in found["found"])  # the flat curve: nothing
    assert any("transitions found by a detector shown valid" in f and "trial 0 layer 'fc1' at "
               f"step {hits[0]['step']}" in f for f in a.findings)


def test_noisy_long_curves_do_not_validate_and_claim_nothing() -> None:
    # Noise 3 on a level of 10: a jump of a quarter is under one sigma, no detector recovers it.
    rng = np.random.default_rng(5)
    trials = [trial(i, list(10.0 + rng.normal(0, 3.0, 100))) for i in range(2)]
    a = analyse(trials)
    found = a.as_dict()["transitions"]
    assert found["valid"] is False and found["found"] == []
    assert "recall" in found["reason"] and "false positives" in found["reason"]
    assert any(f.startswith("No dimensionality transitions are claimed: ") for f in a.findings)


# -- JSON --------------------------------------------------------------------------------------

@pytest.mark.parametrize("trials", [
    planted(12), planted(12, shuffle=True), planted(4), planted(2), planted(1),
    # constant results: no rank correlation (scipy would say NaN)
    [trial(i, [float(i + 3), 1.0], best=0.5) for i in range(8)],
    # a non-finite measurement is not a point of the curve
    [trial(0, [float("nan"), 3.0, float("inf")]), trial(1, [None, 2.0, 2.0])],
])
def test_the_report_is_json_without_nan(trials: list[TrialRecord]) -> None:
    a = analyse(trials)
    json.dumps(a.as_dict(), allow_nan=False)
    assert all(f.endswith(".") for f in a.findings)


def test_constant_results_have_no_correlation_and_say_so() -> None:
    a = analyse([trial(i, [float(i + 3), 1.0], best=0.5) for i in range(8)])
    signal = a.early_signal
    assert (signal.spearman, signal.ci, signal.predicts) == (None, None, False)
    assert "do not vary" in signal.reason
    assert a.as_dict()["trials"][0]["layers"]["fc1"]["early"] == 3.0


def test_a_running_trial_is_collapsed_only_after_its_early_window() -> None:
    from searchsvc.analysis.dimensionality import RunningCollapse

    watch = RunningCollapse(max_steps=20, early={})  # early window: steps 1 and 2
    layers = lambda value: {"fc": {"participation_ratio": value}}  # noqa: E731
    assert watch.update(1, layers(1.5)) is None  # low, but still early
    assert watch.update(2, layers(8.0)) is None and watch.early == {"fc": 8.0}
    assert watch.update(3, layers(2.5)) is None  # above 2 and above 25% of 8
    assert watch.update(4, layers(1.9)) == ("fc", "low", 1.9)
    assert RunningCollapse(20, {"fc": 20.0}).update(5, layers(4.0)) == ("fc", "fell", 4.0)
    assert RunningCollapse(20, {}).update(5, {"fc": {"participation_ratio": None}}) is None


def test_rungs_leave_out_trials_stopped_for_a_collapsed_layer() -> None:
    from searchsvc.analysis.schedulers import rungs
    from searchsvc.core import EventKind, TrialEvent, TrialState

    pruned = [TrialRecord(id=n, study_id=0, number=n, state=TrialState.PRUNED, config={}, arm={},
                          seed=n, last_step=step) for n, step in ((0, 3), (1, 5))]
    events = [TrialEvent(0, EventKind.STOPPED_EARLY, 3, {"rung": 3}),
              TrialEvent(1, EventKind.STOPPED_EARLY, 5, {"reason": "collapsed", "layer": "fc"})]
    assert [(r.step, r.stopped) for r in rungs(pruned, events)] == [(3, (0,))]
