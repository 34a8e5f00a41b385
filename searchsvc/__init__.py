"""searchsvc: hyperparameter search on Ray Tune, following the Deep Learning Tuning Playbook.

``searchsvc.run``, ``searchsvc.load`` and ``searchsvc.Study`` are the Python API
(:mod:`searchsvc.api`); they are imported on first use, so importing searchsvc (as every trial
worker does, for the sdk) stays light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from searchsvc.api import Study, load, run

__all__ = ["Study", "__version__", "load", "run"]


def __getattr__(name: str) -> Any:
    if name in ("Study", "load", "run"):
        from searchsvc import api

        return getattr(api, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
