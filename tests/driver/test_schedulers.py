"""The early-stopping scheduler's rules, driven directly (no Ray cluster needed): Hyperband's
promotion rules, and every rule judging a trial only against its own scientific arm."""

from __future__ import annotations

import math
from typing import Any

import pytest
from ray.tune.schedulers import TrialScheduler

from searchsvc.core.stopping import StoppingRule
from searchsvc.driver.schedulers import StudyStopping
from searchsvc.searchers import HyperbandSchedule
from searchsvc.worker.context import META_KEY


class FakeTrial:
    def __init__(self, number: int, depth: int | None = None):
        self.trial_id = f"t{number}"
        arm = {} if depth is None else {"depth": depth}
        self.config = {META_KEY: {"number": number, "arm": arm}, "lr": 0.1, **arm}


class Events:
    def __init__(self) -> None:
        self.stops: list[tuple[int, dict[str, Any]]] = []

    def stopped_early(self, trial: Any, step: int, data: dict[str, Any]) -> None:
        self.stops.append((step, data))

    def exploited(self, trial: Any, step: int, data: dict[str, Any]) -> None:
        raise AssertionError("no exploits in Hyperband")


def scheduler(promotion: str) -> tuple[StudyStopping, Events]:
    schedule = HyperbandSchedule(max_steps=9, grace_period=1, reduction_factor=3, brackets=1,
                                 promotion=promotion)  # type: ignore[arg-type]
    events = Events()
    return StudyStopping(schedule.rule(), 9, "loss", "min", events, label="bohb"), events


def first_rung_actions(s: StudyStopping, losses: list[float], first: int = 0) -> list[str]:
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
    s.restore_trial(0, {}, [(1, 0.5), (2, 0.4), (3, 0.3)])  # went on from rung 1
    s.restore_trial(1, {}, [(1, 0.9)])  # stopped at rung 1
    # Rung 1 now holds 2 values, one promoted: a third trial may go on (ceil(3/3) = 1 is used
    # up) only if the quota allows, whatever its value.
    assert first_rung_actions(s, [0.01], first=2) == [TrialScheduler.STOP]
    assert first_rung_actions(s, [0.02], first=3) == [TrialScheduler.CONTINUE]  # ceil(4/3) = 2


def per_arm(rule: StoppingRule) -> tuple[StudyStopping, Events]:
    events = Events()
    return StudyStopping(rule, 9, "loss", "min", events, scientific=("depth",)), events


def act(s: StudyStopping, number: int, depth: int, step: int, loss: float) -> str:
    trial = FakeTrial(number, depth)
    if step == 1:
        s.on_trial_add(None, trial)
    return s.on_trial_result(None, trial, {"training_iteration": step, "loss": loss})


@pytest.mark.parametrize("rule", [StoppingRule("asha", 1, 3.0), StoppingRule("median", 1),
                                  StoppingRule("percentile", 1, keep=0.5)])
