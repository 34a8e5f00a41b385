"""Playbook role semantics and the non-adaptive searchers (grid, random, quasi-random)."""

from __future__ import annotations

import itertools
from collections import Counter

import numpy as np
import pytest
from scipy.stats import qmc

from searchsvc.searchers import create_searcher
from searchsvc.searchers.space import nuisance_dimensions
from searchsvc.spec import parse_spec

SPACE = """
study: t
objective: m:f
metric: loss
mode: min
searcher: {searcher}
seed: {seed}
budget: {{trials: {trials}}}
parameters:
  depth: {{role: scientific, values: [1, 2, 3]}}
  optimizer: {{role: scientific, values: [adam, sgd]}}
  learning_rate: {{role: nuisance, low: 1.0e-4, high: 1.0, scale: log}}
  momentum: {{role: nuisance, low: 0.5, high: 0.99, when: {{optimizer: sgd}}}}
  batch_size: {{role: fixed, value: 64}}
"""


def spec_for(searcher: str, trials: int = 60, seed: int = 0):
    return parse_spec(SPACE.format(searcher=searcher, trials=trials, seed=seed))


def configs(searcher: str, trials: int = 60, seed: int = 0) -> list[dict]:
    s = create_searcher(spec_for(searcher, trials, seed))
    return [dict(s.propose(n).config) for n in range(s.total_trials)]


@pytest.mark.parametrize("searcher", ["random", "quasi_random"])
def test_each_scientific_arm_gets_an_equal_share(searcher: str) -> None:
    counts = Counter((c["depth"], c["optimizer"]) for c in configs(searcher, trials=60))
    assert len(counts) == 6 and set(counts.values()) == {10}


@pytest.mark.parametrize("searcher", ["random", "quasi_random"])
def test_every_prefix_is_balanced_across_arms(searcher: str) -> None:
    """An interrupted study or a time limit still leaves the arms comparable."""
    cs = configs(searcher, trials=60)
    for prefix in (6, 13, 37):
        counts = Counter((c["depth"], c["optimizer"]) for c in cs[:prefix]).values()
        assert max(counts) - min(counts) <= 1


@pytest.mark.parametrize("searcher", ["grid", "random", "quasi_random"])
def test_fixed_values_pass_through_and_conditionals_only_when_active(searcher: str) -> None:
    trials = None if searcher == "grid" else 24
    text = SPACE.format(searcher=searcher, trials=trials or 0, seed=0)
    if searcher == "grid":
        text = text.replace("budget: {trials: 0}\n", "").replace(
            "low: 1.0e-4, high: 1.0, scale: log", "values: [0.001, 0.01]").replace(
            "low: 0.5, high: 0.99,", "values: [0.5, 0.9],")
    s = create_searcher(parse_spec(text))
    for n in range(s.total_trials):
        c = s.propose(n).config
        assert c["batch_size"] == 64
        assert ("momentum" in c) == (c["optimizer"] == "sgd")


def test_grid_is_exactly_the_cartesian_product_with_conditions() -> None:
    text = SPACE.format(searcher="grid", trials=0, seed=0).replace("budget: {trials: 0}\n", "")
    text = text.replace("low: 1.0e-4, high: 1.0, scale: log", "values: [0.001, 0.01, 0.1]")
    text = text.replace("low: 0.5, high: 0.99,", "values: [0.5, 0.9],")
    s = create_searcher(parse_spec(text))
    got = [tuple(sorted(s.propose(n).config.items())) for n in range(s.total_trials)]
    expected = set()
    for depth, opt, lr, mom in itertools.product([1, 2, 3], ["adam", "sgd"],
                                                 [0.001, 0.01, 0.1], [0.5, 0.9]):
        c = {"depth": depth, "optimizer": opt, "learning_rate": lr, "batch_size": 64}
        if opt == "sgd":
            c["momentum"] = mom
        expected.add(tuple(sorted(c.items())))
    assert len(got) == len(set(got)) == len(expected) == 3 * 3 + 3 * 3 * 2
    assert set(got) == expected


def test_grid_repeats_whole_grid_with_new_seeds() -> None:
    text = ("study: t\nobjective: m:f\nmetric: v\nmode: min\nsearcher: grid\n"
            "budget: {trials: 6}\nparameters: {a: {values: [1, 2, 3]}}\n")
    s = create_searcher(parse_spec(text))
    props = [s.propose(n) for n in range(6)]
    assert [p.config["a"] for p in props] == [1, 2, 3, 1, 2, 3]
    assert len({p.seed for p in props}) == 6


def test_quasi_random_is_reproducible_for_a_seed_and_changes_with_it() -> None:
    assert configs("quasi_random", seed=3) == configs("quasi_random", seed=3)
    assert configs("quasi_random", seed=3) != configs("quasi_random", seed=4)
    assert configs("random", seed=3) == configs("random", seed=3)


def test_quasi_random_covers_the_space_better_than_random() -> None:
    """Lower centred L2 discrepancy of the nuisance points (averaged over seeds)."""
    def unit_points(searcher: str, seed: int) -> np.ndarray:
        text = ("study: t\nobjective: m:f\nmetric: v\nmode: min\nsearcher: {s}\nseed: {seed}\n"
                "budget: {{trials: 64}}\nparameters:\n"
                "  lr: {{low: 1.0e-4, high: 1.0, scale: log}}\n  wd: {{low: 0.0, high: 1.0}}\n"
                "  drop: {{low: 0.0, high: 0.5}}\n")
        spec = parse_spec(text.format(s=searcher, seed=seed))
        s = create_searcher(spec)
        dims = nuisance_dimensions(spec)
        return np.array([[d.to_unit(s.propose(n).config[d.name]) for d in dims]
                         for n in range(64)])

    quasi = np.mean([qmc.discrepancy(unit_points("quasi_random", seed)) for seed in range(5)])
    rand = np.mean([qmc.discrepancy(unit_points("random", seed)) for seed in range(5)])
    assert quasi < 0.5 * rand, (quasi, rand)


def test_resumed_numbers_get_the_same_configs() -> None:
    """A searcher rebuilt for a resume proposes exactly what the first run would have."""
    first = create_searcher(spec_for("quasi_random"))
    again = create_searcher(spec_for("quasi_random"))
    for n in (17, 3, 42):
        assert again.propose(n) == first.propose(n)
