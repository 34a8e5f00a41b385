"""Early-stopping rules as data, and the scientific arm a trial is judged within.

A :class:`StoppingRule` is what a study file's ``early_stopping:`` block says, what a
multi-fidelity searcher's rungs are, and what the replay (``analysis/replay.py``) tries on a
finished study; the deciders that carry one out live in ``searchers/stopping.py``, shared by
the live scheduler and the replay.

Every rule compares a trial only with trials of its own scientific arm (:func:`arm_key`): the
scientific parameters are what the study asks about, and they often change how fast a model
learns, so a rung shared across arms would decide the science by stopping the slower arm.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any, Literal

RuleKind = Literal["asha", "hyperband", "median", "percentile"]
RULE_KINDS: tuple[RuleKind, ...] = ("asha", "hyperband", "median", "percentile")
RUNG_RULES: tuple[RuleKind, ...] = ("asha", "hyperband")
Promotion = Literal["cutoff", "quota"]

ArmKey = tuple[tuple[str, str], ...]  # sorted (scientific name, repr(value)) pairs; () for none


def arm_key(config: Mapping[str, Any], scientific: Collection[str]) -> ArmKey:
    """The scientific arm of a trial with ``config``: its values of the ``scientific``
    parameters it has (an inactive conditional one is absent), as a hashable key. A study with
    no scientific parameter has one arm, ``()``."""
    return tuple(sorted((name, repr(config[name])) for name in scientific if name in config))


@dataclass(frozen=True)
class StoppingRule:
    """One early-stopping setting.

    - ``asha``: one bracket of rungs at ``grace_period * reduction_factor**k`` steps; a trial
      whose value at a rung is outside the top ``1/reduction_factor`` of the values its arm
      recorded there so far stops.
    - ``hyperband``: the same in ``brackets`` Hyperband brackets (None: every bracket that
      fits), each trial's bracket drawn from its number.
    - ``median``: from step ``grace_period`` on, a trial whose best value so far is worse than
      the median of the running means its arm's earlier trials had at that step stops.
    - ``percentile``: from step ``grace_period`` on, a trial whose best value so far is outside
      the best ``keep`` share of its arm's earlier values at that step stops.

    ``promotion="quota"`` (rung rules) also lets at most ``ceil(n / reduction_factor)`` of a
    rung's ``n`` trials go on; ``per_arm=False`` shares one rung state across arms (the old
    behaviour, kept for the replay to compare against).
    """

    kind: RuleKind
    grace_period: int = 1
    reduction_factor: float = 3.0
    keep: float = 0.5
    brackets: int | None = None
    promotion: Promotion = "cutoff"
    per_arm: bool = True

    def __post_init__(self) -> None:
        if self.kind not in RULE_KINDS:
            raise ValueError(f"unknown early-stopping rule {self.kind!r}; one of {RULE_KINDS}")
        if self.grace_period < 1:
            raise ValueError(f"grace_period must be at least 1, not {self.grace_period!r}")
        if not self.reduction_factor > 1:
            raise ValueError(f"reduction_factor must exceed 1, not {self.reduction_factor!r}")
        if not 0 < self.keep < 1:
            raise ValueError(f"keep must be between 0 and 1, not {self.keep!r}")

    @property
    def uses_rungs(self) -> bool:
        return self.kind in RUNG_RULES

    @property
    def kept_share(self) -> float:
        """The share of a step's values a trial must be among: the median rule's half, or the
        percentile rule's ``keep``."""
        return 0.5 if self.kind == "median" else self.keep

    @staticmethod
    def has_brackets(kind: str) -> bool:
        """Whether rule ``kind`` takes ``brackets`` (Hyperband's)."""
        return kind == RUNG_RULES[1]

    @property
    def label(self) -> str:
        if self.kind == "asha":
            return f"asha grace={self.grace_period} rf={self.reduction_factor:g}"
        if self.kind == "hyperband":
            return (f"hyperband grace={self.grace_period} rf={self.reduction_factor:g}"
                    + (f" brackets={self.brackets}" if self.brackets else ""))
        if self.kind == "percentile":
            return f"percentile keep={self.keep:.0%} grace={self.grace_period}"
        return f"median grace={self.grace_period}"

    def as_block(self) -> dict[str, Any]:
        """The study file's ``early_stopping:`` block that runs this rule (the options a rule
        does not use are left out)."""
        block: dict[str, Any] = {"rule": self.kind, "grace_period": self.grace_period}
        if self.uses_rungs:
            block["reduction_factor"] = self.reduction_factor
            if self.kind == "hyperband" and self.brackets:
                block["brackets"] = self.brackets
        if self.kind == "percentile":
            block["keep"] = self.keep
        return block
