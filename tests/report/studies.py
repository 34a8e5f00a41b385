"""Small studies built as records, without a database or Ray: a spec, its StudyRecord and
trials with chosen best values and states, for the plot and page tests."""

from __future__ import annotations

import json
import random
import textwrap
from collections.abc import Collection

from searchsvc.core import (
    STUDY_COMPLETED,
    TRIAL_COMPLETED,
    TRIAL_INFEASIBLE,
    StudyRecord,
    TrialRecord,
)
from searchsvc.spec import StudySpec, parse_spec

SPEC = """
    study: plots
    description: {description}
    objective: objectives.synthetic:playbook
    metric: accuracy
    mode: {mode}
    searcher: quasi_random
    seed: 0
    budget: {{trials: 100, max_steps: 10}}
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
    text = _spec_text(mode, description, widths)
    record = StudyRecord(id=1, name=name, state=STUDY_COMPLETED, metric="accuracy", mode=mode,
                         searcher="quasi_random", spec_text=text, spec_file="plots.yaml",
                         created_at=0.0, total_trials=100)
    return record, parse_spec(text)


def make_trials(count: int, *, infeasible: Collection[int] = (), seed: int = 0,
                widths: tuple[object, ...] = (64, 256)) -> list[TrialRecord]:
    """``count`` trials with seeded random configs; completed ones have distinct best values
    in (0.2, 0.9); the numbers in ``infeasible`` diverged with no finite value at all."""
    rng = random.Random(seed)
    trials = []
    for number in range(count):
        width = widths[number % len(widths)]
        config = {"width": width, "learning_rate": 10 ** rng.uniform(-4, 0),
                  "dropout": rng.uniform(0.0, 0.5)}
        bad = number in infeasible
        trials.append(TrialRecord(
            id=number + 1, study_id=1, number=number,
            state=TRIAL_INFEASIBLE if bad else TRIAL_COMPLETED, config=config,
            arm={"width": width}, seed=number, best_value=None if bad else rng.uniform(0.2, 0.9),
            best_step=None if bad else 9, last_step=3 if bad else 9))
    return trials


def _spec_text(mode: str, description: str, widths: tuple[object, ...]) -> str:
    # JSON is YAML: quoting this way keeps any description or value a plain string.
    return textwrap.dedent(SPEC).format(mode=mode, description=json.dumps(description),
                                        widths=json.dumps(list(widths)))
