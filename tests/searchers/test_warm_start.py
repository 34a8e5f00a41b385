"""warm_start: another study's finished trials reach the model before the first proposal, so
the first model-based proposal already uses them (no Ray: the searcher and the driver's
selection of fitting trials, on an in-memory store)."""

from __future__ import annotations

import pytest

from searchsvc.core import TrialState
from searchsvc.driver.warm_start import warm_start, warm_start_trials
from searchsvc.errors import ConflictError, NotFoundError
from searchsvc.searchers import Observation, create_searcher
from searchsvc.spec import parse_spec
from searchsvc.store import InMemoryStore

CHILD = """
study: child
objective: objectives.synthetic:noisy
metric: loss
mode: min
searcher: bayesian
searcher_options: {{sampler: {sampler}, warmup: 4}}
budget: {{trials: 12}}
warm_start: {{study: parent}}
parameters:
  variant: {{role: scientific, values: [a, b]}}
  x: {{low: 0.0, high: 1.0}}
"""


def parent_observations() -> list[Observation]:
    """12 trials per arm spread over x, best at x = 0.8."""
    return [Observation(-1 - i, {"variant": v, "x": i / 11}, (i / 11 - 0.8) ** 2,
                        TrialState.COMPLETED) for i in range(12) for v in "ab"]


@pytest.mark.parametrize("sampler", ["tpe", "gp", "hyperopt"])
def test_the_first_proposal_is_already_the_models_and_uses_the_parents_trials(sampler: str
                                                                              ) -> None:
    spec = parse_spec(CHILD.format(sampler=sampler), file="child.yaml")
    cold, warm = create_searcher(spec), create_searcher(spec)
    assert warm.warm_start(parent_observations()) == 24
    first_cold, first_warm = cold.propose(0), warm.propose(0)
    # Cold: the arm's first quasi-random warm-up point; warm: the model, near the parent's
    # best x (the parent's trials tell it where that is).
    assert abs(first_warm.config["x"] - 0.8) < 0.2
    assert first_warm.config["x"] != first_cold.config["x"]
    if sampler != "hyperopt":
        told = warm.models[0].study.trials  # type: ignore[attr-defined]
        assert sum(t.state.name == "COMPLETE" for t in told) == 12


def test_multi_fidelity_bohb_models_take_the_parents_trials_too() -> None:
    spec = parse_spec(CHILD.format(sampler="tpe").replace("searcher: bayesian", "searcher: bohb")
                      .replace("searcher_options: {sampler: tpe, warmup: 4}", "")
                      .replace("budget: {trials: 12}", "budget: {trials: 12, max_steps: 9}"),
                      file="child.yaml")
    searcher = create_searcher(spec)
    observations = [Observation(o.number, o.config, o.value, o.state, curve=[(9, o.value)])
                    for o in parent_observations()]
    assert searcher.warm_start(observations) == 24
    assert len(searcher.models[0].generator.configs[9]) == 12  # type: ignore[attr-defined]


def test_only_the_parents_trials_inside_the_new_space_are_fed_and_bad_parents_refused() -> None:
    store = InMemoryStore()
    parent = store.create_study(name="parent", metric="loss", mode="min", searcher="random",
                                spec_text="", spec_file="p.yaml", total_trials=6,
                                results_dir=None, provenance={})
    for n, (variant, x) in enumerate([("a", 0.2), ("a", 1.5), ("b", 0.9), ("c", 0.5),
                                      ("b", 0.4)]):
        t = store.start_trial(parent.id, number=n, config={"variant": variant, "x": x},
                              arm={"variant": variant}, seed=n)
        store.record_measurements(t.id, 1, "min", [(1, x, {"loss": x})])
        store.finish_trial(t.id, TrialState.COMPLETED)
    store.start_trial(parent.id, number=5, config={"variant": "a", "x": 0.3}, arm={}, seed=5)
    spec = parse_spec(CHILD.format(sampler="tpe"), file="child.yaml")
    finished, numbers, fitting = warm_start_trials(spec, store)
    # x=1.5 is outside [0, 1], variant c is not a value here, trial 5 never finished.
    assert (finished, numbers) == (5, [0, 2, 4])
    assert [o.config["x"] for o in fitting] == [0.2, 0.9, 0.4]
    assert [o.number for o in fitting] == [-1, -2, -3] and fitting[0].value == 0.2
    # A resume feeds the trials chosen the first time, numbered as then.
    _, again, refed = warm_start_trials(spec, store, only=[0, 4])
    assert again == [0, 4] and [o.number for o in refed] == [-1, -2]
    # Another service user's study is not found, as for every other request.
    with pytest.raises(NotFoundError, match="no study named 'parent'"):
        warm_start_trials(spec, store, owner="mallory")

    with pytest.raises(NotFoundError, match=r"warm_start\.study: no study named 'nope'"):
        warm_start_trials(spec.__class__(**{**spec.__dict__, "warm_start": "nope"}), store)
    store.create_study(name="other", metric="acc", mode="max", searcher="random",
                       spec_text="", spec_file="o.yaml", total_trials=1, results_dir=None,
                       provenance={})
    with pytest.raises(ConflictError, match="optimised acc"):
        warm_start_trials(spec.__class__(**{**spec.__dict__, "warm_start": "other"}), store)


def test_a_resume_goes_on_when_the_warm_start_study_is_gone() -> None:
    store = InMemoryStore()
    spec = parse_spec(CHILD.format(sampler="tpe"), file="child.yaml")
    child = store.create_study(name="child", metric="loss", mode="min", searcher="bayesian",
                               spec_text="", spec_file="c.yaml", total_trials=12,
                               results_dir=None, provenance={"warm_start": {
                                   "study": "parent", "numbers": [0], "used": 1}})
    resumed = warm_start(spec, child, store, create_searcher(spec))  # no 'parent' any more
    assert resumed.provenance["warm_start"]["used_on_resume"] == 0
    fresh = store.create_study(name="fresh", metric="loss", mode="min", searcher="bayesian",
                               spec_text="", spec_file="f.yaml", total_trials=12,
                               results_dir=None, provenance={})
    with pytest.raises(NotFoundError):  # a new study must not start without its source
        warm_start(spec, fresh, store, create_searcher(spec))
