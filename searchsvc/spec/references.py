"""Importable references in a study: every field whose value is a ``"module:callable"`` that
searchsvc imports and calls (the objective, a Keras backend's data function, ...).

Such a field is marked where it is declared: ``ModuleCallable`` in a pydantic model (a
backend's or searcher's options), ``CALLABLE_FIELD`` metadata in a dataclass (the spec). The
service's allow-list then checks every reference found by :func:`references`, which walks the
whole model, so a field added later is covered by being marked, not by being named somewhere
else (tests/service/test_allowlist.py fails for an unmarked one).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import BaseModel

from searchsvc.core.callables import CallableRef

Path = tuple[str | int, ...]


@dataclass(frozen=True)
class CallableReference:
    """Marks a string field as a "module:callable" that searchsvc imports and calls."""


ModuleCallable = Annotated[str, CallableReference()]
CALLABLE_FIELD: Mapping[str, Any] = {"callable_reference": True}  # dataclass field metadata


@dataclass(frozen=True)
class Reference:
    """One importable reference: where it is in the study file, and its value."""

    path: Path
    value: str

    @property
    def module(self) -> str:
        return CallableRef.parse(self.value).module


def references(node: Any, path: Path = ()) -> list[Reference]:
    """Every marked reference in ``node`` (a dataclass, pydantic model, mapping or sequence,
    walked to the leaves), with its field path."""
    return list(_walk(node, path))


def marked_fields(model: type[Any]) -> list[str]:
    """The names of ``model``'s fields marked as references (a dataclass or pydantic model)."""
    if isinstance(model, type) and issubclass(model, BaseModel):
        return [name for name, info in model.model_fields.items() if _marked(info.metadata)]
    return [f.name for f in dataclasses.fields(model) if f.metadata.get("callable_reference")]


def _walk(node: Any, path: Path) -> Iterator[Reference]:
    if isinstance(node, BaseModel):
        for name, info in type(node).model_fields.items():
            yield from _field(getattr(node, name), (*path, name), _marked(info.metadata))
    elif dataclasses.is_dataclass(node) and not isinstance(node, type):
        for f in dataclasses.fields(node):
            yield from _field(getattr(node, f.name), (*path, f.name),
                              bool(f.metadata.get("callable_reference")))
    elif isinstance(node, Mapping):
        for key, value in node.items():
            yield from _walk(value, (*path, str(key)))
    elif isinstance(node, list | tuple):
        for index, value in enumerate(node):
            yield from _walk(value, (*path, index))


def _field(value: Any, path: Path, marked: bool) -> Iterator[Reference]:
    if marked and isinstance(value, str):
        yield Reference(path, value)
    elif marked and isinstance(value, list | tuple):  # a list of references
        yield from (Reference((*path, i), v) for i, v in enumerate(value) if isinstance(v, str))
    else:
        yield from _walk(value, path)


def _marked(metadata: list[Any]) -> bool:
    return any(isinstance(m, CallableReference) for m in metadata)
