"""Ray's PBT and PB2 with public hooks for what searchsvc's population schedulers need."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ray.tune.schedulers import PopulationBasedTraining


class PopulationHooks:
    """Mixin over Ray's PBT and PB2 that turns three private steps into public hooks:
    :meth:`population_of` (the trials a trial is ranked against), :meth:`adjust_config` (the
    config an exploiting trial gets) and :meth:`after_exploit` (told once it happened)."""

    _trial_state: dict[Any, Any]  # PopulationBasedTraining's: {trial: its state}

    def population_of(self, trial: Any) -> Callable[[Any], bool] | None:
        """A filter of the trials ``trial`` is ranked against (None: all of them)."""
        return None

    def adjust_config(self, trial: Any, new_config: dict[str, Any]) -> dict[str, Any]:
        return new_config

    def after_exploit(self, trial: Any, parent: Any, step: int, parent_step: int,
                      old_config: dict[str, Any]) -> None:
        """``trial`` (at ``step``) copied ``parent``'s checkpoint (from ``parent_step``)."""

    def _checkpoint_or_exploit(self, trial: Any, tune_controller: Any,
                               upper_quantile: list, lower_quantile: list) -> None:
        keep = self.population_of(trial)
        if keep is not None:
            everyone = self._trial_state
            self._trial_state = {t: s for t, s in everyone.items() if keep(t)}
            try:
                lower_quantile, upper_quantile = self._quantiles()  # type: ignore[attr-defined]
            finally:
                self._trial_state = everyone
        super()._checkpoint_or_exploit(  # type: ignore[misc]
            trial, tune_controller, upper_quantile, lower_quantile)

    def _get_new_config(self, trial: Any, trial_to_clone: Any) -> tuple[dict, dict]:
        new_config, operations = super()._get_new_config(  # type: ignore[misc]
            trial, trial_to_clone)
        return self.adjust_config(trial, dict(new_config)), operations

    def _exploit(self, tune_controller: Any, trial: Any, trial_to_clone: Any) -> None:
        old_config = dict(trial.config)
        parent_step = self._trial_state[trial_to_clone].last_train_time
        step = self._trial_state[trial].last_train_time
        saving = trial.is_saving
        super()._exploit(tune_controller, trial, trial_to_clone)  # type: ignore[misc]
        if saving:
            _drop_stale_stop(tune_controller, trial)
        self.after_exploit(trial, trial_to_clone, int(step or 0), int(parent_step or 0),
                           old_config)


def _drop_stale_stop(tune_controller: Any, trial: Any) -> None:
    """Undo the STOP Ray leaves behind when PBT exploits a trial that is still saving.

    Synchronous PBT decides once the last trial reaches the perturbation step; a trial that
    got there shortly before may still be RUNNING with its pause's save in flight (the longer
    saves take, as on a loaded machine, the likelier). Ray's ``_exploit`` then pauses it with
    ``pause_trial(should_checkpoint=False)``, which stops it: the stop caches a STOP decision
    for "after the save" and drops the save's future, so that STOP outlives the pause and is
    carried out after the trial's next save once it resumes, ending it one step after the
    perturbation (e.g. 7 of 12 steps) while the rest of the population waits for it at the
    next perturbation step until the run times out. The trial is paused, not stopped."""
    from ray.tune.experiment import Trial
    from ray.tune.schedulers import TrialScheduler

    controller = getattr(tune_controller, "_tune_controller", tune_controller)
    decisions = controller._cached_trial_decisions
    if trial.status == Trial.PAUSED and decisions.get(trial.trial_id) == TrialScheduler.STOP:
        del decisions[trial.trial_id]


class PBT(PopulationHooks, PopulationBasedTraining):
    """Ray's Population Based Training with :class:`PopulationHooks`."""
