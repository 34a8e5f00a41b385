"""The catalogue of pluggable parts: every searcher, backend, tracker, store and scheduler, by
name, as a lazy ``"module:attribute"`` entry of its kind's :class:`~searchsvc.registry.Registry`.

This is the one place the built-in parts are named. Each part describes itself with class
attributes that the rest of the package reads instead of naming parts: a one-line ``summary``,
an ``Options`` pydantic model (the schema of its study-file options) and capabilities such as a
searcher's ``multi_fidelity`` or ``multi_objective`` or a backend's ``runs_own_search``. The
study file's validation and JSON Schema (:mod:`searchsvc.spec`) ask these registries for the
names and capabilities, so a part registered here (or by a plug-in, at run time) is accepted with
no other edit.

Light by design: importing this module imports nothing but the registry helper; a part's module
(a searcher's, a tracker's) is imported when its entry is first looked up, and none of them
imports Ray, TensorFlow or a tracker's client library at import time.
"""

from __future__ import annotations

from typing import Any

from searchsvc.registry import Registry

# Searchers propose trials (searchsvc.searchers.Searcher): study files' `searcher:`.
SEARCHERS: Registry[Any] = Registry("searcher", {
    "grid": "searchsvc.searchers.simple:GridSearcher",
    "random": "searchsvc.searchers.simple:RandomSearcher",
    "quasi_random": "searchsvc.searchers.simple:QuasiRandomSearcher",
    "bayesian": "searchsvc.searchers.bayesian:BayesianSearcher",
    "hyperband": "searchsvc.searchers.multifidelity:HyperbandSearcher",
    "asha": "searchsvc.searchers.multifidelity:AshaSearcher",
    "bohb": "searchsvc.searchers.multifidelity:BohbSearcher",
    "pbt": "searchsvc.searchers.population:PbtSearcher",
    "nas": "searchsvc.searchers.evolution:NasSearcher",
    "keras_tuner": "searchsvc.searchers.keras_oracle:KerasTunerSearcher",
}, default="quasi_random")

# Backends run a trial (searchsvc.backends.Backend): study files' `backend:`.
BACKENDS: Registry[Any] = Registry("backend", {
    "ray": "searchsvc.backends.base:RayBackend",
    "keras_tuner": "searchsvc.backends.keras:KerasTunerBackend",
    "autokeras": "searchsvc.backends.autokeras:AutoKerasBackend",
    "command": "searchsvc.backends.command:CommandBackend",
}, default="ray")

# Trackers write a study's trials elsewhere (searchsvc.tracking.Tracker): the keys of study
# files' `tracking:` section.
TRACKERS: Registry[Any] = Registry("tracker", {
    "mlflow": "searchsvc.tracking.mlflow_tracker:MlflowTracker",
    "tensorboard": "searchsvc.tracking.tensorboard_tracker:TensorBoardTracker",
    "wandb": "searchsvc.tracking.wandb_tracker:WandbTracker",
})

# Stores by a store URL's scheme (before any ``+driver``): what opens a store at that URL.
STORES: Registry[Any] = Registry("store", {
    "memory": "searchsvc.store.memory:InMemoryStore",
    "sqlite": "searchsvc.store.sql:SqlStore",
    "postgresql": "searchsvc.store.sql:SqlStore",
})

# Ray Tune schedulers by the ``kind`` of the searcher's Schedule they carry out.
SCHEDULERS: Registry[Any] = Registry("scheduler", {
    "hyperband": "searchsvc.driver.schedulers:StudyHyperBand",  # a searcher's own rungs
    "stopping": "searchsvc.driver.schedulers:StudyStopping",  # the file's early_stopping
    "population": "searchsvc.driver.schedulers:StudyPBT",  # or PB2, by the variant
})

__all__ = ["BACKENDS", "SCHEDULERS", "SEARCHERS", "STORES", "TRACKERS"]
