"""Searchers over huge discrete ranges compute their values instead of listing them, and the
grid and the scientific arms find duplicates in linear time, with the same result as before
(issue 16)."""

from __future__ import annotations

import itertools
import random

import pytest

from searchsvc.errors import SpecError
from searchsvc.searchers import Observation, check_spec, create_searcher, scientific_arms
from searchsvc.searchers.simple import GridSearcher, grid_size
from searchsvc.searchers.space import build_config, nuisance_dimensions
from searchsvc.spec import RangeParameter, parse_spec

HEAD = "study: t\nobjective: m:f\nmetric: v\nmode: min\n"
TRILLION = 10**12
HUGE = f"""\
  n: {{type: int, low: 0, high: {TRILLION}}}
  s: {{low: 0.0, high: 1.0, step: 1.0e-9}}
  depth: {{role: scientific, type: int, low: 1, high: 2}}
"""


@pytest.fixture
def no_listing(monkeypatch: pytest.MonkeyPatch) -> None:
    """Listing a range's values fails the test: a trillion of them would never finish."""
    def listing(self: RangeParameter) -> tuple[float | int, ...]:
        if self.grid_size > 1000:
            raise AssertionError(f"{self.name}: {self.grid_size} values listed")
        return tuple(self.grid_value(i) for i in range(self.grid_size))

    monkeypatch.setattr(RangeParameter, "grid", listing)


def spec_for(searcher: str, parameters: str, budget: str = "{trials: 60}",
             options: str = "{}"):
    return parse_spec(f"{HEAD}searcher: {searcher}\nsearcher_options: {options}\n"
                      f"budget: {budget}\nparameters:\n{parameters}")


@pytest.mark.parametrize("name", ["random", "quasi_random"])
def test_huge_ranges_are_sampled_in_range_without_listing_them(no_listing: None,
                                                               name: str) -> None:
    spec = spec_for(name, HUGE)
    assert not check_spec(spec)
    searcher = create_searcher(spec)
    configs = [searcher.propose(n).config for n in range(60)]
    assert all(0 <= c["n"] <= TRILLION and isinstance(c["n"], int) for c in configs)
    assert all(spec.parameters["s"].takes(c["s"]) for c in configs)
    assert len({c["n"] for c in configs}) == 60  # spread over the range, not stuck at an end
    assert max(c["n"] for c in configs) > TRILLION // 2 > min(c["n"] for c in configs)
    assert {c["depth"] for c in configs} == {1, 2}


def test_bohb_indexes_stepped_ranges_however_long(no_listing: None) -> None:
    """hpbandster's BOHB refuses ordinal hyperparameters: a stepped range is the index of its
    step, mapped back to the value; a failed trial is told as such."""
    params = HUGE + "  w: {low: 0.0, high: 1.0, step: 0.25}\n" \
                    "  k: {type: int, low: 0, high: 10, when: {w: [0.5, 0.75]}}\n"
    spec = spec_for("bohb", params, budget="{trials: 24, max_steps: 9}")
    searcher = create_searcher(spec)
    for n in range(24):
        config = searcher.propose(n).config
        for name in ("n", "s", "w"):
            assert spec.parameters[name].takes(config[name]), (name, config)
        assert ("k" in config) == (config["w"] in (0.5, 0.75))
        if n % 5 == 4:
            searcher.observe(Observation(n, config, None, "failed"))
            continue
        value = abs(config["w"] - 0.5) + config["n"] / TRILLION
        searcher.observe(Observation(n, config, value, "completed",
                                     curve=tuple((step, value) for step in range(1, 10))))


def test_pbt_ladders_of_huge_ranges_are_computed(no_listing: None) -> None:
    spec = spec_for("pbt", HUGE, budget="{trials: 8, max_steps: 10}")
    ladder = create_searcher(spec).schedule().mutations["n"]
    assert len(ladder) == 16 and ladder[0] == 0 and ladder[-1] == TRILLION
    with pytest.raises(SpecError, match=r"searcher_options\.levels"):
        create_searcher(spec_for("pbt", HUGE, budget="{trials: 8, max_steps: 10}",
                                 options="{levels: 1000000000000}"))


def test_warm_up_and_population_never_exceed_an_arms_share() -> None:
    params = "  x: {low: 0.0, high: 1.0}\n"
    bayes = create_searcher(spec_for("bayesian", params, "{trials: 20}",
                                     f"{{warmup: {TRILLION}}}"))
    assert bayes.warmup == 20 and len(bayes.propose(19).config) == 1
    nas = create_searcher(spec_for("nas", params, "{trials: 20}",
                                   f"{{population: {TRILLION}}}"))
    assert nas.population == 20 and len(nas.propose(19).config) == 1


