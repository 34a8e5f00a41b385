"""Every study file causes bounded work: sizes are computed, compared with SpecLimits, and a file
over a limit is refused at once, naming the field, the computed size and the limit (issue 16)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import searchsvc.backends
import searchsvc.searchers
from searchsvc.errors import SpecError
from searchsvc.searchers import check_spec, create_searcher
from searchsvc.spec import (
    DEFAULT_LIMITS,
    ChoiceParameter,
    FixedParameter,
    RangeParameter,
    SpecLimits,
    parse_spec,
)
from searchsvc.spec.limits import limit_issues, value_count
from searchsvc.usecases import check, validate_text
from searchsvc.usecases import validate as validate_file

HEAD = """\
study: t
objective: objectives.synthetic:playbook
metric: val_loss
mode: min
"""
# The file of issue 16: 12 integer parameters of 1,001 values each, searched by grid.
ISSUE_16 = HEAD + "searcher: grid\nparameters:\n" + "".join(
    f"  p{i}: {{type: int, low: 0, high: 1000}}\n" for i in range(12))


def study(parameters: str, searcher: str = "random", budget: str = "{trials: 10}") -> str:
    return f"{HEAD}searcher: {searcher}\nbudget: {budget}\nparameters:\n{parameters}"


def ints(count: int, low: int = 0, high: int = 9, role: str = "nuisance") -> str:
    return "".join(f"  p{i}: {{role: {role}, type: int, low: {low}, high: {high}}}\n"
                   for i in range(count))


def refused(text: str, limits: SpecLimits = DEFAULT_LIMITS) -> list[str]:
    with pytest.raises(SpecError) as caught:
        validate_text(text, file="study.yaml", limits=limits)
    return [issue.render() for issue in caught.value.issues]


# --- the issue's grid -----------------------------------------------------------------------

def test_issue_16_grid_is_refused_naming_max_grid_points_without_the_searcher_checks(
        monkeypatch: pytest.MonkeyPatch) -> None:
    def enumerates(*args: object) -> list[object]:
        raise AssertionError("a check that may enumerate ran on a spec over the limits")

    monkeypatch.setattr(searchsvc.searchers, "check_spec", enumerates)
    monkeypatch.setattr(searchsvc.backends, "check_backend", enumerates)
    assert ISSUE_16.count("\n") < 20 and len(ISSUE_16) < 600
    assert refused(ISSUE_16) == [
        "study.yaml:5: searcher: the grid has 1001^12 = 1.01e36 points, over the limit "
        "max_grid_points = 100000 (got 'grid')"]


def test_validate_command_on_the_issue_file_exits_2_at_once(tmp_path: Path) -> None:
    """The console script, as the issue ran it. A regression hangs: the generous timeout
    then fails the test instead of stalling the suite."""
    path = tmp_path / "grid.yaml"
    path.write_text(ISSUE_16)
    script = Path(sys.executable).with_name("searchsvc")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "searchsvc.cli"]
    proc = subprocess.run([*command, "validate", str(path)], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert (f"{path}:5: searcher: the grid has 1001^12 = 1.01e36 points, over the limit "
            "max_grid_points = 100000") in proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr


def test_searcher_construction_refuses_a_spec_over_the_limits_too() -> None:
    spec = parse_spec(ISSUE_16)  # parses: the limits are a check of what it asks, not syntax
    with pytest.raises(SpecError, match="max_grid_points = 100000"):
        create_searcher(spec)
    assert [i.field for i in check_spec(spec)] == ["searcher"]


def test_a_grid_exactly_at_the_limit_validates_and_one_point_more_does_not() -> None:
    at_limit = "".join(f"  p{i}: {{type: int, low: 0, high: 9}}\n" for i in range(5))
    spec = validate_text(study(at_limit, "grid", "{}"))  # 10^5 points, enumerated once
    assert create_searcher(spec).total_trials == 100_000
    over = "  p: {type: int, low: 0, high: 100000}\n"
    assert refused(study(over, "grid", "{}")) == [
        "study.yaml:5: searcher: the grid has 100001 points, over the limit max_grid_points = "
        "100000 (got 'grid')"]


def test_the_grid_bound_counts_scientific_and_nuisance_values_but_not_fixed_ones() -> None:
    limits = SpecLimits(max_grid_points=12)
    params = ("  a: {role: scientific, values: [1, 2, 3]}\n  b: {values: [x, y]}\n"
              "  c: {type: int, low: 0, high: 1}\n  d: {value: [1, 2, 3, 4, 5]}\n")
    assert validate_text(study(params, "grid", "{}"), limits=limits).searcher == "grid"
    wider = params.replace("[x, y]", "[x, y, z]")
    assert refused(study(wider, "grid", "{}"), limits) == [
        "study.yaml:5: searcher: the grid has 3^2 * 2 = 18 points, over the limit "
        "max_grid_points = 12 (got 'grid')"]


def test_a_grid_run_whole_counts_against_max_trials() -> None:
    limits = SpecLimits(max_trials=10)
    issues = refused(study(ints(2, high=3), "grid", "{}"), limits)
    assert issues == ["study.yaml:6: budget.trials: budget.trials is omitted, so the study runs "
                      "the whole grid: 4^2 = 16 trials, over the limit max_trials = 10"]
    assert validate_text(study(ints(2, high=3), "grid", "{trials: 16}"),
                         limits=SpecLimits(max_trials=16))


# --- trials, parameters, arms ---------------------------------------------------------------

def test_a_trillion_trials_is_refused_naming_max_trials() -> None:
    assert refused(study(ints(1), budget="{trials: 1000000000000}")) == [
        "study.yaml:6: budget.trials: 1.00e12 trials is over the limit max_trials = 100000 "
        "(got 1000000000000)"]
    assert validate_text(study(ints(1), budget="{trials: 100000}")).budget.trials == 100_000


def test_too_many_parameters_is_refused_naming_max_parameters() -> None:
    issues = refused(study(ints(1001)))
    assert issues == ["study.yaml:7: parameters: the study declares 1001 parameters, over the "
                      "limit max_parameters = 1000 (got 1001)"]
    assert len(validate_text(study(ints(3)), limits=SpecLimits(max_parameters=3)).parameters) == 3
    assert refused(study(ints(4)), SpecLimits(max_parameters=3))


def test_too_many_scientific_combinations_is_refused_naming_max_arms() -> None:
    params = ints(2, high=1_000_000, role="scientific") + "  lr: {low: 0.1, high: 1.0}\n"
    assert refused(study(params, budget="{trials: 100}")) == [
        "study.yaml:7: parameters: the scientific parameters have 1000001^2 = 1.00e12 "
        "combinations, over the limit max_arms = 10000"]
    params = ints(4, high=9, role="scientific") + "  lr: {low: 0.1, high: 1.0}\n"
    spec = validate_text(study(params, budget="{trials: 10000}"))  # exactly 10^4 arms
    assert len(create_searcher(spec).arms) == 10_000


def test_every_limit_exceeded_is_reported_at_once() -> None:
    limits = SpecLimits(max_trials=5, max_parameters=2, max_grid_points=7, max_arms=3)
    params = ints(3, high=1, role="scientific")
    fields = sorted(i.field for i in limit_issues(
        parse_spec(study(params, "grid", "{trials: 8}")), limits))
    assert fields == ["budget.trials", "parameters", "parameters", "searcher"]


def test_sizes_beyond_any_float_are_computed_and_printed_without_building_them() -> None:
    many = "".join(f"  p{i}: {{type: int, low: 0, high: 1{'0' * 300}}}\n" for i in range(900))
    issues = refused(study(many, "grid", "{}"))
    assert issues == ["study.yaml:5: searcher: the grid has "
                      f"{10 ** 300 + 1}^900 = 1.00e270000 points, over the limit "
                      "max_grid_points = 100000 (got 'grid')"]


def test_limits_reject_bad_values_and_echo_them() -> None:
    with pytest.raises(ValueError, match=r"max_trials must be a positive int \(got 0\)"):
        SpecLimits(max_trials=0)
    with pytest.raises(ValueError, match=r"max_arms must be a positive int \(got 1.5\)"):
        SpecLimits(max_arms=1.5)  # type: ignore[arg-type]


def test_validate_file_takes_limits(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(study(ints(2)))
    assert validate_file(path).name == "t"
    with pytest.raises(SpecError, match="max_parameters = 1"):
        validate_file(path, limits=SpecLimits(max_parameters=1))
    with pytest.raises(SpecError, match="max_parameters = 1"):
        check(parse_spec(study(ints(2))), SpecLimits(max_parameters=1))


# --- counting without listing -----------------------------------------------------------------

def test_value_count_is_arithmetic() -> None:
    assert value_count(FixedParameter(name="f", value=[1, 2])) == 1
    assert value_count(ChoiceParameter(name="c", role="nuisance", values=("a", "b", "c"))) == 3
    huge = RangeParameter(name="n", role="nuisance", kind="int", low=0, high=10**18)
    assert value_count(huge) == 10**18 + 1  # a listing would never finish
    stepped = RangeParameter(name="s", role="nuisance", low=0.0, high=1.0, step=0.25)
    assert value_count(stepped) == 5
    assert value_count(RangeParameter(name="x", role="nuisance", low=0.0, high=1.0)) is None


@pytest.mark.parametrize("param", [
    RangeParameter(name="i", role="nuisance", kind="int", low=-3, high=7),
    RangeParameter(name="j", role="nuisance", kind="int", low=10, high=40, step=5),
    RangeParameter(name="f", role="nuisance", low=0.0, high=1.0, step=0.1),
    RangeParameter(name="g", role="nuisance", low=-2.5, high=2.5, step=0.5),
    RangeParameter(name="h", role="nuisance", low=1e6, high=1e6 + 1, step=1e-3),
], ids=lambda p: p.name)
def test_range_arithmetic_agrees_with_the_listed_grid(param: RangeParameter) -> None:
    grid = param.grid()
    assert param.grid_size == len(grid)
    for i, v in enumerate(grid):
        assert param.grid_value(i) == v and param.grid_index(v) == i and param.takes(v)
    step = param.step or 1
    for outside in (grid[0] - step, grid[-1] + step, grid[0] + step / 2, "1", None,
                    float("nan"), 10**400):
        assert not param.takes(outside), outside
    with pytest.raises(IndexError, match=f"no index {len(grid)}"):
        param.grid_value(len(grid))


def test_from_unit_on_a_huge_range_is_computed() -> None:
    param = RangeParameter(name="n", role="nuisance", kind="int", low=0, high=10**18)
    values = [param.from_unit(u / 100) for u in range(100)]
    assert values[0] == 0 and values[50] == 5 * 10**17 and all(0 <= v <= 10**18 for v in values)
    assert param.from_unit(1.0) == 10**18


def test_a_condition_on_a_huge_range_is_checked_without_listing_it() -> None:
    params = ("  n: {type: int, low: 0, high: 1000000000000}\n"
              "  m: {low: 0.0, high: 1.0, when: {n: [5, 999999999999]}}\n")
    assert validate_text(study(params)).parameters["m"].when[0].values == (5, 999999999999)
    bad = params.replace("999999999999", "-1")
    assert refused(study(bad)) == [
        "study.yaml:9: parameters.m.when.n: 'n' never takes this value (its values: 0, 1, 2, 3, "
        "4, 5, 6, 7, 8, 9, ...) (got -1)"]


@pytest.mark.parametrize(("param", "message"), [
    (f"{{low: 0, high: 1{'0' * 400}}}", "parameters.x.high: must be a finite number"),
    ("{low: 0.0, high: 1.0, step: 1.0e-320}", "parameters.x.step: is too small"),
])
def test_ranges_too_large_for_floats_are_issues_not_crashes(param: str, message: str) -> None:
    issues = refused(study(f"  x: {param}\n"))
    assert len(issues) == 1 and message in issues[0]


def test_a_long_chain_of_conditions_is_ordered_without_recursion() -> None:
    """Each parameter depends on the next: ordering them walks a chain 3000 deep."""
    chain = "".join(f"  p{i}: {{values: [0, 1], when: {{p{i + 1}: 1}}}}\n"
                    for i in range(2999)) + "  p2999: {values: [0, 1]}\n"
    spec = parse_spec(study(chain))  # parses; max_parameters is a validation limit
    assert spec.parameter_order == tuple(f"p{i}" for i in reversed(range(3000)))
    assert refused(study(chain))[0].endswith("over the limit max_parameters = 1000 (got 3000)")


def test_seed_repeats_count_against_max_trials() -> None:
    arms = "  s: {role: scientific, values: [1, 2, 3, 4, 5]}\n" + ints(1)
    text = study(arms, budget="{trials: 40}") + "noise: {top_k: 20, seeds: 50}\n"
    assert refused(text, SpecLimits(max_trials=1000)) == [
        "study.yaml:10: noise: the seed repeats add 5000 trials (5 combinations x top_k 20 x "
        "seeds 50), 5040 in all, over the limit max_trials = 1000"]
    # The default 2 x 3 repeats: 5 x 6 = 30 more, 70 in all.
    assert validate_text(study(arms, budget="{trials: 40}"), limits=SpecLimits(max_trials=70))
    assert refused(study(arms, budget="{trials: 40}"), SpecLimits(max_trials=69))
