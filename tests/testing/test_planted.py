"""searchsvc.testing.planted: the records it builds are the ones a store keeps for the same
measurements, a searcher that learns observes every planted trial, chosen trials can follow
another curve, and seed repeats are the planner's."""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from typing import Any

import pytest

from searchsvc.core import TrialState
from searchsvc.searchers import Observation, Proposal
from searchsvc.searchers.simple import QuasiRandomSearcher
from searchsvc.store import InMemoryStore
from searchsvc.testing.planted import (
    Rows,
    converging,
    lr_miss,
    noise_spec,
    plant,
    planted_study,
    seed_noise,
)

SPEC = """
    study: planted
    objective: objectives.synthetic:playbook
    metric: val_loss
    mode: min
    searcher: {searcher}
    seed: 5
    budget: {{trials: 24, max_steps: 8}}
    parameters:
      depth: {{role: scientific, values: [1, 3]}}
      learning_rate: {{role: nuisance, low: 1.0e-4, high: 1.0, scale: log}}
"""


def bowl(config: Mapping[str, Any], rng: random.Random, steps: int) -> Rows:
    return converging(0.2 + 0.1 * lr_miss(config, -2.0) ** 2, rng, steps)


def nan(config: Mapping[str, Any], rng: random.Random, steps: int) -> Rows:
    return [{"val_loss": 1.0}, {"val_loss": math.nan}]


def test_records_equal_what_the_store_keeps_for_the_same_trials() -> None:
    text = SPEC.format(searcher="quasi_random")
    built = planted_study(text, bowl, overrides={4: nan})
    stored = planted_study(text, bowl, overrides={4: nan}, store=InMemoryStore())
    fields = ("number", "state", "config", "arm", "seed", "error", "best_value", "best_step",
              "last_step", "repeat_of", "final_metrics")
    assert [[getattr(t, f) for f in fields] for t in built.trials] == \
        [[getattr(t, f) for f in fields] for t in stored.trials]
    assert [[(m.step, m.value) for m in t.measurements] for t in built.trials] == \
        [[(m.step, m.value) for m in t.measurements] for t in stored.trials]
    assert (built.study.name, built.study.total_trials) == (stored.study.name, 24)
    fourth = built.trials[4]
    assert (fourth.state, fourth.best_value, fourth.last_step) == (TrialState.INFEASIBLE, 1.0, 2)
    assert all(t.state == TrialState.COMPLETED and t.last_step == 8
               for t in built.trials if t.number != 4)


def test_a_searcher_that_learns_observes_every_planted_trial_before_the_next_proposal(
        monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[Observation] = []
    proposed: list[int] = []
    propose = QuasiRandomSearcher.propose

    def spy_propose(self: QuasiRandomSearcher, number: int) -> Proposal:
        assert [o.number for o in seen] == proposed  # every earlier trial already observed
        proposed.append(number)
        return propose(self, number)

    monkeypatch.setattr(QuasiRandomSearcher, "propose", spy_propose)
    monkeypatch.setattr(QuasiRandomSearcher, "observe", lambda self, o: seen.append(o))
    trials = planted_study(SPEC.format(searcher="quasi_random"), bowl, overrides={4: nan}).trials
    assert [o.number for o in seen] == [t.number for t in trials] == list(range(24))
    for o, t in zip(seen, trials, strict=True):
        assert (o.value, o.state, o.final_metrics) == (
            None if t.number == 4 else t.best_value, t.state, t.final_metrics)
        assert list(o.curve) == [(m.step, m.value) for m in t.measurements if m.value is not None]


def test_repeats_are_the_planners_top_configurations_with_new_seeds() -> None:
    spec = noise_spec(2, 3, seed=1)
    trials = plant(spec, seed_noise(3.0), steps=1, repeats=True)
    search = [t for t in trials if t.repeat_of is None]
    repeats = [t for t in trials if t.repeat_of is not None]
    assert len(search) == 20 and len(repeats) == 2 * 2 * 3  # arms x top_k x seeds
    assert [t.number for t in trials] == list(range(len(trials)))
    for repeat in repeats:
        original = search[repeat.repeat_of]  # type: ignore[index]
        assert repeat.config == original.config and repeat.seed != original.seed
