"""Studies with several objectives are compared, and their next study suggested, over every
objective: a Pareto comparison against each study's seed noise, and ranges that follow where
each objective's best trials are (planted trials, no Ray)."""

from __future__ import annotations

import json
import random
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from searchsvc.analysis import analyze
from searchsvc.analysis.compare import (
    COMPARE_IMPROVED,
    COMPARE_INSUFFICIENT,
    COMPARE_TRADE_OFF,
    COMPARE_WITHIN_NOISE,
    COMPARE_WORSE,
    METHOD_PARETO,
    compare,
)
from searchsvc.report.data import comparison_data
from searchsvc.spec.edits import SetRange
from searchsvc.testing.planted import Curve, PlantedStudy, Rows, planted_study

SIGMA = 0.01  # the planted seed noise of each objective


def study_text(name: str, noise: bool = True, low: float = 0.0, high: float = 1.0,
               trials: int = 12) -> str:
    return f"""
study: {name}
objective: objectives.synthetic:zdt1
metrics: [{{name: error, mode: min}}, {{name: speed, mode: max}}]
searcher: random
budget: {{trials: {trials}}}
{"noise: {top_k: 2, seeds: 3}" if noise else ""}
parameters:
  x: {{low: {low}, high: {high}}}
"""


def tradeoff(error_shift: float = 0.0, speed_shift: float = 0.0) -> Curve:
    """error is best near x = 0.3, speed falls slowly with x; each trial's seed moves both by
    seed noise of sd SIGMA. The shifts make a study better (error down, speed up) or worse."""
    def curve(config: Mapping[str, Any], rng: random.Random, steps: int) -> Rows:
        x = float(config["x"])
        error = 0.5 + (x - 0.3) ** 2 + error_shift + rng.gauss(0, SIGMA)
        speed = 1.0 - 0.1 * x + speed_shift + rng.gauss(0, SIGMA)
        return [{"error": error + 0.1 / s, "speed": speed} for s in range(1, steps + 1)]
    return curve


def planted(name: str, error_shift: float = 0.0, speed_shift: float = 0.0,
            noise: bool = True) -> PlantedStudy:
    return planted_study(study_text(name, noise), tradeoff(error_shift, speed_shift), steps=3,
                         repeats=noise)


@pytest.mark.parametrize(("error_shift", "speed_shift", "verdict", "said"), [
    (-0.2, 0.0, COMPARE_IMPROVED, ["error: improved", "speed: within_noise"]),
    (0.2, 0.0, COMPARE_WORSE, ["error: worse", "speed: within_noise"]),
    (-0.2, -0.3, COMPARE_TRADE_OFF, ["error: improved", "speed: worse"]),
    (0.0, 0.3, COMPARE_IMPROVED, ["error: within_noise", "speed: improved"]),
    (0.0, 0.0, COMPARE_WITHIN_NOISE, ["error: within_noise", "speed: within_noise"]),
])
def test_fronts_are_compared_on_every_objective_against_seed_noise(
        error_shift: float, speed_shift: float, verdict: str, said: list[str]) -> None:
    a = planted("a")
    b = planted("b", error_shift, speed_shift)
    found = compare(a.study, a.trials, b.study, b.trials)
    assert (found.verdict, found.method, found.metric) == (verdict, METHOD_PARETO,
                                                           "error, speed")
    assert [c.metric for c in found.objectives] == ["error", "speed"]
    assert all(c.baseline.repeats == 3 and c.candidate.repeats == 3 for c in found.objectives)
    for text in said:
        assert text in found.detail
    # The speed comparison is judged on speed's own values, higher better.
    speed = found.objectives[1]
    assert speed.difference == pytest.approx(speed.candidate.mean - speed.baseline.mean)  # type: ignore[operator]
    # Both fronts' hypervolumes, against one reference point; a better front has more.
    assert found.hypervolumes is not None and found.reference_point is not None
    if verdict == COMPARE_IMPROVED:
        assert found.hypervolumes[1] > found.hypervolumes[0]
    data = comparison_data(found)
    assert data is not None
    assert [o["verdict"] for o in data["objectives"]] == [c.verdict for c in found.objectives]


