"""Ray Tune schedulers for a searcher's :class:`Schedule`, with the glue searchsvc needs: early
stopping within each scientific arm, with deterministic Hyperband brackets and state a resumed
study refills from the store; PBT exploitation kept within a scientific arm; and every early
stop and exploit reported as an event."""

from __future__ import annotations

import math
import random
from typing import Any, ClassVar

from ray.tune.schedulers import FIFOScheduler, TrialScheduler

from searchsvc.analysis.dimensionality import RunningCollapse
from searchsvc.core.stopping import ArmKey, StoppingRule, arm_key
from searchsvc.driver.population import ArmPopulation
from searchsvc.driver.raycompat import PBT, forget_ended_trials, waiting_trials
from searchsvc.driver.schedule_base import STEP, SchedulerEvents, trial_number
from searchsvc.plugins import SCHEDULERS
from searchsvc.searchers import HyperbandSchedule, PopulationSchedule, Schedule, StoppingSchedule
from searchsvc.searchers.stopping import Result, decider
from searchsvc.spec import StudySpec
from searchsvc.worker.context import DIMENSIONALITY_KEY, META_KEY


def create_scheduler(schedule: Schedule | None, spec: StudySpec, events: SchedulerEvents
                     ) -> TrialScheduler:
    """The Ray Tune scheduler for ``schedule`` (None: first come, first served), by its
    ``kind``."""
    if schedule is None:
        return StudyFifo()
    scheduler: TrialScheduler = SCHEDULERS.get(schedule.kind).for_study(schedule, spec, events)
    return scheduler


class StudyFifo(FIFOScheduler):
    """Tune's FIFO scheduler whose choice of the next trial to start costs the same at trial
    10,000 as at trial 1: Tune's own scans every trial of the run, finished ones included, at
    each step of its loop. This one looks only at the trials waiting (the controller's sets of
    pending and paused trials) and picks, as Tune's does, the one added first, pending before
    paused. Trials that ended are dropped from Tune's controller at its next step
    (:func:`raycompat.forget_ended_trials`), so that the driver's memory does not grow with
    them: the store holds them."""

    def __init__(self) -> None:
        super().__init__()
        # id(trial) -> the order it was added in, while it has not ended
        self._added: dict[int, int] = {}
        self._count = 0
        self._ended: list[Any] = []  # to be dropped from Tune's controller at its next step

    def on_trial_add(self, tune_controller: Any, trial: Any) -> None:
        if id(trial) not in self._added:
            self._added[id(trial)], self._count = self._count, self._count + 1
        super().on_trial_add(tune_controller, trial)

    def on_trial_complete(self, tune_controller: Any, trial: Any, result: dict) -> None:
        self._added.pop(id(trial), None)
        self._ended.append(trial)
        super().on_trial_complete(tune_controller, trial, result)

    def on_trial_error(self, tune_controller: Any, trial: Any) -> None:
        self._added.pop(id(trial), None)
        self._ended.append(trial)
        super().on_trial_error(tune_controller, trial)

    def on_trial_remove(self, tune_controller: Any, trial: Any) -> None:
        self._added.pop(id(trial), None)
        self._ended.append(trial)
        super().on_trial_remove(tune_controller, trial)

    def choose_trial_to_run(self, tune_controller: Any) -> Any:
        if self._ended:  # they ended at an earlier step: Tune is done with them
            forget_ended_trials(tune_controller, self._ended)
            self._ended = [t for t in self._ended if not t.is_finished()]
        waiting = waiting_trials(tune_controller)
        if waiting is None:
            return super().choose_trial_to_run(tune_controller)
        for trials in waiting:
            if trials:
                return min(trials, key=lambda t: self._added.get(id(t), math.inf))
        return None


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


