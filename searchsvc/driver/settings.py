"""What every process that runs a study's objective is given — a trial, preflight's probe, a
data-parallel trial's workers, a backend's own search — built in one place, so preflight runs
the objective exactly as the study's trials will: same import path, working directory,
backend and options."""

from __future__ import annotations

from collections.abc import Sequence

from searchsvc.backends import backend_class
from searchsvc.spec import StudySpec
from searchsvc.worker.objective import given_objective, module_base
from searchsvc.worker.trainable import TrialSettings


def trial_workdir(objective: str, search_paths: Sequence[str], launch: str | None
                  ) -> str | None:
    """The working directory of a study's trials: the folder its objective's module was found
    in — beside the study file, or the folder it was launched from — so that the module's
    relative paths resolve as in ``python my_train.py`` run there; the launch folder for an
    installed objective; None for uploaded code (``launch`` None), whose workers start in
    it. See worker/workdir.py."""
    if launch is None:
        return None
    return module_base(objective, search_paths) or launch


def trial_settings(spec: StudySpec, *, search_paths: Sequence[str], launch: str | None,
                   keep_checkpoints: bool = False) -> TrialSettings:
    """The settings of ``spec``'s trials. ``search_paths``: where its objective is imported
    from (worker.objective.search_paths_for: its uploaded code bundle, the study file's
    folder, the launch folder), worked out once by the caller; ``launch``: the folder it was
    launched from (provenance.launch_folder: None with uploaded code); ``keep_checkpoints``:
    whether its objectives must save checkpoints."""
    return TrialSettings(
        study=spec.name, objective=spec.objective, search_paths=tuple(search_paths),
        metric=spec.metric, mode=spec.mode, max_steps=spec.budget.max_steps,
        keep_checkpoints=keep_checkpoints, backend=backend_class(spec.backend),
        backend_options=tuple(sorted(spec.backend_options.items())),
        function=given_objective(spec.objective),
        dimensionality=spec.dimensionality.settings(),
        workdir=trial_workdir(spec.objective, search_paths, launch),
    )
