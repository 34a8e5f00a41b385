"""The telemetry analysis on planted records: per-trial summaries, GPU-hours, and the
input-bound, under-used-GPU and out-of-memory diagnoses (thresholds in
searchsvc/analysis/telemetry.py)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

from searchsvc.analysis.telemetry import (
    INPUT_BOUND_FRACTION,
    TrialTelemetry,
    gpu_diagnoses,
    oom_culprits,
    oom_error,
    study_telemetry,
    trial_telemetry,
)
from searchsvc.core import Measurement, TrialRecord, TrialState
from searchsvc.core.failures import is_out_of_memory
from searchsvc.spec import parse_spec

GIB = 1024.0


def trial(number: int, steps: list[dict[str, Any]], state: str = TrialState.COMPLETED,
          error: str | None = None, duration_s: float = 3600.0) -> TrialRecord:
    return TrialRecord(
        id=number + 1, study_id=1, number=number, state=state,  # type: ignore[arg-type]
        config={}, arm={}, seed=0, error=error, started_at=1000.0,
        finished_at=1000.0 + duration_s,
        measurements=tuple(Measurement(step, 1.0, {"loss": 1.0}, telemetry=t)
                           for step, t in enumerate(steps, 1)))


def cpu_step(wait: float | None = None, step_time: float = 1.0) -> dict[str, Any]:
    out: dict[str, Any] = {"step_time_s": step_time, "samples": 256,
                           "samples_per_s": 256 / step_time, "cpu_percent": 90.0,
                           "rss_mb": 500.0, "gpu": "none assigned"}
    if wait is not None:
        out |= {"data_wait_s": wait * step_time, "data_wait_fraction": wait}
    return out


def gpu_step(util: float, peak_gib: float, total_gib: float = 80.0) -> dict[str, Any]:
    return {"step_time_s": 0.5, "cpu_percent": 100.0, "rss_mb": 2000.0,
            "gpu_util_mean": util, "gpu_mem_peak_mb": peak_gib * GIB,
            "gpu_mem_total_mb": total_gib * GIB, "gpu_name": "NVIDIA H100 80GB HBM3"}


def test_a_summary_averages_the_steps_and_keeps_the_absent_gpu_absent() -> None:
    s = trial_telemetry(trial(0, [cpu_step(0.2, 1.0), cpu_step(0.6, 3.0)]))
    assert s.steps == 2 and s.step_time_mean_s == 2.0
    assert s.data_wait_fraction == pytest.approx((0.2 + 1.8) / 4.0)  # total wait / total time
    assert s.samples_per_s_mean == pytest.approx((256 + 256 / 3) / 2)
    assert (s.cpu_percent_mean, s.rss_mb_peak) == (90.0, 500.0)
    assert s.gpu_util_mean is None and s.gpu_mem_peak_mb is None
    assert s.gpu_absent == "gpu: none assigned"
    assert trial_telemetry(trial(1, [])).steps == 0  # a trial without telemetry


def test_the_wait_for_data_is_a_share_of_the_working_time_not_of_the_report_wait() -> None:
    # Each step waited 0.4 s for data in 0.6 s of work, then 1.4 s for the driver to take its
    # previous report (a busy machine): input-bound all the same.
    steps = [cpu_step(0.2, 2.0) | {"report_wait_s": 1.4} for _ in range(3)]
    s = trial_telemetry(trial(0, steps))
    assert s.data_wait_fraction == pytest.approx(0.4 / 0.6)
    [diagnosis] = study_telemetry([trial(0, steps)], gpu_per_trial=0).diagnoses
    assert diagnosis.kind == "input_bound" and "trial 0 67%" in diagnosis.detail


def test_input_bound_fires_on_the_slow_loader_only() -> None:
    trials = [trial(0, [cpu_step(0.9)] * 3), trial(1, [cpu_step(0.05)] * 3),
              trial(2, [cpu_step(None)] * 3),  # no data_loader: nothing to judge
              trial(3, [cpu_step(INPUT_BOUND_FRACTION)] * 3)]  # at the threshold: not above
    result = study_telemetry(trials, gpu_per_trial=0)
    [diagnosis] = result.diagnoses
    assert diagnosis.kind == "input_bound" and diagnosis.trials == (0,)
    assert "trial 0 90%" in diagnosis.detail and "50%" in diagnosis.detail
    assert result.gpu_hours == 0 and result.trial_hours == pytest.approx(4.0)


def test_gpu_hours_are_durations_times_the_gpus_each_trial_holds() -> None:
    trials = [trial(n, [gpu_step(90, 60)], duration_s=1800) for n in range(4)]
    assert study_telemetry(trials, gpu_per_trial=0.5).gpu_hours == pytest.approx(1.0)
    assert study_telemetry(trials, gpu_per_trial=2).gpu_hours == pytest.approx(4.0)


def test_input_bound_trials_are_told_to_fix_the_input_not_to_pack() -> None:
    """One GPU verdict: trials starved of data leave the GPU idle, and packing more of them
    onto it would only share the same CPUs further."""
    starved = [trial(n, [gpu_step(20, 2.0) | {"data_wait_s": 0.35, "loader_workers": 2}])
               for n in range(3)]
    [diagnosis] = study_telemetry(starved, gpu_per_trial=1, cpu_per_trial=3).diagnoses
    assert diagnosis.kind == "input_bound" and diagnosis.trials == (0, 1, 2)
    assert "Fix the input first" in diagnosis.detail
    assert "more DataLoader workers (it used 2)" in diagnosis.detail
    assert "more CPUs per trial (resources.cpu is 3)" in diagnosis.detail
    assert "resources.gpu:" not in diagnosis.detail


def test_the_h100_study_gets_the_input_advice_and_no_packing_advice() -> None:
    """The telemetry of a real study on an H100 (tests/analysis/fixtures): 4 trials waited for
    data over half their step, the GPU about a fifth busy. Its report had advised both more
    loader workers and 8 trials per GPU; now it advises the input only."""
    fixture = json.loads((Path(__file__).parent / "fixtures" / "h100_input_bound.json")
                         .read_text())
    summaries = [TrialTelemetry(**{**t, "rank_step_time_s": None}) for t in fixture["trials"]]
    resources = fixture["resources"]
    diagnoses = gpu_diagnoses(summaries, resources["gpu"], resources["cpu"])
    assert [d.kind for d in diagnoses] == ["input_bound"]
    assert diagnoses[0].trials == (4, 5, 6, 7)
    assert "Fix the input first" in diagnoses[0].detail
    assert "resources.cpu is 4" in diagnoses[0].detail
    assert not any("resources.gpu:" in d.detail for d in diagnoses)


def test_packing_advice_keeps_each_trial_its_loaders_cpus() -> None:
    # 16 CPUs on a whole GPU, 10% busy, 1 GiB: 8 would fit the GPU, but a loader of 3
    # workers + the loop needs 4 CPUs, so 4 trials of 4 CPUs each.
    trials = [trial(n, [gpu_step(10, 1.0) | {"data_wait_s": 0.05, "loader_workers": 3}])
              for n in range(2)]
    [diagnosis] = study_telemetry(trials, gpu_per_trial=1, cpu_per_trial=16).diagnoses
    assert diagnosis.kind == "underused_gpu"
    assert "resources.gpu: 0.25 and resources.cpu: 4 would fit 4 trials" in diagnosis.detail
    assert (diagnosis.data["suggested_gpu"], diagnosis.data["suggested_cpu"]) == (0.25, 4.0)


def test_under_used_gpus_name_the_packing_that_fits() -> None:
    trials = [trial(n, [gpu_step(20, 9.8), gpu_step(26, 9.5)]) for n in range(3)]
    [diagnosis] = study_telemetry(trials, gpu_per_trial=1).diagnoses
    assert diagnosis.kind == "underused_gpu" and diagnosis.trials == (0, 1, 2)
    assert "peak 9.8 GiB of 80 GiB" in diagnosis.detail
    assert "resources.gpu: 0.25 would fit 4 trials per GPU" in diagnosis.detail
    assert diagnosis.data["trials_per_gpu"] == 4
    busy = [trial(n, [gpu_step(85, 9.8)]) for n in range(3)]
    assert study_telemetry(busy, gpu_per_trial=1).diagnoses == ()  # a busy GPU is not advised


SPEC = textwrap.dedent("""
    study: oom
    objective: m:f
    metric: loss
    mode: min
    parameters:
      batch_size: {values: [32, 64, 128, 256, 512]}
      width: {low: 16, high: 256, type: int, scale: log}
      lr: {low: 1.0e-4, high: 1.0e-1, scale: log}
      optimizer: {values: [adam, sgd]}
      epochs: {role: fixed, value: 9}
    """)
TORCH_OOM = ("Traceback (most recent call last):\n  File \"train.py\", line 9\n"
             "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB")


def test_out_of_memory_names_the_values_highest_in_their_ranges() -> None:
    spec = parse_spec(SPEC)
    config = {"batch_size": 512, "width": 128, "lr": 1e-4, "optimizer": "adam", "epochs": 9}
    culprits = oom_culprits(config, spec.parameters.values())
    assert [c[0] for c in culprits] == ["batch_size", "width", "lr"]
    assert culprits[0][2] == 1.0 and culprits[1][2] == pytest.approx(0.75)
    error = oom_error(TORCH_OOM, config, spec.parameters.values())
    assert error.startswith("out of memory. Most likely from batch_size=512 (100% of its "
                            "range), width=128 (75% of its range).")
    assert error.endswith("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB")
    assert "lr=" not in error and "epochs" not in error
    assert is_out_of_memory(TORCH_OOM)
    assert is_out_of_memory("RuntimeError: CUDA error: out of memory")
    assert not is_out_of_memory("MemoryError\nValueError: boom")


def test_out_of_memory_trials_are_diagnosed_and_other_failures_are_not() -> None:
    spec = parse_spec(SPEC)
    error = oom_error(TORCH_OOM, {"batch_size": 512}, spec.parameters.values())
    trials = [trial(0, [], TrialState.INFEASIBLE, error), trial(1, [], TrialState.FAILED, "boom"),
              trial(2, [], TrialState.INFEASIBLE, "loss became non-finite at step 2")]
    [diagnosis] = study_telemetry(trials, gpu_per_trial=1).diagnoses
    assert diagnosis.kind == "out_of_memory" and diagnosis.trials == (0,)
    assert "trial 0: most likely from batch_size=512" in diagnosis.detail


def ranked_step(*rank_times: float) -> dict[str, Any]:
    """A data-parallel step: rank 0's telemetry with every rank's under ``ranks``."""
    ranks = [cpu_step(step_time=t) for t in rank_times]
    return {**ranks[0], "ranks": ranks}


def test_a_rank_well_slower_than_the_others_is_named_a_straggler() -> None:
    slow = trial(0, [ranked_step(0.20, 0.61, 0.21, 0.19) for _ in range(5)])
    even = trial(1, [ranked_step(0.20, 0.22, 0.21, 0.19) for _ in range(5)])
    single = trial(2, [cpu_step(step_time=0.2) for _ in range(5)])
    found = study_telemetry([slow, even, single], 0.0)
    [diagnosis] = [d for d in found.diagnoses if d.kind == "straggler"]
    assert diagnosis.trials == (0,) and diagnosis.data["ranks"] == {"0": 1}
    assert "trial 0 rank 1 (0.61 s a step against 0.2 s)" in diagnosis.detail
    assert any(f.startswith("Straggler: trial 0 rank 1") for f in found.findings)
    # The ranks side by side: each one's median step time.
    assert trial_telemetry(slow).rank_step_time_s == pytest.approx((0.20, 0.61, 0.21, 0.19))
    assert trial_telemetry(single).rank_step_time_s is None


def test_a_straggler_needs_the_ratio_and_a_real_gap() -> None:
    # 1.4x slower: within the ratio.
    assert not [d for d in study_telemetry(
        [trial(0, [ranked_step(1.0, 1.4)] * 3)], 0.0).diagnoses if d.kind == "straggler"]
    # 3x slower but 4 ms apart: timer noise on a tiny step, not a straggler.
    assert not [d for d in study_telemetry(
        [trial(0, [ranked_step(0.002, 0.006)] * 3)], 0.0).diagnoses if d.kind == "straggler"]


def test_the_straggler_is_the_rank_that_works_longest_not_the_one_that_waits() -> None:
    # Ray Train's report is a barrier: every rank's step takes the slow rank's 0.6 s, and the
    # fast ranks spend the difference waiting there.
    def barrier_step() -> dict[str, Any]:
        ranks = [{**cpu_step(step_time=0.6), "report_wait_s": wait}
                 for wait in (0.4, 0.0, 0.41)]
        return {**ranks[0], "ranks": ranks}

    slow = trial(0, [barrier_step() for _ in range(4)])
    [diagnosis] = [d for d in study_telemetry([slow], 0.0).diagnoses if d.kind == "straggler"]
    assert diagnosis.data["ranks"] == {"0": 1}
    assert trial_telemetry(slow).rank_step_time_s == pytest.approx((0.2, 0.6, 0.19))
    # Wall-clock step times alone, the same on every rank, name nobody.
    even = trial(1, [ranked_step(0.6, 0.6, 0.6) for _ in range(4)])
    assert not [d for d in study_telemetry([even], 0.0).diagnoses if d.kind == "straggler"]


def test_a_data_parallel_trial_holds_its_gpu_on_every_worker() -> None:
    found = study_telemetry([trial(0, [cpu_step()])], 0.5, workers=4)
    assert found.gpu_per_trial == 2.0 and found.gpu_hours == pytest.approx(found.trial_hours * 2)
