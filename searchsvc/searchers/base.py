"""The searcher contract: what every named searcher (grid, random, bayesian, ...) provides.

Searchers are pure Python and know nothing of Ray; the runner adapts them to Ray Tune. Trials
are identified by their *number* in the study (0, 1, 2, ...), which is what makes resuming exact:
a non-adaptive searcher proposes the same config for the same number every time, and an adaptive
one is re-fed every finished trial from the store before it proposes again.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict

from searchsvc.core import Curve, is_finite_number
from searchsvc.errors import SpecIssue
from searchsvc.searchers.schedule import Schedule, StoppingSchedule
from searchsvc.searchers.space import Arm, scientific_arms, trial_seed
from searchsvc.spec import StudySpec


class NoOptions(BaseModel):
    """Searchers without options accept an empty ``searcher_options`` only."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


@dataclass(frozen=True)
class Proposal:
    """What to run as trial ``number``: its config (fixed values included), arm and seed."""

    number: int
    config: Mapping[str, Any]
    arm: Arm
    seed: int
    repeat_of: int | None = None  # a seed repeat: the trial whose config it reruns


@dataclass(frozen=True)
class Observation:
    """A finished trial, as fed back to a searcher (live, or replayed from the store).

    Finite values only, enforced here whatever built it: ``value`` is None unless finite, and
    ``curve`` is a :class:`~searchsvc.core.Curve` (non-finite reports are not points of it), so a
    resumed study feeds its searcher exactly what the live study did.
    """

    number: int
    config: Mapping[str, Any]
    value: float | None  # best metric of the trial; None when it failed or was infeasible
    state: str
    curve: Curve = field(default_factory=Curve)  # (step, metric) as reported
    # The last finite value of every metric reported: what multi-objective searchers and
    # constraints judge the trial on.
    final_metrics: Mapping[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.curve, Curve):
            object.__setattr__(self, "curve", Curve(self.curve))
        if self.value is not None and not is_finite_number(self.value):
            object.__setattr__(self, "value", None)

    @property
    def last_step(self) -> int | None:
        return self.curve.last_step

    def value_at(self, step: int) -> float | None:
        """The metric at the last report at or before ``step`` (None before the first)."""
        return self.curve.value_at(step)


class Searcher(ABC):
    """Proposes the configs of one study's trials.

    Contract:
    - ``total_trials`` is the number of trials the study runs.
    - ``propose(number)`` returns the proposal for trial ``number`` (0 <= number < total_trials).
      Numbers arrive in increasing order, with gaps on resume (finished trials are skipped).
    - ``observe(observation)`` is called once for every finished trial, including, on resume,
      every trial already in the store before the first new proposal.
    - Role semantics: every scientific arm gets an equal share of the trials (``arm_for``)
      and fixed values appear unchanged in every config.
    """

    name: ClassVar[str]
    summary: ClassVar[str]
    Options: ClassVar[type[BaseModel]] = NoOptions
    # Whether a finished trial's config can be rerun with a new seed (``noise`` repeats);
    # when not, ``no_repeats_because`` says why, for the study file's error message.
    repeats_supported: ClassVar[bool] = True
    no_repeats_because: ClassVar[str] = ""
    # Whether it can search a study with several objectives (``metrics:``); when not,
    # ``single_objective_because`` says why.
    multi_objective: ClassVar[bool] = False
    single_objective_because: ClassVar[str] = "it ranks trials by a single metric"
    # Whether its schedule stops trials early at rungs (``dimensionality.stop_collapsed`` needs
    # one to stop a collapsed trial through).
    multi_fidelity: ClassVar[bool] = False
    # Whether it stops, pauses or perturbs trials itself (a study file's ``early_stopping:``
    # block is refused then; ``stops_trials_because`` says how it does).
    stops_trials: ClassVar[bool] = False
    stops_trials_because: ClassVar[str] = ""
    # Whether it runs every point of the searched parameters' grid (``SpecLimits`` caps the
    # grid's size before it is enumerated).
    exhaustive: ClassVar[bool] = False

    def __init__(self, spec: StudySpec, options: BaseModel):
        self.spec = spec
        self.options = options
        self.arms = scientific_arms(spec)

    @classmethod
    def check(cls, spec: StudySpec) -> list[SpecIssue]:
        """Rules this searcher adds to the study file (default: a trial budget is required,
        and large enough to give every arm at least one trial)."""
        if spec.budget.trials is None:
            return [spec.source.issue(("budget", "trials"), f"searcher '{cls.name}' needs "
                                      "budget.trials")]
        n_arms = len(scientific_arms(spec))
        if spec.budget.trials < n_arms:
            return [spec.source.issue(
                ("budget", "trials"), f"fewer trials than the {n_arms} scientific combinations: "
                "every combination needs at least one trial", spec.budget.trials)]
        return []

    @property
    def total_trials(self) -> int:
        assert self.spec.budget.trials is not None
        return self.spec.budget.trials

    def arm_for(self, number: int) -> tuple[Arm, int]:
        """Trial ``number``'s arm and its index within that arm. Arms take turns, so any
        prefix of the study stays balanced across arms."""
        return self.arms[number % len(self.arms)], number // len(self.arms)

    def seed_for(self, number: int) -> int:
        return trial_seed(self.spec.seed, number)

    @abstractmethod
    def propose(self, number: int) -> Proposal:
        """The proposal for trial ``number``."""

    def observe(self, observation: Observation) -> None:  # noqa: B027 - optional hook
        """Learn from a finished trial. Non-adaptive searchers ignore it."""

    def warm_start(self, observations: Sequence[Observation]) -> int:
        """Before the first proposal: feed ``observations`` (finished trials of another study
        whose configs fit this space, numbered -1, -2, ... so they never clash with this
        study's) to the searcher's models, and return how many it used. Searchers without a
        model use none (the default)."""
        return 0

    def schedule(self) -> Schedule | None:
        """How trials are stopped early or perturbed while they run (None: every trial runs
        to ``budget.max_steps`` or until the objective returns). By default, the study file's
        ``early_stopping:`` rule; searchers that stop trials themselves override it."""
        rule, max_steps = self.spec.early_stopping, self.spec.budget.max_steps
        if rule is None or max_steps is None:
            return None
        return StoppingSchedule(rule, max_steps, seed=self.spec.seed)