def test_a_slow_arm_is_judged_only_against_its_own_trials(rule: StoppingRule) -> None:
    """The fast arm (depth 1) reports 0.1..0.4 at step 1, the slow arm (depth 2) 2.0..2.3:
    across arms every slow trial would be below any cutoff; within its arm only its own
    weaker trials are, and the first trials of each arm always go on."""
    s, events = per_arm(rule)
    fast = [act(s, n, 1, 1, 0.1 + 0.1 * n) for n in range(4)]
    slow = [act(s, 4 + n, 2, 1, 2.0 + 0.1 * n) for n in range(4)]
    assert fast == slow  # the same ranks within each arm give the same decisions
    assert slow[0] == TrialScheduler.CONTINUE
    assert all(data["arm"] == {"depth": 2} for _, data in events.stops[len(events.stops) // 2:])
    across, _ = per_arm(StoppingRule(rule.kind, 1, 3.0, rule.keep, per_arm=False))
    for n in range(4):
        act(across, n, 1, 1, 0.1 + 0.1 * n)
    assert [act(across, 4 + n, 2, 1, 2.0 + 0.1 * n) for n in range(4)][-1] == TrialScheduler.STOP


def test_a_resumed_arm_meets_the_cutoff_only_its_own_earlier_trials_set() -> None:
    s, events = per_arm(StoppingRule("asha", 1, 3.0))
    # Earlier run: arm depth=1 recorded 0.1 and 0.2 at rung 1; arm depth=2 recorded 5.0.
    s.restore_trial(0, {"depth": 1, "lr": 0.1}, [(1, 0.1), (2, 0.1), (3, 0.1)])
    s.restore_trial(1, {"depth": 1, "lr": 0.2}, [(1, 0.2), (2, 0.2), (3, 0.2)])
    s.restore_trial(2, {"depth": 2, "lr": 0.1}, [(1, 5.0), (2, 4.0), (3, 3.0)])
    assert act(s, 3, 1, 1, 0.9) == TrialScheduler.STOP  # below depth=1's cutoff
    # the top third of (0.1, 0.2), interpolated as numpy does: 0.2 - (0.2 - 0.1) * 2 / 3
    assert events.stops[-1][1]["cutoff"] == pytest.approx(0.2 - 0.1 * 2 / 3)
    assert act(s, 4, 2, 1, 0.9) == TrialScheduler.CONTINUE  # depth=2's only value is 5.0


def test_each_rules_stop_is_told_in_words_with_its_arm() -> None:
    from searchsvc.driver.callbacks import stop_reason

    s, events = per_arm(StoppingRule("median", 1))
    for n in range(3):
        act(s, n, 2, 1, 1.0 + n)
    assert act(s, 3, 2, 1, 9.0) == TrialScheduler.STOP
    assert stop_reason(events.stops[-1][1], "loss") == (
        "its best loss so far was worse than the median 2 of the running means of its arm "
        "(depth=2) at step 1")
    s, events = per_arm(StoppingRule("asha", 1, 3.0))
    act(s, 0, 1, 1, 0.1)
    act(s, 1, 1, 1, 0.9)
    assert stop_reason(events.stops[-1][1], "loss") == (
        "loss=0.9 was not in the top 1/3 of its arm (depth=1) at rung 1 (cutoff 0.1)")


class _Controller:
    """The little of Tune's controller a FIFO choice reads: its trials and its own sets of
    pending and paused ones."""

    def __init__(self) -> None:
        self.trials: list[Any] = []
        self._pending_trials: set[Any] = set()
        self._paused_trials: set[Any] = set()

    def get_trials(self) -> list[Any]:
        return self.trials


class _Trial:
    def __init__(self, name: str, status: str):
        self.name, self.status = name, status


def test_the_fifo_choice_reads_only_the_waiting_trials_and_picks_as_tunes_does() -> None:
    """StudyFifo picks what Tune's FIFOScheduler picks (the trial added first, pending before
    paused) from the controller's sets of waiting trials, without a pass over the finished."""
    from ray.tune.schedulers import FIFOScheduler

    from searchsvc.driver.schedulers import StudyFifo

    controller, ours, tunes = _Controller(), StudyFifo(), FIFOScheduler()
    for i in range(8):
        trial = _Trial(f"t{i}", "TERMINATED")
        controller.trials.append(trial)
        ours.on_trial_add(controller, trial)

    def wait(index: int, status: str) -> None:
        trial = controller.trials[index]
        trial.status = status
        (controller._pending_trials if status == "PENDING" else controller._paused_trials
         ).add(trial)

    assert ours.choose_trial_to_run(controller) is None
    wait(6, "PAUSED")
    wait(3, "PAUSED")
    assert ours.choose_trial_to_run(controller) is tunes.choose_trial_to_run(controller) \
        is controller.trials[3]
    wait(7, "PENDING")
    wait(5, "PENDING")
    assert ours.choose_trial_to_run(controller) is tunes.choose_trial_to_run(controller) \
        is controller.trials[5]
    # Tune's own scan is what a controller without those sets gets
    controller._pending_trials = None  # type: ignore[assignment]
    assert ours.choose_trial_to_run(controller) is controller.trials[5]
