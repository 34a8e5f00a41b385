"""Multi-objective and constrained searching: searchers that rank by one metric refuse several
objectives with the reason, and `bayesian` hands Optuna every objective and constraint, the
same live and when a resumed study replays its trials."""

from __future__ import annotations

import pytest

from objectives.synthetic import zdt1
from searchsvc.core import Objective
from searchsvc.searchers import check_spec, create_searcher, searcher_names
from searchsvc.searchers.base import Observation
from searchsvc.spec import parse_spec
from searchsvc.testing.sequential import run_sequential

SPEC = """
study: mo
objective: objectives.synthetic:zdt1
metrics: [{{name: f1, mode: min}}, {{name: f2, mode: min}}]
constraints: [{{metric: memory_mb, max: 2500}}]
searcher: {searcher}
searcher_options: {options}
budget: {{trials: 16, max_steps: 9}}
parameters:
  x0: {{low: 0.0, high: 1.0}}
  x1: {{low: 0.0, high: 1.0}}
  x2: {{low: 0.0, high: 1.0}}
"""
MULTI = {"bayesian", "grid", "random", "quasi_random"}


def spec_for(searcher: str, options: str = "{}"):  # -> StudySpec
    return parse_spec(SPEC.format(searcher=searcher, options=options))


@pytest.mark.parametrize("name", sorted(set(searcher_names()) - MULTI))
def test_searchers_that_rank_by_one_metric_refuse_several_objectives(name: str) -> None:
    issues = [i.render() for i in check_spec(spec_for(name))]
    refusal = [i for i in issues if f"searcher '{name}' cannot search several objectives" in i]
    assert refusal, issues
    assert "<spec>:4: metrics:" in refusal[0]
    assert "bayesian, grid, quasi_random, random" in refusal[0]


@pytest.mark.parametrize("name", sorted(MULTI - {"grid"}))
def test_searchers_that_can_search_several_objectives_accept_them(name: str) -> None:
    assert check_spec(spec_for(name)) == []


def test_hyperopt_which_takes_one_objective_is_refused() -> None:
    issues = [i.render() for i in check_spec(spec_for("bayesian", "{sampler: hyperopt}"))]
    assert any("searcher_options.sampler: hyperopt's TPE takes one objective" in i
               for i in issues), issues


def violation(config: dict) -> float:
    return max(zdt1(config)["memory_mb"] - 2500, 0.0)


# GP is told through the same OptunaModel code (and measured in benchmarks/quality.py);
# its multi-objective proposals cost seconds each, too slow to repeat here.
@pytest.mark.parametrize("sampler", ["tpe", "nsga2"])
def test_bayesian_tells_optuna_every_objective_and_constraint_live_and_replayed(
        sampler: str) -> None:
    spec = spec_for("bayesian", f"{{sampler: {sampler}, warmup: 4}}")
    live = create_searcher(spec)
    observations = run_sequential(live, zdt1)

    def told(searcher) -> dict[tuple, tuple]:
        """Each Optuna trial's params -> (values, constraints) as the model holds them."""
        study = searcher.models[0].study
        assert [d.name for d in study.directions] == ["MINIMIZE", "MINIMIZE"]
        return {tuple(sorted(t.params.items())): (*t.values, t.constraints["0"])
                for t in study.trials}

    expected = {tuple(sorted(o.config.items())): (
        zdt1(dict(o.config))["f1"], zdt1(dict(o.config))["f2"], violation(dict(o.config)))
        for o in observations}
    assert told(live).keys() == expected.keys()
    for key, values in told(live).items():
        assert values == pytest.approx(expected[key])
    resumed = create_searcher(spec)  # a resumed study: the store's trials, replayed
    for observation in observations:
        resumed.observe(observation)
    assert told(resumed).keys() == expected.keys()
    for key, values in told(resumed).items():
        assert values == pytest.approx(expected[key])
    assert resumed.propose(16).config.keys() == {"x0", "x1", "x2"}


def test_a_trial_missing_an_objective_is_a_failure_to_the_model() -> None:
    spec = spec_for("bayesian", "{sampler: tpe, warmup: 2}")
    searcher = create_searcher(spec)
    proposal = searcher.propose(0)
    searcher.observe(Observation(0, proposal.config, 0.5, "completed",
                                 final_metrics={"f1": 0.5, "memory_mb": 1000.0}))
    [trial] = searcher.models[0].study.trials
    assert trial.state.name == "FAIL" and trial.values is None
    assert spec.objectives == (Objective("f1", "min"), Objective("f2", "min"))
