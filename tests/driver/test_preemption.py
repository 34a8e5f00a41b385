"""Preemption's two decisions on their own, over a fake Tune controller (no Ray run): a trial
pauses only at a result that carries a checkpoint, only when the allowance says ``preempt``
and the study runs more than it allows (trials already told to pause not counted); no waiting
trial starts or resumes while the study runs its allowance, pausing trials counted since they
still hold their resources; and the extended scheduler keeps its own decisions first."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ray.tune.experiment import Trial
from ray.tune.schedulers import FIFOScheduler, TrialScheduler

from searchsvc.driver.preemption import Preemption, preempting


@dataclass
class Gate:
    trials: int | None
    preempt: bool = True

    def __call__(self) -> int | None:
        return self.trials


@dataclass
class FakeTrial:
    trial_id: str
    status: str = Trial.RUNNING


@dataclass
class Controller:
    trials: list[FakeTrial]

    def get_live_trials(self) -> list[FakeTrial]:
        return self.trials


@dataclass
class Events:
    seen: list[tuple[str, int, dict[str, Any]]] = field(default_factory=list)

    def paused(self, trial: Any, step: int, data: dict[str, Any]) -> None:
        self.seen.append((trial.trial_id, step, data))


CHECKPOINTED = {"should_checkpoint": True, "training_iteration": 4}


def test_a_trial_pauses_only_at_a_checkpoint_when_asked_and_over_the_allowance() -> None:
    a, b, c = FakeTrial("a"), FakeTrial("b"), FakeTrial("c", Trial.PAUSED)
    controller, events = Controller([a, b, c]), Events()
    preemption = Preemption(Gate(1), events)
    assert not preemption.pauses(controller, a, {"training_iteration": 3})  # no checkpoint
    assert not Preemption(Gate(1, preempt=False), events).pauses(controller, a, CHECKPOINTED)
    assert not Preemption(Gate(None), events).pauses(controller, a, CHECKPOINTED)
    assert not Preemption(Gate(2), events).pauses(controller, a, CHECKPOINTED)
    assert preemption.pauses(controller, a, CHECKPOINTED)
    # a is pausing: b alone runs on, within the allowance
    assert not preemption.pauses(controller, b, CHECKPOINTED)
    assert events.seen == [("a", 4, {"reason": "a study of higher priority", "allowance": 1,
                                     "running": 2})]


def test_nothing_starts_or_resumes_while_the_study_runs_its_allowance() -> None:
    a, b = FakeTrial("a"), FakeTrial("b", Trial.PAUSED)
    controller = Controller([a, b])
    preemption = Preemption(Gate(1), Events())
    assert preemption.holds(controller)
    assert not Preemption(Gate(None), Events()).holds(controller)
    assert not Preemption(Gate(2), Events()).holds(controller)
    c = FakeTrial("c")
    two = Controller([a, b, c])
    preemption = Preemption(Gate(2), Events())
    assert not preemption.holds(Controller([a, b]))
    assert preemption.pauses(Controller([a, b, c]), a, CHECKPOINTED) is False  # 2 of 2
    preemption.gate = Gate(1)
    assert preemption.pauses(two, a, CHECKPOINTED)
    c.status = Trial.TERMINATED
    assert preemption.holds(two)  # a still saves its checkpoint, its resources held
    a.status = Trial.PAUSED
    assert not preemption.holds(two)  # b may resume now


def test_an_allowance_at_the_studys_own_concurrency_leaves_tune_in_charge() -> None:
    # Tune counts a trial whose last result it has taken in as running until it ends it;
    # at 2 of 2, holding the next trial back then would cost the worker Tune keeps for it.
    finishing, running, waiting = FakeTrial("a"), FakeTrial("b"), FakeTrial("c", Trial.PENDING)
    controller = Controller([finishing, running, waiting])
    assert Preemption(Gate(2), Events()).holds(controller)  # concurrency unknown: held
    assert not Preemption(Gate(2), Events(), concurrency=2).holds(controller)
    assert not Preemption(Gate(3), Events(), concurrency=2).holds(controller)
    assert Preemption(Gate(1), Events(), concurrency=2).holds(controller)
    # nor pauses a trial because Tune still counts the finishing one as running
    started = FakeTrial("d")
    three = Controller([finishing, running, started])
    assert Preemption(Gate(2), Events()).pauses(three, running, CHECKPOINTED)
    assert not Preemption(Gate(2), Events(), concurrency=2).pauses(three, running, CHECKPOINTED)


class Chooses(FIFOScheduler):
    """A scheduler whose own decisions are fixed: ``decision`` at every result, and
    ``next_trial`` to run."""

    def __init__(self, decision: str, next_trial: Any):
        super().__init__()
        self.decision, self.next_trial = decision, next_trial

    def on_trial_result(self, tune_controller: Any, trial: Any, result: dict) -> str:
        return self.decision

    def choose_trial_to_run(self, tune_controller: Any) -> Any:
        return self.next_trial


def test_the_extended_scheduler_decides_after_its_own_rules() -> None:
    a, b, waiting = FakeTrial("a"), FakeTrial("b"), FakeTrial("w", Trial.PAUSED)
    controller = Controller([a, b, waiting])
    stopping = preempting(Chooses(TrialScheduler.STOP, waiting),
                          Preemption(Gate(1), Events()))
    assert isinstance(stopping, Chooses)
    assert stopping.on_trial_result(controller, a, CHECKPOINTED) == TrialScheduler.STOP
    going_on = preempting(Chooses(TrialScheduler.CONTINUE, waiting),
                          Preemption(Gate(1), Events()))
    assert going_on.on_trial_result(controller, a, CHECKPOINTED) == TrialScheduler.PAUSE
    assert going_on.choose_trial_to_run(controller) is None  # b runs: the allowance is used
    a.status = b.status = Trial.TERMINATED
    assert going_on.choose_trial_to_run(controller) is waiting
