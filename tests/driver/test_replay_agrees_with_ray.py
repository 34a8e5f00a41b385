"""The replay's ASHA and Hyperband stop the same trials as Ray Tune's own scheduler classes fed
the same results in the same order, within each scientific arm as a separate Ray ASHA per arm
would; and the study's scheduler stops what the replay predicts (no cluster: the schedulers are
driven directly, with stand-in trials, as Tune's controller drives them)."""

from __future__ import annotations

import random
from types import SimpleNamespace
from typing import Any

import pytest
from ray.tune.schedulers import AsyncHyperBandScheduler, TrialScheduler

from searchsvc.analysis.replay import ReplayCurve, Rule, interleave, replay_rule
from searchsvc.core.curve import Curve
from searchsvc.core.stopping import arm_key
from searchsvc.driver.schedulers import STEP, StudyStopping
from searchsvc.worker.context import META_KEY

MAX_STEPS = 9


def random_curves(seed: int, trials: int = 12, arms: int = 1) -> list[ReplayCurve]:
    """Noisy, crossing curves: final levels and early slopes drawn independently; with
    ``arms``, trials take turns in arms ``depth=0, 1, ...``, each arm slower to start than the
    one before."""
    rng = random.Random(seed)
    curves = []
    for number in range(trials):
        depth = number % arms
        level, start = rng.uniform(0.1, 1.0), rng.uniform(0.5, 3.0) * (1 + 2 * depth)
        curves.append(ReplayCurve(number, Curve(
            (s, level + start / s + rng.gauss(0, 0.05)) for s in range(1, MAX_STEPS + 1)),
            arm=arm_key({"depth": depth}, ("depth",)) if arms > 1 else ()))
    return curves


def ray_stops(scheduler: Any, curves: list[ReplayCurve], concurrency: int,
              mode: str) -> dict[int, int]:
    """Drive ``scheduler`` as Tune does: each trial added before its first result, every
    result passed to ``on_trial_result``, a trial that ends (stopped or done) completed."""
    trials = {c.number: SimpleNamespace(trial_id=f"t{c.number}", config={
        META_KEY: {"number": c.number}, **{name: int(value) for name, value in c.arm}})
        for c in curves}
    by_number = {c.number: c for c in curves}
    stopped: dict[int, int] = {}
    for result in interleave(curves, concurrency, stopped):
        if fed(scheduler, trials[result.number], result, by_number[result.number]):
            stopped[result.number] = result.step
    return stopped


def fed(scheduler: Any, trial: Any, result: Any, curve: ReplayCurve) -> bool:
    """Give ``scheduler`` one result as Tune does (the trial added before its first, completed
    after its last or a stop); whether it stopped the trial early."""
    if result.step == curve.points[0][0]:
        scheduler.on_trial_add(None, trial)
    report = {STEP: result.step, "loss": result.value}
    action = scheduler.on_trial_result(None, trial, report)
    if action == TrialScheduler.STOP or result.step == curve.points[-1][0]:
        scheduler.on_trial_complete(None, trial, report)
    return action == TrialScheduler.STOP and result.step < MAX_STEPS


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
@pytest.mark.parametrize("arms", [1, 2])
def test_the_studys_scheduler_stops_what_the_replay_predicts(seed: int, concurrency: int,
                                                             arms: int) -> None:
    """Hyperband's brackets by trial number, each arm on its own: the scheduler a study runs,
    driven as Tune drives it, stops exactly the trials the replay says, at the same steps."""
    curves = random_curves(seed, trials=20, arms=arms)
    rule = Rule("hyperband", 1, 3.0)
    scheduler = StudyStopping(rule, MAX_STEPS, "loss", "min", _Events(), seed=7,
                              scientific=("depth",))
    expected = ray_stops(scheduler, curves, concurrency, "min")
    assert expected
    assert replay_rule(rule, curves, MAX_STEPS, "min", concurrency, seed=7) == expected


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("concurrency", [1, 3])
def test_within_arm_asha_stops_what_one_ray_asha_per_arm_stops(seed: int,
                                                               concurrency: int) -> None:
    """Two arms, the second slow to start: the replay's per-arm ASHA equals a separate Ray
    ASHA fed only that arm's results, in the order the whole study reported them; across arms
    (one Ray ASHA for all) the slow arm loses trials it keeps within its own arm."""
    curves = random_curves(seed, trials=16, arms=2)
    rule = Rule("asha", 1, 3.0)
    within = replay_rule(rule, curves, MAX_STEPS, "min", concurrency)
    for arm in {c.arm for c in curves}:
        ray = AsyncHyperBandScheduler(time_attr=STEP, metric="loss", mode="min",
                                      max_t=MAX_STEPS, grace_period=1, reduction_factor=3,
                                      brackets=1)
        numbers = {c.number for c in curves if c.arm == arm}
        assert ray_arm_stops(ray, curves, numbers, within, concurrency) == {
            n: step for n, step in within.items() if n in numbers}, arm
    across = replay_rule(Rule("asha", 1, 3.0, per_arm=False), curves, MAX_STEPS, "min",
                         concurrency)
    slow = {c.number for c in curves if c.arm == (("depth", "1"),)}
    assert len(slow & set(across)) > len(slow & set(within))


def ray_arm_stops(scheduler: Any, curves: list[ReplayCurve], numbers: set[int],
                  study_stops: dict[int, int], concurrency: int) -> dict[int, int]:
    """Ray's ASHA fed only the results of the trials in ``numbers``, in the order the whole
    study reported them (its ``study_stops`` freeing slots as they did)."""
    trials = {n: SimpleNamespace(trial_id=f"t{n}", config={META_KEY: {"number": n}})
              for n in numbers}
    by_number = {c.number: c for c in curves}
    found: dict[int, int] = {}
    for result in interleave(curves, concurrency, study_stops):
        if result.number in numbers and fed(scheduler, trials[result.number], result,
                                            by_number[result.number]):
            found[result.number] = result.step
    return found
