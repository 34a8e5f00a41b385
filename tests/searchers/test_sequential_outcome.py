"""The in-process driver of searcher tests and benchmarks judges each trial by core's outcome
rule, constraints included, as a real study does."""

from __future__ import annotations

from searchsvc.core import TrialState
from searchsvc.searchers import create_searcher
from searchsvc.spec import parse_spec
from searchsvc.testing.sequential import run_sequential

STUDY = """
study: seq
objective: objectives.synthetic:branin
metric: loss
mode: min
searcher: random
noise: off
constraints: [{metric: memory_mb, max: 100}]
budget: {trials: 6}
parameters:
  x: {role: nuisance, low: 0, high: 10}
"""


def test_a_trial_breaking_a_constraint_is_infeasible_and_keeps_its_value() -> None:
    searcher = create_searcher(parse_spec(STUDY))
    told = run_sequential(searcher, lambda c: {"loss": c["x"], "memory_mb": 20 * c["x"]})
    for o in told:
        within = 20 * o.config["x"] <= 100
        assert o.state == (TrialState.COMPLETED if within else TrialState.INFEASIBLE)
        assert o.value == o.config["x"]
    assert {o.state for o in told} == {TrialState.COMPLETED, TrialState.INFEASIBLE}


def test_a_non_finite_objective_is_infeasible_without_a_value() -> None:
    searcher = create_searcher(parse_spec(STUDY))
    [first, *_] = run_sequential(searcher, lambda c: {"loss": float("nan"), "memory_mb": 1.0})
    assert first.state == TrialState.INFEASIBLE and first.value is None
