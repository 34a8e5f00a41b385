"""Adaptive searchers proven on functions with known optima, run in-process (no Ray): the
search algorithm alone, with fixed seeds."""

from __future__ import annotations

import math
import statistics

import pytest

from objectives.synthetic import branin_value
from searchsvc.errors import SpecError
from searchsvc.searchers import Observation, create_searcher
from searchsvc.searchers.simple import halton_points
from searchsvc.searchers.space import config_from_unit
from searchsvc.spec import parse_spec
from searchsvc.testing.sequential import best_so_far, run_sequential

# Minutes of model fitting in all (no Ray): started early by the parallel workers.
pytestmark = pytest.mark.slow

HEADER = """study: t
objective: objectives.synthetic:branin
metric: value
mode: min
searcher: {searcher}
searcher_options: {options}
budget: {{trials: {trials}, max_steps: 9}}
seed: {seed}
parameters:
"""
BRANIN = HEADER + """  x1: {{role: nuisance, low: -5.0, high: 10.0}}
  x2: {{role: nuisance, low: 0.0, high: 15.0}}
"""


def branin(config) -> float:
    return branin_value(config["x1"], config["x2"])


NAS_SPACE = HEADER + """  opt: {{role: scientific, values: [adam, sgd]}}
  num_layers: {{role: nuisance, type: int, values: [1, 2, 3]}}
  units_0: {{role: nuisance, values: [16, 32, 64], when: {{num_layers: [1, 2, 3]}}}}
  units_1: {{role: nuisance, values: [16, 32, 64], when: {{num_layers: [2, 3]}}}}
  units_2: {{role: nuisance, values: [16, 32, 64], when: {{num_layers: [3]}}}}
  lr: {{role: nuisance, low: 1.0e-4, high: 1.0e-1, scale: log}}
  momentum: {{role: nuisance, low: 0.0, high: 0.99, when: {{opt: [sgd]}}}}
  batch: {{role: fixed, value: 32}}
"""


def searcher(text: str, name: str, options: str = "{}", trials: int = 40, seed: int = 0):
    return create_searcher(parse_spec(text.format(searcher=name, options=options,
                                                  trials=trials, seed=seed)))


def median_best(name: str, options: str = "{}", seeds: int = 5, trials: int = 40) -> float:
    """The median over ``seeds`` of the best Branin value ``name`` finds in ``trials``."""
    return statistics.median(
        best_so_far(run_sequential(searcher(BRANIN, name, options, trials, seed=seed), branin),
                    "min")
        for seed in range(seeds))


# Each sampler is wired to a model that learns: on Branin, over 5 seeds, it beats random search.
# How close each gets to the optimum, on Branin, Hartmann-6 and the digits against the same
# algorithms called directly, is a quality claim: benchmarks/quality.py measures it.
@pytest.mark.parametrize("sampler", ["tpe", "gp", "hyperopt"])
def test_each_bayesian_sampler_beats_random_search(sampler: str) -> None:
    random_median = median_best("random")
    bayes_median = median_best("bayesian", f"{{sampler: {sampler}}}")
    assert bayes_median < random_median


def continue_from(s, f, history: list[Observation], numbers: range) -> list[float]:
    """Replay ``history`` into searcher ``s`` (as run_study does from the store), then run
    ``numbers`` one after another; the values reached."""
    for observation in history:
        s.observe(observation)
    values = []
    for n in numbers:
        config = dict(s.propose(n).config)
        values.append(f(config))
        s.observe(Observation(n, config, values[-1], "completed", curve=((1, values[-1]),)))
    return values


@pytest.mark.parametrize("sampler", ["tpe", "gp", "hyperopt"])
def test_resumed_bayesian_proposes_from_the_replayed_model_not_the_warm_up(sampler: str) -> None:
    options = f"{{sampler: {sampler}}}"
    resumed_best, amnesic_best = [], []
    for seed in range(5):
        history = run_sequential(searcher(BRANIN, "bayesian", options, seed=seed), branin)[:25]
        resumed = searcher(BRANIN, "bayesian", options, seed=seed)
        resumed_best.append(min(continue_from(resumed, branin, history, range(25, 40))))
        model = resumed.models[0]
        remembered = (len(model.trials.trials) if sampler == "hyperopt"
                      else len(model.study.trials))
        assert remembered == 40  # the 25 replayed trials and the 15 new ones
        # Without its memory the same searcher would start modelling from nothing at trial 25.
        amnesic = searcher(BRANIN, "bayesian", options, seed=seed)
        amnesic_best.append(min(continue_from(amnesic, branin, [], range(25, 40))))
    assert statistics.median(resumed_best) < statistics.median(amnesic_best)