def test_hyperband_refuses_a_reduction_factor_that_makes_millions_of_rungs() -> None:
    params = "  x: {low: 0.0, high: 1.0}\n"
    spec = spec_for("hyperband", params, "{trials: 20, max_steps: 1000000}",
                    "{reduction_factor: 1.00001}")
    [issue] = check_spec(spec)
    assert issue.field == "searcher_options.reduction_factor"
    assert "makes 1381558 rungs" in issue.message and "at most 100" in issue.message
    ok = spec_for("hyperband", params, "{trials: 20, max_steps: 1000000}",
                  "{reduction_factor: 1.2}")
    assert not check_spec(ok)


# --- the grid and the arms: linear-time duplicates, same result as before -----------------------

def reference_grid(spec) -> list[tuple[int, dict]]:
    """The grid as searchsvc built it before issue 16: every combination's config, duplicates
    dropped by a scan (quadratic, fine for small grids), arms taking turns."""
    dims = nuisance_dimensions(spec)
    per_arm = []
    for arm in scientific_arms(spec):
        configs: list[dict] = []
        for combo in itertools.product(*(p.choices() for p in dims)):
            config = build_config(spec, arm, dict(zip((p.name for p in dims), combo,
                                                      strict=True)))
            if config not in configs:
                configs.append(config)
        per_arm.append([(arm.index, c) for c in configs])
    rows = itertools.zip_longest(*per_arm)
    return [item for row in rows for item in row if item is not None]


def reference_arms(spec) -> list[dict]:
    scientific = [spec.parameters[n] for n in spec.parameter_order
                  if spec.parameters[n].role == "scientific"]
    fixed = {p.name: p.value for p in spec.fixed}
    arms: list[dict] = []
    for combo in itertools.product(*(p.choices() for p in scientific)):
        context, values = dict(fixed), {}
        for param, value in zip(scientific, combo, strict=True):
            if param.is_active(context):
                context[param.name] = values[param.name] = value
        if values not in arms:
            arms.append(values)
    return arms


def random_conditional_spec(rng: random.Random):
    lines = []
    for i in range(rng.randint(2, 6)):
        role = rng.choice(["scientific", "nuisance", "nuisance", "fixed"])
        if role == "fixed":
            body = f"value: {rng.choice([0, 1, [1, 2]])}"
        elif rng.random() < 0.3:
            body = f"type: int, low: 0, high: {rng.randint(1, 3)}"
        else:
            body = f"values: [{', '.join(str(v) for v in range(rng.randint(1, 3)))}]"
        when = (f", when: {{p{rng.randrange(i)}: [{rng.choice([0, 1])}]}}"
                if i and rng.random() < 0.6 else "")
        lines.append(f"  p{i}: {{role: {role}, {body}{when}}}\n")
    try:
        return spec_for("grid", "".join(lines), budget="{}")
    except SpecError:  # e.g. a scientific parameter depending on a nuisance one
        return None


def test_grid_and_arms_match_the_quadratic_reference_on_random_conditional_spaces() -> None:
    rng = random.Random(16)
    compared = 0
    while compared < 150:
        spec = random_conditional_spec(rng)
        if spec is None:
            continue
        searcher = create_searcher(spec)
        got = [(p.arm.index, dict(p.config))
               for p in map(searcher.propose, range(searcher.total_trials))]
        assert got == reference_grid(spec), spec.parameters
        assert grid_size(spec) == len(got)
        assert [dict(a.values) for a in scientific_arms(spec)] == reference_arms(spec)
        compared += 1


def test_conditional_grid_counts_distinct_configs_for_budget_checks() -> None:
    params = ("  opt: {values: [adam, sgd]}\n"
              "  mom: {values: [0.5, 0.9, 0.99], when: {opt: sgd}}\n"
              "  lr: {values: [0.1, 0.01]}\n")
    assert grid_size(spec_for("grid", params, "{}")) == 2 + 6  # adam: 2 lr; sgd: 3 mom x 2 lr
    assert not GridSearcher.check(spec_for("grid", params, "{trials: 16}"))
    [issue] = GridSearcher.check(spec_for("grid", params, "{trials: 12}"))
    assert issue.message.startswith("the grid has 8 points")


def test_a_grid_over_many_single_valued_parameters_keeps_only_what_varies() -> None:
    """900 parameters with one value each and 2^12 combinations of the rest: points record
    the 12 varying values, so the grid is small and every config still carries all 912."""
    params = "".join(f"  m{i}: {{values: [0, 1]}}\n" for i in range(12))
    params += "".join(f"  s{i}: {{values: [{i}]}}\n" for i in range(900))
    searcher = create_searcher(spec_for("grid", params, "{}"))
    assert searcher.total_trials == 4096
    assert all(len(point) == 12 for _, point in searcher._grid)
    config = searcher.propose(4095).config
    assert len(config) == 912 and config["m0"] == 1 and config["s899"] == 899
