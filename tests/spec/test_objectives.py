"""Several objectives (`metrics:`) and constraints in the study file: both forms of the
objective, and a precise error for each malformed one."""

from __future__ import annotations

import pytest

from searchsvc.core import Constraint, Objective
from searchsvc.errors import SpecError
from searchsvc.spec import parse_spec

HEAD = "study: t\nobjective: objectives.synthetic:zdt1\n"
SPACE = "parameters:\n  x0: {low: 0.0, high: 1.0}\n  x1: {low: 0.0, high: 1.0}\n"
TWO = "metrics:\n  - {name: f1, mode: min}\n  - {name: f2, mode: max}\n"


def issues(text: str) -> list[str]:
    with pytest.raises(SpecError) as err:
        parse_spec(text)
    return [i.render() for i in err.value.issues]


def test_a_single_metric_is_the_only_objective() -> None:
    spec = parse_spec(HEAD + "metric: loss\nmode: min\n" + SPACE)
    assert spec.objectives == (Objective("loss", "min"),) and not spec.multi_objective
    assert spec.constraints == ()


def test_metrics_lists_the_objectives_in_order_and_the_first_is_the_metric() -> None:
    spec = parse_spec(HEAD + TWO + "constraints:\n  - {metric: memory_mb, max: 2500}\n"
                      "  - {metric: latency_ms, min: 1, max: 20}\n" + SPACE)
    assert spec.objectives == (Objective("f1", "min"), Objective("f2", "max"))
    assert (spec.metric, spec.mode, spec.multi_objective) == ("f1", "min", True)
    assert spec.constraints == (Constraint("memory_mb", None, 2500.0),
                                Constraint("latency_ms", 1.0, 20.0))


def test_a_multi_objective_study_gets_no_seed_repeats_by_default() -> None:
    spec = parse_spec(HEAD + TWO + "parameters:\n  depth: {role: scientific, values: [1, 2]}\n"
                      "  x0: {low: 0.0, high: 1.0}\n")
    assert spec.noise is None


@pytest.mark.parametrize(("body", "line", "expected"), [
    (TWO + "metric: f1\nmode: min\n", 6, "metric: give either `metric`/`mode` or `metrics`"),
    ("metrics:\n  - {name: f1, mode: min}\n  - {name: f1, mode: max}\n", 5,
     "metrics.1.name: is listed twice (got 'f1')"),
    ("metrics: []\n", 3, "metrics: list at least one"),
    ("metrics:\n  - {name: f1, mode: lowest}\n", 4, "metrics.0.mode"),
    (TWO + "constraints:\n  - {metric: memory_mb}\n", 7, "constraints.0: give `min`, `max`"),
    (TWO + "constraints:\n  - {metric: f2, max: 3}\n", 7,
     "constraints.0.metric: is an objective"),
    (TWO + "constraints:\n  - {metric: m, min: 5, max: 1}\n", 7,
     "constraints.0.min: must be at most max (1) (got 5)"),
    ("mode: min\n", 1, "metric: is required"),
])
def test_each_malformed_objective_gets_a_precise_error(body: str, line: int,
                                                        expected: str) -> None:
    found = issues(HEAD + body + SPACE)
    assert any(expected in i and f"<spec>:{line}:" in i for i in found), found
