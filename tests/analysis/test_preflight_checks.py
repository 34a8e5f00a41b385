"""Preflight's pure part: the centre of the space, the checks' messages (FILE:LINE), the
overfit and initial-loss rules, and the cost estimate's arithmetic."""

from __future__ import annotations

import math
import textwrap
from pathlib import Path

import pytest

from searchsvc.analysis.preflight import (
    CHECKPOINT_STEP_S,
    TUNE_FIT_OVERHEAD_S,
    TUNE_TRIAL_OVERHEAD_S,
    WORKER_START_CONTENTION,
    HookResult,
    Probe,
    Timing,
    budget_fraction,
    centre_config,
    check_probe,
    concurrency_of,
    estimate_cost,
    timing_of,
)
from searchsvc.searchers import create_searcher
from searchsvc.searchers.schedule import HyperbandSchedule, PopulationSchedule
from searchsvc.usecases import validate as validate_file
from searchsvc.usecases import validate_text

ROOT = Path(__file__).resolve().parents[2]

STUDY = textwrap.dedent("""\
    study: pf
    objective: mine:train
    metric: val_los
    mode: min
    searcher: random
    budget: {trials: 4, max_steps: 5}
    parameters:
      lr: {role: nuisance, low: 1.0e-4, high: 1.0e-2, scale: log}
""")


def spec(text: str = STUDY):
    return validate_text(text, "spaces/x.yaml")


def failures(probe: Probe, text: str = STUDY) -> list[str]:
    return [i.render() for i in check_probe(spec(text), probe)[1]]


def test_centre_of_the_space() -> None:
    centre = centre_config(validate_file(ROOT / "spaces" / "digits_depth.yaml"))
    assert centre["num_layers"] == 1  # the first arm's scientific value
    assert centre["learning_rate"] == pytest.approx(math.sqrt(1e-4 * 1e-1))  # geometric mean
    assert centre["weight_decay"] == pytest.approx(1e-4)
    assert "momentum" not in centre  # only when optimizer is sgd, and it is adam
    assert (centre["optimizer"], centre["batch_size"], centre["hidden_units"]) == ("adam", 64, 64)
    asha = centre_config(validate_file(ROOT / "spaces" / "digits_asha.yaml"))
    assert asha["hidden_units"] == 64  # a choice's middle value of [16, 32, 64, 128]
    linear = spec(STUDY.replace("scale: log", "scale: linear"))
    assert centre_config(linear)["lr"] == pytest.approx((1e-4 + 1e-2) / 2)


def test_a_misspelt_metric_names_the_line_what_was_reported_and_the_closest() -> None:
    probe = Probe(reports=({"val_loss": 0.5, "train_loss": 0.6},), times_s=(1.0,))
    assert failures(probe) == [
        "spaces/x.yaml:3: metric: the objective never reported 'val_los' (it reported: "
        "val_loss, train_loss); did you mean 'val_loss'?"]


def test_each_metric_of_a_multi_objective_study_is_checked() -> None:
    text = STUDY.replace("metric: val_los\nmode: min\n",
                         "metrics:\n  - {name: error, mode: min}\n  - {name: latency, mode: min}\n")
    found = failures(Probe(reports=({"error": 0.1, "latncy": 3.0},), times_s=(1.0,)), text)
    assert len(found) == 1 and found[0].startswith("spaces/x.yaml:")
    assert "metrics.1.name: the objective never reported 'latency'" in found[0]
    assert "did you mean 'latncy'?" in found[0]


def test_a_nan_names_its_step() -> None:
    reports = ({"val_los": 0.5}, {"val_los": float("nan")}, {"val_los": 0.4})
    assert failures(Probe(reports=reports, times_s=(1, 2, 3))) == [
        "spaces/x.yaml:3: metric: the objective reported val_los=nan at step 2 (not finite)"]


def test_a_crash_at_import_stops_the_checks() -> None:
    probe = Probe(crash="ZeroDivisionError: division by zero (at mine.py:3)",
                  crashed_at_import=True)
    assert failures(probe) == [
        "spaces/x.yaml:2: objective: the objective crashed when imported: ZeroDivisionError: "
        "division by zero (at mine.py:3)"]


