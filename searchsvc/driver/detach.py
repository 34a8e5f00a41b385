"""Ray Tune pickles callbacks, search algorithms and stoppers into its experiment state for
``Tuner.restore``. searchsvc resumes from its store instead, and these objects hold live
resources (database engine, terminal), so they pickle to an inert placeholder."""

from __future__ import annotations

from typing import Any


class PicklesDetached:
    """Mixin: pickling keeps only the class; an unpickled copy is marked ``detached``."""

    detached = False

    def __getstate__(self) -> dict[str, Any]:
        return {"detached": True}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
