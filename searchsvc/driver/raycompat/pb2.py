"""Ray's PB2 with searchsvc's population hooks, apart from PBT: Ray's PB2 module imports
scikit-learn (a third of a second), which only a PB2 study needs."""

from __future__ import annotations

from ray.tune.schedulers.pb2 import PB2

from searchsvc.driver.raycompat.population import PopulationHooks


class PB2Hooks(PopulationHooks, PB2):
    """Ray's PB2 with :class:`PopulationHooks`."""