def test_overfit_and_initial_loss_rules() -> None:
    falling = tuple(2.3 * 0.9 ** i for i in range(30))
    flat = tuple(2.3 - 0.001 * i for i in range(30))
    base = {"reports": ({"val_los": 1.0},), "times_s": (1.0,)}
    checks, issues = check_probe(spec(), Probe(**base, hook=HookResult(falling, 10)))
    assert not issues
    assert {c.name: c.ok for c in checks}["overfit_one_batch"] is True
    assert {c.name: c.ok for c in checks}["initial_loss"] is True
    found = failures(Probe(**base, hook=HookResult(flat, None)))
    assert len(found) == 1 and "did not fall below 0.5x its start in 30 steps" in found[0]
    assert found[0].startswith("spaces/x.yaml:2: objective:")
    far = tuple(v * 3 for v in falling)  # 6.9 against ln(10) = 2.30
    found = failures(Probe(**base, hook=HookResult(far, 10)))
    assert len(found) == 1 and "is not near ln(10) = 2.303" in found[0]
    checks, _ = check_probe(spec(), Probe(**base))  # no hook: both checks skipped
    assert [c.ok for c in checks if c.name in ("overfit_one_batch", "initial_loss")] == [
        None, None]


def test_timing_separates_a_step_setup_and_the_workers_start() -> None:
    probe = Probe(reports=({}, {}, {}), times_s=(5.0, 5.2, 5.4), start_s=1.0, import_s=3.0,
                  hook_s=0.5, warm_first_s=0.3)
    timing = timing_of(probe)
    assert timing is not None
    assert timing.step_s == pytest.approx(0.2)
    assert timing.setup_s == pytest.approx(0.1)  # the warm run: 0.3 s less a step
    # Ray's start 1 s + import 3 s + the cold run's extra setup (5 - 3 - 0.5 - 0.2 - 0.1)
    assert timing.worker_start_s == pytest.approx(1.0 + 3.0 + 1.2)
    assert timing.trial_overhead_s == pytest.approx(TUNE_TRIAL_OVERHEAD_S + 0.1)


def test_multi_fidelity_savings() -> None:
    asha = HyperbandSchedule(max_steps=9, grace_period=1, reduction_factor=3, brackets=1)
    # rungs 1 and 3 below 9: 2/3 stop at 1, 2/9 at 3, 1/9 run all 9 steps
    assert budget_fraction(asha) == pytest.approx((2 / 3 * 1 + 2 / 9 * 3 + 1 / 9 * 9) / 9)
    assert budget_fraction(None) == 1.0
    assert budget_fraction(PopulationSchedule("pbt", 9, 3, 0.25, 0.25)) == 1.0
    hyperband = HyperbandSchedule(max_steps=9, grace_period=1, reduction_factor=3, brackets=3)
    assert budget_fraction(asha) < budget_fraction(hyperband) < 1.0
    searcher = create_searcher(validate_file(ROOT / "spaces" / "digits_asha.yaml"))
    assert budget_fraction(searcher.schedule()) == pytest.approx(budget_fraction(asha))


def test_concurrency_is_the_smallest_limit() -> None:
    assert concurrency_of(2, 1, 0, 16, None, 60)[0] == 2
    assert concurrency_of(None, 1, 0, 16, None, 60) == (16, "16 CPUs / 1 per trial")
    assert concurrency_of(None, 1, 0.25, 16, 1, 60) == (4, "1 GPUs / 0.25 per trial")
    assert concurrency_of(8, 2, 0, 4, None, 3)[0] == 2
    assert concurrency_of(8, 1, 0, 16, None, 3)[0] == 3


