"""The multi-objective analysis on planted trials: the front against a brute-force check, the
hypervolume against areas computed by hand, constraint feasibility never claimed for a
violated or unreported bound, and each objective's own boundary check."""

from __future__ import annotations

import itertools
import random

import pytest

from searchsvc.analysis.pareto import (
    ObjectivePoint,
    analyze_objectives,
    hypervolume,
    pareto_front,
)
from searchsvc.core import Objective, TrialRecord, TrialState
from searchsvc.spec import parse_spec

MIN_MAX = (Objective("error", "min"), Objective("speed", "max"))


def point(number: int, *values: float) -> ObjectivePoint:
    return ObjectivePoint(number, "", tuple(values), (), {})


def dominates(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
    """a at least as good as b everywhere and better somewhere (error min, speed max)."""
    better_or_equal = a[0] <= b[0] and a[1] >= b[1]
    return better_or_equal and (a[0] < b[0] or a[1] > b[1])


@pytest.mark.parametrize("seed", range(5))
def test_the_front_is_exactly_the_undominated_points(seed: int) -> None:
    rng = random.Random(seed)
    # Rounded values: ties and duplicates happen, as with real metrics.
    points = [point(n, round(rng.random(), 1), round(rng.random(), 1)) for n in range(60)]
    expected = {p.number for p in points
                if not any(dominates(q.values, p.values) for q in points)}
    assert set(pareto_front(MIN_MAX, points)) == expected


def test_hypervolume_is_the_dominated_staircase_area() -> None:
    # Minimise both; reference (4, 4). Points (1, 3), (2, 2), (3, 1) dominate a staircase:
    # 3x1 + 2x1 + 1x1 = 6. A dominated point (3, 3) and one past the reference add nothing.
    both_min = (Objective("a", "min"), Objective("b", "min"))
    points = [point(0, 1, 3), point(1, 2, 2), point(2, 3, 1), point(3, 3, 3), point(4, 5, 0)]
    assert hypervolume(both_min, points, (4, 4)) == pytest.approx(6.0)
    # The same with the second objective maximised (b -> -b, reference -4): same area.
    mixed = (Objective("a", "min"), Objective("b", "max"))
    flipped = [point(p.number, p.values[0], -p.values[1]) for p in points]
    assert hypervolume(mixed, flipped, (4, -4)) == pytest.approx(6.0)


SPEC = """
study: mo
objective: objectives.synthetic:zdt1
metrics: [{name: error, mode: min}, {name: speed, mode: max}]
constraints: [{metric: memory_mb, max: 100}, {metric: latency_ms, min: 1, max: 10}]
searcher: random
budget: {trials: 200}
parameters:
  width: {role: scientific, values: [1, 2]}
  x: {low: 0.0, high: 1.0}
"""


def trial(number: int, final: dict[str, float], state: TrialState = TrialState.COMPLETED,
          x: float = 0.5) -> TrialRecord:
    width = 1 + number % 2
    return TrialRecord(id=number, study_id=1, number=number, state=state,
                       config={"width": width, "x": x}, arm={"width": width}, seed=number,
                       finished_at=1.0, final_metrics=final)


def test_a_violated_or_unreported_constraint_is_never_reported_as_satisfied() -> None:
    spec = parse_spec(SPEC)
    rng = random.Random(0)
    trials = []
    for n in range(200):
        final = {"error": rng.random(), "speed": rng.random()}
        for name, scale in (("memory_mb", 200), ("latency_ms", 15)):
            if rng.random() < 0.9:  # a tenth never report it
                final[name] = rng.uniform(0, scale)
        trials.append(trial(n, final))
    found = analyze_objectives(spec, trials, 0.2)
    assert found is not None

    def truly_feasible(final: dict[str, float]) -> bool:
        return (final.get("memory_mb", 1e9) <= 100
                and 1 <= final.get("latency_ms", -1) <= 10)

    by_number = {t.number: t.final_metrics for t in trials}
    assert {p.number for p in found.points if p.feasible} == {
        n for n, f in by_number.items() if truly_feasible(f)}
    assert all(truly_feasible(by_number[n]) for n in found.front)
    for arm_front in found.arm_fronts.values():
        assert all(truly_feasible(by_number[n]) for n in arm_front)
    memory, latency = found.constraints
    assert memory.satisfied == sum(f.get("memory_mb", 1e9) <= 100 for f in by_number.values())
    assert memory.unreported == sum("memory_mb" not in f for f in by_number.values())
    assert memory.satisfied + memory.violated + memory.unreported == 200
    assert latency.satisfied == sum(1 <= f.get("latency_ms", -1) <= 10
                                    for f in by_number.values())


def test_each_arm_has_its_own_front_and_the_hypervolume_only_grows() -> None:
    spec = parse_spec(SPEC)
    rng = random.Random(1)
    trials = [trial(n, {"error": rng.random(), "speed": rng.random(), "memory_mb": 1,
                        "latency_ms": 5}) for n in range(40)]
    trials.append(trial(40, {"error": 0.0}, TrialState.FAILED))  # no speed: not a point
    found = analyze_objectives(spec, trials, 0.2)
    assert found is not None and 40 not in {p.number for p in found.points}
    for arm, numbers in found.arm_fronts.items():
        same_arm = [p for p in found.points if p.arm == arm]
        assert set(numbers) == set(pareto_front(spec.objectives, same_arm))
    volumes = [v for _, v in found.hypervolume]
    assert all(b >= a for a, b in itertools.pairwise(volumes))
    assert found.reference_point is not None
    assert volumes[-1] == pytest.approx(hypervolume(spec.objectives, list(found.points),
                                                    found.reference_point))
    assert found.hypervolume[-1][0] == 41  # every finished trial counted


def test_each_objective_gets_its_own_boundary_check() -> None:
    # error is best at the high edge of x; speed is best in the middle of it.
    spec = parse_spec(SPEC.replace("constraints:", "# constraints:"))
    trials = []
    for n in range(60):
        x = (n + 0.5) / 60
        trials.append(trial(n, {"error": 1 - x, "speed": 1 - abs(x - 0.5)}, x=x))
    found = analyze_objectives(spec, trials, 0.2)
    assert found is not None
    checks = {f.objective.name: {c.parameter: c.status for c in f.boundaries}
              for f in found.per_objective}
    assert checks["error"]["x"] == "near_high"
    assert checks["speed"]["x"] == "ok"


def test_a_single_unconstrained_metric_has_no_objectives_analysis() -> None:
    spec = parse_spec(SPEC.replace("metrics: [{name: error, mode: min}, {name: speed, "
                                   "mode: max}]", "metric: error\nmode: min")
                      .replace("constraints:", "# constraints:"))
    assert analyze_objectives(spec, [trial(0, {"error": 1.0})], 0.2) is None
