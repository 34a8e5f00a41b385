"""Small studies built as records, without a database or Ray, for the plot and page tests: a
study maximising or minimising ``accuracy``, planted by searchsvc.testing.planted (its real
quasi-random searcher) with a distinct best value per trial and chosen trials diverged."""

from __future__ import annotations

import json
import math
import random
import textwrap
from collections.abc import Collection, Mapping
from dataclasses import replace
from typing import Any

from searchsvc.core import StudyRecord, TrialRecord
from searchsvc.spec import StudySpec, parse_spec
from searchsvc.testing.planted import Rows, planted_study

SPEC = """
    study: plots
    description: {description}
    objective: objectives.synthetic:playbook
    metric: accuracy
    mode: {mode}
    searcher: quasi_random
    seed: {seed}
    budget: {{trials: {trials}, max_steps: 10}}
    parameters:
      width: {{role: scientific, values: {widths}}}
      learning_rate: {{role: nuisance, low: 1.0e-4, high: 1.0, scale: log}}
      dropout: {{role: nuisance, low: 0.0, high: 0.5}}
"""


def study_spec(mode: str, *, description: str = "planted",
               widths: tuple[object, ...] = (64, 256)) -> StudySpec:
    """The spec of a study maximising or minimising ``accuracy`` over three parameters."""
    return parse_spec(_spec_text(mode, description, widths))


def study(mode: str, *, name: str = "plots", description: str = "planted",
          widths: tuple[object, ...] = (64, 256)) -> tuple[StudyRecord, StudySpec]:
    """A finished study named ``name`` and its spec (as ``study_spec``)."""
    record, spec, _ = planted_study(_spec_text(mode, description, widths), steady,
                                    file="plots.yaml")
    return replace(record, name=name), spec


def make_trials(count: int, *, infeasible: Collection[int] = (), seed: int = 0,
                widths: tuple[object, ...] = (64, 256)) -> list[TrialRecord]:
    """``count`` trials of a study seeded ``seed``; completed ones have distinct best values
    in (0.2, 0.9); the numbers in ``infeasible`` diverged with no finite value at all."""
    text = _spec_text("max", "planted", widths, trials=count, seed=seed)
    return planted_study(text, steady, overrides=dict.fromkeys(infeasible, diverged)).trials


def steady(config: Mapping[str, Any], rng: random.Random, steps: int) -> Rows:
    """The same accuracy, drawn in (0.2, 0.9), at every step."""
    value = rng.uniform(0.2, 0.9)
    return [{"accuracy": value} for _ in range(steps)]


def diverged(config: Mapping[str, Any], rng: random.Random, steps: int) -> Rows:
    """No finite value at all, three steps in."""
    return [{"accuracy": math.nan} for _ in range(3)]


def _spec_text(mode: str, description: str, widths: tuple[object, ...], *,
               trials: int = 100, seed: int = 0) -> str:
    # JSON is YAML: quoting this way keeps any description or value a plain string.
    return textwrap.dedent(SPEC).format(mode=mode, description=json.dumps(description),
                                        trials=trials, seed=seed,
                                        widths=json.dumps(list(widths)))
