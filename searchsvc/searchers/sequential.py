"""Drive a searcher in-process, one trial after another, against a plain Python function.

For searcher tests and the quality benchmark: it measures the search algorithm alone, with no
Ray in the loop. Real studies go through :mod:`searchsvc.driver`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from searchsvc.core import TRIAL_COMPLETED, TRIAL_INFEASIBLE, Curve, best_of
from searchsvc.searchers.base import Observation, Searcher

Evaluate = Callable[[Mapping[str, Any]], float]


def run_sequential(searcher: Searcher, evaluate: Evaluate) -> list[Observation]:
    """Propose, evaluate and observe every trial of ``searcher`` in order; a non-finite value
    makes the trial infeasible, as in a real study."""
    observations = []
    for number in range(searcher.total_trials):
        proposal = searcher.propose(number)
        value = float(evaluate(proposal.config))
        finite = math.isfinite(value)
        observation = Observation(
            number, dict(proposal.config), value if finite else None,
            TRIAL_COMPLETED if finite else TRIAL_INFEASIBLE,
            curve=Curve([(1, value)] if finite else ()))
        searcher.observe(observation)
        observations.append(observation)
    return observations


def best_so_far(observations: list[Observation], mode: str) -> float | None:
    return best_of((o.value for o in observations), mode)
