"""One allow-list check for every importable reference: the references are found by walking the
spec and every backend's and searcher's options model, so a "module:callable" field is covered
by being marked where it is declared; this test fails for a field that looks like one and is not
marked."""

from __future__ import annotations

import dataclasses
import typing
from pathlib import Path

import pytest

from searchsvc.service.allowlist import option_models, refused_references, spec_references
from searchsvc.spec import parse_spec
from searchsvc.spec.references import marked_fields, references
from searchsvc.testing.served import KERAS_STUDY

ROOT = Path(__file__).resolve().parents[2]


def described_as_callable(model: type) -> list[str]:
    """Fields of ``model`` whose description or type says they name a "module:callable"."""
    found = []
    if dataclasses.is_dataclass(model):
        return [f.name for f in dataclasses.fields(model)
                if "callable" in f.name or f.metadata.get("callable_reference")]
    for name, info in model.model_fields.items():  # type: ignore[attr-defined]
        text = f"{name} {info.description or ''} {typing.get_type_hints(model).get(name)}"
        if "module:callable" in text or "callable" in name:
            found.append(name)
    return found


def test_every_field_that_names_a_callable_is_marked_and_so_checked() -> None:
    models = option_models()
    assert "backend_options (keras_tuner)" in models and "searcher_options (bayesian)" in models
    marked = {where: marked_fields(model) for where, model in models.items()}
    for where, model in models.items():
        unmarked = set(described_as_callable(model)) - set(marked[where])
        assert not unmarked, f"{where}: {unmarked} name a module:callable but are not marked"
    # The ones there are today, so that the walk below is known to cover each.
    assert {w: f for w, f in marked.items() if f} == {
        "": ["objective"], "backend_options (keras_tuner)": ["data"]}


def test_the_walk_finds_every_marked_field_of_every_model() -> None:
    for where, model in option_models().items():
        for name in marked_fields(model):
            if dataclasses.is_dataclass(model):
                continue  # the spec itself: covered by the parsed specs below
            instance = model.model_construct(**{name: "evil:run"})  # type: ignore[attr-defined]
            assert [r.value for r in references(instance)] == ["evil:run"], where


@pytest.mark.parametrize(("objective", "data", "field"), [
    ("evil_probe:build", "objectives.keras_digits:data", "objective"),
    ("objectives.keras_digits:build", "evil_probe:data", "backend_options.data"),
])
def test_a_disallowed_module_in_any_callable_field_is_refused_with_its_line(
        objective: str, data: str, field: str) -> None:
    spec = parse_spec(KERAS_STUDY.format(n=0, objective=objective, data=data), file="s.yaml")
    assert {r.value for r in spec_references(spec)} == {objective, data}
    issues = refused_references(spec, ("objectives.",))
    assert [i.field for i in issues] == [field]
    line = 3 if field == "objective" else 5  # KERAS_STUDY's lines
    assert issues[0].render().startswith(f"s.yaml:{line}: {field}: module 'evil_probe' is not "
                                         "allowed")
    assert refused_references(spec, ("objectives.", "evil_probe")) == []
