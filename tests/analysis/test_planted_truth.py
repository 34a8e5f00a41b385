"""The analysis finds what was planted, case by case, and raises no false alarm on the clean
cases."""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from typing import Any

import pytest

from objectives.synthetic import PLAYBOOK_FLOOR
from searchsvc.analysis import analyze
from searchsvc.spec import parse_spec
from searchsvc.store import InMemoryStore, Store
from searchsvc.testing.planted import converging, lr_miss, planted_study

COMMON = """
        objective: objectives.synthetic:playbook
        metric: val_loss
        mode: min
        searcher: quasi_random
        seed: 3
"""


@pytest.fixture
def store() -> Store:
    # Records as a run would leave them, without a database: analysis is pure.
    return InMemoryStore()


def lr_wd_curve(best_lr_log10: float):
    def curve(config: Mapping[str, Any], rng: random.Random, steps: int):
        wd_miss = math.log10(float(config["weight_decay"])) + 4.0
        final = 0.2 + 0.08 * lr_miss(config, best_lr_log10) ** 2 + 0.02 * wd_miss ** 2
        return converging(final, rng, steps)
    return curve


def by_name(items, name: str):
    return next(i for i in items if getattr(i, "parameter", None) == name)


# The best learning rate (10^-1.5, see lr_wd_curve) lies past the declared high edge.
BEYOND_HIGH = """
        study: beyond-high
        budget: {trials: 30, max_steps: 12}
        parameters:
          learning_rate: {role: nuisance, low: 1.0e-5, high: 1.0e-2, scale: log}
          weight_decay: {role: nuisance, low: 1.0e-6, high: 1.0e-2, scale: log}
""".rstrip() + COMMON


def test_best_learning_rate_beyond_the_high_edge_is_reported_with_a_wider_range(store):
    study, spec, trials = planted_study(BEYOND_HIGH, lr_wd_curve(-1.5), store=store)
    result = analyze(study, spec, trials)
    lr = by_name(result.boundaries, "learning_rate")
    assert lr.status == "near_high"
    assert lr.suggested_high > 10 ** -1.5 > lr.high  # the new range reaches the true optimum
    assert by_name(result.boundaries, "weight_decay").status == "ok"  # no false alarm
    assert any("learning_rate" in f and "high edge" in f for f in result.findings)


def test_optimum_inside_every_range_raises_no_boundary_alarm(store):
    study, spec, trials = planted_study("""
        study: inside
        budget: {trials: 30, max_steps: 12}
        parameters:
          learning_rate: {role: nuisance, low: 1.0e-4, high: 1.0, scale: log}
          weight_decay: {role: nuisance, low: 1.0e-6, high: 1.0e-2, scale: log}
    """.rstrip() + COMMON, lr_wd_curve(-1.5), store=store)
    result = analyze(study, spec, trials)
    assert [c.status for c in result.boundaries] == ["ok", "ok"]
    for diagnosis in result.curves:  # clean, converging curves
        assert not {"overfitting", "high_variance", "diverged", "train_loss_increasing"} & set(
            diagnosis.issues), diagnosis


def depth_curve(config: Mapping[str, Any], rng: random.Random, steps: int):
    depth = int(config["depth"])
    best_lr = -1.0 - 0.5 * depth  # deeper needs a smaller learning rate
    final = PLAYBOOK_FLOOR[depth] + 0.2 * lr_miss(config, best_lr) ** 2 + rng.gauss(0, 0.003)
    return converging(final, rng, steps)


def test_a_scientific_value_better_only_once_its_learning_rate_is_tuned_wins_isolation(store):
    # The planted truth: at depth 1's best learning rate, depth 1 beats depth 3...
    naive = {"learning_rate": 10 ** -1.5}
    assert (depth_curve({**naive, "depth": 1}, random.Random(0), 10)[-1]["val_loss"]
            < depth_curve({**naive, "depth": 3}, random.Random(0), 10)[-1]["val_loss"])
    # ...but with the learning rate tuned per depth, depth 3 is clearly better.
    study, spec, trials = planted_study("""
        study: depth
        budget: {trials: 40, max_steps: 10}
        parameters:
          depth: {role: scientific, values: [1, 3]}
          learning_rate: {role: nuisance, low: 1.0e-4, high: 0.3, scale: log}
    """.rstrip() + COMMON, depth_curve, store=store)
    [iso] = analyze(study, spec, trials).isolation
    assert iso.parameter == "depth" and iso.verdict == "differs" and iso.best_value == 3
    assert [p.value for p in iso.points] == [1, 3]
    best = {p.value: p.best for p in iso.points}
    assert best[3] < best[1]
    assert all(t.config["depth"] == p.value for p in iso.points for t in trials
               if t.number == p.number)