def test_a_front_repeats_the_best_configuration_of_each_objective() -> None:
    a = planted("a")
    search = [t for t in a.trials if t.repeat_of is None]
    best_error = min(search, key=lambda t: t.final_metrics["error"]).number
    best_speed = max(search, key=lambda t: t.final_metrics["speed"]).number
    assert best_error != best_speed
    repeats = [t for t in a.trials if t.repeat_of is not None]
    assert sorted({t.repeat_of for t in repeats}) == sorted({best_error, best_speed})
    assert len(repeats) == 6


def test_fronts_without_seed_repeats_are_not_judged() -> None:
    a, b = planted("a", noise=False), planted("b", -0.2, noise=False)
    found = compare(a.study, a.trials, b.study, b.trials)
    assert found.verdict == COMPARE_INSUFFICIENT
    assert all(c.verdict == COMPARE_INSUFFICIENT for c in found.objectives)
    assert "no seed repeats in a, b" in found.detail


def test_a_study_with_other_objectives_is_not_comparable() -> None:
    a = planted("a")
    single = planted_study("""
        study: single
        objective: objectives.synthetic:zdt1
        metric: error
        mode: min
        searcher: random
        budget: {trials: 4}
        parameters:
          x: {low: 0.0, high: 1.0}
        """, tradeoff(), steps=3)
    found = compare(a.study, a.trials, single.study, single.trials)
    assert found.verdict == COMPARE_INSUFFICIENT
    assert "single optimises error (min), a error (min), speed (max): not comparable" \
        in found.detail


def test_the_next_study_widens_a_range_where_the_second_objective_crowds_its_edge() -> None:
    """error is best in the middle of [0.2, 0.8] (its range is fine); speed is best at the
    high edge. Judged on error alone the range would only be narrowed."""
    def curve(config: Mapping[str, Any], rng: random.Random, steps: int) -> Rows:
        x = float(config["x"])
        return [{"error": 0.5 + (x - 0.5) ** 2 + rng.gauss(0, 0.001), "speed": x}] * steps

    found = planted_study(study_text("edges", noise=False, low=0.2, high=0.8, trials=30),
                          curve, steps=2)
    analysis = analyze(found.study, found.spec, found.trials)
    [edit] = [e for e in analysis.next_study.edits if isinstance(e, SetRange)]
    assert edit.parameter == "x" and edit.high > 0.8
    assert edit.low < 0.5  # error's best trials, in the middle, stay inside
    assert "speed: near high" in edit.reason and "error: ok" in edit.reason
    # The single-metric checks (error alone) see no crowded edge.
    assert [b.status for b in analysis.boundaries] == ["ok"]


def test_searchsvc_compare_prints_every_objective_and_the_pareto_verdict(
        searchsvc_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from searchsvc.cli import main
    from searchsvc.store import SqlStore

    store = SqlStore(f"sqlite:///{searchsvc_home / 'searchsvc.db'}")
    planted_study(study_text("a"), tradeoff(), steps=3, repeats=True, store=store)
    planted_study(study_text("b"), tradeoff(-0.2, -0.3), steps=3, repeats=True, store=store)
    assert main(["compare", "a", "b"]) == 0
    printed = capsys.readouterr().out
    assert "mean error" in printed and "mean speed" in printed
    assert "trade_off: B's front trades one objective for another" in " ".join(printed.split())
    assert main(["compare", "a", "b", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["verdict"] == COMPARE_TRADE_OFF
    assert [o["metric"] for o in data["objectives"]] == ["error", "speed"]
    assert set(data["hypervolumes"]) == {"baseline", "candidate"}