def test_estimate_arithmetic_counts_savings_repeats_and_concurrency() -> None:
    timing = Timing(step_s=0.5, setup_s=0.1, worker_start_s=4.0, steps_measured=3)
    each = TUNE_TRIAL_OVERHEAD_S + 0.1
    plain = estimate_cost(trials=10, repeats=0, steps=10, fraction=1.0, timing=timing,
                          concurrency=2, cpu=1, gpu=0.5)
    assert plain.trial_s == pytest.approx(each + 5.0)
    assert plain.wall_s == pytest.approx(TUNE_FIT_OVERHEAD_S + 4.0 + 10 * (each + 5.0) / 2)
    assert plain.compute_s == pytest.approx(10 * (each + 5.0) + 2 * 4.0)
    assert plain.gpu_hours == pytest.approx(plain.compute_s * 0.5 / 3600)
    saved = estimate_cost(trials=10, repeats=0, steps=10, fraction=0.25, timing=timing,
                          concurrency=2, cpu=1, gpu=0.5)
    assert saved.wall_s == pytest.approx(TUNE_FIT_OVERHEAD_S + 4.0 + 10 * (each + 1.25) / 2)
    repeated = estimate_cost(trials=10, repeats=6, steps=10, fraction=0.25, timing=timing,
                             concurrency=4, cpu=1, gpu=0)
    assert repeated.wall_s == pytest.approx(
        2 * (TUNE_FIT_OVERHEAD_S + 4.0) + 10 * (each + 1.25) / 4 + 6 * (each + 5.0) / 4)
    assert repeated.gpu_hours == 0


def test_workers_start_slower_on_a_full_cluster_and_the_driver_start_counts_once() -> None:
    timing = Timing(step_s=0.5, setup_s=0.0, worker_start_s=4.0, steps_measured=3)
    args = {"trials": 4, "repeats": 0, "steps": 2, "fraction": 1.0, "timing": timing,
            "concurrency": 2, "cpu": 1, "gpu": 0}
    spare = estimate_cost(**args, cluster_cpus=8)
    full = estimate_cost(**args, cluster_cpus=2, driver_start_s=3.0)
    assert full.wall_s - spare.wall_s == pytest.approx(3.0 + 4.0 * (WORKER_START_CONTENTION - 1))


def test_a_study_keeping_checkpoints_pays_for_one_every_step() -> None:
    timing = Timing(step_s=0.5, setup_s=0.0, worker_start_s=4.0, steps_measured=3)
    args = {"trials": 4, "repeats": 0, "steps": 10, "fraction": 1.0, "timing": timing,
            "concurrency": 2, "cpu": 1, "gpu": 0}
    kept = estimate_cost(**args, checkpoints=True)
    assert kept.wall_s - estimate_cost(**args).wall_s == pytest.approx(
        4 * 10 * CHECKPOINT_STEP_S / 2)


def test_the_input_pipeline_check_times_the_batches_against_the_step() -> None:
    from searchsvc.analysis.preflight import input_check

    loader = {"workers": 2}
    # 32 samples a batch: the loop waited 0.03 s for each and computed 0.01 s on it (after a
    # first batch's warm-up, left out): it delivered 800 samples/s, the step consumes 3,200.
    slow = ((0.5, 0.2, 32), (0.03, 0.01, 32), (0.03, 0.01, 32), (0.03, 0.01, 32))
    bound = input_check(Probe(loader=loader, batches=slow))
    assert bound.ok is False
    assert bound.detail.startswith(
        "input-bound: the loader delivered 800 samples/s (2 worker processes), the training "
        "step alone consumes 3,200 samples/s; the loop waited 75% of its time")
    assert "More DataLoader workers" in bound.detail and "cached" in bound.detail
    # The same step, with batches ready when asked: it keeps up, both rates shown.
    fast = ((0.5, 0.2, 32), (0.001, 0.01, 32), (0.001, 0.01, 32), (0.001, 0.01, 32))
    keeps_up = input_check(Probe(loader=loader, batches=fast))
    assert keeps_up.ok is True and keeps_up.detail.startswith("keeps up: the loader delivered")
    assert "3,200 samples/s" in keeps_up.detail and "waited 9%" in keeps_up.detail
    # A step's last batch, which also evaluates and reports, does not sway the median.
    with_eval = (*slow, (0.03, 5.0, 32))
    assert input_check(Probe(loader=loader, batches=with_eval)).ok is False
    assert input_check(Probe()).ok is None  # no sdk.data_loader
    assert input_check(Probe(loader=loader, batches=((0.1, 0.0, None),))).ok is None
