"""The packing rule (core/packing.py) that the report's advice and ``gpu: auto`` share."""

from __future__ import annotations

import pytest

from searchsvc.core.packing import MEMORY_HEADROOM, choose_packing, loader_cpus, trials_now

GIB = 1024.0


def test_light_trial_on_a_whole_gpu_packs_eight() -> None:
    packing = choose_packing(util_percent=10.0, peak_mb=2 * GIB, total_mb=80 * GIB)
    assert (packing.trials_per_gpu, packing.gpu, packing.cpu) == (8, 0.125, None)
    assert packing.limit == ""


def test_memory_limits_the_packing() -> None:
    # 3 x 20 GiB x 1.2 = 72 GiB fits 80 but 4 x 24 = 96 GiB does not: k stays at 2 (of 1,2,4,8)
    packing = choose_packing(util_percent=5.0, peak_mb=20 * GIB, total_mb=80 * GIB)
    assert packing.trials_per_gpu == 2
    assert "exceed the GPU's" in packing.limit
    assert 2 * 20 * GIB * MEMORY_HEADROOM <= 80 * GIB < 4 * 20 * GIB * MEMORY_HEADROOM


def test_utilisation_limits_the_packing() -> None:
    # 30% busy alone: 2 trials need 60%, 4 need 120%
    packing = choose_packing(util_percent=30.0, peak_mb=1 * GIB, total_mb=80 * GIB)
    assert packing.trials_per_gpu == 2
    assert "120%" in packing.limit


def test_utilisation_measured_while_sharing_scales_by_today() -> None:
    # 22% busy with 4 trials on the GPU: 8 trials would make it 44%
    shared = choose_packing(util_percent=22.0, peak_mb=3.6 * GIB, total_mb=80 * GIB,
                            gpu_per_trial=0.25)
    assert shared.trials_per_gpu == 8
    # the same 22% from one trial alone: 8 trials would need 176%
    alone = choose_packing(util_percent=22.0, peak_mb=3.6 * GIB, total_mb=80 * GIB)
    assert alone.trials_per_gpu == 4


def test_a_busy_gpu_is_not_shared() -> None:
    packing = choose_packing(util_percent=95.0, peak_mb=1 * GIB, total_mb=80 * GIB)
    assert (packing.trials_per_gpu, packing.gpu) == (1, 1.0)


def test_cpus_are_divided_but_never_below_the_loaders() -> None:
    # 16 CPUs per GPU, a loader of 2 workers + the loop = 3 CPUs: 8 trials would get 2 each
    packing = choose_packing(util_percent=5.0, peak_mb=1 * GIB, total_mb=80 * GIB,
                             cpus_per_gpu=16, loader_workers=2)
    assert (packing.trials_per_gpu, packing.gpu, packing.cpu) == (4, 0.25, 4.0)
    assert "fewer than the 3 its data loader used" in packing.limit
    unknown = choose_packing(util_percent=5.0, peak_mb=1 * GIB, total_mb=80 * GIB,
                             cpus_per_gpu=16)
    assert (unknown.trials_per_gpu, unknown.cpu) == (8, 2.0)


@pytest.mark.parametrize(("share", "now"), [(1.0, 1), (0.5, 2), (0.25, 4), (1 / 3, 3),
                                            (2.0, 1), (0.0, 1)])
def test_trials_now(share: float, now: int) -> None:
    assert trials_now(share) == now


def test_loader_cpus_count_the_loop() -> None:
    assert (loader_cpus(None), loader_cpus(0), loader_cpus(4)) == (None, 1, 5)


@pytest.mark.parametrize(("util", "peak", "gpu", "expected"), [
    (20, 9.8, 1, 4),  # 8 x 9.8 x 1.2 = 94 GiB > 80; 4 x 9.8 x 1.2 = 47 GiB fits
    (20, 2.0, 1, 4),  # memory allows 8 but 8 x 20% > 100%
    (10, 2.0, 1, 8),
    (40, 30.0, 1, 2),  # 2 x 30 x 1.2 = 72 GiB fits and 2 x 40% = 80%
    (45, 40.0, 1, 1),  # 2 x 40 x 1.2 = 96 GiB > 80
    (20, 9.8, 0.25, 4),  # already 4 per GPU; 8 do not fit
    (10, 4.0, 0.5, 8),  # 2 per GPU today at 10%: 8 would make 40%
])
def test_the_packing_rule(util: float, peak: float, gpu: float, expected: int) -> None:
    fit = choose_packing(util_percent=util, peak_mb=peak * GIB, total_mb=80 * GIB,
                         gpu_per_trial=gpu)
    assert fit.trials_per_gpu == expected
