"""The replay's ASHA and Hyperband stop the same trials as Ray Tune's own scheduler classes fed
the same results in the same order (no cluster: the schedulers are driven directly, with
stand-in trials, as Tune's controller drives them)."""

from __future__ import annotations

import random
from types import SimpleNamespace
from typing import Any

import pytest
from ray.tune.schedulers import AsyncHyperBandScheduler, TrialScheduler

from searchsvc.analysis.replay import ReplayCurve, Rule, interleave, replay_rule
from searchsvc.core.curve import Curve
from searchsvc.driver.schedulers import STEP, StudyHyperBand
from searchsvc.worker.context import META_KEY

MAX_STEPS = 9


def random_curves(seed: int, trials: int = 12) -> list[ReplayCurve]:
    """Noisy, crossing curves: final levels and early slopes drawn independently."""
    rng = random.Random(seed)
    curves = []
    for number in range(trials):
        level, start = rng.uniform(0.1, 1.0), rng.uniform(0.5, 3.0)
        curves.append(ReplayCurve(number, Curve(
            (s, level + start / s + rng.gauss(0, 0.05)) for s in range(1, MAX_STEPS + 1))))
    return curves


def ray_stops(scheduler: Any, curves: list[ReplayCurve], concurrency: int,
              mode: str) -> dict[int, int]:
    """Drive ``scheduler`` as Tune does: each trial added before its first result, every
    result passed to ``on_trial_result``, a trial that ends (stopped or done) completed."""
    trials = {c.number: SimpleNamespace(trial_id=f"t{c.number}",
                                        config={META_KEY: {"number": c.number}})
              for c in curves}
    last = {c.number: c.points[-1][0] for c in curves}
    stopped: dict[int, int] = {}
    for result in interleave(curves, concurrency, stopped):
        trial = trials[result.number]
        if result.step == curves[result.number].points[0][0]:
            scheduler.on_trial_add(None, trial)
        report = {STEP: result.step, "loss": result.value}
        action = scheduler.on_trial_result(None, trial, report)
        if action == TrialScheduler.STOP and result.step < MAX_STEPS:
            stopped[result.number] = result.step
        if action == TrialScheduler.STOP or result.step == last[result.number]:
            scheduler.on_trial_complete(None, trial, report)
    return stopped


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("concurrency", [1, 3])
@pytest.mark.parametrize("grace, factor", [(1, 3.0), (1, 2.0), (2, 2.0)])
@pytest.mark.parametrize("mode", ["min", "max"])
def test_asha_replay_stops_what_rays_asha_stops(seed: int, concurrency: int, grace: int,
                                                factor: float, mode: str) -> None:
    curves = random_curves(seed)
    ray = AsyncHyperBandScheduler(time_attr=STEP, metric="loss", mode=mode, max_t=MAX_STEPS,
                                  grace_period=grace, reduction_factor=factor, brackets=1)
    expected = ray_stops(ray, curves, concurrency, mode)
    assert expected  # the curves cross enough for Ray's ASHA to stop some trials
    assert replay_rule(Rule("asha", grace, factor), curves, MAX_STEPS, mode,
                       concurrency) == expected


class _Events:
    def stopped_early(self, trial: Any, step: int, data: dict[str, Any]) -> None:
        pass

    def exploited(self, trial: Any, step: int, data: dict[str, Any]) -> None:
        pass


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("concurrency", [1, 4])
def test_hyperband_replay_stops_what_the_studys_hyperband_scheduler_stops(
        seed: int, concurrency: int) -> None:
    """Hyperband's brackets: the scheduler a study runs (Ray's, brackets by trial number)."""
    curves = random_curves(seed, trials=20)
    rule = Rule("hyperband", 1, 3.0)
    scheduler = StudyHyperBand(rule.schedule(MAX_STEPS), "loss", "min", _Events())
    assert scheduler.schedule.brackets == 3
    expected = ray_stops(scheduler, curves, concurrency, "min")
    assert expected
    assert replay_rule(rule, curves, MAX_STEPS, "min", concurrency) == expected
