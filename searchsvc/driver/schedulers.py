"""Ray Tune schedulers for a searcher's :class:`Schedule`, with the glue searchsvc needs:
deterministic Hyperband brackets that a resumed study refills from the store, PBT exploitation
kept within a scientific arm, and every early stop and exploit reported as an event."""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from typing import Any, ClassVar, Protocol, cast

from ray.tune.schedulers import TrialScheduler

from searchsvc.analysis.dimensionality import RunningCollapse
from searchsvc.driver.raycompat import PBT, Bracket, HyperBand, PB2Hooks, rungs_of
from searchsvc.plugins import SCHEDULERS
from searchsvc.searchers import HyperbandSchedule, PopulationSchedule, Schedule
from searchsvc.spec import RangeParameter, StudySpec
from searchsvc.worker.context import DIMENSIONALITY_KEY, META_KEY

STEP = "training_iteration"


class SchedulerEvents(Protocol):
    """Where schedulers report what they did to a trial (the store callback)."""

    def stopped_early(self, trial: Any, step: int, data: dict[str, Any]) -> None: ...

    def exploited(self, trial: Any, step: int, data: dict[str, Any]) -> None: ...


def trial_number(trial: Any) -> int:
    return int(trial.config[META_KEY]["number"])


def create_scheduler(schedule: Schedule | None, spec: StudySpec, events: SchedulerEvents
                     ) -> TrialScheduler | None:
    """The Ray Tune scheduler for ``schedule`` (None: Tune's default FIFO), by its ``kind``."""
    if schedule is None:
        return None
    scheduler: TrialScheduler = SCHEDULERS.get(schedule.kind).for_study(schedule, spec, events)
    return scheduler


def measured_layers(result: dict) -> dict[str, dict[str, Any]]:
    """The layers ``sdk.watch`` measured, from a result as Tune gives it to a scheduler:
    flattened (``searchsvc_dimensionality/layers/fc2/participation_ratio``), or nested."""
    nested = result.get(DIMENSIONALITY_KEY)
    if isinstance(nested, dict):
        return dict(nested.get("layers") or {})
    prefix = f"{DIMENSIONALITY_KEY}/layers/"
    layers: dict[str, dict[str, Any]] = {}
    for key, value in result.items():
        if key.startswith(prefix) and "/" in key[len(prefix):]:
            layer, measure = key[len(prefix):].rsplit("/", 1)
            layers.setdefault(layer, {})[measure] = value
    return layers


