"""Typed changes to a study file, and the one place that writes them into its YAML.

Analysis decides *what* to change (``searchsvc.analysis.next_study``); only this module knows
the file's layout. Writing keeps the user's file as it was apart from the changes (key order,
fields analysis does not touch) and the result is always a valid study file.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from searchsvc.spec.model import StudySpec
from searchsvc.spec.source import load_yaml
from searchsvc.spec.validate import parse_spec


def _fmt(value: Any) -> str:
    return f"{value:.3g}" if isinstance(value, float) else str(value)


@dataclass(frozen=True)
class Rename:
    """The study's new name."""

    name: str

    def describe(self) -> str | None:
        return None  # every next study is renamed: not worth a line


@dataclass(frozen=True)
class SetRange:
    """A range parameter's new bounds (``was``: the old ones)."""

    parameter: str
    low: float
    high: float
    was: tuple[float, float]
    reason: str

    def describe(self) -> str:
        return (f"{self.parameter}: [{_fmt(self.was[0])}, {_fmt(self.was[1])}] -> "
                f"[{_fmt(self.low)}, {_fmt(self.high)}] ({self.reason})")


@dataclass(frozen=True)
class FixParameter:
    """Make a parameter fixed at ``value``."""

    parameter: str
    value: Any
    reason: str

    def describe(self) -> str:
        return f"{self.parameter}: fixed at {_fmt(self.value)} ({self.reason})"


@dataclass(frozen=True)
class SetMaxSteps:
    """A new ``budget.max_steps`` (``was``: the old one)."""

    steps: int
    was: int
    reason: str

    def describe(self) -> str:
        return f"budget.max_steps: {self.was} -> {self.steps} ({self.reason})"


@dataclass(frozen=True)
class SetParent:
    """The study the new one is made from (its report then compares the two)."""

    study: str

    def describe(self) -> str | None:
        return None


@dataclass(frozen=True)
class NextSeed:
    """A new study seed (so the next study does not replay this one's draws)."""

    seed: int

    def describe(self) -> str | None:
        return None


@dataclass(frozen=True)
class EarlyStopping:
    """What a replay of early stopping found (``reason``): with a ``block``, the study file's
    ``early_stopping:`` section that runs the recommended rule; without, the next study's
    file only says so."""

    reason: str
    block: tuple[tuple[str, Any], ...] = ()

    def describe(self) -> str:
        if not self.block:
            return f"early stopping: {self.reason}"
        options = ", ".join(f"{k}: {_fmt(v)}" for k, v in self.block)
        return f"early_stopping: {{{options}}} ({self.reason})"


SpecEdit = (Rename | SetRange | FixParameter | SetMaxSteps | NextSeed | SetParent
            | EarlyStopping)


def describe(edits: Sequence[SpecEdit]) -> tuple[str, ...]:
    """One line per edit a user would want to read (renames and seeds say nothing new)."""
    return tuple(line for line in (e.describe() for e in edits) if line)


def write_edited(spec: StudySpec, edits: Sequence[SpecEdit], header: str = "") -> str:
    """``spec``'s study file with ``edits`` applied, as YAML text after the ``header``
    comment lines; :class:`~searchsvc.errors.SpecError` if the result is not a valid study
    file (a bug in whoever chose the edits)."""
    data: dict[str, Any] = load_yaml(spec.source.text, spec.source.file)[0]
    params: dict[str, Any] = data["parameters"]
    for edit in edits:
        if isinstance(edit, Rename):
            data["study"] = edit.name
        elif isinstance(edit, SetRange):
            params[edit.parameter]["low"], params[edit.parameter]["high"] = edit.low, edit.high
        elif isinstance(edit, FixParameter):
            params[edit.parameter] = {"role": "fixed", "value": edit.value}
        elif isinstance(edit, SetMaxSteps):
            data["budget"]["max_steps"] = edit.steps
        elif isinstance(edit, NextSeed):
            data["seed"] = edit.seed
        elif isinstance(edit, SetParent):
            data["parent"] = edit.study
        elif isinstance(edit, EarlyStopping) and edit.block:
            data["early_stopping"] = dict(edit.block)
    text = header + yaml.safe_dump(data, sort_keys=False, default_flow_style=None, width=100)
    parse_spec(text, file=f"{data['study']}.yaml")
    return text


def warm_started(text: str, study: str) -> str:
    """Study-file ``text`` warm-started from stored study ``study`` (``warm_start.study``),
    its leading comment lines kept; :class:`~searchsvc.errors.SpecError` if the result is
    not a valid study file."""
    data, source = load_yaml(text)
    header = _leading_comments(text)
    data["warm_start"] = {"study": study}
    edited = header + yaml.safe_dump(data, sort_keys=False, default_flow_style=None, width=100)
    parse_spec(edited, file=source.file)
    return edited


def _leading_comments(text: str) -> str:
    lines = []
    for line in text.splitlines(keepends=True):
        if not line.startswith("#"):
            break
        lines.append(line)
    return "".join(lines)
