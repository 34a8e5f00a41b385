"""Valid study files become the typed, immutable spec docs/DESIGN.md describes."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from searchsvc.cli import main
from searchsvc.spec import ChoiceParameter, FixedParameter, RangeParameter, load_spec, parse_spec

ROOT = Path(__file__).resolve().parents[2]


def test_design_example_parses_with_roles_types_and_conditions() -> None:
    spec = load_spec(ROOT / "spaces" / "digits_depth.yaml")
    p = spec.parameters
    assert isinstance(p["num_layers"], ChoiceParameter) and p["num_layers"].role == "scientific"
    assert p["num_layers"].values == (1, 2, 3) and p["num_layers"].kind == "int"
    lr = p["learning_rate"]
    assert isinstance(lr, RangeParameter)
    assert (lr.low, lr.high, lr.scale, lr.role) == (1e-4, 1e-1, "log", "nuisance")
    assert isinstance(p["optimizer"], FixedParameter) and p["optimizer"].value == "adam"
    assert p["momentum"].when[0].parent == "optimizer"
    order = spec.parameter_order
    assert order.index("optimizer") < order.index("momentum")
    assert (spec.budget.trials, spec.budget.max_steps, spec.budget.max_concurrent) == (60, 30, 2)
    assert spec.checkpoints.keep_best == 3


def test_spec_is_immutable() -> None:
    spec = load_spec(ROOT / "spaces" / "quickstart.yaml")
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.name = "other"  # type: ignore[misc]
    with pytest.raises(TypeError):
        spec.parameters["x"] = None  # type: ignore[index]


def test_plain_exponent_is_a_float_and_types_are_inferred() -> None:
    spec = parse_spec("""
study: t
objective: m:f
metric: v
mode: max
parameters:
  lr: {low: 1e-4, high: 1e-1, scale: log}
  layers: {low: 1, high: 4}
  width: {low: 0.0, high: 1.0, step: 0.25}
  act: {values: [relu, tanh]}
  size: {value: 64}
""")
    p = spec.parameters
    assert p["lr"].low == pytest.approx(1e-4) and p["lr"].kind == "float"
    assert p["layers"].kind == "int" and p["layers"].grid() == (1, 2, 3, 4)
    assert p["width"].grid() == (0.0, 0.25, 0.5, 0.75, 1.0)
    assert p["act"].kind == "categorical"
    assert p["size"].role == "fixed" and p["size"].value == 64
    assert spec.searcher == "quasi_random"  # the Playbook's default for exploration


def test_log_range_maps_uniformly_in_log_space() -> None:
    spec = parse_spec("study: t\nobjective: m:f\nmetric: v\nmode: min\n"
                      "parameters: {lr: {low: 1.0e-4, high: 1.0, scale: log}}\n")
    lr = spec.parameters["lr"]
    assert lr.from_unit(0.5) == pytest.approx(1e-2)
    assert lr.from_unit(0.0) == pytest.approx(1e-4) and lr.from_unit(1.0) == pytest.approx(1.0)
    assert lr.to_unit(1e-3) == pytest.approx(0.25)


def test_schema_command_prints_json_schema(capsys) -> None:
    assert main(["schema"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert schema["title"] == "searchsvc study file"
    assert {"study", "objective", "parameters"} <= set(schema["required"])
    assert [form["required"] for form in schema["oneOf"]] == [["metric", "mode"], ["metrics"]]
    assert "searcher" in schema["properties"] and "$defs" in schema


def test_validate_accepts_every_shipped_space(capsys) -> None:
    spaces = sorted(str(p) for p in (ROOT / "spaces").glob("*.yaml"))
    assert main(["validate", *spaces]) == 0
    assert capsys.readouterr().out.count(": ok") == len(spaces)


def test_the_dimensionality_section_defaults_to_adaptive_through_the_whole_trial() -> None:
    head = ("study: d\nobjective: objectives.synthetic:playbook\nmetric: val_loss\nmode: min\n"
            "budget: {trials: 4, max_steps: 20}\nparameters: {x: {low: 0, high: 1}}\n")
    default = parse_spec(head).dimensionality
    assert (default.every, default.until) == ("auto", "off")
    given = parse_spec(head + "dimensionality: {every: 5, until: 0.25}\n").dimensionality
    assert dict(given.settings()) == {"every": 5, "until": 0.25}
    assert parse_spec(head + "dimensionality: {until: off}\n").dimensionality.until == "off"
    assert parse_spec(head + "dimensionality: {until: 3}\n").dimensionality.until == 3