def test_scientific_values_that_do_not_matter_are_called_within_noise(store):
    def curve(config: Mapping[str, Any], rng: random.Random, steps: int):
        final = 0.2 + 0.08 * lr_miss(config, -2.0) ** 2 + rng.gauss(0, 0.01)
        return converging(final, rng, steps)

    study, spec, trials = planted_study("""
        study: activation
        budget: {trials: 40, max_steps: 10}
        parameters:
          activation: {role: scientific, values: [relu, gelu]}
          learning_rate: {role: nuisance, low: 1.0e-4, high: 1.0, scale: log}
    """.rstrip() + COMMON, curve, store=store)
    [iso] = analyze(study, spec, trials).isolation
    assert iso.verdict == "within_noise", iso.detail


def size_curve(config: Mapping[str, Any], rng: random.Random, steps: int):
    final = 0.25 + 0.05 * lr_miss(config, -2.0) ** 2
    rows = converging(final, rng, steps)
    if config["model_size"] == "large":  # memorises: validation loss rises after a third
        turn = steps // 3
        for i, row in enumerate(rows[turn:], 1):
            row["val_loss"] = rows[turn - 1]["val_loss"] + 0.03 * i + rng.gauss(0, 0.003)
            row["train_loss"] = max(0.01, rows[turn - 1]["train_loss"] - 0.02 * i)
    return rows


def test_the_overfitting_arm_is_diagnosed_and_the_clean_arm_is_not(store):
    study, spec, trials = planted_study("""
        study: sizes
        budget: {trials: 24, max_steps: 15}
        parameters:
          model_size: {role: scientific, values: [small, large]}
          learning_rate: {role: nuisance, low: 1.0e-4, high: 1.0, scale: log}
    """.rstrip() + COMMON, size_curve, store=store)
    curves = analyze(study, spec, trials).curves
    large = [c for c in curves if c.arm == "model_size=large"]
    small = [c for c in curves if c.arm == "model_size=small"]
    assert large and small
    assert all("overfitting" in c.issues for c in large)
    assert all(c.best_step < c.last_step // 2 for c in large)
    assert not any({"overfitting", "high_variance", "diverged"} & set(c.issues) for c in small)


def divergence_curve(config: Mapping[str, Any], rng: random.Random, steps: int):
    # Higher is better all the way to 10^-0.5, but training blows up past 10^-1.5.
    final = 0.2 + 0.08 * lr_miss(config, -0.5) ** 2
    rows = converging(final, rng, steps)
    if float(config["learning_rate"]) > 10 ** -1.5:
        for row in rows[steps // 3:]:
            row["val_loss"] = row["train_loss"] = float("nan")
    return rows


def test_a_boundary_formed_by_divergence_is_reported_as_such_not_as_expand(store):
    study, spec, trials = planted_study("""
        study: diverges
        budget: {trials: 30, max_steps: 12}
        parameters:
          learning_rate: {role: nuisance, low: 1.0e-4, high: 1.0, scale: log}
          weight_decay: {role: nuisance, low: 1.0e-6, high: 1.0e-2, scale: log}
    """.rstrip() + COMMON, divergence_curve, store=store)
    assert any(t.state == "infeasible" for t in trials)
    result = analyze(study, spec, trials)
    lr, wd = result.boundaries
    # Diverged trials are spread over weight_decay: it is not what makes training diverge.
    assert wd.parameter == "weight_decay" and wd.status == "ok", wd
    assert lr.status == "divergence_edge", lr
    assert lr.suggested_high <= 10 ** -1.2  # trimmed to the stable side, never expanded
    assert lr.suggested_high < lr.high
    assert any("diverge" in f for f in result.findings)


def test_the_next_study_is_a_valid_study_file_with_the_suggested_ranges(store):
    study, spec, trials = planted_study(BEYOND_HIGH, lr_wd_curve(-1.5), store=store)
    result = analyze(study, spec, trials)
    nxt = parse_spec(result.next_study.text, file="next.yaml")
    lr = nxt.parameters["learning_rate"]
    assert nxt.name == "beyond-high-next"
    assert lr.high == by_name(result.boundaries, "learning_rate").suggested_high  # type: ignore[union-attr]
    assert lr.scale == "log" and lr.role == "nuisance"  # type: ignore[union-attr]
    assert any(c.startswith("learning_rate:") for c in result.next_study.changes)


def test_a_parameter_that_does_not_matter_raises_no_alarm_in_a_large_study(store):
    def curve(config: Mapping[str, Any], rng: random.Random, steps: int):
        depth = int(config["depth"])
        final = 0.3 - 0.03 * depth + 0.08 * lr_miss(config, -1.0 - 0.5 * depth) ** 2
        return converging(final + rng.gauss(0, 0.01), rng, steps)

    study, spec, trials = planted_study("""
        study: irrelevant
        budget: {trials: 400, max_steps: 6}
        parameters:
          depth: {role: scientific, values: [1, 2, 3, 4]}
          learning_rate: {role: nuisance, low: 1.0e-5, high: 1.0, scale: log}
          dropout: {role: nuisance, low: 0.0, high: 0.5}
    """.rstrip() + COMMON.replace("quasi_random", "random"), curve, store=store)
    checks = {c.parameter: c for c in analyze(study, spec, trials).boundaries}
    assert checks["dropout"].status == "ok", checks["dropout"].detail
    assert checks["learning_rate"].status == "ok", checks["learning_rate"].detail
