"""The replay's shortcuts decide exactly as judging every result in arrival order does: a rung
rule judged only at the results that can record a rung (``Decider.relevant``), curves on one
grid judged trial by trial, and each setting's outcome read from running totals. The
reference here is the plain way: every result of :func:`interleave`, judged in its order."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from searchsvc.analysis.replay import (
    ReplayCurve,
    Rule,
    default_rules,
    interleave,
    one_grid,
    replay_rule,
    replay_study,
)
from searchsvc.core import Measurement, TrialRecord, TrialState
from searchsvc.core.curve import Curve
from searchsvc.searchers.schedule import HyperbandSchedule
from searchsvc.searchers.stopping import RunningQuantile, decider

MAX_STEPS = 12
RULES = [*default_rules(MAX_STEPS), Rule("hyperband", 1, 2.0, promotion="quota"),
         Rule("asha", 2, 2.0, per_arm=False)]


def every_result_judged(rule: Rule, curves: list[ReplayCurve], mode: str, concurrency: int,
                        seed: int) -> dict[int, int]:
    decide = decider(rule, MAX_STEPS, mode, seed)
    stopped: dict[int, int] = {}
    for result in interleave(curves, concurrency, stopped):
        if decide.judge(result) is not None:
            stopped[result.number] = result.step
    return stopped


def random_curves(rng: random.Random, *, ragged: bool) -> list[ReplayCurve]:
    """Up to 40 noisy falling curves in two arms; ``ragged``: each skips steps at random (its
    own grid), else each reports steps 1.. up to a length of its own."""
    curves = []
    for number in range(rng.randint(5, 40)):
        if ragged:
            steps = sorted(rng.sample(range(1, MAX_STEPS + 1), rng.randint(1, MAX_STEPS)))
        else:
            steps = list(range(1, rng.randint(1, MAX_STEPS) + 1))
        level = rng.uniform(0.2, 2.0)
        points = Curve((s, level + rng.uniform(0.0, 1.0) / s) for s in steps)
        curves.append(ReplayCurve(number, points, arm=(("depth", number % 2),)))
    rng.shuffle(curves)  # the order the trials started in is not their numbers'
    return curves


@pytest.mark.parametrize("ragged", [False, True])
def test_every_rule_stops_the_trials_that_judging_every_result_stops(ragged: bool) -> None:
    rng = random.Random(11 if ragged else 5)
    cases = 0
    for _ in range(12):
        curves = random_curves(rng, ragged=ragged)
        assert one_grid(curves) or ragged
        mode, concurrency, seed = rng.choice(["min", "max"]), rng.randint(1, 4), rng.randint(0, 9)
        for rule in RULES:
            expected = every_result_judged(rule, curves, mode, concurrency, seed)
            assert replay_rule(rule, curves, MAX_STEPS, mode, concurrency, seed) == expected, (
                rule.label, concurrency)
            cases += bool(expected)
    assert cases > 100  # the rules did stop trials: the comparison decided something


def test_curves_on_one_grid_are_recognised_and_ragged_ones_are_not() -> None:
    def curve(number: int, steps: list[int]) -> ReplayCurve:
        return ReplayCurve(number, Curve((s, 1.0) for s in steps))

    assert one_grid([curve(0, [1, 2, 3]), curve(1, [1, 2]), curve(2, [1, 2, 3])])
    assert not one_grid([curve(0, [1, 2, 3]), curve(1, [1, 3])])
    assert not one_grid([curve(0, [2, 4]), curve(1, [1, 2])])


def test_a_hyperband_bracket_is_the_draw_numpys_choice_makes() -> None:
    for schedule in [HyperbandSchedule(20, 1, 2.0, 5, seed=0),
                     HyperbandSchedule(81, 1, 3.0, 5, seed=3),
                     HyperbandSchedule(100, 2, 2.0, 4, seed=11)]:
        sizes = np.array([len(schedule.milestones(b)) for b in range(schedule.brackets)],
                         dtype=float)
        weights = np.exp(sizes - sizes.max())
        for number in range(2_000):
            rng = np.random.default_rng([schedule.seed, number, 7])
            assert schedule.bracket_for(number) == int(
                rng.choice(schedule.brackets, p=weights / weights.sum()))


def trial(number: int, values: list[float], seconds: float) -> TrialRecord:
    measurements = tuple(Measurement(step, v, {"loss": v}, telemetry={"step_time_s": seconds})
                         for step, v in enumerate(values, 1))
    best = min(values)
    return TrialRecord(id=number + 1, study_id=1, number=number,
                       state=TrialState.COMPLETED, config={"depth": number % 3},
                       arm={"depth": number % 3}, seed=number, started_at=float(number),
                       best_value=best, best_step=values.index(best) + 1,
                       last_step=len(values), measurements=measurements)


@pytest.mark.parametrize("mode", ["min", "max"])
def test_each_settings_steps_hours_and_bests_are_those_of_the_points_it_ran(mode: str) -> None:
    rng = random.Random(3)
    trials = [trial(n, [rng.uniform(0, 1) + 1 / s for s in range(1, MAX_STEPS + 1)],
                    rng.uniform(1, 60)) for n in range(30)]
    found = replay_study(trials, "loss", mode, MAX_STEPS, scientific=("depth",))
    sign = 1.0 if mode == "min" else -1.0
    seconds = {t.number: t.measurements[0].telemetry["step_time_s"] for t in trials}
    for setting in found.settings:
        ran = {t.number: [m.value for m in t.measurements
                          if m.step <= setting.stopped.get(t.number, MAX_STEPS)]
               for t in trials}
        assert setting.steps_run == sum(len(v) for v in ran.values())
        assert setting.hours_run == pytest.approx(
            sum(len(v) * seconds[n] for n, v in ran.items()) / 3600)
        assert setting.best_value == min((v for vs in ran.values() for v in vs),
                                         key=lambda v: sign * v)
        for depth in range(3):
            mine = [t.number for t in trials if t.number % 3 == depth]
            full = min(sign * v for n in mine for v in (m.value for m in trials[n].measurements))
            kept = min(sign * v for n in mine for v in ran[n])
            assert math.isclose(setting.shortfall[f"depth={depth}"], kept - full)


@pytest.mark.parametrize("share", [0.5, 0.25, 0.75, 1 - 1 / 3, 1 - 1 / 2, 0.0, 1.0])
def test_a_running_quantile_is_numpys_percentile_of_every_prefix(share: float) -> None:
    rng = random.Random(share)
    values = [rng.choice([rng.gauss(0, 1), 0.5, -1.0]) for _ in range(300)]  # with ties
    running = RunningQuantile(share)
    for n, value in enumerate(values, 1):
        running.add(value)
        assert running.value() == np.percentile(values[:n], 100 * share), n


@pytest.mark.parametrize("second_process", ["works", "fails"])
def test_a_large_replay_split_over_two_processes_stops_the_same_trials(
        monkeypatch: pytest.MonkeyPatch, second_process: str) -> None:
    from searchsvc.searchers import stopping_replay

    curves = random_curves(random.Random(8), ragged=False)
    alone = [replay_rule(rule, curves, MAX_STEPS, "min", 2, 3) for rule in RULES]
    monkeypatch.setattr(stopping_replay, "PARALLEL_RESULTS", 1)
    monkeypatch.setattr(stopping_replay.os, "cpu_count", lambda: 2)
    if second_process == "fails":  # a Python that cannot start: this process does it all
        monkeypatch.setattr(stopping_replay.sys, "executable", "/nonexistent/python")
    runs: list[int] = []
    original = stopping_replay.subprocess.run

    def run(*args, **kwargs):  # type: ignore[no-untyped-def]
        done = original(*args, **kwargs)
        runs.append(done.returncode)
        return done

    monkeypatch.setattr(stopping_replay.subprocess, "run", run)
    assert stopping_replay.replay_rules(RULES, curves, MAX_STEPS, "min", 2, 3) == alone
    assert runs == ([0] if second_process == "works" else [])  # it did replay half