class _QuotaBracket(Bracket):
    """Ray's asynchronous bracket, where a rung also lets at most ``ceil(n / rf)`` of the ``n``
    trials recorded there go on (see :class:`HyperbandSchedule`, ``promotion="quota"``)."""

    def __init__(self, *args: Any, max_t: int, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.max_t = max_t
        self.promoted: dict[float, set[str]] = {m: set() for m, _ in self.rungs}

    def quota_left(self, milestone: float, recorded: dict) -> bool:
        return len(self.promoted[milestone]) < math.ceil((len(recorded) + 1) / self.rf)

    def on_result(self, trial: Any, cur_iter: int, cur_rew: float | None) -> str:
        for milestone, recorded in self.rungs:
            if cur_iter < milestone or trial.trial_id in recorded:
                continue
            if cur_rew is None or milestone >= self.max_t:
                return super().on_result(trial, cur_iter, cur_rew)
            # A percentile of the recorded floats (Ray's annotation adds complex and ndarray).
            cutoff = cast("float | None", self.cutoff(recorded))
            go_on = (cutoff is None or cur_rew >= cutoff) and self.quota_left(milestone, recorded)
            recorded[trial.trial_id] = cur_rew
            if not go_on:
                return TrialScheduler.STOP
            self.promoted[milestone].add(trial.trial_id)
            return TrialScheduler.CONTINUE
        return TrialScheduler.CONTINUE


class StudyHyperBand(HyperBand):
    """Ray Tune's asynchronous Hyperband with brackets assigned by trial number, rungs that can
    be refilled from the store on resume, an optional promotion quota, and early stops
    reported."""

    kind: ClassVar[str] = "hyperband"
    summary: ClassVar[str] = ("asynchronous successive halving in Hyperband brackets: stops a "
                              "trial whose metric trails its rung")

    @classmethod
    def for_study(cls, schedule: HyperbandSchedule, spec: StudySpec,
                  events: SchedulerEvents) -> StudyHyperBand:
        return cls(schedule, spec.metric, spec.mode, events, label=spec.searcher,
                   stop_collapsed=spec.dimensionality.stop_collapsed)

    def __init__(self, schedule: HyperbandSchedule, metric: str, mode: str,
                 events: SchedulerEvents, label: str = "hyperband", *,
                 stop_collapsed: bool = False):
        super().__init__(time_attr=STEP, metric=metric, mode=mode, max_t=schedule.max_steps,
                         grace_period=schedule.grace_period,
                         reduction_factor=schedule.reduction_factor,
                         brackets=schedule.brackets)
        if schedule.promotion == "quota":
            self.replace_brackets([
                _QuotaBracket(schedule.grace_period, schedule.max_steps,
                              schedule.reduction_factor, s, max_t=schedule.max_steps)
                for s in range(schedule.brackets)])
        self.schedule, self.events, self.label = schedule, events, label
        # dimensionality.stop_collapsed: each running trial's collapse watch, by Tune's id
        self.collapse: dict[str, RunningCollapse] | None = {} if stop_collapsed else None

    def replay(self, number: int, curve: list[tuple[int, float]]) -> None:
        """Record a finished trial's results in its bracket's rungs as they happened: its value
        at each rung it reached, and (for a quota) each rung it went on from."""
        bracket = self.bracket(self.schedule.bracket_for(number))
        past = f"past-{number}"  # stands for a trial of an earlier run
        finite = [(step, value) for step, value in curve if math.isfinite(value)]
        last = max((step for step, _ in curve), default=0)
        for milestone, recorded in rungs_of(bracket):
            reached = next((v for step, v in finite if step >= milestone), None)
            if reached is None:
                continue
            recorded[past] = self.metric_sign * reached
            if isinstance(bracket, _QuotaBracket) and last > milestone:
                bracket.promoted[milestone].add(past)

    def on_trial_add(self, tune_controller: Any, trial: Any) -> None:
        super().on_trial_add(tune_controller, trial)  # validates metric and mode
        index = self.schedule.bracket_for(trial_number(trial))
        self.assign(trial, self.bracket(index))

    def on_trial_result(self, tune_controller: Any, trial: Any, result: dict) -> str:
        step, value = result.get(STEP), result.get(self.metric_name)
        if self._collapsed(trial, step, result):
            return TrialScheduler.STOP
        rung = self._rung_reached(trial, step)
        action = super().on_trial_result(tune_controller, trial, result)
        if (action == TrialScheduler.STOP and rung is not None and step is not None
                and step < self.schedule.max_steps):
            milestone, cutoff = rung
            below = (cutoff is not None and value is not None
                     and self.metric_sign * value < cutoff)
            self.events.stopped_early(trial, int(step), {
                "scheduler": self.label, "rung": milestone,
                "bracket": self.schedule.bracket_for(trial_number(trial)),
                "value": value, "cutoff": None if cutoff is None else
                float(cutoff) * self.metric_sign,
                "reason": "below_cutoff" if below else "rung_quota_full",
                "reduction_factor": self.schedule.reduction_factor,
            })
        return action

    def _collapsed(self, trial: Any, step: Any, result: dict) -> bool:
        """With stop_collapsed: whether this result shows a watched layer collapsed (then the
        stop is reported with the layer, the rule and the value)."""
        layers = measured_layers(result)
        if self.collapse is None or not layers or step is None:
            return False
        watch = self.collapse.setdefault(trial.trial_id,
                                         RunningCollapse(self.schedule.max_steps, {}))
        found = watch.update(int(step), layers)
        if found is None or step >= self.schedule.max_steps:
            return False
        layer, reason, dim = found
        self.events.stopped_early(trial, int(step), {
            "scheduler": self.label, "reason": "collapsed", "layer": layer, "rule": reason,
            "participation_ratio": dim, "early": watch.early.get(layer),
            "bracket": self.schedule.bracket_for(trial_number(trial))})
        return True

    def _rung_reached(self, trial: Any, step: Any) -> tuple[int, float | None] | None:
        """The rung this result is judged at and its cutoff before this result, if any."""
        bracket = self.bracket_of(trial)
        if bracket is None or step is None:
            return None
        for milestone, recorded in rungs_of(bracket):
            if step < milestone or trial.trial_id in recorded:
                continue
            return int(milestone), bracket.cutoff(recorded)
        return None


class _ArmPopulation:
    """PBT glue shared by the PBT and PB2 schedulers: exploitation stays within the trial's
    scientific arm (its population), a trial keeps its own identity when it copies another's
    weights, and each exploit is reported with parent and child."""

    events: SchedulerEvents
    spec: StudySpec

    def on_trial_add(self, tune_controller: Any, trial: Any) -> None:
        # Ray refuses any search algorithm beside PBT, because a model-based one would learn
        # from configs PBT changed behind its back. searchsvc's only hands out the study's
        # initial population (and pbt's searcher learns nothing), so it is hidden from the check.
        super().on_trial_add(_WithoutSearchAlg(tune_controller), trial)  # type: ignore[misc]

    def population_of(self, trial: Any) -> Callable[[Any], bool]:
        arm = _arm_key(trial)
        return lambda other: _arm_key(other) == arm

    def adjust_config(self, trial: Any, new_config: dict[str, Any]) -> dict[str, Any]:
        new_config[META_KEY] = trial.config[META_KEY]
        for name, value in list(new_config.items()):
            param = self.spec.parameters.get(name)
            if isinstance(param, RangeParameter) and isinstance(value, int | float):
                value = min(max(value, param.low), param.high)
                new_config[name] = round(value) if param.kind == "int" else float(value)
        return new_config

    def after_exploit(self, trial: Any, parent: Any, step: int, parent_step: int,
                      old_config: dict[str, Any]) -> None:
        self.events.exploited(trial, step, {
            "parent": trial_number(parent), "parent_step": parent_step,
            "old_config": _user_config(old_config), "new_config": _user_config(trial.config),
            "parent_config": _user_config(parent.config),
        })


class StudyPBT(_ArmPopulation, PBT):
    kind: ClassVar[str] = "population"
    summary: ClassVar[str] = ("population based training (PBT, or PB2 by `variant`): trials "
                              "copy a better trial's checkpoint and perturb its config")

    @classmethod
    def for_study(cls, schedule: PopulationSchedule, spec: StudySpec,
                  events: SchedulerEvents) -> TrialScheduler:
        random.seed(schedule.seed)  # Ray's PBT draws from the global `random` module
        return (StudyPB2 if schedule.variant == "pb2" else cls)(schedule, spec, events)

    def __init__(self, schedule: PopulationSchedule, spec: StudySpec, events: SchedulerEvents):
        super().__init__(
            time_attr=STEP, metric=spec.metric, mode=spec.mode,
            perturbation_interval=schedule.perturbation_interval,
            hyperparam_mutations={k: list(v) for k, v in schedule.mutations.items()},
            quantile_fraction=schedule.quantile_fraction,
            resample_probability=schedule.resample_probability, synch=schedule.synch,
            log_config=False,
        )
        self.spec, self.events = spec, events


class StudyPB2(_ArmPopulation, PB2Hooks):
    def __init__(self, schedule: PopulationSchedule, spec: StudySpec, events: SchedulerEvents):
        super().__init__(
            time_attr=STEP, metric=spec.metric, mode=spec.mode,
            perturbation_interval=schedule.perturbation_interval,
            hyperparam_bounds={k: list(v) for k, v in schedule.bounds.items()},
            quantile_fraction=schedule.quantile_fraction, synch=schedule.synch,
            log_config=False,
        )
        self.spec, self.events = spec, events


class _WithoutSearchAlg:
    def __init__(self, controller: Any):
        self._controller = controller

    search_alg = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._controller, name)


def _arm_key(trial: Any) -> tuple:
    arm = trial.config.get(META_KEY, {}).get("arm") or {}
    return tuple(sorted((k, repr(v)) for k, v in arm.items()))


def _user_config(config: dict) -> dict:
    return {k: v for k, v in config.items() if k != META_KEY}

