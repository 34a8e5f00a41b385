"""The Hyperband scheduler's promotion rules, driven directly (no Ray cluster needed)."""

from __future__ import annotations

import math
from typing import Any

import pytest
from ray.tune.schedulers import TrialScheduler

from searchsvc.driver.schedulers import StudyHyperBand
from searchsvc.searchers import HyperbandSchedule
from searchsvc.worker.context import META_KEY


class FakeTrial:
    def __init__(self, number: int):
        self.trial_id = f"t{number}"
        self.config = {META_KEY: {"number": number}}


class Events:
    def __init__(self) -> None:
        self.stops: list[tuple[int, dict[str, Any]]] = []

    def stopped_early(self, trial: Any, step: int, data: dict[str, Any]) -> None:
        self.stops.append((step, data))

    def exploited(self, trial: Any, step: int, data: dict[str, Any]) -> None:
        raise AssertionError("no exploits in Hyperband")


def scheduler(promotion: str) -> tuple[StudyHyperBand, Events]:
    schedule = HyperbandSchedule(max_steps=9, grace_period=1, reduction_factor=3, brackets=1,
                                 promotion=promotion)  # type: ignore[arg-type]
    events = Events()
    return StudyHyperBand(schedule, "loss", "min", events, label="bohb"), events


def first_rung_actions(s: StudyHyperBand, losses: list[float], first: int = 0) -> list[str]:
    actions = []
    for number, loss in enumerate(losses, start=first):
        trial = FakeTrial(number)
        s.on_trial_add(None, trial)
        actions.append(s.on_trial_result(None, trial, {"training_iteration": 1, "loss": loss}))
    return actions


IMPROVING = [1.0 - 0.05 * i for i in range(12)]  # every trial beats all before it


def test_cutoff_rule_lets_every_improving_trial_go_on() -> None:
    s, _ = scheduler("cutoff")
    assert first_rung_actions(s, IMPROVING) == [TrialScheduler.CONTINUE] * 12


def test_cutoff_rule_stops_a_trial_outside_the_top_third_so_far_and_reports_its_cutoff() -> None:
    s, events = scheduler("cutoff")
    # In this order: 0.9 is worse than 0.5; 0.1 beats the top third of (0.5, 0.9); 0.7 is
    # outside that of (0.5, 0.9, 0.1), whose cutoff interpolates to 0.5 - (0.5 - 0.1) / 3;
    # 0.3 is inside that of all four (cutoff 0.5).
    actions = first_rung_actions(s, [0.5, 0.9, 0.1, 0.7, 0.3])
    assert actions == [TrialScheduler.CONTINUE, TrialScheduler.STOP, TrialScheduler.CONTINUE,
                       TrialScheduler.STOP, TrialScheduler.CONTINUE]
    assert [(step, data["rung"], data["reason"], data["value"]) for step, data in events.stops
            ] == [(1, 1, "below_cutoff", 0.9), (1, 1, "below_cutoff", 0.7)]
    # in the metric's own units (loss, minimised), not Ray's negated ones
    assert [data["cutoff"] for _, data in events.stops] == [
        pytest.approx(0.5), pytest.approx(0.5 - 0.4 / 3)]


def test_quota_lets_at_most_a_third_of_a_rung_go_on_and_says_why_it_stopped_the_rest() -> None:
    s, events = scheduler("quota")
    actions = first_rung_actions(s, IMPROVING)
    for n in range(1, 13):
        assert actions[:n].count(TrialScheduler.CONTINUE) <= math.ceil(n / 3)
    assert actions.count(TrialScheduler.CONTINUE) == 4
    assert {data["reason"] for _, data in events.stops} == {"rung_quota_full"}
    assert all(step == 1 and data["rung"] == 1 for step, data in events.stops)


def test_quota_still_stops_trials_below_the_cutoff() -> None:
    s, events = scheduler("quota")
    actions = first_rung_actions(s, [0.1, 0.9, 0.8, 0.05])
    assert actions == [TrialScheduler.CONTINUE, TrialScheduler.STOP, TrialScheduler.STOP,
                       TrialScheduler.CONTINUE]
    assert events.stops[0][1]["reason"] == "below_cutoff"


def test_a_resumed_study_counts_the_promotions_of_its_earlier_run() -> None:
    s, _ = scheduler("quota")
    s.replay(0, [(1, 0.5), (2, 0.4), (3, 0.3)])  # went on from rung 1
    s.replay(1, [(1, 0.9)])  # stopped at rung 1
    # Rung 1 now holds 2 values, one promoted: a third trial may go on (ceil(3/3) = 1 is used
    # up) only if the quota allows, whatever its value.
    assert first_rung_actions(s, [0.01], first=2) == [TrialScheduler.STOP]
    assert first_rung_actions(s, [0.02], first=3) == [TrialScheduler.CONTINUE]  # ceil(4/3) = 2