class StudyStopping(StudyFifo):
    """Early stopping as searchsvc decides it: the rule's decider (``searchers/stopping.py``,
    the same code the replay runs) fed each result, one state per scientific arm, rungs refilled
    from the store on resume (:meth:`restore_trial`), and every early stop reported as an event.

    Carries out a multi-fidelity searcher's rungs (:class:`HyperbandSchedule`: ASHA, Hyperband,
    BOHB, with their options) and a study file's ``early_stopping:`` rule
    (:class:`StoppingSchedule`) beside any other searcher. Ray Tune's own asynchronous
    Hyperband keeps one set of rungs for the whole run, which compares trials across scientific
    arms; within one arm this decides as it does."""

    kind: ClassVar[str] = "stopping"
    summary: ClassVar[str] = ("early stopping within each scientific arm: ASHA/Hyperband rungs, "
                              "or the median or percentile rule")

    @classmethod
    def for_study(cls, schedule: HyperbandSchedule | StoppingSchedule, spec: StudySpec,
                  events: SchedulerEvents) -> StudyStopping:
        if isinstance(schedule, HyperbandSchedule):
            rule, label = schedule.rule(), spec.searcher
        else:
            rule, label = schedule.rule, schedule.rule.kind
        return cls(rule, schedule.max_steps, spec.metric, spec.mode, events, label=label,
                   seed=schedule.seed, scientific=tuple(p.name for p in spec.scientific),
                   stop_collapsed=spec.dimensionality.stop_collapsed)

    def __init__(self, rule: StoppingRule, max_steps: int, metric: str, mode: str,
                 events: SchedulerEvents, label: str = "", *, seed: int = 0,
                 scientific: tuple[str, ...] = (), stop_collapsed: bool = False):
        super().__init__()
        self.set_search_properties(metric, mode)  # Tune's public way to give them
        self.rule, self.max_steps, self.metric_name = rule, max_steps, metric
        self.events, self.label, self.scientific = events, label or rule.kind, scientific
        self.decide = decider(rule, max_steps, mode, seed)
        # dimensionality.stop_collapsed: each running trial's collapse watch, by Tune's id
        self.collapse: dict[str, RunningCollapse] | None = {} if stop_collapsed else None

    def arm_of(self, config: dict[str, Any]) -> ArmKey:
        return arm_key(config, self.scientific)

    def restore_trial(self, number: int, config: dict[str, Any],
                      curve: list[tuple[int, float]]) -> None:
        """Record a trial of an earlier run in its arm's state as it ran (finite values)."""
        finite = [(step, value) for step, value in curve if math.isfinite(value)]
        self.decide.restore(number, self.arm_of(config), finite)

    def on_trial_result(self, tune_controller: Any, trial: Any, result: dict) -> str:
        step, value = result.get(STEP), result.get(self.metric_name)
        if step is None:
            return TrialScheduler.CONTINUE
        if self._collapsed(trial, step, result):
            return TrialScheduler.STOP
        if not isinstance(value, int | float) or not math.isfinite(value):
            return TrialScheduler.CONTINUE  # nothing to rank it by at this step
        number = trial_number(trial)
        stop = self.decide.judge(Result(number, int(step), float(value),
                                        self.arm_of(trial.config)))
        if stop is None:
            return TrialScheduler.CONTINUE
        self.events.stopped_early(trial, int(step), {
            "scheduler": self.label, "rule": self.rule.kind, **stop.as_data(), "value": value,
            "arm": dict(trial.config.get(META_KEY, {}).get("arm") or {}),
            **({"reduction_factor": self.rule.reduction_factor} if self.rule.uses_rungs
               else {"keep": self.rule.kept_share}),
        })
        return TrialScheduler.STOP

    def _collapsed(self, trial: Any, step: Any, result: dict) -> bool:
        """With stop_collapsed: whether this result shows a watched layer collapsed (then the
        stop is reported with the layer, the rule and the value)."""
        layers = measured_layers(result)
        if self.collapse is None or not layers:
            return False
        watch = self.collapse.setdefault(trial.trial_id, RunningCollapse(self.max_steps, {}))
        found = watch.update(int(step), layers)
        if found is None or step >= self.max_steps:
            return False
        layer, reason, dim = found
        self.events.stopped_early(trial, int(step), {
            "scheduler": self.label, "reason": "collapsed", "layer": layer, "rule": reason,
            "participation_ratio": dim, "early": watch.early.get(layer)})
        return True

    def debug_string(self) -> str:
        return f"searchsvc early stopping: {self.rule.label} within each scientific arm"


class StudyHyperBand(StudyStopping):
    """A multi-fidelity searcher's own rungs (its :class:`HyperbandSchedule`), carried out as
    any early-stopping rule is."""

    kind: ClassVar[str] = "hyperband"
    summary: ClassVar[str] = ("a multi-fidelity searcher's rungs (ASHA, Hyperband, BOHB), "
                              "within each scientific arm")


class StudyPBT(ArmPopulation, PBT):
    kind: ClassVar[str] = "population"
    summary: ClassVar[str] = ("population based training (PBT, or PB2 by `variant`): trials "
                              "copy a better trial's checkpoint and perturb its config")

    @classmethod
    def for_study(cls, schedule: PopulationSchedule, spec: StudySpec,
                  events: SchedulerEvents) -> TrialScheduler:
        random.seed(schedule.seed)  # Ray's PBT draws from the global `random` module
        if schedule.variant == "pb2":  # imported only for PB2: Ray's PB2 imports scikit-learn
            from searchsvc.driver.pb2 import StudyPB2

            return StudyPB2(schedule, spec, events)
        return cls(schedule, spec, events)

    def __init__(self, schedule: PopulationSchedule, spec: StudySpec, events: SchedulerEvents):
        # require_attrs=False: a result without the study's metric goes on, as Ray's rung
        # schedulers let it, instead of raising inside Tune's loop (a traceback that ended the
        # run): the trial then fails as one that never reported its objective, like any
        # searcher's, and the study's failure rules and report name it. PB2 alike.
        super().__init__(
            time_attr=STEP, metric=spec.metric, mode=spec.mode,
            perturbation_interval=schedule.perturbation_interval,
            hyperparam_mutations={k: list(v) for k, v in schedule.mutations.items()},
            quantile_fraction=schedule.quantile_fraction,
            resample_probability=schedule.resample_probability, synch=schedule.synch,
            log_config=False, require_attrs=False,
        )
        self.spec, self.events = spec, events
