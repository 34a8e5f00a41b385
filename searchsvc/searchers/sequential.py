"""Drive a searcher in-process, one trial after another, against a plain Python function.

For searcher tests and the quality benchmark: it measures the search algorithm alone, with no
Ray in the loop. Real studies go through :mod:`searchsvc.driver`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from searchsvc.core import TRIAL_COMPLETED, TRIAL_INFEASIBLE, Curve, best_of, final_metrics
from searchsvc.searchers.base import Observation, Searcher

Evaluate = Callable[[Mapping[str, Any]], float | Mapping[str, float]]


def run_sequential(searcher: Searcher, evaluate: Evaluate) -> list[Observation]:
    """Propose, evaluate and observe every trial of ``searcher`` in order. ``evaluate``
    returns the study's metric, or every metric by name (a multi-objective or constrained
    study); a non-finite objective makes the trial infeasible, as in a real study."""
    observations = []
    spec = searcher.spec
    for number in range(searcher.total_trials):
        proposal = searcher.propose(number)
        result = evaluate(proposal.config)
        metrics = ({k: float(v) for k, v in result.items()} if isinstance(result, Mapping)
                   else {spec.metric: float(result)})
        value = metrics[spec.metric]
        finite = all(math.isfinite(metrics[o.name]) for o in spec.objectives)
        observation = Observation(
            number, dict(proposal.config), value if finite else None,
            TRIAL_COMPLETED if finite else TRIAL_INFEASIBLE,
            curve=Curve([(1, value)] if finite else ()),
            final_metrics=final_metrics([metrics]))
        searcher.observe(observation)
        observations.append(observation)
    return observations


def best_so_far(observations: list[Observation], mode: str) -> float | None:
    return best_of((o.value for o in observations), mode)
