"""What a searcher asks of the runner while trials run: stop the weak ones early (Hyperband's
rungs, or a study file's ``early_stopping:`` rule) or perturb a population (PBT). Plain
descriptions; the runner maps them to Ray Tune schedulers.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from searchsvc.core.stopping import StoppingRule


@dataclass(frozen=True)
class HyperbandSchedule:
    """Asynchronous successive halving (ASHA) in ``brackets`` Hyperband brackets.

    Bracket ``s`` has rungs at ``grace_period * reduction_factor**(k + s)`` steps; a trial that
    reaches a rung below the top ``1/reduction_factor`` of the values recorded there is stopped.
    With ``promotion="quota"`` a rung also lets at most ``ceil(n / reduction_factor)`` of the
    ``n`` trials recorded there go on, whatever their values: the compute bound of synchronous
    successive halving, kept when an improving proposer (BOHB) makes later trials beat the
    earlier ones' cutoff.
    """

    max_steps: int
    grace_period: int
    reduction_factor: float
    brackets: int
    seed: int = 0
    promotion: Literal["cutoff", "quota"] = "cutoff"
    kind: Literal["hyperband"] = "hyperband"

    def milestones(self, bracket: int = 0) -> list[int]:
        """The rung steps of ``bracket``, ascending (as Ray Tune's ASHA computes them)."""
        count = int(math.log(self.max_steps / self.grace_period)
                    / math.log(self.reduction_factor) - bracket + 1)
        return [int(self.grace_period * self.reduction_factor ** (k + bracket))
                for k in range(count)]

    def rule(self) -> StoppingRule:
        """The early-stopping rule these rungs carry out (within each scientific arm)."""
        return StoppingRule("asha" if self.brackets == 1 else "hyperband", self.grace_period,
                            self.reduction_factor, brackets=self.brackets,
                            promotion=self.promotion)

    def bracket_for(self, number: int) -> int:
        """Trial ``number``'s bracket: drawn as Ray Tune draws it (brackets with more rungs are
        likelier), but seeded by the trial number so a resumed study assigns the same ones."""
        if self.brackets == 1:
            return 0  # ASHA: the one bracket, with no draw to make
        sizes = tuple(len(self.milestones(b)) for b in range(self.brackets))
        # numpy's Generator.choice(brackets, p=weights), step by step: the one uniform draw a
        # trial number gives is shared by every schedule, which the replay asks by the thousand
        return int(np.searchsorted(_bracket_cdf(sizes), _trial_uniform(self.seed, number),
                                   side="right"))


@functools.lru_cache(maxsize=64)
def _bracket_cdf(sizes: tuple[int, ...]) -> np.ndarray:
    """The cumulative bracket probabilities ``Generator.choice`` searches, for brackets of
    ``sizes`` rungs (weights ``exp(size - max)``)."""
    array = np.array(sizes, dtype=float)
    weights = np.exp(array - array.max())
    cdf = (weights / weights.sum()).cumsum()
    cdf /= cdf[-1]
    return cdf


@functools.lru_cache(maxsize=1 << 17)
def _trial_uniform(seed: int, number: int) -> float:
    """The uniform draw behind trial ``number``'s bracket."""
    return float(np.random.default_rng([seed, number, 7]).random())


@dataclass(frozen=True)
class StoppingSchedule:
    """A study file's ``early_stopping:`` rule, run beside any searcher that does not stop
    trials itself: each trial is judged against its own scientific arm's earlier trials."""

    rule: StoppingRule
    max_steps: int
    seed: int = 0  # draws Hyperband brackets by trial number
    kind: Literal["stopping"] = "stopping"


@dataclass(frozen=True)
class PopulationSchedule:
    """Population Based Training: every ``perturbation_interval`` steps, a trial in the bottom
    ``quantile_fraction`` of its arm copies the checkpoint of one in the top fraction and
    explores new values of the mutable nuisance parameters."""

    variant: Literal["pbt", "pb2"]
    max_steps: int
    perturbation_interval: int
    quantile_fraction: float
    resample_probability: float
    synch: bool = False
    mutations: Mapping[str, tuple[Any, ...]] = field(default_factory=dict)  # pbt: ordered values
    bounds: Mapping[str, tuple[float, float]] = field(default_factory=dict)  # pb2: numeric ranges
    seed: int = 0
    kind: Literal["population"] = "population"


Schedule = HyperbandSchedule | StoppingSchedule | PopulationSchedule
