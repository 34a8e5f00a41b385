"""Drive a searcher in-process, one trial after another, against a plain Python function.

For searcher tests and the quality benchmark: it measures the search algorithm alone, with no
Ray in the loop. Real studies go through :mod:`searchsvc.driver`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from searchsvc.core import Curve, best_of, final_metrics
from searchsvc.core.judging import TrialEnd, trial_outcome
from searchsvc.searchers.base import Observation, Searcher

Evaluate = Callable[[Mapping[str, Any]], float | Mapping[str, float]]


def run_sequential(searcher: Searcher, evaluate: Evaluate) -> list[Observation]:
    """Propose, evaluate and observe every trial of ``searcher`` in order. ``evaluate``
    returns the study's metric, or every metric by name (a multi-objective or constrained
    study); each trial's outcome is core's rule, as in a real study (a non-finite objective or
    a broken constraint makes it infeasible)."""
    observations = []
    spec = searcher.spec
    for number in range(searcher.total_trials):
        proposal = searcher.propose(number)
        result = evaluate(proposal.config)
        metrics = ({k: float(v) for k, v in result.items()} if isinstance(result, Mapping)
                   else {spec.metric: float(result)})
        value = metrics[spec.metric]
        finite = all(math.isfinite(metrics[o.name]) for o in spec.objectives)
        objectives = tuple(o.name for o in spec.objectives)
        non_finite = next(((n, 1) for n in objectives if not math.isfinite(metrics[n])), None)
        final = final_metrics([metrics])
        outcome = trial_outcome(TrialEnd(objectives, final, metrics, non_finite=non_finite,
                                         constraints=spec.constraints))
        observation = Observation(
            number, dict(proposal.config), value if finite else None, outcome.state,
            curve=Curve([(1, value)] if finite else ()), final_metrics=final)
        searcher.observe(observation)
        observations.append(observation)
    return observations


def best_so_far(observations: list[Observation], mode: str) -> float | None:
    return best_of((o.value for o in observations), mode)
