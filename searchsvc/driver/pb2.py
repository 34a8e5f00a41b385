"""The PB2 variant of the population scheduler (:class:`~searchsvc.driver.schedulers.StudyPBT`
with ``variant: pb2``), in a module of its own: Ray's PB2 imports scikit-learn, which no other
study needs to load."""

from __future__ import annotations

from searchsvc.driver.population import ArmPopulation
from searchsvc.driver.raycompat.pb2 import PB2Hooks
from searchsvc.driver.schedule_base import STEP, SchedulerEvents
from searchsvc.searchers import PopulationSchedule
from searchsvc.spec import StudySpec


class StudyPB2(ArmPopulation, PB2Hooks):
    """PB2: PBT whose explore step is Ray's GP bandit over the nuisance bounds."""

    def __init__(self, schedule: PopulationSchedule, spec: StudySpec, events: SchedulerEvents):
        super().__init__(
            time_attr=STEP, metric=spec.metric, mode=spec.mode,
            perturbation_interval=schedule.perturbation_interval,
            hyperparam_bounds={k: list(v) for k, v in schedule.bounds.items()},
            quantile_fraction=schedule.quantile_fraction, synch=schedule.synch,
            log_config=False, require_attrs=False,
        )
        self.spec, self.events = spec, events