def test_bayesian_warm_up_is_the_arm_quasi_random_sequence() -> None:
    s = searcher(BRANIN, "bayesian")
    spec = s.spec
    expected = halton_points(spec, s.arms[0], s.warmup)
    for n in range(s.warmup):
        assert dict(s.propose(n).config) == config_from_unit(spec, s.arms[0], expected[n])


@pytest.mark.parametrize("name", ["bayesian", "nas", "bohb", "hyperband", "pbt"])
def test_adaptive_searchers_keep_roles_and_conditions(name: str) -> None:
    s = searcher(NAS_SPACE, name, trials=40)
    arms = []
    for n in range(40):
        config = dict(s.propose(n).config)
        layers = config["num_layers"]
        assert sorted(k for k in config if k.startswith("units_")) == [
            f"units_{i}" for i in range(layers)]
        assert ("momentum" in config) == (config["opt"] == "sgd")
        assert config["batch"] == 32
        arms.append(config["opt"])
        value = math.log10(config["lr"]) ** 2 + layers
        s.observe(Observation(n, config, value, "completed",
                              curve=tuple((i, value + 1 / i) for i in range(1, 10))))
    assert arms.count("adam") == arms.count("sgd") == 20


def test_nas_evolution_improves_on_its_random_initial_population() -> None:
    s = searcher(NAS_SPACE, "nas", "{population: 6, sample_size: 3}", trials=60)

    def loss(c: dict) -> float:  # best: 2 layers of 64 at lr 1e-2
        return (abs(c["num_layers"] - 2) + sum(abs(c.get(f"units_{i}", 0) - 64) / 64
                                               for i in range(2))
                + (math.log10(c["lr"]) + 2) ** 2)

    observations = run_sequential(s, loss)
    initial = [o.value for o in observations if s.arm_for(o.number)[1] < 6]
    evolved = [o.value for o in observations if s.arm_for(o.number)[1] >= 20]
    assert statistics.median(evolved) < statistics.median(initial)
    assert min(o.value for o in observations) < min(initial)


def test_hyperband_schedule_matches_ray_rungs_and_assigns_brackets_reproducibly() -> None:
    s = searcher(BRANIN, "hyperband", "{grace_period: 1, reduction_factor: 3}")
    schedule = s.schedule()
    assert schedule.brackets == 3  # 1, 3, 9 steps of a 9-step budget
    assert schedule.milestones(0) == [1, 3, 9]
    assert schedule.milestones(2) == [9]
    brackets = [schedule.bracket_for(n) for n in range(300)]
    assert brackets == [schedule.bracket_for(n) for n in range(300)]
    assert brackets.count(0) > brackets.count(1) > brackets.count(2) > 0
    assert searcher(BRANIN, "asha").schedule().brackets == 1


def test_bohb_model_proposes_better_configs_than_its_random_start() -> None:
    s = searcher(BRANIN, "bohb", trials=60)
    values = []
    for n in range(60):
        config = dict(s.propose(n).config)
        v = branin(config)
        values.append(v)
        # A full-budget curve: the value at every rung is the final value plus a decaying gap.
        s.observe(Observation(n, config, v, "completed",
                              curve=tuple((i, v + 5 / i) for i in range(1, 10))))
    assert statistics.median(values[40:]) < 0.5 * statistics.median(values[:10])


@pytest.mark.parametrize("name,options,needle", [
    ("asha", "{}", "budget.max_steps"),
    ("hyperband", "{grace_period: 20}", "must not exceed budget.max_steps"),
    ("pbt", "{}", "population of at least 2"),
    ("bayesian", "{sampler: smac}", "searcher_options.sampler"),
])
def test_searcher_specific_errors_are_clear(name: str, options: str, needle: str) -> None:
    text = BRANIN.format(searcher=name, options=options, trials=1 if name == "pbt" else 10,
                         seed=0)
    if name == "asha":
        text = text.replace(", max_steps: 9", "")
    with pytest.raises(SpecError) as info:
        create_searcher(parse_spec(text))
    assert needle in str(info.value)


def test_auto_uses_the_gp_for_a_small_flat_space_only_while_its_arms_stay_short() -> None:
    from searchsvc.searchers.bayesian import AUTO_GP_MAX_TRIALS

    assert searcher(BRANIN, "bayesian", trials=AUTO_GP_MAX_TRIALS).sampler == "gp"
    assert searcher(BRANIN, "bayesian", trials=AUTO_GP_MAX_TRIALS + 1).sampler == "tpe"
    assert searcher(NAS_SPACE, "bayesian", trials=40).sampler == "tpe"  # conditions
    assert searcher(BRANIN, "bayesian", "{sampler: gp}", trials=2_000).sampler == "gp"
