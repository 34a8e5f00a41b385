"""Scientific arms that learn at different speeds, with a known truth at the full budget: what
early stopping must not decide.

Two scientific parameters, each with a slow-starting value:

- ``depth``: depth 2 starts far worse and catches up; at the full budget the two depths **tie**
  (the same loss at the best learning rate).
- ``width``: width 2 starts far worse too, and is the **late winner**: better by
  :data:`LATE_GAIN` at the full budget.

``learning_rate`` is the nuisance parameter (best within half a decade of 0.01, the same for
every arm). Each trial's
loss at ``step`` of ``steps`` is its final loss plus a start-up gap that decays by the full
budget, plus seeded noise (sd :data:`NOISE`): a rule that compares a slow arm's early steps
with a fast arm's stops the slow arm, and a report that then ranks arms on those truncated
values gets the science wrong.
"""

from __future__ import annotations

import math
import random
from typing import Any

from searchsvc import sdk

# Each early-stopping rule as a study file sets it: (searcher, the lines that set its rule).
RULES = {
    "asha": ("asha", "searcher_options: {grace_period: 1, reduction_factor: 3}"),
    "hyperband": ("hyperband", "searcher_options: {grace_period: 1, reduction_factor: 3}"),
    "bohb": ("bohb", "searcher_options: {grace_period: 1, reduction_factor: 3}"),
    "median": ("quasi_random", "early_stopping: {rule: median, grace_period: 1}"),
    "percentile": ("quasi_random",
                   "early_stopping: {rule: percentile, grace_period: 1, keep: 0.5}"),
}
LATE_GAIN = 0.4  # width 2 ends this much below width 1
NOISE = 0.005
BEST_LR = 0.01
BASIN = 0.5  # decades of learning rate around BEST_LR that reach the arm's best loss


def final_loss(config: dict[str, Any]) -> float:
    """The loss a trial ends at: 0.3 for a learning rate within half a decade of the best,
    more outside that basin, less the late gain for width 2. The basin makes the tie a tie
    between the arms' best trials, not only between their best learning rates."""
    miss = abs(math.log10(float(config["learning_rate"])) - math.log10(BEST_LR))
    return (0.3 + 0.3 * max(0.0, miss - BASIN) ** 2
            - (LATE_GAIN if int(config.get("width", 1)) == 2 else 0.0))


def start_gap(config: dict[str, Any]) -> tuple[float, float]:
    """(gap at step 1, decay per step): the fast arm starts 1.0 above its end and closes it
    quickly; each slow value (depth 2, width 2) adds a larger, slower gap."""
    slow = (int(config.get("depth", 1)) == 2) + (int(config.get("width", 1)) == 2)
    return (1.0, 0.3) if not slow else (2.0 + 1.5 * slow, 0.62)


def loss_at(config: dict[str, Any], step: int, steps: int, rng: random.Random) -> float:
    """The loss reported at ``step``: exactly :func:`final_loss` (plus noise) at ``steps``."""
    gap, decay = start_gap(config)
    curve = gap * (decay ** (step - 1) - decay ** (steps - 1))
    return final_loss(config) + curve + rng.gauss(0.0, NOISE)


def curve(config: dict[str, Any], seed: int, steps: int) -> list[float]:
    """A trial's whole curve, as :func:`slow_arms` reports it with trial seed ``seed``."""
    rng = random.Random(seed)
    return [loss_at(config, step, steps, rng) for step in range(1, steps + 1)]


def slow_arms(config: dict[str, Any]) -> None:
    """The objective: reports ``loss`` each step, up to ``budget.max_steps`` (default 9)."""
    steps = sdk.max_steps(9)
    for value in curve(config, sdk.trial_context().seed, steps):
        sdk.report({"loss": value})
